// Authorization of the commands that name a topic or namespace (authorizationEnabled): the
// check each needs and Pulsar's replies (../shared/reference/pulsar-security-proxy.md §5.3).
//
//   PARTITIONED_METADATA, LOOKUP   produce or consume on the topic
//   PRODUCER                       produce (and consume on initial_subscription_name)
//   SUBSCRIBE                      consume through the subscription's rules
//   GET_TOPICS_OF_NAMESPACE        consume granted on the namespace itself
//
// A denial is AuthorizationError with the command's text. A store that cannot be read is
// ServiceNotReady, so that clients retry instead of taking an outage for a refusal (Pulsar
// answers AuthorizationError there).
//
// A connection from a Pulsar proxy (its role one of proxyRoles) is checked twice: as the
// client it speaks for (the original principal) and as the proxy; both must pass (§1.5).
// LOOKUP and PARTITIONED_METADATA may name their own original principal (older proxies
// forward one per command on a shared connection): it replaces the connection's for that
// command, under the same rules as CONNECT's.

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <string_view>
#include <vector>

#include "broker/service/authentication.h"
#include "broker/service/authorization.h"
#include "broker/service/producer.h"
#include "broker/wire/connection.h"

namespace magnetar::broker {

namespace {

std::optional<ServerFailure> failure_of(const Result<Verdict>& verdict, const std::string& ns,
                                        const std::string& denied, const std::string& topic) {
  if (!verdict.ok()) {
    return ServerFailure{wire::ServiceNotReady,
                         fmt::format("Exception occurred while trying to authorize: {}",
                                     verdict.status().message())};
  }
  switch (*verdict) {
    case Verdict::kAllowed:
      return std::nullopt;
    case Verdict::kDenied:
      return ServerFailure{wire::AuthorizationError, denied};
    case Verdict::kPrefixRequired:
      return ServerFailure{
          wire::AuthorizationError,
          fmt::format("Failed to create consumer - The subscription name needs to be prefixed "
                      "by the authentication role, like <role>-xxxx for topic: {}",
                      topic)};
    case Verdict::kNoTenant:
    case Verdict::kNoNamespace:
      return ServerFailure{wire::TopicNotFound,
                           fmt::format("Tenant or namespace or topic does not exist: {}", ns)};
  }
  return ServerFailure{wire::AuthorizationError, denied};
}

// Pulsar's StringUtils.isBlank: empty or white space only.
bool blank(std::string_view s) {
  return std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isspace(c) != 0; });
}

// The roles a check must pass: the connection's, and the original principal when there is
// one (first: the client is the more likely to lack a grant).
std::vector<std::string> roles_to_check(const std::string& role, const std::string& original) {
  if (original.empty()) return {role};
  return {original, role};
}

}  // namespace

bool Connection::is_super_user() const {
  if (context_.authorization == nullptr) return false;
  return context_.authorization->is_super_user(role_) &&
         (original_principal_.empty() ||
          context_.authorization->is_super_user(original_principal_));
}

std::variant<std::string, ServerFailure> Connection::command_original_principal(
    const ForwardedClient& forwarded, const std::string& invalid) {
  if (!forwarded.principal || context_.authentication == nullptr || !config_.is_proxy_role(role_)) {
    return original_principal_;
  }
  std::string original = *forwarded.principal;
  if (config_.authenticate_original_auth_data) {
    const auto outcome = context_.authentication->authenticate(
        forwarded.auth_method, forwarded.auth_data, wall_clock_ms() / 1000);
    if (!outcome.role) {
      log_.with("original_method", forwarded.auth_method.substr(0, 64))
          .warn("authentication of the client credentials the proxy forwarded failed: {}",
                outcome.reason);
      return ServerFailure{wire::AuthenticationError, kAuthenticationFailed};
    }
    original = *outcome.role;
  }
  if (context_.authorization != nullptr && (blank(original) || config_.is_proxy_role(original))) {
    log_.with("original_principal", original.substr(0, 256))
        .warn("refused: a proxy role must name a client that is not itself a proxy role");
    return ServerFailure{wire::AuthorizationError, invalid};
  }
  return blank(original) ? original_principal_ : original;
}

Task<std::optional<ServerFailure>> Connection::authorize_topic(
    protocol::TopicName topic, auth::ActionSet actions, std::string denied,
    std::optional<std::string> original) {
  if (context_.authorization == nullptr) co_return std::nullopt;
  // Named, not a temporary of the loop (GCC 12 and temporaries around co_await).
  const std::vector<std::string> roles =
      roles_to_check(role_, original.value_or(original_principal_));
  for (const std::string& role : roles) {
    auto verdict = co_await context_.authorization->topic_action(role, topic, actions);
    auto failure = failure_of(verdict, topic.namespace_name(), denied, topic.to_string());
    if (failure) {
      log_.with("topic", topic.to_string())
          .with("checked_role", role.substr(0, 256))
          .info("not authorized: {}", failure->message);
      co_return failure;
    }
  }
  co_return std::nullopt;
}

Task<std::optional<ServerFailure>> Connection::authorize_subscription(protocol::TopicName topic,
                                                                      std::string subscription,
                                                                      std::string denied) {
  if (context_.authorization == nullptr) co_return std::nullopt;
  const std::vector<std::string> roles = roles_to_check(role_, original_principal_);
  for (const std::string& role : roles) {
    auto verdict = co_await context_.authorization->subscribe(role, topic, subscription);
    auto failure = failure_of(verdict, topic.namespace_name(), denied, topic.to_string());
    if (failure) {
      log_.with("topic", topic.to_string())
          .with("subscription", subscription)
          .with("checked_role", role.substr(0, 256))
          .info("not authorized: {}", failure->message);
      co_return failure;
    }
  }
  co_return std::nullopt;
}

Task<std::optional<ServerFailure>> Connection::authorize_namespace(std::string ns,
                                                                   auth::ActionSet actions,
                                                                   std::string denied) {
  if (context_.authorization == nullptr) co_return std::nullopt;
  const size_t slash = ns.find('/');
  if (slash == 0 || slash == std::string::npos || slash + 1 == ns.size() ||
      ns.find('/', slash + 1) != std::string::npos) {
    co_return ServerFailure{
        wire::TopicNotFound,
        fmt::format("Tenant or namespace or topic does not exist: {}", ns.substr(0, 256))};
  }
  const std::vector<std::string> roles = roles_to_check(role_, original_principal_);
  for (const std::string& role : roles) {
    auto verdict = co_await context_.authorization->namespace_action(role, ns, actions);
    auto failure = failure_of(verdict, ns, denied, "");
    if (failure) {
      log_.with("namespace", ns)
          .with("checked_role", role.substr(0, 256))
          .info("not authorized: {}", failure->message);
      co_return failure;
    }
  }
  co_return std::nullopt;
}

}  // namespace magnetar::broker
