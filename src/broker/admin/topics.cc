// The persistent topics of a namespace, /admin/v2/persistent/{tenant}/{namespace}[/{topic}]:
//
//   GET    {tenant}/{namespace}                      the namespace's topics
//   PUT    .../{topic}                               create a non-partitioned topic
//   DELETE .../{topic}[?force=true]                  delete it (412 while in use, unless forced)
//   GET    .../{topic}/stats | internalStats | subscriptions | lastMessageId
//   POST   .../{topic}/terminate                     no more messages; the last message's id
//   PUT    .../{topic}/unload                        close it here (clients reconnect)
//   PUT    .../{topic}/compaction                    start a compaction (409 while one runs)
//   GET    .../{topic}/compaction                    {"status": NOT_RUN|RUNNING|SUCCESS|ERROR}
//   POST   .../{topic}/all_subscription/expireMessages/{seconds}
//
// Every topic route goes through topic_access.h (checks, fan-out, owner). A path under a topic
// that names no operation is answered, after those steps, 405 for the topic itself and 404
// below it, as before the router existed: the catch-all routes at the end. Permissions follow
// Pulsar's: listing needs a namespace-level consume grant (GET_TOPICS); stats and lookups a
// produce or consume grant on the topic; the subscription list and lastMessageId consume;
// create, delete, terminate and unload an admin of the tenant.

#include <fmt/format.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "broker/admin/admin_routes.h"
#include "broker/admin/policies_json.h"
#include "broker/admin/topic_access.h"
#include "broker/config/store_paths.h"
#include "broker/service/policies.h"
#include "broker/service/topic.h"
#include "broker/service/topic_compaction.h"
#include "broker/service/topic_registry.h"
#include "metadata/metadata_store.h"
#include "mledger/managed_ledger.h"
#include "mledger/stored_info.h"

namespace magnetar::broker::admin {

namespace {

using http::Action;
using http::PathParams;
using http::Permission;
using http::Request;
using http::Response;
using mledger::Position;

Json message_id_json(const Position& p, int partition_index = -1) {
  return Json{{"ledgerId", p.ledger_id.value()},
              {"entryId", p.entry_id.value()},
              {"partitionIndex", partition_index}};
}

class Topics {
 public:
  explicit Topics(std::shared_ptr<const BrokerContext> ctx) : ctx_(std::move(ctx)) {}

  Task<Response> list(const PathParams& p);
  Task<Response> create(const Request& req, const PathParams& p);
  Task<Response> remove(const Request& req, const PathParams& p);
  // GET .../stats, .../internalStats, .../subscriptions, .../lastMessageId and POST
  // .../terminate: `fn` on the loaded topic.
  Task<Response> on_topic(const Request& req, const PathParams& p, TopicFn fn);
  Task<Response> unload(const Request& req, const PathParams& p);
  Task<Response> expire_all(const Request& req, const PathParams& p);
  Task<Response> internal_info(const PathParams& p);
  Task<Response> backlog_size(const Request& req, const PathParams& p);
  Task<Response> message_id_at(const Request& req, const PathParams& p);
  // A path under a topic that names no operation: the steps, then `answer`.
  Task<Response> unknown(const Request& req, const PathParams& p, Response answer);

 private:
  const BrokerServices& broker() const { return ctx_->services; }

  const std::shared_ptr<const BrokerContext> ctx_;
};

Task<Response> Topics::list(const PathParams& p) {
  const std::string ns = fmt::format("{}/{}", p.at("tenant"), p.at("namespace"));
  auto exists = co_await broker().topics.namespace_exists(ns);
  if (!exists.ok()) co_return broker_error(exists.status());
  if (!*exists) co_return error(404, "Namespace does not exist");
  auto topics = co_await broker().topics.topics_of_namespace(ns);
  if (!topics.ok()) co_return broker_error(topics.status());
  co_return ok_json(Json(*topics));
}

Task<Response> Topics::create(const Request& req, const PathParams& p) {
  auto owned = co_await owned_topic(broker(), req, p);
  if (auto* answer = std::get_if<Response>(&owned)) co_return std::move(*answer);
  const protocol::TopicName name = std::get<protocol::TopicName>(std::move(owned));
  const BrokerServices& b = broker();
  auto n = co_await b.topics.partitions(name, false);
  if (n.ok() && *n > 0) co_return error(409, "This topic already exists");
  if (name.is_partition()) {
    // Only the partitions of a partitioned topic have such names (as Pulsar checks them);
    // they exist with it.
    const protocol::TopicName base = name.partitioned_topic_name();
    auto count = co_await b.topics.partitions(base, false);
    if (!count.ok()) co_return broker_error(count.status());
    if (*count <= 0) {
      co_return error(412, fmt::format("Can't create topic {} with \"-partition-\" followed by "
                                       "numeric value if there isn't a partitioned topic {} "
                                       "created.",
                                       name.to_string(), base.to_string()));
    }
    if (name.partition_index() >= *count) {
      co_return error(412, fmt::format("Can't create topic {} with \"-partition-\" followed by a "
                                       "number smaller than the number of partitions of "
                                       "partitioned topic {}",
                                       name.to_string(), base.to_string()));
    }
    co_return error(409, "This topic already exists");
  }
  auto exists =
      co_await (*b.stores.cluster).exists(mledger::managed_ledger_path(name.persistence_name()));
  if (!exists.ok()) co_return broker_error(exists.status());
  if (*exists) co_return error(409, "This topic already exists");
  auto topic = co_await b.topics.get_topic(name, true);
  if (!topic.ok()) co_return broker_error(topic.status());
  co_return no_content();
}

Task<Response> Topics::remove(const Request& req, const PathParams& p) {
  auto owned = co_await owned_topic(broker(), req, p);
  if (auto* answer = std::get_if<Response>(&owned)) co_return std::move(*answer);
  const protocol::TopicName name = std::get<protocol::TopicName>(std::move(owned));
  Status st = co_await broker().topics.delete_topic(name, query_flag(req, "force"));
  if (st.is(Errc::kNotFound)) co_return error(404, "Topic not found");
  if (st.is(Errc::kAlreadyExists)) co_return error(412, st.message());
  if (!st.ok()) co_return broker_error(st);
  co_return no_content();
}

Task<Response> Topics::on_topic(const Request& req, const PathParams& p, TopicFn fn) {
  auto owned = co_await owned_topic(broker(), req, p);
  if (auto* answer = std::get_if<Response>(&owned)) co_return std::move(*answer);
  const protocol::TopicName name = std::get<protocol::TopicName>(std::move(owned));
  co_return co_await with_topic(broker(), name, std::move(fn));
}

Task<Response> Topics::unload(const Request& req, const PathParams& p) {
  auto owned = co_await owned_topic(broker(), req, p);
  if (auto* answer = std::get_if<Response>(&owned)) co_return std::move(*answer);
  const protocol::TopicName name = std::get<protocol::TopicName>(std::move(owned));
  auto exists = co_await (*broker().stores.cluster)
                    .exists(mledger::managed_ledger_path(name.persistence_name()));
  if (!exists.ok()) co_return broker_error(exists.status());
  if (!*exists) co_return error(404, "Topic not found");
  const std::string key = name.to_string();
  std::function<bool(const protocol::TopicName&)> which = [key](const protocol::TopicName& t) {
    return t.to_string() == key;
  };
  (void)co_await broker().topics.close_topics(which);
  co_return no_content();
}

Task<Response> Topics::expire_all(const Request& req, const PathParams& p) {
  auto owned = co_await owned_topic(broker(), req, p);
  if (auto* answer = std::get_if<Response>(&owned)) co_return std::move(*answer);
  const protocol::TopicName name = std::get<protocol::TopicName>(std::move(owned));
  auto seconds = parse_int(p.at("seconds"));
  if (!seconds || *seconds < 0) co_return error(400, "expireTime must be seconds");
  TopicFn fn = [s = *seconds](std::shared_ptr<PersistentTopic> t) -> Task<Response> {
    (void)co_await expire_messages(*t, s, {});
    co_return no_content();
  };
  co_return co_await with_topic(broker(), name, fn);
}

Task<Response> Topics::internal_info(const PathParams& p) {
  auto checked = co_await checked_topic(broker(), p);
  if (auto* answer = std::get_if<Response>(&checked)) co_return std::move(*answer);
  const protocol::TopicName name = std::get<protocol::TopicName>(std::move(checked));
  metadata::MetadataStore& store = *broker().stores.cluster;
  auto n = co_await broker().topics.partitions(name, false);
  if (!n.ok()) co_return broker_error(n.status());
  if (*n > 0) {  // Pulsar's PartitionedManagedLedgerInfo: the partitions that have one
    Json partitions = Json::object();
    for (int i = 0; i < *n; ++i) {
      const protocol::TopicName partition = name.partition(i);
      auto info = co_await mledger::stored_ledger_info(store, partition.persistence_name());
      if (info.ok()) {
        partitions[partition.to_string()] = std::move(*info);
      } else if (!info.status().is(Errc::kNotFound)) {
        co_return broker_error(info.status());
      }
    }
    co_return ok_json(Json{{"version", 0}, {"partitions", std::move(partitions)}});
  }
  auto info = co_await mledger::stored_ledger_info(store, name.persistence_name());
  // (Pulsar answers a missing topic 500 here, a known bug: 404 is what it means.)
  if (!info.ok() && info.status().is(Errc::kNotFound)) {
    co_return error(404, fmt::format("Topic {} not found", name.to_string()));
  }
  if (!info.ok()) co_return broker_error(info.status());
  co_return ok_json(std::move(*info));
}

Task<Response> Topics::backlog_size(const Request& req, const PathParams& p) {
  auto owned = co_await owned_topic(broker(), req, p);
  if (auto* answer = std::get_if<Response>(&owned)) co_return std::move(*answer);
  const protocol::TopicName name = std::get<protocol::TopicName>(std::move(owned));
  auto n = co_await broker().topics.partitions(name, false);
  if (n.ok() && *n > 0) {
    co_return error(405, "calculate backlog size is not allowed for partitioned-topic");
  }
  auto body = parse_body(req);
  if (auto* r = std::get_if<Response>(&body)) co_return std::move(*r);
  const Json& id = std::get<0>(body);
  auto ledger = integer_in(member(id, "ledgerId"), INT64_MIN, INT64_MAX);
  auto entry = integer_in(member(id, "entryId"), INT64_MIN, INT64_MAX);
  if (!ledger || !entry) co_return error(400, "The body must be a message id: {ledgerId, entryId}");
  const Position from{LedgerId{*ledger}, EntryId{*entry}};
  TopicFn fn = [from](std::shared_ptr<PersistentTopic> t) -> Task<Response> {
    co_return ok_json(Json(t->ledger().estimated_backlog_size(from)));
  };
  co_return co_await with_topic(broker(), name, fn);
}

Task<Response> Topics::message_id_at(const Request& req, const PathParams& p) {
  auto owned = co_await owned_topic(broker(), req, p);
  if (auto* answer = std::get_if<Response>(&owned)) co_return std::move(*answer);
  const protocol::TopicName name = std::get<protocol::TopicName>(std::move(owned));
  auto n = co_await broker().topics.partitions(name, false);
  if (n.ok() && *n > 0) {
    co_return error(405, "Get message ID by timestamp on a partitioned topic is not allowed, "
                         "please try do it on specific topic partition");
  }
  auto timestamp = parse_int(p.at("timestamp"));
  if (!timestamp || *timestamp < 0) co_return error(400, "The timestamp must be milliseconds");
  TopicFn fn = [ms = static_cast<uint64_t>(*timestamp),
                partition = name.partition_index()](std::shared_ptr<PersistentTopic> t)
      -> Task<Response> {
    auto found = co_await t->position_for_time(ms);
    if (!found.ok()) co_return broker_error(found.status());
    co_return ok_json(message_id_json(*found, partition));
  };
  co_return co_await with_topic(broker(), name, fn);
}

Task<Response> Topics::unknown(const Request& req, const PathParams& p, Response answer) {
  auto owned = co_await owned_topic(broker(), req, p);
  if (auto* refused = std::get_if<Response>(&owned)) co_return std::move(*refused);
  co_return answer;
}

// GET .../stats, .../internalStats, .../subscriptions, .../lastMessageId; POST .../terminate.
void add_topic_reads(http::Router& router, const std::shared_ptr<Topics>& self) {
  const std::string topic(kTopicTemplate);
  auto read = [&](const char* method, const char* op, Permission permission, TopicFn fn) {
    router.add(
        method, topic + "/" + op, std::move(permission),
        [self, fn](const Request& req, const PathParams& p) { return self->on_topic(req, p, fn); });
  };
  read("GET", "stats", Permission::topic_op("persistent", Action::kLookup, "GET_STATS"),
       [](std::shared_ptr<PersistentTopic> t) -> Task<Response> { co_return ok_json(t->stats()); });
  read("GET", "internalStats", Permission::topic_op("persistent", Action::kLookup, "GET_STATS"),
       [](std::shared_ptr<PersistentTopic> t) -> Task<Response> {
         Json stats = t->ledger().internal_stats();
         stats["compactedLedger"] = t->compaction()->internal_stats_json();
         co_return ok_json(std::move(stats));
       });
  read("GET", "subscriptions",
       Permission::topic_op("persistent", Action::kConsume, "GET_SUBSCRIPTIONS"),
       [](std::shared_ptr<PersistentTopic> t) -> Task<Response> {
         co_return ok_json(Json(t->subscription_names()));
       });
  read("GET", "lastMessageId",
       Permission::topic_op("persistent", Action::kConsume, "PEEK_MESSAGES"),
       [](std::shared_ptr<PersistentTopic> t) -> Task<Response> {
         co_return ok_json(message_id_json(t->ledger().last_confirmed()));
       });
  // Compaction: PUT starts a run (409 while one runs), GET reports the last one.
  read("PUT", "compaction", Permission::topic_op("persistent", Action::kNone, "COMPACT"),
       [](std::shared_ptr<PersistentTopic> t) -> Task<Response> {
         if (t->compaction()->running()) co_return error(409, "Compaction already in progress");
         auto run = [t]() -> Task<void> { (void)co_await t->compaction()->run(); };
         if (!spawn_in(t->gate(), t->executor(), std::move(run))) {
           co_return error(503, "the broker is stopping");
         }
         co_return no_content();
       });
  read("GET", "compaction", Permission::topic_op("persistent", Action::kNone, "COMPACT"),
       [](std::shared_ptr<PersistentTopic> t) -> Task<Response> {
         co_return ok_json(t->compaction()->status_json());
       });
  read("POST", "terminate", Permission::topic_op("persistent", Action::kNone, "TERMINATE"),
       [](std::shared_ptr<PersistentTopic> t) -> Task<Response> {
         auto last = co_await t->terminate();
         if (!last.ok()) co_return broker_error(last.status());
         co_return ok_json(message_id_json(*last));
       });
}

// Below a topic, every path that names no operation, for every method: 404 after the steps
// (405 for the topic itself). The literal routes win over these.
void add_unknown_operations(http::Router& router, const std::shared_ptr<Topics>& self) {
  const Permission lookup = Permission::topic_op("persistent", Action::kLookup, "");
  auto add = [&](const char* method, const std::string& path, Response answer) {
    router.add(method, path, lookup, [self, answer](const Request& req, const PathParams& p) {
      return self->unknown(req, p, answer);
    });
  };
  const std::string topic(kTopicTemplate);
  add("GET", topic, method_not_allowed());
  add("POST", topic, method_not_allowed());
  std::string path = topic;
  for (const char* param : {"{operation}", "{arg1}", "{arg2}", "{arg3}"}) {
    path += std::string("/") + param;
    for (const char* method : {"GET", "PUT", "POST", "DELETE"}) add(method, path, not_found());
  }
}

}  // namespace

void add_topics(http::Router& router, std::shared_ptr<const BrokerContext> ctx) {
  auto self = std::make_shared<Topics>(std::move(ctx));
  const std::string topic(kTopicTemplate);
  // The request and its parameters outlive each returned task (the router awaits it).
  router.add("GET", "/admin/v2/persistent/{tenant}/{namespace}",
             Permission::namespace_op(Action::kConsume, "GET_TOPICS"),
             [self](const Request&, const PathParams& p) { return self->list(p); });
  router.add("PUT", topic, Permission::namespace_op(Action::kNone, "CREATE_TOPIC"),
             [self](const Request& req, const PathParams& p) { return self->create(req, p); });
  router.add("DELETE", topic, Permission::namespace_op(Action::kNone, "DELETE_TOPIC"),
             [self](const Request& req, const PathParams& p) { return self->remove(req, p); });
  add_topic_reads(router, self);
  router.add("PUT", topic + "/unload", Permission::topic_op("persistent", Action::kNone, "UNLOAD"),
             [self](const Request& req, const PathParams& p) { return self->unload(req, p); });
  router.add("POST", topic + "/all_subscription/expireMessages/{seconds}",
             Permission::topic_op("persistent", Action::kConsume, "EXPIRE_MESSAGES"),
             [self](const Request& req, const PathParams& p) { return self->expire_all(req, p); });
  const Permission stats = Permission::topic_op("persistent", Action::kLookup, "GET_STATS");
  router.add("GET", topic + "/internal-info", stats,
             [self](const Request&, const PathParams& p) { return self->internal_info(p); });
  router.add("PUT", topic + "/backlogSize", stats,
             [self](const Request& req, const PathParams& p) { return self->backlog_size(req, p); });
  router.add("GET", topic + "/messageid/{timestamp}",
             Permission::topic_op("persistent", Action::kConsume, "PEEK_MESSAGES"),
             [self](const Request& req, const PathParams& p) { return self->message_id_at(req, p); });
  add_unknown_operations(router, self);
}

Prefix persistent_prefix() {
  Prefix prefix;
  prefix.path = std::string(kPersistentPrefix);
  prefix.methods = {"GET", "PUT", "POST", "DELETE"};
  prefix.malformed = error(400, "Malformed URL");
  // The paths no route matches (an empty segment, or deeper than any template): the name
  // checks (an empty name is not valid), then 404.
  prefix.check = [](const Request& req,
                    const std::vector<std::string>& parts) -> std::optional<Response> {
    constexpr size_t kDeepest = 7;  // {tenant}/{namespace}/{topic} and four more
    if (!has_empty_segment(parts) && parts.size() <= kDeepest) return std::nullopt;
    if (parts.size() < 2) return not_found();
    const bool namespace_level =
        parts.size() == 2 ||
        (parts.size() == 3 && parts[2] == "partitioned" && req.method == "GET");
    if (namespace_level) {
      if (req.method != "GET") return method_not_allowed();
      // What the store answers for the namespace's node (a path with an empty component).
      Status st = metadata::validate_path(namespace_policies_path(parts[0] + "/" + parts[1]));
      if (!st.ok()) return broker_error(st);
      return error(404, "Namespace does not exist");
    }
    auto name = protocol::TopicName::parse(
        fmt::format("persistent://{}/{}/{}", parts[0], parts[1], parts[2]));
    if (!name.ok()) return error(412, name.status().message());
    if (parts.size() >= 5 && parts[3] == "subscription" && parts[4].empty()) {
      return error(412, "empty subscription name");
    }
    return not_found();
  };
  return prefix;
}

}  // namespace magnetar::broker::admin
