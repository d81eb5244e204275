#include "broker/admin/broker_routes.h"

#include <fmt/format.h>

#include <charconv>
#include <nlohmann/json.hpp>

#include "broker/service/topic_registry.h"
#include "broker/namespace/load_manager.h"
#include "broker/namespace/namespace_service.h"
#include "broker/service/entry_metadata.h"
#include "broker/service/subscription.h"
#include "broker/service/policies.h"
#include "broker/service/topic.h"
#include "http/http_client.h"
#include "mledger/managed_ledger.h"
#include "protocol/frame.h"
#include "protocol/message_id.h"

namespace magnetar::broker {

namespace {

using http::Request;
using mledger::Position;
using http::Response;
using Json = nlohmann::json;

constexpr std::string_view kLookupPrefix = "/lookup/v2/topic/";
constexpr std::string_view kPersistentPrefix = "/admin/v2/persistent/";
constexpr std::string_view kBrokersPrefix = "/admin/v2/brokers/";

Response no_content() {
  Response r;
  r.status = 204;
  return r;
}

// Names come from URLs and clients: bytes that are not UTF-8 are replaced, never thrown on.
std::string dump(const Json& j) { return j.dump(-1, ' ', false, Json::error_handler_t::replace); }

Response ok_json(const Json& j) { return Response::json(200, dump(j)); }

// A failed broker call as an HTTP answer.
Response status_response(const Status& st) {
  if (st.is(Errc::kNotFound)) return Response::error(404, st.message());
  if (st.is(Errc::kAlreadyExists)) return Response::error(409, st.message());
  if (st.is(Errc::kInvalidArgument)) return Response::error(412, st.message());
  if (st.is(Errc::kUnavailable) || st.is(Errc::kTimeout)) {
    return Response::error(503, st.message());
  }
  if (st.is(Errc::kNotSupported)) return Response::error(501, st.message());
  return Response::error(500, st.message());
}

std::optional<int64_t> parse_int(std::string_view s) {
  int64_t v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return v;
}

bool query_flag(const Request& req, const std::string& key) {
  auto it = req.query.find(key);
  return it != req.query.end() && it->second == "true";
}

// The same request on another broker.
Response redirect_to(const LookupAnswer& owner, const Request& req) {
  std::string target = owner.target.http_url + req.path;
  std::string query;
  for (const auto& [k, v] : req.query) {
    if (k == "authoritative") continue;
    query += fmt::format("{}{}={}", query.empty() ? "" : "&", http::url_encode(k),
                         http::url_encode(v));
  }
  query += fmt::format("{}authoritative={}", query.empty() ? "" : "&",
                       owner.authoritative ? "true" : "false");
  Response r;
  r.status = 307;
  r.headers["Location"] = target + "?" + query;
  return r;
}

// One request to another broker's web service: the owner of something, or the broker the
// placement sends an unowned bundle to (whose 307s, on to the chosen owner, are followed).
// Every argument must outlive the call (the caller's named locals).
Task<Result<http::HttpResponse>> forward(const BrokerUrls& owner, const std::string& method,
                                         const std::string& target, const std::string& body) {
  static const http::HttpClient client([] {
    http::ClientOptions o;
    o.max_redirects = 5;
    o.user_agent = "magnetar-broker";
    return o;
  }());
  http::HttpRequest request;
  request.method = method;
  request.url = owner.http_url + target;
  request.body = body;
  auto response = co_await client.send(std::move(request));
  co_return response;
}

// A forwarded answer that is not a success, as our answer.
Response forwarded_failure(const BrokerUrls& owner, const Result<http::HttpResponse>& r) {
  if (!r.ok()) {
    return Response::error(503, fmt::format("broker {} did not answer: {}", owner.http_url,
                                            r.status().message()));
  }
  Response out;
  out.status = r->status;
  out.content_type = r->header("content-type");
  out.body = r->body;
  return out;
}

// ISO-8601 UTC with milliseconds, as Pulsar's X-Pulsar-publish-time.
std::string iso_time(uint64_t epoch_ms) {
  const std::time_t secs = static_cast<std::time_t>(epoch_ms / 1000);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  return fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z", tm.tm_year + 1900,
                     tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                     epoch_ms % 1000);
}

Json message_id_json(const Position& p) {
  return Json{{"ledgerId", p.ledger_id}, {"entryId", p.entry_id}, {"partitionIndex", -1}};
}

// A MessageId body ({"ledgerId", "entryId"}); absent -> latest.
std::optional<Position> parse_position(const std::string& body, bool* malformed) {
  *malformed = false;
  if (body.empty()) return std::nullopt;
  auto j = Json::parse(body, nullptr, false);
  if (!j.is_object() || !j.contains("ledgerId") || !j.contains("entryId") ||
      !j["ledgerId"].is_number_integer() || !j["entryId"].is_number_integer()) {
    *malformed = true;
    return std::nullopt;
  }
  return Position{j["ledgerId"].get<int64_t>(), j["entryId"].get<int64_t>()};
}

class Routes {
 public:
  Routes(BrokerServices services, LoadManager* load) : broker_(services), load_(load) {}

  Task<Response> lookup(const Request& req);
  Task<Response> persistent(const Request& req);
  Task<Response> brokers(const Request& req);
  // GET /admin/v2/brokers and /admin/v2/brokers/{cluster}: the registered brokers' ids.
  Task<Response> active_brokers();

 private:
  Task<Response> topic_op(protocol::TopicName name, std::vector<std::string> rest,
                          const Request& req);
  Task<Response> partitions(protocol::TopicName name, const Request& req);
  Task<Response> partitioned_list(std::string ns);
  static bool is_fanned_out(const std::string& method, const std::vector<std::string>& rest);
  Task<Response> fan_out(protocol::TopicName name, int partitions, std::vector<std::string> rest,
                         const Request& req);
  // On the topic's loop: `fn(topic)` for a topic owned here and loaded.
  Task<Response> with_topic(protocol::TopicName name,
                            std::function<Task<Response>(std::shared_ptr<PersistentTopic>)> fn);

  BrokerServices broker_;
  LoadManager* load_;
};

Task<Response> Routes::lookup(const Request& req) {
  auto parts = http::path_segments(req.path, kLookupPrefix);
  if (!parts || parts->size() < 4) co_return Response::error(400, "Malformed lookup path");
  if ((*parts)[0] != "persistent") {
    co_return Response::error(412, "only persistent topics are supported");
  }
  auto name = protocol::TopicName::parse(
      fmt::format("persistent://{}/{}/{}", (*parts)[1], (*parts)[2], (*parts)[3]));
  if (!name.ok()) co_return Response::error(412, name.status().message());
  const bool bundle_only = parts->size() == 5 && (*parts)[4] == "bundle";
  if (parts->size() > 4 && !bundle_only) co_return Response::error(404, "Not Found");
  if (bundle_only) {
    auto range = co_await broker_.namespaces.bundle_of(*name);
    if (!range.ok()) co_return status_response(range.status());
    co_return Response{200, "text/plain; charset=utf-8", range->name(), {}};
  }
  if (!broker_.config.allow_auto_topic_creation) {
    // Served only if it exists: a topic, a partitioned topic or one of its partitions.
    auto partitions = co_await broker_.topics.partitions(*name, false);
    auto exists = co_await (*broker_.stores.cluster).exists(
        mledger::managed_ledger_path(name->persistence_name()));
    const bool creatable = co_await broker_.topics.may_auto_create(*name);
    if (partitions.ok() && *partitions == 0 && exists.ok() && !*exists && !creatable) {
      co_return Response::error(404, "Topic not found.");
    }
  }
  auto answer = co_await broker_.namespaces.lookup(*name, query_flag(req, "authoritative"));
  if (!answer.ok()) co_return status_response(answer.status());
  if (answer->redirect) co_return redirect_to(*answer, req);
  const auto& t = answer->target;
  co_return ok_json(Json{{"brokerUrl", t.broker_url},
                         {"brokerUrlTls", t.broker_url_tls},
                         {"brokerUrlSsl", t.broker_url_tls},
                         {"nativeUrl", t.broker_url},
                         {"httpUrl", t.http_url},
                         {"httpUrlTls", t.http_url_tls}});
}

Task<Response> Routes::persistent(const Request& req) {
  auto parts = http::path_segments(req.path, kPersistentPrefix);
  if (!parts) co_return Response::error(400, "Malformed URL");
  if (parts->size() < 2) co_return Response::error(404, "Not Found");
  const std::string ns = fmt::format("{}/{}", (*parts)[0], (*parts)[1]);
  if (parts->size() == 2 || (parts->size() == 3 && (*parts)[2] == "partitioned" &&
                             req.method == "GET")) {
    if (req.method != "GET") co_return Response::error(405, "Method Not Allowed");
    auto exists = co_await broker_.topics.namespace_exists(ns);
    if (!exists.ok()) co_return status_response(exists.status());
    if (!*exists) co_return Response::error(404, "Namespace does not exist");
    if (parts->size() == 3) co_return co_await partitioned_list(ns);
    auto topics = co_await broker_.topics.topics_of_namespace(ns);
    if (!topics.ok()) co_return status_response(topics.status());
    co_return ok_json(Json(*topics));
  }
  auto name = protocol::TopicName::parse(fmt::format("persistent://{}/{}", ns, (*parts)[2]));
  if (!name.ok()) co_return Response::error(412, name.status().message());
  auto exists = co_await broker_.topics.namespace_exists(ns);
  if (!exists.ok()) co_return status_response(exists.status());
  if (!*exists) co_return Response::error(404, "Namespace does not exist");
  std::vector<std::string> rest(parts->begin() + 3, parts->end());
  if (rest.size() == 1 && rest[0] == "partitions") co_return co_await partitions(*name, req);
  if (rest.size() == 1 && rest[0] == "partitioned-stats" && req.method == "GET") {
    // Stats of every partition (each served by its owner: fetched here when owned here).
    auto n = co_await broker_.topics.partitions(*name, false);
    if (!n.ok()) co_return status_response(n.status());
    if (*n == 0) co_return Response::error(404, "Partitioned Topic not found");
    Json out = {{"metadata", {{"partitions", *n}}}, {"partitions", Json::object()}};
    int64_t in = 0, msg_out = 0, storage = 0;
    for (int i = 0; i < *n; ++i) {
      const protocol::TopicName partition = name->partition(i);
      auto owner = co_await broker_.namespaces.lookup(partition, false);
      if (!owner.ok()) co_return status_response(owner.status());
      Response r;
      if (owner->self) {
        std::function<Task<Response>(std::shared_ptr<PersistentTopic>)> stats =
            [](std::shared_ptr<PersistentTopic> t) -> Task<Response> {
          co_return ok_json(t->stats());
        };
        r = co_await with_topic(partition, stats);
      } else {
        // Served by another broker (or to be placed there): ask it.
        std::string target = fmt::format("/admin/v2/{}/stats?authoritative={}",
                                          partition.rest_path(),
                                          owner->authoritative ? "true" : "false");
        const std::string get = "GET", no_body;
        auto remote = co_await forward(owner->target, get, target, no_body);
        if (!remote.ok()) co_return forwarded_failure(owner->target, remote);
        r.status = remote->status;
        r.body = std::move(remote->body);
      }
      if (r.status == 404) continue;  // a partition not created yet
      if (r.status != 200) co_return r;
      auto j = Json::parse(r.body, nullptr, false);
      in += j.value("msgInCounter", int64_t{0});
      msg_out += j.value("msgOutCounter", int64_t{0});
      storage += j.value("storageSize", int64_t{0});
      if (query_flag(req, "perPartition")) out["partitions"][partition.to_string()] = j;
    }
    out["msgInCounter"] = in;
    out["msgOutCounter"] = msg_out;
    out["storageSize"] = storage;
    co_return ok_json(out);
  }
  // A partitioned topic's own name: unload and subscription operations apply to every
  // partition (each through its owner), subscriptions lists their union.
  if (!name->is_partition() && !rest.empty() && is_fanned_out(req.method, rest)) {
    auto n = co_await broker_.topics.partitions(*name, false);
    if (!n.ok()) co_return status_response(n.status());
    if (*n > 0) co_return co_await fan_out(*name, *n, rest, req);
  }
  // Everything else is served by the topic's owner.
  auto owner = co_await broker_.namespaces.lookup(*name, query_flag(req, "authoritative"));
  if (!owner.ok()) co_return status_response(owner.status());
  if (!owner->self) co_return redirect_to(*owner, req);
  co_return co_await topic_op(std::move(*name), std::move(rest), req);
}

bool Routes::is_fanned_out(const std::string& method, const std::vector<std::string>& rest) {
  const std::string& op = rest[0];
  if (rest.size() == 1) return (op == "unload" && method == "PUT") || (op == "subscriptions" && method == "GET");
  return op == "subscription" || op == "all_subscription";
}

Task<Response> Routes::fan_out(protocol::TopicName name, int partitions,
                               std::vector<std::string> rest, const Request& req) {
  std::string suffix;
  for (const auto& part : rest) suffix += fmt::format("/{}", http::url_encode(part));
  std::string query;
  for (const auto& [k, v] : req.query) {
    query += fmt::format("{}{}={}", query.empty() ? "?" : "&", http::url_encode(k),
                         http::url_encode(v));
  }
  const bool list = rest.size() == 1 && rest[0] == "subscriptions";
  std::set<std::string> names;
  // Each partition's request goes through this broker's own routes (and on to the
  // partition's owner by their 307s).
  const BrokerUrls& self = broker_.namespaces.self();
  for (int i = 0; i < partitions; ++i) {
    const protocol::TopicName partition = name.partition(i);
    const std::string target = fmt::format("/admin/v2/{}{}{}", partition.rest_path(), suffix, query);
    auto r = co_await forward(self, req.method, target, req.body);
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

Task<Response> Routes::partitioned_list(std::string ns) {
  auto children = co_await (*broker_.stores.configuration).children(
      fmt::format("/admin/partitioned-topics/{}/persistent", ns));
  if (!children.ok()) co_return status_response(children.status());
  Json out = Json::array();
  for (const auto& child : *children) {
    auto decoded = http::url_decode(child);
    out.push_back(fmt::format("persistent://{}/{}", ns, decoded ? *decoded : child));
  }
  co_return ok_json(out);
}

Task<Response> Routes::partitions(protocol::TopicName name, const Request& req) {
  auto& config = (*broker_.stores.configuration);
  const std::string path =
      fmt::format("/admin/partitioned-topics/{}/persistent/{}", name.namespace_name(),
                  name.encoded_local_name());
  if (req.method == "GET") {
    auto n = co_await broker_.topics.partitions(name, query_flag(req, "checkAllowAutoCreation"));
    if (!n.ok()) co_return status_response(n.status());
    co_return ok_json(Json{{"partitions", *n}});
  }
  if (req.method == "DELETE") {
    auto node = co_await config.get(path);
    if (!node.ok()) co_return status_response(node.status());
    if (!node->has_value()) co_return Response::error(404, "Partitioned topic does not exist");
    auto meta = Json::parse((*node)->value, nullptr, false);
    const int n = meta.is_object() ? meta.value("partitions", 0) : 0;
    const bool force = query_flag(req, "force");
    for (int i = 0; i < n; ++i) {
      const protocol::TopicName partition = name.partition(i);
      auto owner = co_await broker_.namespaces.lookup(partition, false);
      if (!owner.ok()) co_return status_response(owner.status());
      if (!owner->self) {
        std::string target = fmt::format("/admin/v2/{}?force={}&authoritative={}",
                                          partition.rest_path(), force ? "true" : "false",
                                          owner->authoritative ? "true" : "false");
        const std::string del = "DELETE", no_body;
        auto remote = co_await forward(owner->target, del, target, no_body);
        if (!remote.ok() || (remote->status >= 300 && remote->status != 404)) {
          co_return forwarded_failure(owner->target, remote);
        }
        continue;
      }
      Status st = co_await broker_.topics.delete_topic(partition, force);
      if (st.is(Errc::kAlreadyExists)) co_return Response::error(412, st.message());
      if (!st.ok() && !st.is(Errc::kNotFound)) co_return status_response(st);
    }
    Status st = co_await config.remove(path);
    if (!st.ok() && !st.is(Errc::kNotFound)) co_return status_response(st);
    co_return no_content();
  }
  if (req.method != "PUT" && req.method != "POST") {
    co_return Response::error(405, "Method Not Allowed");
  }
  // A bare int, or {"partitions": N, "properties": {...}}.
  auto body = Json::parse(req.body, nullptr, false);
  std::optional<int64_t> n;
  if (body.is_number_integer()) n = body.get<int64_t>();
  if (body.is_object() && body.contains("partitions") && body["partitions"].is_number_integer()) {
    n = body["partitions"].get<int64_t>();
  }
  if (!n) co_return Response::error(400, "the body must be the number of partitions");
  if (*n <= 0 || *n > 100000) {
    co_return Response::error(412, "Number of partitions should be more than 0");
  }
  if (name.is_partition()) {
    co_return Response::error(412, "a partition cannot be partitioned again");
  }
  Json meta = {{"partitions", *n}};
  if (body.is_object() && body.contains("properties") && body["properties"].is_object()) {
    meta["properties"] = body["properties"];
  }
  if (req.method == "PUT") {
    auto ml = co_await (*broker_.stores.cluster).exists(mledger::managed_ledger_path(name.persistence_name()));
    if (ml.ok() && *ml) co_return Response::error(409, "This topic already exists");
    metadata::PutOptions create;
    create.expected_version = -1;
    auto made = co_await config.put_recursive(path, meta.dump(), create);
    if (!made.ok()) {
      if (made.status().is(Errc::kBadVersion)) {
        co_return Response::error(409, "This topic already exists");
      }
      co_return status_response(made.status());
    }
    co_return no_content();
  }
  // POST: only more partitions.
  auto node = co_await config.get(path);
  if (!node.ok()) co_return status_response(node.status());
  if (!node->has_value()) co_return Response::error(404, "Partitioned topic does not exist");
  auto old = Json::parse((*node)->value, nullptr, false);
  const int64_t before = old.is_object() ? old.value("partitions", int64_t{0}) : 0;
  if (*n <= before) {
    co_return Response::error(412, "The number of partitions can only be increased");
  }
  if (old.is_object() && old.contains("properties")) meta["properties"] = old["properties"];
  metadata::PutOptions cas;
  cas.expected_version = (*node)->stat.version;
  auto written = co_await config.put(path, meta.dump(), cas);
  if (!written.ok()) {
    if (written.status().is(Errc::kBadVersion)) {
      co_return Response::error(409, "Concurrent modification");
    }
    co_return status_response(written.status());
  }
  co_return no_content();
}

Task<Response> Routes::with_topic(
    protocol::TopicName name,
    std::function<Task<Response>(std::shared_ptr<PersistentTopic>)> fn) {
  // A partition of an existing partitioned topic is created on first use.
  bool create = false;
  if (name.is_partition()) {
    auto n = co_await broker_.topics.partitions(name.partitioned_topic_name(), false);
    create = n.ok() && name.partition_index() < *n;
  }
  auto topic = co_await broker_.topics.get_topic(name, create);
  if (!topic.ok()) {
    if (topic.status().is(Errc::kNotFound)) co_return Response::error(404, "Topic not found");
    co_return status_response(topic.status());
  }
  std::shared_ptr<PersistentTopic> t = *topic;
  auto work = [fn = std::move(fn), t]() -> Task<Response> { co_return co_await fn(t); };
  auto r = co_await run_on<Response>(t->executor(), std::move(work));
  co_return std::move(*r);
}

Task<Response> Routes::topic_op(protocol::TopicName name, std::vector<std::string> rest,
                                const Request& req) {
  const std::string& m = req.method;
  using Fn = std::function<Task<Response>(std::shared_ptr<PersistentTopic>)>;
  if (rest.empty()) {
    if (m == "PUT") {
      auto n = co_await broker_.topics.partitions(name, false);
      if (n.ok() && *n > 0) co_return Response::error(409, "This topic already exists");
      auto exists =
          co_await (*broker_.stores.cluster).exists(mledger::managed_ledger_path(name.persistence_name()));
      if (!exists.ok()) co_return status_response(exists.status());
      if (*exists) co_return Response::error(409, "This topic already exists");
      auto topic = co_await broker_.topics.get_topic(name, true);
      if (!topic.ok()) co_return status_response(topic.status());
      co_return no_content();
    }
    if (m == "DELETE") {
      Status st = co_await broker_.topics.delete_topic(name, query_flag(req, "force"));
      if (st.is(Errc::kNotFound)) co_return Response::error(404, "Topic not found");
      if (st.is(Errc::kAlreadyExists)) co_return Response::error(412, st.message());
      if (!st.ok()) co_return status_response(st);
      co_return no_content();
    }
    co_return Response::error(405, "Method Not Allowed");
  }
  const std::string& op = rest[0];
  if (rest.size() == 1 && m == "GET" && (op == "stats" || op == "internalStats")) {
    const bool internal = op == "internalStats";
    Fn fn = [internal](std::shared_ptr<PersistentTopic> t) -> Task<Response> {
      co_return ok_json(internal ? t->ledger().internal_stats() : t->stats());  // replace
    };
    co_return co_await with_topic(name, fn);
  }
  if (rest.size() == 1 && m == "GET" && op == "subscriptions") {
    Fn fn = [](std::shared_ptr<PersistentTopic> t) -> Task<Response> {
      co_return ok_json(Json(t->subscription_names()));
    };
    co_return co_await with_topic(name, fn);
  }
  if (rest.size() == 1 && m == "GET" && op == "lastMessageId") {
    Fn fn = [](std::shared_ptr<PersistentTopic> t) -> Task<Response> {
      co_return ok_json(message_id_json(t->ledger().last_confirmed()));
    };
    co_return co_await with_topic(name, fn);
  }
  if (rest.size() == 1 && m == "POST" && op == "terminate") {
    Fn fn = [](std::shared_ptr<PersistentTopic> t) -> Task<Response> {
      auto last = co_await t->ledger().terminate();
      if (!last.ok()) co_return status_response(last.status());
      co_return ok_json(message_id_json(*last));
    };
    co_return co_await with_topic(name, fn);
  }
  if (rest.size() == 1 && m == "PUT" && op == "unload") {
    auto exists =
        co_await (*broker_.stores.cluster).exists(mledger::managed_ledger_path(name.persistence_name()));
    if (!exists.ok()) co_return status_response(exists.status());
    if (!*exists) co_return Response::error(404, "Topic not found");
    const std::string key = name.to_string();
    std::function<bool(const protocol::TopicName&)> which = [key](const protocol::TopicName& t) {
      return t.to_string() == key;
    };
    (void)co_await broker_.topics.close_topics(which);
    co_return no_content();
  }
  if (rest.size() == 3 && m == "POST" && op == "all_subscription" &&
      rest[1] == "expireMessages") {
    auto seconds = parse_int(rest[2]);
    if (!seconds || *seconds < 0) co_return Response::error(400, "expireTime must be seconds");
    Fn fn = [s = *seconds](std::shared_ptr<PersistentTopic> t) -> Task<Response> {
      (void)co_await expire_messages(*t, s, {});
      co_return no_content();
    };
    co_return co_await with_topic(name, fn);
  }
  if (op != "subscription" || rest.size() < 2) co_return Response::error(404, "Not Found");
  // /subscription/{sub}[/...]
  const std::string sub = rest[1];
  if (sub.empty()) co_return Response::error(412, "empty subscription name");
  if (rest.size() == 2 && m == "PUT") {
    bool malformed = false;
    auto start = parse_position(req.body, &malformed);
    if (malformed) co_return Response::error(400, "the body must be a MessageId");
    Fn fn = [sub, start](std::shared_ptr<PersistentTopic> t) -> Task<Response> {
      if (t->find_subscription(sub)) {
        co_return Response::error(409, "Subscription already exists for topic");
      }
      auto s = co_await t->subscribe(sub, wire::CommandSubscribe::Exclusive, true,
                                     wire::CommandSubscribe::Latest, std::nullopt);
      if (!s.ok()) co_return status_response(s.status());
      if (start) {
        Status st = co_await (*s)->reset(*start);
        if (!st.ok()) co_return Response::error(412, st.message());
      }
      co_return no_content();
    };
    co_return co_await with_topic(name, fn);
  }
  if (rest.size() == 2 && m == "DELETE") {
    const bool force = query_flag(req, "force");
    Fn fn = [sub, force](std::shared_ptr<PersistentTopic> t) -> Task<Response> {
      auto found = t->find_subscription(sub);
      if (!found) co_return Response::error(404, "Subscription not found");
      if (!force && !found->consumers().empty()) {
        co_return Response::error(412, "Subscription has active connected consumers");
      }
      Status st = co_await t->unsubscribe(sub, true);
      if (!st.ok()) co_return Response::error(412, st.message());
      co_return no_content();
    };
    co_return co_await with_topic(name, fn);
  }
  if (m == "GET" && rest.size() == 4 && rest[2] == "position") {
    auto n = parse_int(rest[3]);
    if (!n || *n < 1) co_return Response::error(412, "the position must be a number from 1");
    Fn fn = [sub, n = *n](std::shared_ptr<PersistentTopic> t) -> Task<Response> {
      auto s = t->find_subscription(sub);
      if (!s) co_return Response::error(404, "Subscription not found");
      // The n-th message not yet acknowledged: entries from the mark-delete position on.
      auto& ml = t->ledger();
      Position at = ml.next_position(s->cursor().mark_delete_position());
      std::optional<mledger::Entry> found;
      int64_t left = n;
      while (!found && !(ml.last_confirmed() < at)) {
        auto entries = co_await ml.read(at, static_cast<int>(std::min<int64_t>(left, 100)));
        if (!entries.ok()) co_return status_response(entries.status());
        if (entries->empty()) break;
        for (auto& e : *entries) {
          at = ml.next_position(e.position);
          if (--left == 0) {
            found = std::move(e);
            break;
          }
        }
      }
      if (!found) co_return Response::error(404, "Message not found");
      auto view = protocol::parse_entry(found->data);
      wire::MessageMetadata md;
      if (!view.ok() || !md.ParseFromArray(view->metadata_bytes.data(),
                                           static_cast<int>(view->metadata_bytes.size()))) {
        co_return Response::error(500, "the stored entry does not parse");
      }
      Response r;
      r.status = 200;
      r.content_type = "application/octet-stream";
      r.body = view->payload.to_string();
      r.headers["X-Pulsar-Message-ID"] =
          fmt::format("{}:{}", found->position.ledger_id, found->position.entry_id);
      r.headers["X-Pulsar-publish-time"] = iso_time(md.publish_time());
      if (md.has_event_time() && md.event_time() > 0) {
        r.headers["X-Pulsar-event-time"] = iso_time(md.event_time());
      }
      if (md.has_num_messages_in_batch()) {
        r.headers["X-Pulsar-num-batch-message"] = std::to_string(md.num_messages_in_batch());
      }
      if (md.has_partition_key()) r.headers["X-Pulsar-partition-key"] = md.partition_key();
      r.headers["X-Pulsar-sequence-id"] = std::to_string(md.sequence_id());
      r.headers["X-Pulsar-producer-name"] = md.producer_name();
      if (md.properties_size() > 0) {
        Json props = Json::object();
        for (const auto& kv : md.properties()) props[kv.key()] = kv.value();
        r.headers["X-Pulsar-PROPERTY"] = props.dump();
      }
      co_return r;
    };
    co_return co_await with_topic(name, fn);
  }
  if (m != "POST" || rest.size() < 3) co_return Response::error(404, "Not Found");
  const std::string& action = rest[2];
  std::optional<int64_t> arg;
  if (rest.size() == 4) {
    arg = parse_int(rest[3]);
    if (!arg || *arg < 0) co_return Response::error(400, "expected a non-negative number");
  } else if (rest.size() > 4) {
    co_return Response::error(404, "Not Found");
  }
  bool malformed = false;
  std::optional<Position> body_position;
  if (action == "resetcursor" && !arg) {
    body_position = parse_position(req.body, &malformed);
    if (malformed || !body_position) co_return Response::error(400, "the body must be a MessageId");
  }
  if (!((action == "skip_all" && !arg) || (action == "skip" && arg) ||
        (action == "expireMessages" && arg) || action == "resetcursor")) {
    co_return Response::error(404, "Not Found");
  }
  Fn fn = [sub, action, arg, body_position](std::shared_ptr<PersistentTopic> t) -> Task<Response> {
    auto s = t->find_subscription(sub);
    if (!s) co_return Response::error(404, "Subscription not found");
    Status st;
    if (action == "skip_all") {
      st = co_await s->cursor().clear_backlog();
    } else if (action == "skip") {
      st = co_await s->cursor().skip_entries(*arg);
    } else if (action == "expireMessages") {
      (void)co_await expire_messages(*t, *arg, sub);
    } else {
      std::optional<Position> target = body_position;
      const bool by_time = !target;
      if (by_time) {
        // resetcursor/{timestamp}: back to the first message published at or after it.
        auto found = co_await t->position_for_time(static_cast<uint64_t>(*arg));
        if (!found.ok()) co_return status_response(found.status());
        target = *found;
      }
      Status reset = co_await s->reset(*target);
      if (!reset.ok()) co_return Response::error(412, reset.message());
      if (by_time) co_return no_content();
    }
    if (!st.ok()) co_return status_response(st);
    s->restart_dispatch();
    co_return no_content();
  };
  co_return co_await with_topic(name, fn);
}

Task<Response> Routes::active_brokers() {
  if (load_ == nullptr) {
    const auto& url = broker_.namespaces.self().http_url;
    co_return ok_json(Json::array({url.substr(url.find("://") + 3)}));
  }
  auto ids = co_await load_->brokers();
  if (!ids.ok()) co_return status_response(ids.status());
  co_return ok_json(Json(*ids));
}

Task<Response> Routes::brokers(const Request& req) {
  auto parts = http::path_segments(req.path, kBrokersPrefix);
  if (!parts || parts->empty()) co_return Response::error(404, "Not Found");
  if (req.method != "GET") co_return Response::error(405, "Method Not Allowed");
  const std::string& first = (*parts)[0];
  if (parts->size() == 1 && first == "health") {
    // The metadata store answers and this broker serves.
    auto root = co_await (*broker_.stores.cluster).exists("/");
    if (!root.ok()) co_return Response::error(503, root.status().message());
    if (!broker_.namespaces.serving()) {
      co_return Response::error(503, "this broker lost its metadata session");
    }
    co_return Response{200, "text/plain; charset=utf-8", "ok", {}};
  }
  if (parts->size() == 1 && first == "leaderBroker") {
    if (load_ == nullptr) {
      co_return ok_json(Json{{"serviceUrl", broker_.namespaces.self().http_url}});
    }
    auto leader = co_await load_->leader();
    if (!leader.ok()) co_return status_response(leader.status());
    if (!leader->has_value()) co_return Response::error(404, "No leader broker");
    co_return Response::json(200, **leader);
  }
  if (parts->size() == 1) {
    if (first != broker_.config.cluster_name) {
      co_return Response::error(404, fmt::format("Cluster {} does not exist", first));
    }
    co_return co_await active_brokers();
  }
  if (parts->size() == 3 && (*parts)[2] == "ownedNamespaces") {
    if (first != broker_.config.cluster_name) {
      co_return Response::error(404, fmt::format("Cluster {} does not exist", first));
    }
    auto& namespaces = broker_.namespaces;
    const std::string& self_http = namespaces.self().http_url;
    const std::string self_id = self_http.substr(self_http.find("://") + 3);
    if ((*parts)[1] != self_id) {
      // Another registered broker's bundles: it answers for itself.
      bool registered = false;
      if (load_ != nullptr) {
        auto ids = co_await load_->brokers();
        if (!ids.ok()) co_return status_response(ids.status());
        registered = std::find(ids->begin(), ids->end(), (*parts)[1]) != ids->end();
      }
      if (!registered) {
        co_return Response::error(404, fmt::format("Broker {} is not active", (*parts)[1]));
      }
      Response r;
      r.status = 307;
      r.headers["Location"] = fmt::format("http://{}{}", (*parts)[1], req.target);
      co_return r;
    }
    auto list = [&namespaces]() -> Task<std::vector<std::string>> {
      co_return namespaces.owned_bundles();
    };
    auto owned = co_await run_on<std::vector<std::string>>(namespaces.executor(), std::move(list));
    Json out = Json::object();
    for (const std::string& bundle : *owned) {
      out[bundle] = {{"broker_assignment", "shared"}, {"is_controlled", false}, {"is_active", true}};
    }
    co_return ok_json(out);
  }
  co_return Response::error(404, "Not Found");
}

}  // namespace

namespace {

// Clears the backlog of every subscription (or of `sub`) of the namespace's topics in
// `range`, which this broker owns.
Task<Response> clear_bundle_backlog(BrokerServices broker, std::string ns, BundleRange range,
                                    std::string sub) {
  auto topics = co_await broker.topics.topics_of_namespace(ns);
  if (!topics.ok()) co_return status_response(topics.status());
  for (const std::string& full : *topics) {
    auto name = protocol::TopicName::parse(full);
    if (!name.ok() || !range.contains(topic_bundle_hash(name->to_string()))) continue;
    auto topic = co_await broker.topics.get_topic(*name, false);
    if (!topic.ok()) continue;
    std::shared_ptr<PersistentTopic> t = *topic;
    auto work = [t, sub]() -> Task<Status> {
      for (const std::string& s : t->subscription_names()) {
        if (!sub.empty() && s != sub) continue;
        auto subscription = t->find_subscription(s);
        if (!subscription) continue;
        Status st = co_await subscription->cursor().clear_backlog();
        if (!st.ok()) co_return st;
        subscription->restart_dispatch();
      }
      co_return Status::OK();
    };
    auto st = co_await run_on<Status>(t->executor(), std::move(work));
    if (!st->ok()) co_return status_response(*st);
  }
  co_return no_content();
}

// The namespace's bundles, from its policies.
Task<Result<std::vector<BundleRange>>> bundles_of(BrokerServices broker, const std::string& ns) {
  auto node = co_await (*broker.stores.configuration).get(fmt::format("/admin/policies/{}", ns));
  if (!node.ok()) co_return node.status();
  if (!node->has_value()) co_return Status(Errc::kNotFound, "Namespace does not exist");
  auto bundles =
      NamespaceBundles::from_policies((*node)->value, broker.config.default_number_of_namespace_bundles);
  if (!bundles.ok()) co_return bundles.status();
  co_return bundles->ranges();
}

}  // namespace

Task<std::optional<Response>> namespace_broker_operation(BrokerServices broker, const Request& req,
                                                         const std::vector<std::string>& parts) {
  // parts: tenant, ns, ...
  if (parts.size() < 3) co_return std::nullopt;
  const std::string ns = fmt::format("{}/{}", parts[0], parts[1]);
  auto& namespaces = broker.namespaces;
  // Namespace-wide: every bundle, each by its owner (unowned bundles have nothing to do).
  const bool ns_unload = parts.size() == 3 && parts[2] == "unload";
  const bool ns_clear = (parts.size() == 3 || parts.size() == 4) && parts[2] == "clearBacklog";
  if (ns_unload || ns_clear) {
    if (req.method != (ns_unload ? "PUT" : "POST")) {
      co_return Response::error(405, "Method Not Allowed");
    }
    const std::string sub = parts.size() == 4 ? parts[3] : "";
    auto ranges = co_await bundles_of(broker, ns);
    if (!ranges.ok()) co_return status_response(ranges.status());
    for (const BundleRange& range : *ranges) {
      auto owner = co_await namespaces.owner_of(ns, range);
      if (!owner.ok()) co_return status_response(owner.status());
      if (!owner->has_value()) continue;
      const LookupAnswer& o = **owner;
      if (o.self) {
        if (ns_unload) {
          Status st = co_await namespaces.unload_bundle(ns, range);
          if (!st.ok() && !st.is(Errc::kNotFound)) co_return status_response(st);
        } else {
          Response r = co_await clear_bundle_backlog(broker, ns, range, sub);
          if (r.status >= 300) co_return r;
        }
        continue;
      }
      std::string target = ns_unload
                               ? fmt::format("/admin/v2/namespaces/{}/{}/unload", ns, range.name())
                               : fmt::format("/admin/v2/namespaces/{}/{}/clearBacklog{}", ns,
                                             range.name(), sub.empty() ? "" : "/" + sub);
      const std::string no_body;
      auto remote = co_await forward(o.target, req.method, target, no_body);
      if (!remote.ok() || remote->status >= 300) co_return forwarded_failure(o.target, remote);
    }
    co_return no_content();
  }
  // Bundle operations: {bundle}/unload, {bundle}/split, {bundle}/clearBacklog[/{sub}].
  if (parts.size() < 4) co_return std::nullopt;
  const std::string& op = parts[3];
  const bool clear = op == "clearBacklog" && parts.size() <= 5;
  if (!clear && (parts.size() != 4 || (op != "unload" && op != "split"))) co_return std::nullopt;
  if (req.method != (clear ? "POST" : "PUT")) co_return Response::error(405, "Method Not Allowed");
  auto range = BundleRange::parse(parts[2]);
  if (!range) co_return Response::error(412, fmt::format("Invalid bundle range {}", parts[2]));
  auto ranges = co_await bundles_of(broker, ns);
  if (!ranges.ok()) {
    if (ranges.status().is(Errc::kNotFound)) {
      co_return Response::error(404, "Namespace does not exist");
    }
    co_return status_response(ranges.status());
  }
  if (std::find(ranges->begin(), ranges->end(), *range) == ranges->end()) {
    co_return Response::error(
        412, fmt::format("{} is not a bundle of namespace {}", range->name(), ns));
  }
  auto owner = co_await namespaces.owner_of(ns, *range);
  if (!owner.ok()) co_return status_response(owner.status());
  if (!owner->has_value()) {
    if (op != "split") co_return no_content();  // nobody serves it: nothing to do
    co_return Response::error(412, fmt::format("bundle {} is not served by any broker",
                                               bundle_full_name(ns, *range)));
  }
  if (!(*owner)->self) co_return redirect_to(**owner, req);
  if (clear) {
    std::string sub = parts.size() == 5 ? parts[4] : std::string();
    co_return co_await clear_bundle_backlog(broker, ns, *range, std::move(sub));
  }
  Status st;
  if (op == "unload") {
    auto dest = req.query.find("destinationBroker");
    std::string destination = dest == req.query.end() ? "" : dest->second;
    st = co_await namespaces.unload_bundle(ns, *range, std::move(destination));
  } else {
    st = co_await namespaces.split_bundle(ns, *range, query_flag(req, "unload"));
  }
  if (!st.ok()) co_return status_response(st);
  co_return no_content();
}

void add_broker_routes(http::HttpServer& web, BrokerServices broker, LoadManager* load) {
  auto routes = std::make_shared<Routes>(broker, load);
  web.route_prefix("GET", std::string(kLookupPrefix),
                   [routes](const Request& req) { return routes->lookup(req); });
  for (const char* method : {"GET", "PUT", "POST", "DELETE"}) {
    web.route_prefix(method, std::string(kPersistentPrefix),
                     [routes](const Request& req) { return routes->persistent(req); });
  }
  web.route("GET", "/admin/v2/brokers",
            [routes](const Request&) { return routes->active_brokers(); });
  web.route_prefix("GET", std::string(kBrokersPrefix),
                   [routes](const Request& req) { return routes->brokers(req); });
}

}  // namespace magnetar::broker
