#pragma once
// Where a client may ask the proxy to splice it (CONNECT's proxy_to_broker_url): the guard
// against using the proxy as an open relay (CVE-2022-24280; reference §6.3). A target must
// be "host:port" with no scheme, its port in brokerProxyAllowedTargetPorts, its host name in
// brokerProxyAllowedHostNames and every address it resolves to in
// brokerProxyAllowedIPAddresses; with checkActiveBrokers it must also be a registered broker
// (checked by the connection against the discovery).
//
// Pure functions and an immutable value: usable from any thread.

#include <boost/asio/ip/address.hpp>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace magnetar::proxy {

struct PortRange {
  uint16_t lo = 0;
  uint16_t hi = 0;
};
// "6650,6651", "6650-6660", "*" (every port). Errors name the item.
Result<std::vector<PortRange>> parse_port_list(std::string_view text);

struct IpPattern {
  boost::asio::ip::address network;
  int prefix_bits = 0;  // 0 with `any`
  bool any = false;
};
// "*", "127.0.0.1", "10.0.0.0/8", "::1", "fd00::/8". Errors name the item.
Result<std::vector<IpPattern>> parse_ip_patterns(std::string_view text);
bool ip_allowed(const std::vector<IpPattern>& patterns, const boost::asio::ip::address& ip);

// Host name patterns: comma list, '*' matches any run of characters, case-insensitive.
bool host_name_allowed(std::string_view patterns, std::string_view host);

struct Target {
  std::string host;  // without brackets for IPv6 literals
  uint16_t port = 0;
  std::string to_string() const;  // host:port ([v6]:port)
};
// CONNECT's proxy_to_broker_url. Pulsar's clients send "host:port"; a "pulsar://" or
// "pulsar+ssl://" prefix is tolerated (older clients). Refused: empty, longer than 300 bytes,
// control characters, a missing or out-of-range port, anything after the port.
Result<Target> parse_target(std::string_view url);

class TargetGuard {
 public:
  // `hosts`, `ips`, `ports`: the three brokerProxyAllowed* values.
  static Result<TargetGuard> create(std::string hosts, std::string_view ips,
                                    std::string_view ports);
  // Whether the name and port are allowed (before resolving).
  bool name_allowed(const Target& target) const;
  // Whether a resolved address is allowed.
  bool address_allowed(const boost::asio::ip::address& ip) const { return ip_allowed(ips_, ip); }

 private:
  TargetGuard() = default;
  std::string hosts_;
  std::vector<IpPattern> ips_;
  std::vector<PortRange> ports_;
};

}  // namespace magnetar::proxy
