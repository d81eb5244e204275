// HTTP lookup (../shared/reference/pulsar-protocol.md §4.1):
//
//   GET /lookup/v2/topic/{domain}/{tenant}/{namespace}/{topic}[?authoritative=true]
//       200 {"brokerUrl", "brokerUrlTls", "brokerUrlSsl", "nativeUrl", "httpUrl",
//       "httpUrlTls"} of the owner, or 307 to the broker that decides (as a binary lookup)
//   GET /lookup/v2/topic/{domain}/{tenant}/{namespace}/{topic}/bundle
//       200 text/plain: the topic's bundle range (owned or not; nothing is taken)
//
// Persistent and non-persistent topics (412 for another domain). A lookup needs a produce or consume grant on the
// topic (LOOKUP); the bundle, an admin of the tenant (GET_BUNDLE), as in Pulsar.

#include <fmt/format.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "broker/admin/admin_routes.h"
#include "broker/namespace/namespace_service.h"
#include "broker/service/topic_registry.h"
#include "mledger/managed_ledger.h"
#include "protocol/topic_name.h"

namespace magnetar::broker::admin {

namespace {

using http::Action;
using http::PathParams;
using http::Permission;
using http::Request;
using http::Response;

constexpr std::string_view kLookupPrefix = "/lookup/v2/topic/";

// The topic of a lookup path's segments after the prefix ({domain, tenant, namespace, topic}
// and perhaps "bundle"), or the answer to a path that is not one: 400 too short, 412 an
// unknown domain or not a valid topic name, 404 anything after the topic but "bundle".
OrResponse<protocol::TopicName> lookup_topic(const std::vector<std::string>& parts) {
  if (parts.size() < 4) return error(400, "Malformed lookup path");
  if (parts[0] != "persistent" && parts[0] != "non-persistent") {
    return error(412, fmt::format("Unsupported topic domain: {}", parts[0]));
  }
  auto name = protocol::TopicName::parse(
      fmt::format("{}://{}/{}/{}", parts[0], parts[1], parts[2], parts[3]));
  if (!name.ok()) return error(412, name.status().message());
  const bool bundle = parts.size() == 5 && parts[4] == "bundle";
  if (parts.size() > 4 && !bundle) return not_found();
  return std::move(*name);
}

std::vector<std::string> parts_of(const PathParams& p) {
  std::vector<std::string> parts;
  for (const auto& [name, value] : p) parts.push_back(value);
  return parts;
}

class Lookup {
 public:
  explicit Lookup(std::shared_ptr<const BrokerContext> ctx) : ctx_(std::move(ctx)) {}

  Task<Response> lookup(const Request& req, const PathParams& p);
  Task<Response> bundle(const PathParams& p);
  // {topic}/{anything but bundle}.
  Task<Response> other(const PathParams& p);

 private:
  const BrokerServices& broker() const { return ctx_->services; }

  const std::shared_ptr<const BrokerContext> ctx_;
};

Task<Response> Lookup::lookup(const Request& req, const PathParams& p) {
  auto checked = lookup_topic(parts_of(p));
  if (auto* refused = std::get_if<Response>(&checked)) co_return std::move(*refused);
  const protocol::TopicName name = std::get<protocol::TopicName>(std::move(checked));
  const BrokerServices& b = broker();
  if (!(co_await b.topics.auto_creation(name.namespace_name())).allowed) {
    // Served only if it exists: a topic, a partitioned topic or one of its partitions.
    // (A non-persistent topic exists while it is loaded: here, as far as this broker knows.)
    auto partitions = co_await b.topics.partitions(name, false);
    Result<bool> exists = false;
    if (name.is_persistent()) {
      exists = co_await (*b.stores.cluster)
                   .exists(mledger::managed_ledger_path(name.persistence_name()));
    } else {
      exists = (co_await b.topics.get_non_persistent_topic(name, false)).ok();
    }
    const bool creatable = co_await b.topics.may_auto_create(name);
    if (partitions.ok() && *partitions == 0 && exists.ok() && !*exists && !creatable) {
      co_return error(404, "Topic not found.");
    }
  }
  auto answer = co_await b.namespaces.lookup(name, query_flag(req, "authoritative"));
  if (!answer.ok()) co_return broker_error(answer.status());
  if (answer->redirect) co_return redirect_to(*answer, req);
  const auto& t = answer->target;
  co_return ok_json(Json{{"brokerUrl", t.broker_url},
                         {"brokerUrlTls", t.broker_url_tls},
                         {"brokerUrlSsl", t.broker_url_tls},
                         {"nativeUrl", t.broker_url},
                         {"httpUrl", t.http_url},
                         {"httpUrlTls", t.http_url_tls}});
}

Task<Response> Lookup::bundle(const PathParams& p) {
  auto checked = lookup_topic(parts_of(p));
  if (auto* refused = std::get_if<Response>(&checked)) co_return std::move(*refused);
  const protocol::TopicName name = std::get<protocol::TopicName>(std::move(checked));
  auto range = co_await broker().namespaces.bundle_of(name);
  if (!range.ok()) co_return broker_error(range.status());
  co_return Response{200, "text/plain; charset=utf-8", range->name(), {}};
}

Task<Response> Lookup::other(const PathParams& p) {
  auto checked = lookup_topic(parts_of(p));
  if (auto* refused = std::get_if<Response>(&checked)) co_return std::move(*refused);
  co_return not_found();
}

}  // namespace

void add_lookup(http::Router& router, std::shared_ptr<const BrokerContext> ctx) {
  auto self = std::make_shared<Lookup>(std::move(ctx));
  const std::string topic = "/lookup/v2/topic/{domain}/{tenant}/{namespace}/{topic}";
  // The request and its parameters outlive each returned task (the router awaits it).
  router.add("GET", topic, Permission::topic_op("{domain}", Action::kLookup, "LOOKUP"),
             [self](const Request& req, const PathParams& p) { return self->lookup(req, p); });
  router.add("GET", topic + "/bundle", Permission::namespace_op(Action::kNone, "GET_BUNDLE"),
             [self](const Request&, const PathParams& p) { return self->bundle(p); });
  router.add("GET", topic + "/{operation}", Permission::topic_op("{domain}", Action::kLookup, ""),
             [self](const Request&, const PathParams& p) { return self->other(p); });
}

Prefix lookup_prefix() {
  Prefix prefix;
  prefix.path = std::string(kLookupPrefix);
  prefix.methods = {"GET"};
  prefix.malformed = error(400, "Malformed lookup path");
  // The paths no route matches: too short or too long, or with an empty segment.
  prefix.check = [](const Request&,
                    const std::vector<std::string>& parts) -> std::optional<Response> {
    if (parts.size() >= 4 && parts.size() <= 5 && !has_empty_segment(parts)) return std::nullopt;
    auto checked = lookup_topic(parts);
    if (auto* refused = std::get_if<Response>(&checked)) return std::move(*refused);
    return not_found();
  };
  return prefix;
}

}  // namespace magnetar::broker::admin
