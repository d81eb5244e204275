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

#include <fmt/format.h>

#include "broker/service/authorization.h"
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

}  // namespace

Task<std::optional<ServerFailure>> Connection::authorize_topic(protocol::TopicName topic,
                                                               auth::ActionSet actions,
                                                               std::string denied) {
  if (context_.authorization == nullptr) co_return std::nullopt;
  auto verdict = co_await context_.authorization->topic_action(role_, topic, std::move(actions));
  auto failure = failure_of(verdict, topic.namespace_name(), denied, topic.to_string());
  if (failure) log_.with("topic", topic.to_string()).info("not authorized: {}", failure->message);
  co_return failure;
}

Task<std::optional<ServerFailure>> Connection::authorize_subscription(protocol::TopicName topic,
                                                                      std::string subscription,
                                                                      std::string denied) {
  if (context_.authorization == nullptr) co_return std::nullopt;
  auto verdict = co_await context_.authorization->subscribe(role_, topic, subscription);
  auto failure = failure_of(verdict, topic.namespace_name(), denied, topic.to_string());
  if (failure) {
    log_.with("topic", topic.to_string())
        .with("subscription", subscription)
        .info("not authorized: {}", failure->message);
  }
  co_return failure;
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
  auto verdict = co_await context_.authorization->namespace_action(role_, ns, std::move(actions));
  auto failure = failure_of(verdict, ns, denied, "");
  if (failure) log_.with("namespace", ns).info("not authorized: {}", failure->message);
  co_return failure;
}

}  // namespace magnetar::broker
