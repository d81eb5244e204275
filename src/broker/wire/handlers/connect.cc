// CONNECT: who the client is (authentication, when enabled), the protocol version both sides
// speak and the broker's limits.

#include <fmt/format.h>

#include <algorithm>
#include <boost/asio/redirect_error.hpp>
#include <cctype>
#include <chrono>
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
    const std::string tls_role = method == "tls" ? stream_->verified_peer_common_name() : "";
    const auto outcome = context_.authentication->authenticate(method, connect.auth_data(),
                                                               wall_clock_ms() / 1000, tls_role);
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
    auth_method_ = method;
    auth_expires_at_ = outcome.expires_at;
    supports_auth_refresh_ =
        connect.has_feature_flags() && connect.feature_flags().supports_auth_refresh();
    log_ = log_.with("role", role_);
    if (auth_expires_at_) {
      auto self = shared_from_this();
      spawn([self]() { return self->auth_refresh_loop(); });
    }
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
  // Untrusted: kept bounded (stats show it; Pulsar's clients send "Pulsar-CPP-v3.7.0" and
  // the like).
  constexpr size_t kMaxClientVersionLength = 256;
  client_version_ = connect.client_version().substr(0, kMaxClientVersionLength);
  log_ = log_.with("client", client_version_);
  log_.debug("connected, protocol version {}", protocol_version_);
}

Task<void> Connection::auth_refresh_loop() {
  auto self = shared_from_this();
  const auto interval = std::chrono::seconds(config_.authentication_refresh_check_seconds);
  while (!closed_ && !draining_) {
    auth_refresh_.expires_after(interval);
    boost::system::error_code ec;
    co_await auth_refresh_.async_wait(asio::redirect_error(asio::use_awaitable, ec));
    if (closed_ || draining_) co_return;
    if (!auth_expires_at_ || wall_clock_ms() / 1000 < *auth_expires_at_) continue;
    if (!supports_auth_refresh_) {
      log_.info("closing: the credentials expired and the client cannot refresh them");
      close();
      co_return;
    }
    if (auth_challenge_pending_) {
      log_.info("closing: the credentials expired and the refresh challenge went unanswered");
      close();
      co_return;
    }
    auth_challenge_pending_ = true;
    auto cmd = make_command(wire::BaseCommand::AUTH_CHALLENGE);
    auto* challenge = cmd.mutable_authchallenge();
    challenge->set_server_version(fmt::format("Pulsar Server (Magnetar {})", kVersion));
    challenge->set_protocol_version(protocol_version_);
    challenge->mutable_challenge()->set_auth_method_name(auth_method_);
    challenge->mutable_challenge()->set_auth_data("PulsarAuthRefresh");
    write_command(cmd);
    log_.debug("credentials expired: refresh challenge sent");
  }
}

bool Connection::handle_auth_response(const wire::CommandAuthResponse& response) {
  if (context_.authentication == nullptr || role_.empty()) {
    log_.warn("closing: AUTH_RESPONSE without authentication");
    return false;
  }
  const std::string method = response.response().has_auth_method_name()
                                 ? response.response().auth_method_name()
                                 : auth_method_;
  const auto outcome = context_.authentication->authenticate(
      method, response.response().auth_data(), wall_clock_ms() / 1000);
  if (!outcome.role || outcome.method != auth_method_) {
    log_.with("method", method.substr(0, 64))
        .warn("refreshed authentication failed: {}",
              outcome.role ? "another authentication method" : outcome.reason);
    send_error(kNoRequest, wire::AuthenticationError, kAuthenticationFailed);
    close_after_flush();
    return true;
  }
  if (*outcome.role != role_) {
    log_.warn("closing: principal cannot change during a refresh (new role {})", *outcome.role);
    return false;
  }
  auth_expires_at_ = outcome.expires_at;
  auth_challenge_pending_ = false;
  log_.debug("credentials refreshed");
  return true;
}

}  // namespace magnetar::broker
