// CONNECT: who the client is (authentication, when enabled), the protocol version both sides
// speak and the broker's limits.

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <string>

#include "broker/service/authentication.h"
#include "broker/service/producer.h"
#include "broker/wire/connection.h"
#include "common/version.h"

namespace magnetar::broker {

namespace {
constexpr int kMaxProtocolVersion = 21;
// ERROR frames about the connection itself carry request id -1 (Pulsar's long -1).
constexpr uint64_t kNoRequest = ~uint64_t{0};

// The method a client names: auth_method_name, else the deprecated enum's name without its
// "AuthMethod" prefix, lower case ("AuthMethodYcaV1" -> "ycav1"), else "none".
std::string method_of(const wire::CommandConnect& connect) {
  if (connect.has_auth_method_name()) return connect.auth_method_name();
  if (!connect.has_auth_method()) return "none";
  std::string name = wire::AuthMethod_Name(connect.auth_method());
  if (name.size() > 10) name = name.substr(10);
  std::transform(name.begin(), name.end(), name.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return name;
}
}  // namespace

void Connection::handle_connect(const wire::CommandConnect& connect) {
  protocol_version_ = std::min(kMaxProtocolVersion, connect.protocol_version());
  if (context_.authentication != nullptr) {
    const std::string method = method_of(connect);
    const auto outcome =
        context_.authentication->authenticate(method, connect.auth_data(), wall_clock_ms() / 1000);
    if (!outcome.role) {
      // The reason goes to the log (never the credentials); the client gets Pulsar's text.
      log_.with("client", connect.client_version().substr(0, 64))
          .with("method", method.substr(0, 64))
          .warn("authentication failed: {}", outcome.reason);
      send_error(kNoRequest, wire::AuthenticationError, kAuthenticationFailed);
      close_after_flush();
      return;
    }
    role_ = *outcome.role;
    log_ = log_.with("role", role_);
  }
  broker_entry_metadata_ =
      connect.has_feature_flags() && connect.feature_flags().supports_broker_entry_metadata();
  connected_ = true;
  auto cmd = make_command(wire::BaseCommand::CONNECTED);
  auto* c = cmd.mutable_connected();
  c->set_server_version(fmt::format("Pulsar Server (Magnetar {})", kVersion));
  c->set_protocol_version(protocol_version_);
  c->set_max_message_size(config_.max_message_size);
  write_command(cmd);
  log_ = log_.with("client", connect.client_version());
  log_.debug("connected, protocol version {}", protocol_version_);
}

}  // namespace magnetar::broker
