// The non-persistent topics of a namespace, /admin/v2/non-persistent/{tenant}/{namespace}[/...]:
//
//   GET    {tenant}/{namespace}          the namespace's non-persistent topics loaded on this
//                                        broker, and every partition of its non-persistent
//                                        partitioned topics
//   PUT    .../{topic}                   create a non-partitioned topic: loaded, in memory, on
//                                        its owner (as Pulsar's; it is gone after an unload)
//   DELETE .../{topic}[?force=true]      unload it (412 while in use, unless forced)
//   GET    .../{topic}/stats             Pulsar's NonPersistentTopicStats (404 when not loaded)
//   PUT    .../{topic}/unload            close it here (clients reconnect; nothing is kept)
//
// {topic}/partitions and {topic}/partitioned-stats are partitioned_topics.cc's. Every topic
// route goes through topic_access.h (name, namespace, fan-out, owner), with the persistent
// routes' permissions.

#include <fmt/format.h>

#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "broker/admin/admin_routes.h"
#include "broker/admin/topic_access.h"
#include "broker/config/store_paths.h"
#include "broker/service/non_persistent_topic.h"
#include "broker/service/topic_registry.h"
#include "metadata/metadata_store.h"

namespace magnetar::broker::admin {

namespace {

using http::Action;
using http::PathParams;
using http::Permission;
using http::Request;
using http::Response;

class NonPersistentTopics {
 public:
  explicit NonPersistentTopics(std::shared_ptr<const BrokerContext> ctx) : ctx_(std::move(ctx)) {}

  Task<Response> list(const PathParams& p);
  Task<Response> create(const Request& req, const PathParams& p);
  Task<Response> remove(const Request& req, const PathParams& p);
  Task<Response> stats(const Request& req, const PathParams& p);
  Task<Response> unload(const Request& req, const PathParams& p);

 private:
  const BrokerServices& broker() const { return ctx_->services; }
  // The topic when this broker owns it, or the answer (topic_access.h steps 1 to 3).
  Task<OrResponse<protocol::TopicName>> owned(const Request& req, const PathParams& p) {
    return owned_topic(broker(), req, p);
  }

  const std::shared_ptr<const BrokerContext> ctx_;
};

Task<Response> NonPersistentTopics::list(const PathParams& p) {
  const std::string ns = fmt::format("{}/{}", p.at("tenant"), p.at("namespace"));
  auto exists = co_await broker().topics.namespace_exists(ns);
  if (!exists.ok()) co_return broker_error(exists.status());
  if (!*exists) co_return error(404, "Namespace does not exist");
  auto names = co_await broker().topics.topics_of_namespace(ns, TopicRegistry::Listed::kNonPersistent);
  if (!names.ok()) co_return broker_error(names.status());
  co_return ok_json(Json(*names));
}

Task<Response> NonPersistentTopics::create(const Request& req, const PathParams& p) {
  auto checked = co_await owned(req, p);
  if (auto* answer = std::get_if<Response>(&checked)) co_return std::move(*answer);
  const protocol::TopicName name = std::get<protocol::TopicName>(std::move(checked));
  auto n = co_await broker().topics.partitions(name, false);
  if (!n.ok()) co_return broker_error(n.status());
  if (*n > 0) co_return error(409, "This topic already exists");
  if (name.is_partition()) {
    co_return error(412, fmt::format("Can't create topic {} with \"-partition-\" followed by "
                                     "numeric value",
                                     name.to_string()));
  }
  auto loaded = co_await broker().topics.get_non_persistent_topic(name, false);
  if (loaded.ok()) co_return error(409, "This topic already exists");
  auto made = co_await broker().topics.get_non_persistent_topic(name, true);
  if (!made.ok()) co_return broker_error(made.status());
  co_return no_content();
}

Task<Response> NonPersistentTopics::remove(const Request& req, const PathParams& p) {
  auto checked = co_await owned(req, p);
  if (auto* answer = std::get_if<Response>(&checked)) co_return std::move(*answer);
  const protocol::TopicName name = std::get<protocol::TopicName>(std::move(checked));
  Status st = co_await broker().topics.delete_topic(name, query_flag(req, "force"));
  if (st.is(Errc::kNotFound)) co_return error(404, "Topic not found");
  if (st.is(Errc::kAlreadyExists)) co_return error(412, st.message());
  if (!st.ok()) co_return broker_error(st);
  co_return no_content();
}

Task<Response> NonPersistentTopics::stats(const Request& req, const PathParams& p) {
  auto checked = co_await owned(req, p);
  if (auto* answer = std::get_if<Response>(&checked)) co_return std::move(*answer);
  const protocol::TopicName name = std::get<protocol::TopicName>(std::move(checked));
  NonPersistentTopicFn fn = [](std::shared_ptr<NonPersistentTopic> t) -> Task<Response> {
    co_return ok_json(t->stats());
  };
  co_return co_await with_non_persistent_topic(broker(), name, std::move(fn));
}

Task<Response> NonPersistentTopics::unload(const Request& req, const PathParams& p) {
  auto checked = co_await owned(req, p);
  if (auto* answer = std::get_if<Response>(&checked)) co_return std::move(*answer);
  const protocol::TopicName name = std::get<protocol::TopicName>(std::move(checked));
  const std::string key = name.to_string();
  std::function<bool(const protocol::TopicName&)> which = [key](const protocol::TopicName& t) {
    return t.to_string() == key;
  };
  const int closed = co_await broker().topics.close_topics(which);
  if (closed == 0) co_return error(404, "Topic not found");
  co_return no_content();
}

}  // namespace

void add_non_persistent_topics(http::Router& router, std::shared_ptr<const BrokerContext> ctx) {
  auto self = std::make_shared<NonPersistentTopics>(std::move(ctx));
  const std::string topic = "/admin/v2/non-persistent/{tenant}/{namespace}/{topic}";
  // The request and its parameters outlive each returned task (the router awaits it).
  router.add("GET", "/admin/v2/non-persistent/{tenant}/{namespace}",
             Permission::namespace_op(Action::kConsume, "GET_TOPICS"),
             [self](const Request&, const PathParams& p) { return self->list(p); });
  router.add("PUT", topic, Permission::namespace_op(Action::kNone, "CREATE_TOPIC"),
             [self](const Request& req, const PathParams& p) { return self->create(req, p); });
  router.add("DELETE", topic, Permission::namespace_op(Action::kNone, "DELETE_TOPIC"),
             [self](const Request& req, const PathParams& p) { return self->remove(req, p); });
  router.add("GET", topic + "/stats",
             Permission::topic_op("non-persistent", Action::kLookup, "GET_STATS"),
             [self](const Request& req, const PathParams& p) { return self->stats(req, p); });
  router.add("PUT", topic + "/unload",
             Permission::topic_op("non-persistent", Action::kNone, "UNLOAD"),
             [self](const Request& req, const PathParams& p) { return self->unload(req, p); });
}

Prefix non_persistent_prefix() {
  Prefix prefix;
  prefix.path = std::string(kNonPersistentPrefix);
  prefix.methods = {"GET", "PUT", "POST", "DELETE"};
  prefix.malformed = error(400, "Malformed URL");
  return prefix;
}

}  // namespace magnetar::broker::admin
