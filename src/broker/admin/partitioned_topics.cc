// Partitioned topics, /admin/v2/persistent/{tenant}/{namespace}/...:
//
//   GET    partitioned                      the namespace's partitioned topics
//   GET    {topic}/partitions               {"partitions": N} (0: not partitioned)
//   PUT    {topic}/partitions               create with N partitions (a bare N, or
//                                           {"partitions": N, "properties": {...}})
//   POST   {topic}/partitions               more partitions (never fewer)
//   DELETE {topic}/partitions[?force=true]  delete every partition, each by its owner, then the
//                                           metadata (/admin/partitioned-topics/... in the
//                                           configuration store)
//   GET    {topic}/partitioned-stats[?perPartition=true]   the partitions' stats added up
//   POST   {topic}/createMissedPartitions   the managed-ledger nodes of partitions not used yet
//
// and the fan-out of operations on a partitioned topic's own name to its partitions
// (topic_access.h). These routes check the name and the namespace only: they are served by
// any broker. Reading needs a produce or consume grant on the topic (or, for the list, a
// namespace-level consume grant), creating, growing and deleting an admin of the tenant.

#include <fmt/format.h>

#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "broker/admin/admin_routes.h"
#include "broker/admin/topic_access.h"
#include "broker/config/store_paths.h"
#include "broker/namespace/namespace_service.h"
#include "broker/service/topic.h"
#include "broker/service/topic_registry.h"
#include "mledger/managed_ledger.h"
#include "mledger/stored_info.h"

namespace magnetar::broker::admin {

namespace {

// Sums `from`'s numbers into `into` for the keys in `keys` (missing ones count as 0).
void add_numbers(Json& into, const Json& from, std::initializer_list<const char*> keys) {
  for (const char* k : keys) {
    const Json* v = from.contains(k) ? &from[k] : nullptr;
    const double add = v && v->is_number() ? v->get<double>() : 0.0;
    if (v && v->is_number_integer()) {
      into[k] = into.value(k, int64_t{0}) + v->get<int64_t>();
    } else {
      into[k] = into.value(k, 0.0) + add;
    }
  }
}

// One partition's stats added to the partitioned topic's, as Pulsar's partitioned-stats
// aggregates them: rates, counters, sizes and backlogs summed; publishers listed; the
// subscriptions of the same name merged (their consumers listed); replication per cluster.
void add_partition_stats(Json& total, const Json& part) {
  add_numbers(total, part,
              {"msgRateIn", "msgThroughputIn", "msgRateOut", "msgThroughputOut", "msgInCounter",
               "bytesInCounter", "msgOutCounter", "bytesOutCounter", "storageSize",
               "backlogSize"});
  total["averageMsgSize"] = total.value("averageMsgSize", 0.0) + part.value("averageMsgSize", 0.0);
  if (!total.contains("publishers")) total["publishers"] = Json::array();
  if (part.contains("publishers") && part["publishers"].is_array()) {
    for (const auto& p : part["publishers"]) total["publishers"].push_back(p);
  }
  if (!total.contains("subscriptions")) total["subscriptions"] = Json::object();
  if (part.contains("subscriptions") && part["subscriptions"].is_object()) {
    for (const auto& [name, sub] : part["subscriptions"].items()) {
      Json& into = total["subscriptions"][name];
      if (!into.is_object()) {
        into = sub;
        continue;
      }
      add_numbers(into, sub,
                  {"msgRateOut", "msgThroughputOut", "msgRateRedeliver", "msgBacklog",
                   "backlogSize", "msgOutCounter", "bytesOutCounter", "unackedMessages"});
      if (sub.contains("consumers") && sub["consumers"].is_array()) {
        for (const auto& c : sub["consumers"]) into["consumers"].push_back(c);
      }
    }
  }
  if (!total.contains("replication")) total["replication"] = Json::object();
  if (part.contains("replication") && part["replication"].is_object()) {
    for (const auto& [cluster, repl] : part["replication"].items()) {
      Json& into = total["replication"][cluster];
      if (!into.is_object()) {
        into = repl;
        continue;
      }
      add_numbers(into, repl,
                  {"msgRateIn", "msgThroughputIn", "msgRateOut", "msgThroughputOut",
                   "replicationBacklog"});
    }
  }
  if (part.contains("deduplicationStatus")) total["deduplicationStatus"] = part["deduplicationStatus"];
}

// After the last partition: averageMsgSize is the partitions' mean, and a topic without any
// partition created yet still shows every field at zero.
void finish_partitioned_stats(Json& total, int partitions) {
  add_numbers(total, Json::object(),
              {"msgRateIn", "msgThroughputIn", "msgRateOut", "msgThroughputOut", "msgInCounter",
               "bytesInCounter", "msgOutCounter", "bytesOutCounter", "storageSize",
               "backlogSize"});
  total["averageMsgSize"] = partitions > 0 ? total.value("averageMsgSize", 0.0) / partitions : 0.0;
  for (const char* k : {"publishers"}) {
    if (!total.contains(k)) total[k] = Json::array();
  }
  for (const char* k : {"subscriptions", "replication"}) {
    if (!total.contains(k)) total[k] = Json::object();
  }
}

using http::Action;
using http::PathParams;
using http::Permission;
using http::Request;
using http::Response;

// A PUT or POST body: a bare int, or {"partitions": N, "properties": {...}}; the metadata to
// store ({"partitions": N[, "properties"]}), or 400/412.
OrResponse<Json> parse_partitions(const std::string& text) {
  auto body = Json::parse(text, nullptr, false);
  std::optional<int64_t> n;
  if (body.is_number_integer()) n = body.get<int64_t>();
  if (body.is_object() && body.contains("partitions") && body["partitions"].is_number_integer()) {
    n = body["partitions"].get<int64_t>();
  }
  if (!n) return error(400, "the body must be the number of partitions");
  if (*n <= 0 || *n > 100000) {
    return error(412, "Number of partitions should be more than 0");
  }
  Json meta = {{"partitions", *n}};
  if (body.is_object() && body.contains("properties") && body["properties"].is_object()) {
    meta["properties"] = body["properties"];
  }
  return meta;
}

class PartitionedTopics {
 public:
  explicit PartitionedTopics(std::shared_ptr<const BrokerContext> ctx) : ctx_(std::move(ctx)) {}

  Task<Response> list(const PathParams& p);
  Task<Response> get(const Request& req, const PathParams& p);
  Task<Response> create(const Request& req, const PathParams& p);
  Task<Response> create_missed(const PathParams& p);
  Task<Response> grow(const Request& req, const PathParams& p);
  Task<Response> remove(const Request& req, const PathParams& p);
  Task<Response> stats(const Request& req, const PathParams& p);

 private:
  // The stats of one partition from its owner: here, or its answer over HTTP (503 when it
  // does not answer).
  Task<Response> partition_stats(protocol::TopicName partition, LookupAnswer owner,
                                 const Request& req);
  const BrokerServices& broker() const { return ctx_->services; }
  metadata::MetadataStore& configuration() const { return *ctx_->services.stores.configuration; }

  const std::shared_ptr<const BrokerContext> ctx_;
};

Task<Response> PartitionedTopics::list(const PathParams& p) {
  const std::string ns = fmt::format("{}/{}", p.at("tenant"), p.at("namespace"));
  auto exists = co_await broker().topics.namespace_exists(ns);
  if (!exists.ok()) co_return broker_error(exists.status());
  if (!*exists) co_return error(404, "Namespace does not exist");
  auto children = co_await configuration().children(partitioned_topics_dir(ns));
  if (!children.ok()) co_return broker_error(children.status());
  Json out = Json::array();
  for (const auto& child : *children) {
    auto decoded = http::url_decode(child);
    out.push_back(fmt::format("persistent://{}/{}", ns, decoded ? *decoded : child));
  }
  co_return ok_json(out);
}

Task<Response> PartitionedTopics::get(const Request& req, const PathParams& p) {
  auto checked = co_await checked_topic(broker(), p, domain_of(req));
  if (auto* answer = std::get_if<Response>(&checked)) co_return std::move(*answer);
  const protocol::TopicName name = std::get<protocol::TopicName>(std::move(checked));
  auto n = co_await broker().topics.partitions(name, query_flag(req, "checkAllowAutoCreation"));
  if (!n.ok()) co_return broker_error(n.status());
  co_return ok_json(Json{{"partitions", *n}});
}

Task<Response> PartitionedTopics::create(const Request& req, const PathParams& p) {
  auto checked = co_await checked_topic(broker(), p, domain_of(req));
  if (auto* answer = std::get_if<Response>(&checked)) co_return std::move(*answer);
  const protocol::TopicName name = std::get<protocol::TopicName>(std::move(checked));
  auto parsed = parse_partitions(req.body);
  if (auto* answer = std::get_if<Response>(&parsed)) co_return std::move(*answer);
  const Json& meta = std::get<Json>(parsed);
  if (name.is_partition()) {
    co_return error(412, "a partition cannot be partitioned again");
  }
  auto ml = co_await (*broker().stores.cluster)
                .exists(mledger::managed_ledger_path(name.persistence_name()));
  if (ml.ok() && *ml) co_return error(409, "This topic already exists");
  metadata::PutOptions create;
  create.expected_version = -1;
  auto made =
      co_await configuration().put_recursive(partitioned_topic_path(name), meta.dump(), create);
  if (!made.ok()) {
    if (made.status().is(Errc::kBadVersion)) {
      co_return error(409, "This topic already exists");
    }
    co_return broker_error(made.status());
  }
  co_return no_content();
}

// As Pulsar: a name with a partition suffix is refused; a topic that is not partitioned (or
// does not exist) has nothing missing.
Task<Response> PartitionedTopics::create_missed(const PathParams& p) {
  auto checked = co_await checked_topic(broker(), p);
  if (auto* answer = std::get_if<Response>(&checked)) co_return std::move(*answer);
  const protocol::TopicName name = std::get<protocol::TopicName>(std::move(checked));
  if (name.is_partition()) {
    co_return error(412, "Partitioned Topic Name should not contain '-partition-'");
  }
  auto n = co_await broker().topics.partitions(name, false);
  if (!n.ok()) co_return broker_error(n.status());
  for (int i = 0; i < *n; ++i) {
    auto made = co_await mledger::create_stored_ledger(*broker().stores.cluster,
                                                       name.partition(i).persistence_name());
    if (!made.ok()) co_return broker_error(made.status());
  }
  co_return no_content();
}

Task<Response> PartitionedTopics::grow(const Request& req, const PathParams& p) {
  auto checked = co_await checked_topic(broker(), p);
  if (auto* answer = std::get_if<Response>(&checked)) co_return std::move(*answer);
  const protocol::TopicName name = std::get<protocol::TopicName>(std::move(checked));
  auto parsed = parse_partitions(req.body);
  if (auto* answer = std::get_if<Response>(&parsed)) co_return std::move(*answer);
  Json meta = std::get<Json>(std::move(parsed));
  if (name.is_partition()) {
    co_return error(412, "a partition cannot be partitioned again");
  }
  const std::string path = partitioned_topic_path(name);
  auto node = co_await configuration().get(path);
  if (!node.ok()) co_return broker_error(node.status());
  if (!node->has_value()) co_return error(404, "Partitioned topic does not exist");
  auto old = Json::parse((*node)->value, nullptr, false);
  const int64_t before = old.is_object() ? old.value("partitions", int64_t{0}) : 0;
  if (meta["partitions"].get<int64_t>() <= before) {
    co_return error(412, "The number of partitions can only be increased");
  }
  if (old.is_object() && old.contains("properties")) meta["properties"] = old["properties"];
  metadata::PutOptions cas;
  cas.expected_version = (*node)->stat.version;
  auto written = co_await configuration().put(path, meta.dump(), cas);
  if (!written.ok()) {
    if (written.status().is(Errc::kBadVersion)) {
      co_return error(409, "Concurrent modification");
    }
    co_return broker_error(written.status());
  }
  co_return no_content();
}

Task<Response> PartitionedTopics::remove(const Request& req, const PathParams& p) {
  auto checked = co_await checked_topic(broker(), p);
  if (auto* answer = std::get_if<Response>(&checked)) co_return std::move(*answer);
  const protocol::TopicName name = std::get<protocol::TopicName>(std::move(checked));
  const std::string path = partitioned_topic_path(name);
  auto node = co_await configuration().get(path);
  if (!node.ok()) co_return broker_error(node.status());
  if (!node->has_value()) co_return error(404, "Partitioned topic does not exist");
  auto meta = Json::parse((*node)->value, nullptr, false);
  const int n = meta.is_object() ? meta.value("partitions", 0) : 0;
  const bool force = query_flag(req, "force");
  for (int i = 0; i < n; ++i) {
    const protocol::TopicName partition = name.partition(i);
    auto owner = co_await broker().namespaces.lookup(partition, false);
    if (!owner.ok()) co_return broker_error(owner.status());
    if (!owner->self) {
      std::string target =
          fmt::format("/admin/v2/{}?force={}&authoritative={}", partition.rest_path(),
                      force ? "true" : "false", owner->authoritative ? "true" : "false");
      const std::string del = "DELETE", no_body;
      auto remote = co_await forward(owner->target, del, target, no_body, req);
      if (!remote.ok() || (remote->status >= 300 && remote->status != 404)) {
        co_return forwarded_failure(owner->target, remote);
      }
      continue;
    }
    Status st = co_await broker().topics.delete_topic(partition, force);
    if (st.is(Errc::kAlreadyExists)) co_return error(412, st.message());
    if (!st.ok() && !st.is(Errc::kNotFound)) co_return broker_error(st);
  }
  Status st = co_await configuration().remove(path);
  if (!st.ok() && !st.is(Errc::kNotFound)) co_return broker_error(st);
  co_return no_content();
}

Task<Response> PartitionedTopics::partition_stats(protocol::TopicName partition, LookupAnswer owner,
                                                  const Request& req) {
  if (owner.self && !partition.is_persistent()) {
    NonPersistentTopicFn stats = [](std::shared_ptr<NonPersistentTopic> t) -> Task<Response> {
      co_return ok_json(t->stats());
    };
    co_return co_await with_non_persistent_topic(broker(), partition, stats);
  }
  if (owner.self) {
    TopicFn stats = [](std::shared_ptr<PersistentTopic> t) -> Task<Response> {
      co_return ok_json(t->stats());
    };
    co_return co_await with_topic(broker(), partition, stats);
  }
  // Served by another broker (or to be placed there): ask it.
  std::string target = fmt::format("/admin/v2/{}/stats?authoritative={}", partition.rest_path(),
                                   owner.authoritative ? "true" : "false");
  const std::string get = "GET", no_body;
  auto remote = co_await forward(owner.target, get, target, no_body, req);
  if (!remote.ok()) co_return forwarded_failure(owner.target, remote);
  Response r;
  r.status = remote->status;
  r.body = std::move(remote->body);
  co_return r;
}

Task<Response> PartitionedTopics::stats(const Request& req, const PathParams& p) {
  auto checked = co_await checked_topic(broker(), p, domain_of(req));
  if (auto* answer = std::get_if<Response>(&checked)) co_return std::move(*answer);
  const protocol::TopicName name = std::get<protocol::TopicName>(std::move(checked));
  auto n = co_await broker().topics.partitions(name, false);
  if (!n.ok()) co_return broker_error(n.status());
  if (*n == 0) co_return error(404, "Partitioned Topic not found");
  Json out = {{"metadata", {{"partitions", *n}}}, {"partitions", Json::object()}};
  int counted = 0;
  for (int i = 0; i < *n; ++i) {
    const protocol::TopicName partition = name.partition(i);
    auto owner = co_await broker().namespaces.lookup(partition, false);
    if (!owner.ok()) co_return broker_error(owner.status());
    Response r = co_await partition_stats(partition, *owner, req);
    if (r.status == 404) continue;  // a partition not created yet
    if (r.status != 200) co_return r;
    auto j = Json::parse(r.body, nullptr, false);
    if (!j.is_object()) co_return error(500, "a partition's stats are not JSON");
    add_partition_stats(out, j);
    ++counted;
    if (query_flag(req, "perPartition")) out["partitions"][partition.to_string()] = std::move(j);
  }
  finish_partitioned_stats(out, counted);
  co_return ok_json(out);
}

}  // namespace

Task<Response> fan_out(BrokerServices broker, protocol::TopicName name, int partitions,
                       std::vector<std::string> rest, const Request& req) {
  std::string suffix;
  for (const auto& part : rest) suffix += fmt::format("/{}", http::url_encode(part));
  std::string query;
  for (const auto& [k, v] : req.query) {
    query +=
        fmt::format("{}{}={}", query.empty() ? "?" : "&", http::url_encode(k), http::url_encode(v));
  }
  const bool list = rest.size() == 1 && rest[0] == "subscriptions";
  std::set<std::string> names;
  // Each partition's request goes through this broker's own routes (and on to the
  // partition's owner by their 307s).
  const BrokerUrls& self = broker.namespaces.self();
  for (int i = 0; i < partitions; ++i) {
    const protocol::TopicName partition = name.partition(i);
    const std::string target =
        fmt::format("/admin/v2/{}{}{}", partition.rest_path(), suffix, query);
    auto r = co_await forward(self, req.method, target, req.body, req);
    const bool skippable = r.ok() && r->status == 404 && (list || rest[0] == "unload");
    if (skippable) continue;  // a partition not created yet
    if (!r.ok() || r->status >= 300) co_return forwarded_failure(self, r);
    if (list) {
      auto j = Json::parse(r->body, nullptr, false);
      if (j.is_array()) {
        for (const auto& s : j) {
          if (s.is_string()) names.insert(s.get<std::string>());
        }
      }
    }
  }
  if (list) co_return ok_json(Json(names));
  co_return no_content();
}

void add_partitioned_topics(http::Router& router, std::shared_ptr<const BrokerContext> ctx) {
  auto self = std::make_shared<PartitionedTopics>(std::move(ctx));
  const std::string partitions = std::string(kTopicTemplate) + "/partitions";
  const Permission lookup = Permission::topic_op("persistent", Action::kLookup, "GET_METADATA");
  // The request and its parameters outlive each returned task (the router awaits it).
  router.add("GET", "/admin/v2/persistent/{tenant}/{namespace}/partitioned",
             Permission::namespace_op(Action::kConsume, "GET_TOPICS"),
             [self](const Request&, const PathParams& p) { return self->list(p); });
  router.add("GET", partitions, lookup,
             [self](const Request& req, const PathParams& p) { return self->get(req, p); });
  router.add("PUT", partitions, Permission::namespace_op(Action::kNone, "CREATE_TOPIC"),
             [self](const Request& req, const PathParams& p) { return self->create(req, p); });
  router.add("POST", partitions,
             Permission::topic_op("persistent", Action::kNone, "UPDATE_METADATA"),
             [self](const Request& req, const PathParams& p) { return self->grow(req, p); });
  router.add("DELETE", partitions, Permission::namespace_op(Action::kNone, "DELETE_TOPIC"),
             [self](const Request& req, const PathParams& p) { return self->remove(req, p); });
  router.add("POST", std::string(kTopicTemplate) + "/createMissedPartitions",
             Permission::topic_op("persistent", Action::kNone, "UPDATE_METADATA"),
             [self](const Request&, const PathParams& p) { return self->create_missed(p); });
  router.add("GET", std::string(kTopicTemplate) + "/partitioned-stats",
             Permission::topic_op("persistent", Action::kLookup, "GET_STATS"),
             [self](const Request& req, const PathParams& p) { return self->stats(req, p); });
  // Non-persistent partitioned topics: their metadata and the partitions' stats (the
  // partitions themselves live in memory, on their owners).
  const std::string np_topic = "/admin/v2/non-persistent/{tenant}/{namespace}/{topic}";
  router.add("GET", np_topic + "/partitions",
             Permission::topic_op("non-persistent", Action::kLookup, "GET_METADATA"),
             [self](const Request& req, const PathParams& p) { return self->get(req, p); });
  router.add("PUT", np_topic + "/partitions",
             Permission::namespace_op(Action::kNone, "CREATE_TOPIC"),
             [self](const Request& req, const PathParams& p) { return self->create(req, p); });
  router.add("GET", np_topic + "/partitioned-stats",
             Permission::topic_op("non-persistent", Action::kLookup, "GET_STATS"),
             [self](const Request& req, const PathParams& p) { return self->stats(req, p); });
}

}  // namespace magnetar::broker::admin
