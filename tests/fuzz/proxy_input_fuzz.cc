// What the proxy reads from a client before it splices: frames bounded as the proxy bounds
// them (metadata not parsed), and in a CONNECT the proxy_to_broker_url it checks against the
// allow-lists. Any bytes: no crash; a target that parses prints back to itself; the guard
// answers for it without touching the network.

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "protocol/frame.h"
#include "proxy/target_guard.h"

namespace {

const magnetar::proxy::TargetGuard& guard() {
  static const auto g =
      magnetar::proxy::TargetGuard::create("*.brokers.internal,127.0.0.1", "127.0.0.0/8,fd00::/8",
                                           "6650,6651,7000-7010")
          .value();
  return g;
}

void check_target(std::string_view url) {
  auto t = magnetar::proxy::parse_target(url);
  if (!t.ok()) return;
  if (t->port == 0 || t->host.empty()) std::abort();
  auto again = magnetar::proxy::parse_target(t->to_string());
  if (!again.ok() || again->host != t->host || again->port != t->port) std::abort();
  (void)guard().name_allowed(*t);
  boost::system::error_code ec;
  auto ip = boost::asio::ip::make_address(t->host, ec);
  if (!ec) (void)guard().address_allowed(ip);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  check_target(bytes);
  (void)magnetar::proxy::host_name_allowed(bytes, "b1.brokers.internal");
  (void)magnetar::proxy::parse_port_list(bytes);
  (void)magnetar::proxy::parse_ip_patterns(bytes);
  magnetar::protocol::FrameDecoder decoder(magnetar::protocol::DecoderOptions{64 * 1024, false});
  decoder.feed(magnetar::Buffer::copy_of(data, size));
  for (int i = 0; i < 64; ++i) {
    auto frame = decoder.next();
    if (!frame.ok() || !frame->has_value()) break;
    const auto& command = (**frame).command;
    if (command.has_connect() && command.connect().has_proxy_to_broker_url()) {
      check_target(command.connect().proxy_to_broker_url());
    }
  }
  (void)decoder.take_buffered();
  return 0;
}
