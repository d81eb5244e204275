#include "broker/admin/topic_access.h"

#include <fmt/format.h>

#include "broker/namespace/namespace_service.h"
#include "broker/service/topic_registry.h"
#include "mledger/managed_ledger.h"

namespace magnetar::broker::admin {

namespace {

using http::PathParams;
using http::Request;
using http::Response;

// Whether an operation on a partitioned topic's own name goes to every partition: unload,
// compaction, the subscription list, and everything under subscription/ and all_subscription/.
bool is_fanned_out(const std::string& method, const std::vector<std::string>& rest) {
  const std::string& op = rest[0];
  if (rest.size() == 1) {
    return (op == "unload" && method == "PUT") || (op == "subscriptions" && method == "GET") ||
           (op == "compaction" && method == "PUT");
  }
  return op == "subscription" || op == "all_subscription";
}

bool non_persistent_path(const Request& req) {
  return std::string_view(req.path).starts_with(kNonPersistentPrefix);
}

}  // namespace

protocol::TopicDomain domain_of(const Request& req) {
  return non_persistent_path(req) ? protocol::TopicDomain::kNonPersistent
                                  : protocol::TopicDomain::kPersistent;
}

Task<OrResponse<protocol::TopicName>> checked_topic(BrokerServices broker, const PathParams& p,
                                                    protocol::TopicDomain domain) {
  const std::string ns = fmt::format("{}/{}", p.at("tenant"), p.at("namespace"));
  auto name = protocol::TopicName::parse(
      fmt::format("{}://{}/{}", protocol::to_string(domain), ns, p.at("topic")));
  if (!name.ok()) co_return error(412, name.status().message());
  auto exists = co_await broker.topics.namespace_exists(ns);
  if (!exists.ok()) co_return broker_error(exists.status());
  if (!*exists) co_return error(404, "Namespace does not exist");
  co_return std::move(*name);
}

Task<OrResponse<bool>> topic_exists(BrokerServices broker, protocol::TopicName name) {
  auto partitions = co_await broker.topics.partitions(name, false);
  if (!partitions.ok()) co_return broker_error(partitions.status());
  if (*partitions > 0) co_return true;
  auto exists =
      co_await broker.stores.cluster->exists(mledger::managed_ledger_path(name.persistence_name()));
  if (!exists.ok()) co_return broker_error(exists.status());
  co_return *exists;
}

Task<OrResponse<protocol::TopicName>> owned_topic(BrokerServices broker, const Request& req,
                                                  const PathParams& p) {
  auto checked = co_await checked_topic(broker, p, domain_of(req));
  if (auto* answer = std::get_if<Response>(&checked)) co_return std::move(*answer);
  protocol::TopicName name = std::get<protocol::TopicName>(std::move(checked));
  std::vector<std::string> rest = topic_rest(req);
  if (!name.is_partition() && !rest.empty() && is_fanned_out(req.method, rest)) {
    auto n = co_await broker.topics.partitions(name, false);
    if (!n.ok()) co_return broker_error(n.status());
    if (*n > 0) co_return co_await fan_out(broker, std::move(name), *n, std::move(rest), req);
  }
  auto owner = co_await broker.namespaces.lookup(name, query_flag(req, "authoritative"));
  if (!owner.ok()) co_return broker_error(owner.status());
  if (!owner->self) co_return redirect_to(*owner, req);
  co_return name;
}

std::vector<std::string> topic_rest(const Request& req) {
  auto parts = http::path_segments(
      req.path, non_persistent_path(req) ? kNonPersistentPrefix : kPersistentPrefix);
  if (!parts || parts->size() < 3) return {};
  return std::vector<std::string>(parts->begin() + 3, parts->end());
}

Task<Response> with_topic(BrokerServices broker, protocol::TopicName name, TopicFn fn,
                          bool auto_create) {
  // Work on the topic's loop joins the broker's task group: none starts once it stops.
  auto held = broker.gate.enter();
  if (!held) co_return error(503, "the broker is stopping");
  // A partition of an existing partitioned topic is created on first use.
  bool create = false;
  if (auto_create) {
    create = co_await broker.topics.may_auto_create(name);
  } else if (name.is_partition()) {
    auto n = co_await broker.topics.partitions(name.partitioned_topic_name(), false);
    create = n.ok() && name.partition_index() < *n;
  }
  auto topic = co_await broker.topics.get_topic(name, create);
  if (!topic.ok()) {
    if (topic.status().is(Errc::kNotFound)) co_return error(404, "Topic not found");
    co_return broker_error(topic.status());
  }
  std::shared_ptr<PersistentTopic> t = *topic;
  auto work = [fn = std::move(fn), t]() -> Task<Response> { co_return co_await fn(t); };
  auto r = co_await run_on<Response>(t->executor(), std::move(work));
  co_return std::move(*r);
}

Task<Response> with_non_persistent_topic(BrokerServices broker, protocol::TopicName name,
                                         NonPersistentTopicFn fn) {
  auto held = broker.gate.enter();
  if (!held) co_return error(503, "the broker is stopping");
  auto topic = co_await broker.topics.get_non_persistent_topic(name, false);
  if (!topic.ok()) {
    if (topic.status().is(Errc::kNotFound)) co_return error(404, "Topic not found");
    co_return broker_error(topic.status());
  }
  std::shared_ptr<NonPersistentTopic> t = *topic;
  auto work = [fn = std::move(fn), t]() -> Task<Response> { co_return co_await fn(t); };
  co_return std::move(*co_await run_on<Response>(t->executor(), std::move(work)));
}

}  // namespace magnetar::broker::admin
