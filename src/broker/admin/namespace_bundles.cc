// The namespace operations that need a broker, /admin/v2/namespaces/{tenant}/{namespace}/...:
//
//   PUT  {bundle}/unload[?destinationBroker=host:port]   release the bundle (super user)
//   PUT  {bundle}/split[?unload=true]                    cut it in two (super user)
//   POST {bundle}/clearBacklog[/{subscription}]          skip every subscription's backlog
//   PUT  unload                                          every bundle (super user)
//   POST clearBacklog[/{subscription}]                   every bundle
//
// A bundle operation is done by the bundle's owner: elsewhere it is answered 307 to the owner;
// an unowned bundle has nothing to unload or clear (204), nor to split (412). The
// namespace-wide ones go to every owned bundle, here or forwarded to its owner. Clearing a
// backlog needs a namespace-level consume grant (CLEAR_BACKLOG), the rest a super user, as in
// Pulsar.

#include <fmt/format.h>

#include <algorithm>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "broker/admin/admin_nodes.h"
#include "broker/admin/admin_routes.h"
#include "broker/config/store_paths.h"
#include "broker/namespace/bundles.h"
#include "broker/namespace/namespace_service.h"
#include "broker/service/subscription.h"
#include "broker/service/topic.h"
#include "broker/service/topic_registry.h"

namespace magnetar::broker::admin {

namespace {

using http::Action;
using http::PathParams;
using http::Permission;
using http::Request;
using http::Response;

// Clears the backlog of every subscription (or of `sub`) of the namespace's topics in
// `range`, which this broker owns.
Task<Response> clear_bundle_backlog(BrokerServices broker, std::string ns, BundleRange range,
                                    std::string sub) {
  auto topics = co_await broker.topics.topics_of_namespace(ns);
  if (!topics.ok()) co_return broker_error(topics.status());
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
    auto held = broker.gate.enter();  // the broker's task group (see topic_access.cc)
    if (!held) co_return error(503, "the broker is stopping");
    auto st = co_await run_on<Status>(t->executor(), std::move(work));
    if (!st->ok()) co_return broker_error(*st);
  }
  co_return no_content();
}

// The namespace's bundles, from its policies.
Task<Result<std::vector<BundleRange>>> bundles_of(BrokerServices broker, const std::string& ns) {
  auto node = co_await (*broker.stores.configuration).get(namespace_policies_path(ns));
  if (!node.ok()) co_return node.status();
  if (!node->has_value()) co_return Status(Errc::kNotFound, kNoNamespace);
  auto bundles = NamespaceBundles::from_policies((*node)->value,
                                                 broker.config.default_number_of_namespace_bundles);
  if (!bundles.ok()) co_return bundles.status();
  co_return bundles->ranges();
}

class BundleRoutes {
 public:
  explicit BundleRoutes(std::shared_ptr<const BrokerContext> ctx) : ctx_(std::move(ctx)) {}

  // PUT .../unload (`unload`) and POST .../clearBacklog[/{sub}] of a whole namespace.
  Task<Response> every_bundle(NamespaceName ns, bool unload, std::string sub, const Request& req);
  // PUT .../{bundle}/unload and .../{bundle}/split.
  Task<Response> unload_or_split(NamespaceName ns, std::string bundle, bool split,
                                 const Request& req);
  // POST .../{bundle}/clearBacklog[/{sub}].
  Task<Response> clear_backlog(NamespaceName ns, std::string bundle, std::string sub,
                               const Request& req);

 private:
  // The bundle an operation names when this broker owns it; otherwise the answer: 412 for a
  // malformed range or one that is no bundle of the namespace, 404 for an unknown namespace,
  // 307 to the owner, or for an unowned bundle `unowned`.
  Task<OrResponse<BundleRange>> owned_here(NamespaceName ns, std::string bundle, const Request& req,
                                           Response unowned);

  BrokerServices broker() const { return ctx_->services; }

  const std::shared_ptr<const BrokerContext> ctx_;
};

Task<Response> BundleRoutes::every_bundle(NamespaceName name, bool unload, std::string sub,
                                          const Request& req) {
  if (!name.valid()) co_return invalid_namespace_name();
  const std::string ns = name.full();
  auto& namespaces = ctx_->services.namespaces;
  auto ranges = co_await bundles_of(broker(), ns);
  if (!ranges.ok()) co_return broker_error(ranges.status());
  // Each bundle by its owner (unowned bundles have nothing to do).
  for (const BundleRange& range : *ranges) {
    auto owner = co_await namespaces.owner_of(ns, range);
    if (!owner.ok()) co_return broker_error(owner.status());
    if (!owner->has_value()) continue;
    const LookupAnswer& o = **owner;
    if (o.self) {
      if (unload) {
        Status st = co_await namespaces.unload_bundle(ns, range);
        if (!st.ok() && !st.is(Errc::kNotFound)) co_return broker_error(st);
      } else {
        Response r = co_await clear_bundle_backlog(broker(), ns, range, sub);
        if (r.status >= 300) co_return r;
      }
      continue;
    }
    std::string target = unload ? fmt::format("/admin/v2/namespaces/{}/{}/unload", ns, range.name())
                                : fmt::format("/admin/v2/namespaces/{}/{}/clearBacklog{}", ns,
                                              range.name(), sub.empty() ? "" : "/" + sub);
    const std::string no_body;
    auto remote = co_await forward(o.target, req.method, target, no_body, req);
    if (!remote.ok() || remote->status >= 300) co_return forwarded_failure(o.target, remote);
  }
  co_return no_content();
}

Task<OrResponse<BundleRange>> BundleRoutes::owned_here(NamespaceName name, std::string bundle,
                                                       const Request& req, Response unowned) {
  const std::string ns = name.full();
  auto range = BundleRange::parse(bundle);
  if (!range) co_return error(412, fmt::format("Invalid bundle range {}", bundle));
  auto ranges = co_await bundles_of(broker(), ns);
  if (!ranges.ok()) {
    if (ranges.status().is(Errc::kNotFound)) co_return error(404, kNoNamespace);
    co_return broker_error(ranges.status());
  }
  if (std::find(ranges->begin(), ranges->end(), *range) == ranges->end()) {
    co_return error(412, fmt::format("{} is not a bundle of namespace {}", range->name(), ns));
  }
  auto owner = co_await ctx_->services.namespaces.owner_of(ns, *range);
  if (!owner.ok()) co_return broker_error(owner.status());
  if (!owner->has_value()) co_return std::move(unowned);
  if (!(*owner)->self) co_return redirect_to(**owner, req);
  co_return *range;
}

Task<Response> BundleRoutes::unload_or_split(NamespaceName name, std::string bundle, bool split,
                                             const Request& req) {
  if (!name.valid()) co_return invalid_namespace_name();
  const std::string ns = name.full();
  // Nobody serves an unowned bundle: nothing to unload, nothing to split.
  Response unowned = no_content();
  if (split) {
    auto range = BundleRange::parse(bundle);
    unowned = error(412, fmt::format("bundle {} is not served by any broker",
                                     range ? bundle_full_name(ns, *range) : bundle));
  }
  auto owned = co_await owned_here(name, bundle, req, std::move(unowned));
  if (auto* answer = std::get_if<Response>(&owned)) co_return std::move(*answer);
  const BundleRange range = std::get<BundleRange>(owned);
  auto& namespaces = ctx_->services.namespaces;
  Status st;
  if (!split) {
    auto dest = req.query.find("destinationBroker");
    std::string destination = dest == req.query.end() ? "" : dest->second;
    st = co_await namespaces.unload_bundle(ns, range, std::move(destination));
  } else {
    st = co_await namespaces.split_bundle(ns, range, query_flag(req, "unload"));
  }
  if (!st.ok()) co_return broker_error(st);
  co_return no_content();
}

Task<Response> BundleRoutes::clear_backlog(NamespaceName name, std::string bundle, std::string sub,
                                           const Request& req) {
  if (!name.valid()) co_return invalid_namespace_name();
  auto owned = co_await owned_here(name, bundle, req, no_content());
  if (auto* answer = std::get_if<Response>(&owned)) co_return std::move(*answer);
  const BundleRange range = std::get<BundleRange>(owned);
  co_return co_await clear_bundle_backlog(broker(), name.full(), range, std::move(sub));
}

}  // namespace

void add_namespace_bundles(http::Router& router, std::shared_ptr<const BrokerContext> ctx) {
  auto self = std::make_shared<BundleRoutes>(std::move(ctx));
  const std::string ns = "/admin/v2/namespaces/{tenant}/{namespace}";
  const Permission clear = Permission::namespace_op(Action::kConsume, "CLEAR_BACKLOG");
  // The request and its parameters outlive each returned task (the router awaits it).
  router.add("PUT", ns + "/unload", Permission::super_user(),
             [self](const Request& req, const PathParams& p) {
               return self->every_bundle(namespace_of(p), true, "", req);
             });
  router.add("POST", ns + "/clearBacklog", clear, [self](const Request& req, const PathParams& p) {
    return self->every_bundle(namespace_of(p), false, "", req);
  });
  router.add("POST", ns + "/clearBacklog/{subscription}", clear,
             [self](const Request& req, const PathParams& p) {
               return self->every_bundle(namespace_of(p), false, p.at("subscription"), req);
             });
  router.add("PUT", ns + "/{bundle}/unload", Permission::super_user(),
             [self](const Request& req, const PathParams& p) {
               return self->unload_or_split(namespace_of(p), p.at("bundle"), false, req);
             });
  router.add("PUT", ns + "/{bundle}/split", Permission::super_user(),
             [self](const Request& req, const PathParams& p) {
               return self->unload_or_split(namespace_of(p), p.at("bundle"), true, req);
             });
  router.add("POST", ns + "/{bundle}/clearBacklog", clear,
             [self](const Request& req, const PathParams& p) {
               return self->clear_backlog(namespace_of(p), p.at("bundle"), "", req);
             });
  router.add("POST", ns + "/{bundle}/clearBacklog/{subscription}", clear,
             [self](const Request& req, const PathParams& p) {
               return self->clear_backlog(namespace_of(p), p.at("bundle"), p.at("subscription"),
                                          req);
             });
}

}  // namespace magnetar::broker::admin
