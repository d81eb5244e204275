#include "proxy/target_guard.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <charconv>

namespace magnetar::proxy {

namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

// Calls f(item) for each non-empty comma-separated item, stopping at the first error.
template <typename F>
Status for_each_item(std::string_view text, F f) {
  size_t start = 0;
  while (start <= text.size()) {
    size_t comma = text.find(',', start);
    if (comma == std::string_view::npos) comma = text.size();
    std::string_view item = trim(text.substr(start, comma - start));
    if (!item.empty()) MAGNETAR_TRY(f(item));
    start = comma + 1;
  }
  return Status::OK();
}

std::optional<uint32_t> parse_number(std::string_view s, uint32_t max) {
  uint32_t v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size() || s.empty() || v > max) return std::nullopt;
  return v;
}

bool glob_match(std::string_view pattern, std::string_view text) {
  // Iterative '*' matching with one backtrack point, case-insensitive.
  size_t p = 0, t = 0, star = std::string_view::npos, mark = 0;
  auto eq = [](char a, char b) {
    return std::tolower(static_cast<unsigned char>(a)) == std::tolower(static_cast<unsigned char>(b));
  };
  while (t < text.size()) {
    if (p < pattern.size() && pattern[p] == '*') {
      star = p++;
      mark = t;
    } else if (p < pattern.size() && eq(pattern[p], text[t])) {
      ++p;
      ++t;
    } else if (star != std::string_view::npos) {
      p = star + 1;
      t = ++mark;
    } else {
      return false;
    }
  }
  while (p < pattern.size() && pattern[p] == '*') ++p;
  return p == pattern.size();
}

}  // namespace

Result<std::vector<PortRange>> parse_port_list(std::string_view text) {
  std::vector<PortRange> out;
  Status st = for_each_item(text, [&](std::string_view item) -> Status {
    if (item == "*") {
      out.push_back(PortRange{1, 65535});
      return Status::OK();
    }
    const size_t dash = item.find('-');
    auto lo = parse_number(trim(item.substr(0, dash)), 65535);
    auto hi = dash == std::string_view::npos ? lo : parse_number(trim(item.substr(dash + 1)), 65535);
    if (!lo || !hi || *lo == 0 || *hi < *lo) {
      return Status(Errc::kInvalidArgument,
                    fmt::format("'{}' is not a port or a range of ports", item));
    }
    out.push_back(PortRange{static_cast<uint16_t>(*lo), static_cast<uint16_t>(*hi)});
    return Status::OK();
  });
  if (!st.ok()) return st;
  return out;
}

Result<std::vector<IpPattern>> parse_ip_patterns(std::string_view text) {
  std::vector<IpPattern> out;
  Status st = for_each_item(text, [&](std::string_view item) -> Status {
    IpPattern p;
    if (item == "*") {
      p.any = true;
      out.push_back(p);
      return Status::OK();
    }
    const size_t slash = item.find('/');
    boost::system::error_code ec;
    p.network = boost::asio::ip::make_address(std::string(item.substr(0, slash)), ec);
    const uint32_t max_bits = !ec && p.network.is_v6() ? 128 : 32;
    std::optional<uint32_t> bits = max_bits;
    if (slash != std::string_view::npos) bits = parse_number(item.substr(slash + 1), max_bits);
    if (ec || !bits) {
      return Status(Errc::kInvalidArgument,
                    fmt::format("'{}' is not an IP address or a CIDR range", item));
    }
    p.prefix_bits = static_cast<int>(*bits);
    out.push_back(p);
    return Status::OK();
  });
  if (!st.ok()) return st;
  return out;
}

bool ip_allowed(const std::vector<IpPattern>& patterns, const boost::asio::ip::address& ip) {
  auto bytes_of = [](const boost::asio::ip::address& a) {
    std::vector<uint8_t> b;
    if (a.is_v4()) {
      auto v = a.to_v4().to_bytes();
      b.assign(v.begin(), v.end());
    } else {
      auto v6 = a.to_v6();
      if (v6.is_v4_mapped()) {
        auto v = boost::asio::ip::make_address_v4(boost::asio::ip::v4_mapped, v6).to_bytes();
        b.assign(v.begin(), v.end());
      } else {
        auto v = v6.to_bytes();
        b.assign(v.begin(), v.end());
      }
    }
    return b;
  };
  const std::vector<uint8_t> addr = bytes_of(ip);
  for (const IpPattern& p : patterns) {
    if (p.any) return true;
    const std::vector<uint8_t> net = bytes_of(p.network);
    if (net.size() != addr.size()) continue;
    int bits = p.prefix_bits;
    bool match = true;
    for (size_t i = 0; i < net.size() && bits > 0 && match; ++i, bits -= 8) {
      const uint8_t mask = bits >= 8 ? 0xff : static_cast<uint8_t>(0xff << (8 - bits));
      match = (net[i] & mask) == (addr[i] & mask);
    }
    if (match) return true;
  }
  return false;
}

bool host_name_allowed(std::string_view patterns, std::string_view host) {
  bool allowed = false;
  (void)for_each_item(patterns, [&](std::string_view item) -> Status {
    if (glob_match(item, host)) allowed = true;
    return Status::OK();
  });
  return allowed;
}

std::string Target::to_string() const {
  return host.find(':') != std::string::npos ? fmt::format("[{}]:{}", host, port)
                                             : fmt::format("{}:{}", host, port);
}

Result<Target> parse_target(std::string_view url) {
  auto refuse = [&](std::string_view why) {
    return Status(Errc::kInvalidArgument,
                  fmt::format("proxy_to_broker_url: {}", why));
  };
  if (url.empty()) return refuse("empty");
  if (url.size() > 300) return refuse("longer than 300 bytes");
  for (char ch : url) {
    if (static_cast<unsigned char>(ch) < 0x21 || static_cast<unsigned char>(ch) == 0x7f) {
      return refuse("control characters or blanks");
    }
  }
  for (std::string_view scheme : {"pulsar://", "pulsar+ssl://"}) {
    if (url.starts_with(scheme)) url.remove_prefix(scheme.size());
  }
  if (!url.empty() && url.back() == '/') url.remove_suffix(1);
  Target t;
  std::string_view port_text;
  if (url.starts_with('[')) {
    const size_t close = url.find(']');
    if (close == std::string_view::npos || close + 1 >= url.size() || url[close + 1] != ':') {
      return refuse("not [address]:port");
    }
    t.host = std::string(url.substr(1, close - 1));
    port_text = url.substr(close + 2);
    // Brackets hold an IPv6 literal only.
    if (t.host.find(':') == std::string::npos ||
        t.host.find_first_not_of("0123456789abcdefABCDEF:.") != std::string::npos) {
      return refuse("not [address]:port");
    }
  } else {
    const size_t colon = url.rfind(':');
    if (colon == std::string_view::npos || colon == 0) return refuse("not host:port");
    t.host = std::string(url.substr(0, colon));
    port_text = url.substr(colon + 1);
    if (t.host.find_first_of(":/@?#[]") != std::string::npos) return refuse("not host:port");
  }
  auto port = parse_number(port_text, 65535);
  if (!port || *port == 0 || t.host.empty()) return refuse("not host:port");
  t.port = static_cast<uint16_t>(*port);
  return t;
}

Result<TargetGuard> TargetGuard::create(std::string hosts, std::string_view ips,
                                        std::string_view ports) {
  TargetGuard g;
  g.hosts_ = std::move(hosts);
  auto i = parse_ip_patterns(ips);
  if (!i.ok()) return i.status();
  g.ips_ = std::move(*i);
  auto p = parse_port_list(ports);
  if (!p.ok()) return p.status();
  g.ports_ = std::move(*p);
  return g;
}

bool TargetGuard::name_allowed(const Target& target) const {
  const bool port_ok = std::any_of(ports_.begin(), ports_.end(), [&](const PortRange& r) {
    return target.port >= r.lo && target.port <= r.hi;
  });
  return port_ok && host_name_allowed(hosts_, target.host);
}

}  // namespace magnetar::proxy
