#include "broker/namespace/namespace_service.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "broker/config/store_paths.h"
#include "broker/namespace/load_manager.h"

namespace magnetar::broker {

namespace {

using Json = nlohmann::json;

Status not_ready(std::string message) {
  return Status(Errc::kUnavailable, std::move(message));
}

}  // namespace

std::string BrokerUrls::to_json() const {
  return Json{{"nativeUrl", broker_url},
              {"nativeUrlTls", broker_url_tls},
              {"httpUrl", http_url},
              {"httpUrlTls", http_url_tls},
              {"disabled", false}}
      .dump();
}

std::optional<BrokerUrls> BrokerUrls::from_json(std::string_view json) {
  auto j = Json::parse(json, nullptr, false);
  if (!j.is_object()) return std::nullopt;
  auto text = [&j](const char* key) {
    auto it = j.find(key);
    return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
  };
  BrokerUrls urls{text("nativeUrl"), text("nativeUrlTls"), text("httpUrl"), text("httpUrlTls")};
  if (urls.broker_url.empty() && urls.http_url.empty()) return std::nullopt;
  return urls;
}

NamespaceService::NamespaceService(Executor executor, metadata::MetadataStores stores,
                                   const BrokerConfig& config, Gate& gate, BrokerUrls self)
    : stores_(std::move(stores)),
      config_(config),
      gate_(gate),
      self_(std::move(self)),
      executor_(std::move(executor)),
      store_(*stores_.cluster),
      log_(log::Logger("namespace").with("broker", self_.broker_url)) {}

NamespaceService::~NamespaceService() {
  if (session_listener_) store_.remove_listener(*session_listener_);
}

void NamespaceService::start() {
  session_listener_ = store_.add_session_listener(
      executor_, [this](metadata::SessionEvent e) { on_session_event(e); });
}

Task<void> NamespaceService::stop() {
  auto work = [this]() -> Task<bool> {
    std::vector<std::string> names;
    for (const auto& [name, owned] : owned_) names.push_back(name);
    for (const std::string& full : names) {
      // "<tenant>/<ns>/<range>"
      const size_t cut = full.rfind('/');
      auto range = BundleRange::parse(std::string_view(full).substr(cut + 1));
      if (!range) continue;
      Status st = co_await unload_bundle(full.substr(0, cut), *range);
      if (!st.ok()) log_.warn("releasing bundle {}: {}", full, st.to_string());
    }
    co_return true;
  };
  (void)co_await run_on<bool>(executor_, std::move(work));
}

LookupAnswer NamespaceService::connect_here() const {
  LookupAnswer a;
  a.self = true;
  a.authoritative = true;
  a.target = self_;
  return a;
}

Task<Result<std::string>> NamespaceService::policies_of(const std::string& ns) {
  auto got = co_await configuration_store().get(namespace_policies_path(ns));
  if (!got.ok()) co_return got.status();
  if (!got->has_value()) {
    co_return Status(Errc::kNotFound, fmt::format("Namespace {} does not exist", ns));
  }
  co_return std::move((*got)->value);
}

Task<Result<BundleRange>> NamespaceService::bundle_of(protocol::TopicName topic) {
  const std::string ns = topic.namespace_name();
  auto policies = co_await policies_of(ns);
  if (!policies.ok()) co_return policies.status();
  auto bundles = NamespaceBundles::from_policies(*policies, 4);
  if (!bundles.ok()) co_return bundles.status();
  co_return bundles->bundle_of(topic_bundle_hash(topic.to_string()));
}

Task<Result<LookupAnswer>> NamespaceService::lookup(protocol::TopicName topic, bool authoritative) {
  auto work = [this, topic = std::move(topic), authoritative]() -> Task<Result<LookupAnswer>> {
    return lookup_here(topic, authoritative);
  };
  auto r = co_await run_on<Result<LookupAnswer>>(executor_, std::move(work));
  co_return std::move(*r);
}

Task<Result<LookupAnswer>> NamespaceService::lookup_here(protocol::TopicName topic,
                                                         bool authoritative) {
  const std::string ns = topic.namespace_name();
  auto range = co_await bundle_of(topic);
  if (!range.ok()) co_return range.status();
  const std::string full = bundle_full_name(ns, *range);
  if (auto it = owned_.find(full); it != owned_.end()) {
    if (it->second.releasing) {
      co_return not_ready(fmt::format("bundle {} is being unloaded", full));
    }
    if (!serving_) co_return not_ready("this broker lost its metadata session");
    co_return connect_here();
  }
  auto owner = co_await read_owner(ns, *range);
  if (!owner.ok()) co_return owner.status();
  if (owner->has_value()) co_return std::move(**owner);
  // Unowned: placement.
  if (authoritative || load_ == nullptr) co_return co_await take(ns, *range);
  auto placement = co_await load_->place(full);
  if (!placement.ok()) co_return placement.status();
  if (placement->self) co_return co_await take(ns, *range);
  LookupAnswer a;
  a.redirect = true;
  a.authoritative = !placement->via_leader;
  a.target = placement->target;
  co_return a;
}

Task<Result<std::optional<LookupAnswer>>> NamespaceService::owner_of(std::string ns,
                                                                     BundleRange range) {
  auto work = [this, ns = std::move(ns), range]() -> Task<Result<std::optional<LookupAnswer>>> {
    if (auto it = owned_.find(bundle_full_name(ns, range)); it != owned_.end()) {
      co_return std::optional<LookupAnswer>(connect_here());
    }
    co_return co_await read_owner(ns, range);
  };
  auto r = co_await run_on<Result<std::optional<LookupAnswer>>>(executor_, std::move(work));
  co_return std::move(*r);
}

// The ownership node's broker; a node of our own session is adopted (a concurrent take).
Task<Result<std::optional<LookupAnswer>>> NamespaceService::read_owner(const std::string& ns,
                                                                       const BundleRange& range) {
  auto node = co_await store_.get(bundle_owner_path(ns, range));
  if (!node.ok()) co_return node.status();
  if (!node->has_value()) co_return std::optional<LookupAnswer>();
  const std::string full = bundle_full_name(ns, range);
  if ((*node)->stat.ephemeral_owner != 0 && (*node)->stat.ephemeral_owner == store_.session_id()) {
    auto [it, added] = owned_.try_emplace(full);
    if (it->second.releasing) co_return not_ready(fmt::format("bundle {} is being unloaded", full));
    co_return std::optional<LookupAnswer>(connect_here());
  }
  auto urls = BrokerUrls::from_json((*node)->value);
  if (!urls) {
    co_return Status(Errc::kCorruption, fmt::format("ownership node of {} is unreadable", full));
  }
  LookupAnswer a;
  a.target = std::move(*urls);
  a.authoritative = true;
  // A node with our URLs from an earlier session (a restart within the session timeout):
  // not ours until it expires.
  if (a.target == self_) {
    co_return not_ready(fmt::format(
        "bundle {} is still owned by this broker's previous session; retry after it expires",
        full));
  }
  co_return std::optional<LookupAnswer>(std::move(a));
}

Task<Result<LookupAnswer>> NamespaceService::take(std::string ns, BundleRange range) {
  if (!serving_) co_return not_ready("this broker lost its metadata session");
  const std::string full = bundle_full_name(ns, range);
  metadata::PutOptions create;
  create.expected_version = -1;
  create.ephemeral = true;
  auto made = co_await store_.put_recursive(bundle_owner_path(ns, range), self_.to_json(), create);
  if (made.ok()) {
    owned_.try_emplace(full);
    log_.info("took ownership of bundle {}", full);
    if (load_ != nullptr) load_->bundles_changed();
    co_return connect_here();
  }
  if (!made.status().is(Errc::kBadVersion)) co_return made.status();
  // Someone was faster (maybe a concurrent lookup here).
  auto owner = co_await read_owner(ns, range);
  if (!owner.ok()) co_return owner.status();
  if (!owner->has_value()) co_return not_ready(fmt::format("bundle {} changed hands; retry", full));
  co_return std::move(**owner);
}

Task<Status> NamespaceService::check_ownership(protocol::TopicName topic,
                                               std::string policies_json) {
  auto work = [this, topic = std::move(topic),
               policies_json = std::move(policies_json)]() -> Task<Status> {
    if (!serving_) co_return not_ready("this broker lost its metadata session");
    auto bundles = NamespaceBundles::from_policies(policies_json, 4);
    if (!bundles.ok()) co_return bundles.status();
    const std::string ns = topic.namespace_name();
    const BundleRange range = bundles->bundle_of(topic_bundle_hash(topic.to_string()));
    if (auto it = owned_.find(bundle_full_name(ns, range)); it != owned_.end()) {
      if (it->second.releasing) {
        co_return not_ready(fmt::format("bundle {} is being unloaded", it->first));
      }
      co_return Status::OK();
    }
    auto owner = co_await read_owner(ns, range);
    if (!owner.ok()) co_return owner.status();
    if (!owner->has_value()) {
      auto taken = co_await take(ns, range);
      if (!taken.ok()) co_return taken.status();
      owner = std::optional<LookupAnswer>(std::move(*taken));
    }
    if ((*owner)->self) co_return Status::OK();
    co_return not_ready(fmt::format("topic {} is served by {}, not this broker: redo the lookup",
                                    topic.to_string(), (*owner)->target.broker_url));
  };
  auto r = co_await run_on<Status>(executor_, std::move(work));
  co_return std::move(*r);
}

bool NamespaceService::owns(const std::string& ns, const BundleRange& range) const {
  auto it = owned_.find(bundle_full_name(ns, range));
  return serving_ && it != owned_.end() && !it->second.releasing;
}

Task<Status> NamespaceService::unload_bundle(std::string ns, BundleRange range,
                                             std::string destination) {
  auto work = [this, ns = std::move(ns), range,
               destination = std::move(destination)]() -> Task<Status> {
    const std::string full = bundle_full_name(ns, range);
    auto it = owned_.find(full);
    if (it == owned_.end()) {
      co_return Status(Errc::kNotFound, fmt::format("bundle {} is not owned here", full));
    }
    if (it->second.releasing) co_return Status::OK();  // an unload is under way
    it->second.releasing = true;
    log_.info("unloading bundle {}", full);
    const auto started = std::chrono::steady_clock::now();
    std::function<bool(const protocol::TopicName&)> in_bundle =
        [ns, range](const protocol::TopicName& t) {
          return t.namespace_name() == ns && range.contains(topic_bundle_hash(t.to_string()));
        };
    const int closed = co_await topics_->close_topics(in_bundle);
    if (load_ != nullptr) co_await load_->hint_unloaded(full, destination);
    Status st = co_await store_.remove(bundle_owner_path(ns, range));
    owned_.erase(full);
    if (load_ != nullptr) load_->bundles_changed();
    if (!st.ok() && !st.is(Errc::kNotFound)) {
      log_.warn("deleting the ownership node of {}: {} (it goes with the session)", full,
                st.to_string());
    }
    log_.info("unloaded bundle {} ({} topics) in {} ms", full, closed,
              std::chrono::duration_cast<std::chrono::milliseconds>(
                  std::chrono::steady_clock::now() - started)
                  .count());
    co_return Status::OK();
  };
  auto r = co_await run_on<Status>(executor_, std::move(work));
  co_return std::move(*r);
}

Task<Status> NamespaceService::split_bundle(std::string ns, BundleRange range, bool unload) {
  auto work = [this, ns = std::move(ns), range, unload]() -> Task<Status> {
    const std::string full = bundle_full_name(ns, range);
    auto it = owned_.find(full);
    if (it == owned_.end() || it->second.releasing) {
      co_return Status(Errc::kNotFound, fmt::format("bundle {} is not owned here", full));
    }
    auto& config = configuration_store();
    // 1. Own both halves before anyone can see them (their nodes first), 2. switch the
    // policies with compare-and-set, 3. drop the parent's node.
    for (int attempt = 0; attempt < 16; ++attempt) {
      auto node = co_await config.get(namespace_policies_path(ns));
      if (!node.ok()) co_return node.status();
      if (!node->has_value()) co_return Status(Errc::kNotFound, "namespace does not exist");
      auto bundles = NamespaceBundles::from_policies((*node)->value, 4);
      if (!bundles.ok()) co_return bundles.status();
      auto boundaries = bundles->split_boundaries(range);
      if (!boundaries) {
        co_return Status(Errc::kInvalidArgument,
                         fmt::format("bundle {} cannot be split (not a bundle of {} or too "
                                     "narrow)",
                                     range.name(), ns));
      }
      const uint32_t middle = range.lower + (range.upper - range.lower) / 2;
      const BundleRange halves[2] = {{range.lower, middle}, {middle, range.upper}};
      metadata::PutOptions create;
      create.expected_version = -1;
      create.ephemeral = true;
      for (const auto& half : halves) {
        auto made =
            co_await store_.put_recursive(bundle_owner_path(ns, half), self_.to_json(), create);
        if (!made.ok() && !made.status().is(Errc::kBadVersion)) co_return made.status();
      }
      auto policies = Json::parse((*node)->value, nullptr, false);
      if (!policies.is_object()) policies = Json::object();
      policies["bundles"] = Json{{"boundaries", *boundaries},
                                 {"numBundles", static_cast<int>(boundaries->size()) - 1}};
      metadata::PutOptions cas;
      cas.expected_version = (*node)->stat.version;
      auto written = co_await config.put(namespace_policies_path(ns), policies.dump(), cas);
      if (!written.ok()) {
        for (const auto& half : halves) (void)co_await store_.remove(bundle_owner_path(ns, half));
        if (written.status().is(Errc::kBadVersion)) continue;
        co_return written.status();
      }
      owned_.erase(full);
      for (const auto& half : halves) owned_.try_emplace(bundle_full_name(ns, half));
      (void)co_await store_.remove(bundle_owner_path(ns, range));
      if (load_ != nullptr) load_->bundles_changed();
      log_.info("split bundle {} into {} and {}", full, halves[0].name(), halves[1].name());
      if (unload) {
        for (const auto& half : halves) {
          Status st = co_await unload_bundle(ns, half);
          if (!st.ok()) co_return st;
        }
      }
      co_return Status::OK();
    }
    co_return Status(Errc::kBadVersion, "namespace policies kept changing; split not done");
  };
  auto r = co_await run_on<Status>(executor_, std::move(work));
  co_return std::move(*r);
}

Task<std::vector<std::string>> NamespaceService::owned_bundles_of(std::string ns) {
  auto work = [this, ns = std::move(ns)]() -> Task<std::vector<std::string>> {
    std::vector<std::string> out;
    const std::string prefix = ns + "/";
    for (const auto& [name, owned] : owned_) {
      if (name.starts_with(prefix) && !owned.releasing) out.push_back(name);
    }
    co_return out;
  };
  auto r = co_await run_on<std::vector<std::string>>(executor_, std::move(work));
  co_return std::move(*r);
}

std::vector<std::string> NamespaceService::owned_bundles() const {
  std::vector<std::string> out;
  for (const auto& [name, owned] : owned_) out.push_back(name);
  return out;
}

void NamespaceService::stop_serving(const char* why) {
  if (!serving_) return;
  serving_ = false;
  log_.warn("stopped serving every topic: {}", why);
  std::function<bool(const protocol::TopicName&)> all = [](const protocol::TopicName&) {
    return true;
  };
  BundleTopics* topics = topics_;
  spawn_in(gate_, executor_,
           [topics, all]() -> Task<void> { (void)co_await topics->close_topics(all); });
}

void NamespaceService::on_session_event(metadata::SessionEvent event) {
  using metadata::SessionEvent;
  const uint64_t generation = ++session_generation_;
  switch (event) {
    case SessionEvent::kConnectionLost: {
      // Stop before the session can expire. The servers count from the last request they
      // heard from us; the client declares the connection lost after two thirds of the
      // timeout without an answer (a hung server), so only a third may be left: serve a
      // sixth of the timeout more at most (half of what is left, for timer slack). The
      // timeout is the one the servers gave, which may be shorter than the one asked for.
      const auto grace = store_.session_timeout() / 6;
      log_.warn("metadata connection lost: serving for at most {} ms more", grace.count());
      auto timer = std::make_shared<asio::steady_timer>(executor_, grace);
      timer->async_wait([this, timer, generation](const boost::system::error_code& ec) {
        if (!ec && generation == session_generation_) {
          stop_serving("no metadata connection for a sixth of the session timeout");
        }
      });
      break;
    }
    case SessionEvent::kReconnected:
      if (!serving_) log_.info("metadata connection back with the same session: serving again");
      serving_ = true;
      break;
    case SessionEvent::kSessionLost:
      stop_serving("metadata session lost: every bundle is gone");
      owned_.clear();
      if (load_ != nullptr) load_->bundles_changed();
      break;
    case SessionEvent::kSessionReestablished:
      log_.info("new metadata session: serving again (bundles are taken on lookup)");
      serving_ = true;
      break;
  }
}

}  // namespace magnetar::broker
