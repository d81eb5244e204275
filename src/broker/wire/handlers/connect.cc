// CONNECT: who the client is (authentication, when enabled), the protocol version both sides
// speak and the broker's limits.
//
// A Pulsar proxy connects with its own credentials and names the client it speaks for in
// original_principal (pulsar-security-proxy.md §1.5). With authorization on, a role listed in
// proxyRoles must name one, and not another proxy role ("Invalid roles."); other roles that
// name one are logged and checked as themselves. With authenticateOriginalAuthData the
// client's forwarded credentials (original_auth_method/original_auth_data) are authenticated
// like a direct client's, and the role they prove is the original principal.

#include <fmt/format.h>

#include <algorithm>
#include <boost/asio/redirect_error.hpp>
#include <cctype>
#include <chrono>
#include <string>
#include <string_view>

#include "broker/service/authentication.h"
#include "broker/service/producer.h"
#include "broker/wire/connection.h"
#include "common/version.h"

namespace magnetar::broker {

namespace {
constexpr int kMaxProtocolVersion = 21;
// ERROR frames about the connection itself carry request id -1 (Pulsar's long -1).
constexpr uint64_t kNoRequest = ~uint64_t{0};
// Pulsar's AuthorizationError text for a proxy role without a usable original principal.
constexpr const char* kInvalidRoles = "Invalid roles.";

// Pulsar's StringUtils.isBlank: empty or white space only.
bool is_blank(std::string_view s) {
  return std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isspace(c) != 0; });
}

// A name a peer sent, as the log shows it: bounded.
std::string loggable(std::string_view name) {
  return std::string(name.substr(0, 256));
}

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
    if (!accept_original_principal(connect)) return;
    if (original_authenticated_ ? original_expires_at_ : auth_expires_at_) {
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

bool Connection::accept_original_principal(const wire::CommandConnect& connect) {
  std::string original = connect.original_principal();
  bool authenticated = false;
  std::string original_method;
  std::optional<int64_t> original_expires_at;
  if (connect.has_original_principal() && config_.authenticate_original_auth_data) {
    // The client's own credentials, forwarded by the proxy: the role they prove replaces the
    // name it gave. A TLS client's certificate ended at the proxy: there is no CN to offer.
    const std::string method =
        connect.has_original_auth_method() ? connect.original_auth_method() : "none";
    const auto outcome = context_.authentication->authenticate(method, connect.original_auth_data(),
                                                               wall_clock_ms() / 1000);
    if (!outcome.role) {
      log_.with("original_method", method.substr(0, 64))
          .warn("authentication of the client credentials the proxy forwarded failed: {}",
                outcome.reason);
      send_error(kNoRequest, wire::AuthenticationError, kAuthenticationFailed);
      close_after_flush();
      return false;
    }
    original = *outcome.role;
    if (outcome.method == "anonymous") {
      // No provider for the client's method and an anonymousUserRole: as in Pulsar, the whole
      // connection runs as the anonymous role, the proxy's included.
      role_ = *outcome.role;
      auth_expires_at_.reset();
      log_ = log_.with("runs_as", role_);
    } else {
      authenticated = true;
      original_method = outcome.method;
      original_expires_at = outcome.expires_at;
    }
  }
  if (!config_.is_proxy_role(role_)) {
    if (!is_blank(original) && original != role_) {
      log_.with("original_principal", loggable(original))
          .warn("ignoring the original principal sent by a role that is not one of proxyRoles");
    }
    return true;
  }
  if (context_.authorization != nullptr &&
      (is_blank(original) || config_.is_proxy_role(original))) {
    log_.with("original_principal", loggable(original))
        .warn("refused: a proxy role must name a client that is not itself a proxy role");
    send_error(kNoRequest, wire::AuthorizationError, kInvalidRoles);
    close_after_flush();
    return false;
  }
  if (is_blank(original)) return true;  // authorization off: nothing to check it against
  original_principal_ = std::move(original);
  original_authenticated_ = authenticated;
  original_auth_method_ = std::move(original_method);
  original_expires_at_ = original_expires_at;
  log_ = log_.with("original_principal", loggable(original_principal_));
  return true;
}

Task<void> Connection::auth_refresh_loop() {
  auto self = shared_from_this();
  const auto interval = std::chrono::seconds(config_.authentication_refresh_check_seconds);
  while (!closed_ && !draining_) {
    auth_refresh_.expires_after(interval);
    boost::system::error_code ec;
    co_await auth_refresh_.async_wait(asio::redirect_error(asio::use_awaitable, ec));
    if (closed_ || draining_) co_return;
    // The credentials that must stay valid: the client's when a proxy forwarded them and they
    // were authenticated, else the connection's own.
    const std::optional<int64_t>& expires_at =
        original_authenticated_ ? original_expires_at_ : auth_expires_at_;
    if (!expires_at || wall_clock_ms() / 1000 < *expires_at) continue;
    if (!original_principal_.empty() && !original_authenticated_) {
      log_.info(
          "closing: the proxy's credentials expired and it forwards no client credentials "
          "to refresh");
      close();
      co_return;
    }
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
  // On a proxied connection with authenticated client credentials, the answer is the
  // client's (relayed by the proxy) and renews those.
  const std::string& expected_method =
      original_authenticated_ ? original_auth_method_ : auth_method_;
  const std::string& expected_role = original_authenticated_ ? original_principal_ : role_;
  const std::string method = response.response().has_auth_method_name()
                                 ? response.response().auth_method_name()
                                 : expected_method;
  const auto outcome = context_.authentication->authenticate(
      method, response.response().auth_data(), wall_clock_ms() / 1000);
  if (!outcome.role || outcome.method != expected_method) {
    log_.with("method", method.substr(0, 64))
        .warn("refreshed authentication failed: {}",
              outcome.role ? "another authentication method" : outcome.reason);
    send_error(kNoRequest, wire::AuthenticationError, kAuthenticationFailed);
    close_after_flush();
    return true;
  }
  if (*outcome.role != expected_role) {
    log_.warn("closing: principal cannot change during a refresh (new role {})",
              loggable(*outcome.role));
    return false;
  }
  (original_authenticated_ ? original_expires_at_ : auth_expires_at_) = outcome.expires_at;
  auth_challenge_pending_ = false;
  log_.debug("credentials refreshed");
  return true;
}

}  // namespace magnetar::broker
