#include "broker/service/topic_registry.h"

#include <fmt/format.h>

#include <algorithm>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <nlohmann/json.hpp>

#include "broker/config/store_paths.h"
#include "broker/namespace/namespace_service.h"
#include "broker/service/policies.h"
#include "broker/service/replicated_subscriptions.h"
#include "broker/service/replication_hooks.h"
#include "broker/service/non_persistent_topic.h"
#include "broker/service/topic.h"
#include "broker/service/topic_compaction.h"
#include "mledger/managed_ledger.h"

namespace magnetar::broker {

TopicRegistry::TopicRegistry(std::vector<Loop> loops, metadata::MetadataStores stores,
                             const BrokerConfig& config, NamespaceService& namespaces, Gate& gate)
    : stores_(std::move(stores)),
      config_(config),
      dynamic_(config),
      namespaces_(namespaces),
      gate_(gate) {
  for (auto& loop : loops)
    loops_.push_back(std::make_unique<LoopState>(LoopState{loop, {}, {}, {}}));
  if (loops_.empty() || !stores_.configuration) return;
  const Executor first = loops_[0]->loop.executor;
  // A namespace's Policies node, or a topic's policy node: "tenant/ns" of its path, or empty.
  auto namespace_of_path = [](std::string_view path) -> std::string {
    for (std::string_view prefix :
         {"/admin/policies/", "/admin/topic-policies/", "/admin/local-topic-policies/"}) {
      if (path.substr(0, prefix.size()) != prefix) continue;
      std::string_view rest = path.substr(prefix.size());
      const size_t slash = rest.find('/');
      if (slash == 0 || slash == std::string_view::npos || slash + 1 == rest.size()) return {};
      const size_t end = rest.find('/', slash + 1);
      const bool namespace_node = prefix == "/admin/policies/";
      // A namespace node has exactly two components, a topic's node more.
      if (namespace_node != (end == std::string_view::npos)) return {};
      return std::string(rest.substr(0, end));
    }
    return {};
  };
  auto changed = [this, namespace_of_path](const metadata::Notification& n) {
    if (n.path == kDynamicConfigPath) {
      dynamic_config_changed();
      return;
    }
    const bool topic_node = n.path.find("topic-policies/") != std::string::npos;
    if (n.type != metadata::NotificationType::kCreated &&
        n.type != metadata::NotificationType::kModified &&
        !(topic_node && n.type == metadata::NotificationType::kDeleted)) {
      return;
    }
    std::string ns = namespace_of_path(n.path);
    if (!ns.empty()) policies_changed(std::move(ns));
  };
  auto session = [this](metadata::SessionEvent e) {
    if (e == metadata::SessionEvent::kReconnected ||
        e == metadata::SessionEvent::kSessionReestablished) {
      policies_changed({});
      dynamic_config_changed();
    }
  };
  std::vector<metadata::MetadataStore*> watched{stores_.configuration.get()};
  if (stores_.cluster && stores_.cluster != stores_.configuration) {
    watched.push_back(stores_.cluster.get());
  }
  for (metadata::MetadataStore* store : watched) {
    policy_listeners_.emplace_back(store, store->add_listener(first, changed));
    policy_listeners_.emplace_back(store, store->add_session_listener(first, session));
  }
  if (stores_.cluster) asio::post(first, [this] { dynamic_config_changed(); });
}

void TopicRegistry::dynamic_config_changed() {
  if (stopped_) return;
  dynamic_dirty_ = true;
  if (dynamic_reloading_) return;
  dynamic_reloading_ =
      spawn_in(gate_, loops_[0]->loop.executor, [this]() { return reload_dynamic_config(); });
}

Task<void> TopicRegistry::reload_dynamic_config() {
  while (dynamic_dirty_ && !stopped_) {
    dynamic_dirty_ = false;
    auto node = co_await stores_.cluster->get(std::string(kDynamicConfigPath));
    if (!node.ok()) {
      log_.warn("cannot read the dynamic configuration: {} (read again when the store "
                "reconnects)",
                node.status().to_string());
      break;
    }
    const std::string value = node->has_value() ? (*node)->value : std::string();
    for (const std::string& why : dynamic_.update(value)) {
      log_.warn("dynamic configuration override not applied: {}", why);
    }
    if (auto keys = nlohmann::json::parse(value.empty() ? "{}" : value, nullptr, false);
        keys.is_object() && !keys.empty()) {
      std::string names;
      for (const auto& [key, v] : keys.items()) names += (names.empty() ? "" : ", ") + key;
      log_.info("dynamic configuration overrides: {}", names);
    }
    policies_changed({});  // the broker's defaults under every loaded topic's policies
  }
  dynamic_reloading_ = false;
}

TopicRegistry::~TopicRegistry() {
  for (auto [store, id] : policy_listeners_) store->remove_listener(id);
}

void TopicRegistry::policies_changed(std::string ns) {
  policy_epoch_.fetch_add(1);
  if (stopped_) return;
  policies_dirty_.insert(std::move(ns));
  if (policies_worker_) return;
  policies_worker_ =
      spawn_in(gate_, loops_[0]->loop.executor, [this]() { return apply_changed_policies(); });
}

Task<void> TopicRegistry::apply_changed_policies() {
  while (!policies_dirty_.empty() && !stopped_) {
    std::string ns = *policies_dirty_.begin();
    policies_dirty_.erase(policies_dirty_.begin());
    if (!ns.empty()) {
      co_await apply_namespace_policies(std::move(ns));
      continue;
    }
    // Every namespace with a loaded topic.
    std::set<std::string> loaded;
    for (auto& state : loops_) {
      LoopState* s = state.get();
      auto collect = [s]() -> Task<std::set<std::string>> {
        std::set<std::string> names;
        for (const auto& [key, topic] : s->topics) names.insert(topic->name().namespace_name());
        for (const auto& [key, topic] : s->non_persistent) {
          names.insert(topic->name().namespace_name());
        }
        co_return names;
      };
      auto names = co_await run_on<std::set<std::string>>(s->loop.executor, std::move(collect));
      loaded.merge(*names);
    }
    for (auto& name : loaded) co_await apply_namespace_policies(name);
  }
  policies_worker_ = false;
}

Task<void> TopicRegistry::apply_namespace_policies(std::string ns) {
  auto node = co_await stores_.configuration->get(namespace_policies_path(ns));
  if (!node.ok()) {
    log_.with("namespace", ns).warn("cannot read changed policies: {}", node.status().to_string());
    co_return;
  }
  if (!node->has_value()) co_return;  // deleted: its topics are unloaded by the deletion
  const std::string namespace_json = (*node)->value;
  int applied = 0;
  for (auto& state : loops_) {
    LoopState* s = state.get();
    auto apply = [this, s, ns, namespace_json]() -> Task<int> {
      std::vector<std::shared_ptr<PersistentTopic>> in_namespace;
      for (const auto& [key, topic] : s->topics) {
        if (topic->name().namespace_name() == ns) in_namespace.push_back(topic);
      }
      for (auto& topic : in_namespace) {
        auto policies = co_await policies_of(topic->name(), namespace_json);
        if (!policies.ok()) {
          log_.with("topic", topic->name().to_string())
              .warn("cannot read changed policies: {} (read again when the store reconnects)",
                    policies.status().to_string());
          continue;
        }
        co_await topic->apply_policies(std::move(*policies));
      }
      std::vector<std::shared_ptr<NonPersistentTopic>> non_persistent;
      for (const auto& [key, topic] : s->non_persistent) {
        if (topic->name().namespace_name() == ns) non_persistent.push_back(topic);
      }
      for (auto& topic : non_persistent) {
        auto policies = co_await policies_of(topic->name(), namespace_json);
        if (policies.ok()) topic->set_policies(std::move(*policies));
      }
      co_return static_cast<int>(in_namespace.size() + non_persistent.size());
    };
    auto n = co_await run_on<int>(s->loop.executor, std::move(apply));
    applied += *n;
  }
  if (applied > 0) {
    log_.with("namespace", ns).info("applied changed policies to {} loaded topics", applied);
  }
}

Task<Result<TopicPolicies>> TopicRegistry::policies_of(const protocol::TopicName& name,
                                                       std::string namespace_json) {
  std::string levels[2];  // global, local
  if (config_.topic_level_policies_enabled) {
    for (const bool global : {true, false}) {
      metadata::MetadataStore& store = global ? *stores_.configuration : *stores_.cluster;
      auto node = co_await store.get(topic_policies_path(name, global));
      if (!node.ok()) co_return node.status();
      if (node->has_value()) levels[global ? 0 : 1] = (*node)->value;
    }
  }
  co_return topic_policies(*dynamic_.current(), namespace_json, levels[0], levels[1]);
}

size_t TopicRegistry::loop_index(const std::string& topic) const {
  return std::hash<std::string>{}(topic) % loops_.size();
}

TopicRegistry::LoopState& TopicRegistry::state_for(const std::string& topic) const {
  return *loops_[loop_index(topic)];
}

Executor TopicRegistry::topic_executor(const std::string& topic) const {
  return state_for(topic).loop.executor;
}

std::shared_ptr<PersistentTopic> TopicRegistry::loaded_topic(const std::string& name) const {
  const LoopState& state = state_for(name);
  auto it = state.topics.find(name);
  return it == state.topics.end() ? nullptr : it->second;
}

Task<Result<bool>> TopicRegistry::namespace_exists(std::string ns) {
  auto r = co_await stores_.configuration->exists(namespace_policies_path(ns));
  if (!r.ok()) co_return r.status();
  co_return *r;
}

Task<Result<std::shared_ptr<PersistentTopic>>> TopicRegistry::get_topic(protocol::TopicName name,
                                                                        bool create) {
  LoopState* state = &state_for(name.to_string());
  // (co_spawn's result must be default-constructible: hence the optional.)
  using Loaded = Result<std::shared_ptr<PersistentTopic>>;
  auto load = [this, state, name = std::move(name), create]() -> Task<std::optional<Loaded>> {
    co_return co_await load_topic(state, name, create);
  };
  auto on_loop = asio::co_spawn(state->loop.executor, std::move(load), asio::use_awaitable);
  std::optional<Loaded> loaded = co_await std::move(on_loop);
  co_return std::move(*loaded);
}

// On the state's loop: the only place its topic map grows.
Task<Result<std::shared_ptr<PersistentTopic>>> TopicRegistry::load_topic(LoopState* state,
                                                                         protocol::TopicName name,
                                                                         bool create) {
  const std::string key = name.to_string();
  if (!name.is_persistent()) {
    co_return Status(Errc::kNotSupported, fmt::format("{} is not a persistent topic", key));
  }
  // One load at a time per topic; later callers wait for it.
  while (state->loading.count(key)) {
    auto turn = await_callback<bool>([state, key](std::function<void(bool)> done) {
      state->loading[key].push_back(std::move(done));
    });
    (void)co_await std::move(turn);
  }
  if (auto t = loaded_topic(key)) co_return t;
  if (stopped_) co_return Status(Errc::kUnavailable, "broker is stopping");
  state->loading[key];
  auto finish = [state, key]() {
    auto waiters = std::move(state->loading[key]);
    state->loading.erase(key);
    for (auto& w : waiters) w(true);
  };
  const uint64_t epoch = policy_epoch_.load();
  auto ns = co_await stores_.configuration->get(namespace_policies_path(name.namespace_name()));
  if (!ns.ok() || !ns->has_value()) {
    finish();
    co_return Status(Errc::kNotFound,
                     ns.ok() ? fmt::format("namespace {} does not exist", name.namespace_name())
                             : ns.status().message());
  }
  Status owned = co_await namespaces_.check_ownership(name, (*ns)->value);
  if (!owned.ok()) {
    finish();
    co_return owned;
  }
  auto read = co_await policies_of(name, (*ns)->value);
  if (!read.ok()) {
    finish();
    co_return read.status();
  }
  const TopicPolicies policies = std::move(*read);
  const std::string ml_name = name.persistence_name();
  if (!create) {
    auto exists = co_await stores_.cluster->exists(mledger::managed_ledger_path(ml_name));
    if (!exists.ok() || !*exists) {
      finish();
      co_return Status(Errc::kNotFound, fmt::format("topic {} not found", key));
    }
  }
  auto ml = co_await state->loop.factory->open(ml_name, policies.ledger);
  if (!ml.ok()) {
    finish();
    co_return ml.status();
  }
  auto topic = std::make_shared<PersistentTopic>(config_, gate_, state->loop.executor, name, *ml);
  topic->set_policies(policies);
  if (policies.deduplication) {
    Status st = co_await topic->enable_deduplication();
    if (!st.ok()) {
      finish();
      co_return st;
    }
  }
  if (replication_) co_await replication_->topic_loaded(topic);
  state->topics[key] = topic;
  finish();
  if (policy_epoch_.load() != epoch) {
    // The policies may have changed after this load read them: read them again.
    auto again = [this, ns_name = name.namespace_name()]() mutable -> Task<void> {
      policies_changed(std::move(ns_name));
      co_return;
    };
    spawn_in(gate_, loops_[0]->loop.executor, std::move(again));
  }
  if (!co_await still_owned(name, (*ns)->value)) {
    if (state->topics.count(key) && state->topics[key] == topic) state->topics.erase(key);
    co_await close_topic(topic);
    co_return Status(Errc::kUnavailable,
                     fmt::format("the bundle of {} was unloaded while it loaded", key));
  }
  log_.info("loaded topic {}", key);
  co_return topic;
}

Task<bool> TopicRegistry::still_owned(const protocol::TopicName& name,
                                      const std::string& namespace_json) {
  NamespaceService* namespaces = &namespaces_;
  auto bundles = NamespaceBundles::from_policies(namespace_json, 4);
  const std::string ns_name = name.namespace_name();
  const BundleRange range =
      bundles.ok() ? bundles->bundle_of(topic_bundle_hash(name.to_string())) : BundleRange{};
  auto owns = [namespaces, ns_name, range]() -> Task<bool> {
    co_return namespaces->owns(ns_name, range);
  };
  co_return *co_await run_on<bool>(namespaces->executor(), std::move(owns));
}

Task<Result<std::shared_ptr<NonPersistentTopic>>> TopicRegistry::get_non_persistent_topic(
    protocol::TopicName name, bool create) {
  LoopState* state = &state_for(name.to_string());
  using Loaded = Result<std::shared_ptr<NonPersistentTopic>>;
  auto load = [this, state, name = std::move(name), create]() -> Task<std::optional<Loaded>> {
    co_return co_await load_non_persistent(state, name, create);
  };
  std::optional<Loaded> loaded = *co_await run_on<std::optional<Loaded>>(state->loop.executor,
                                                                          std::move(load));
  co_return std::move(*loaded);
}

Task<Result<std::shared_ptr<Topic>>> TopicRegistry::get_any_topic(protocol::TopicName name,
                                                                  bool create) {
  if (name.is_persistent()) {
    auto t = co_await get_topic(std::move(name), create);
    if (!t.ok()) co_return t.status();
    co_return std::shared_ptr<Topic>(*t);
  }
  auto t = co_await get_non_persistent_topic(std::move(name), create);
  if (!t.ok()) co_return t.status();
  co_return std::shared_ptr<Topic>(*t);
}

std::shared_ptr<NonPersistentTopic> TopicRegistry::loaded_non_persistent_topic(
    const std::string& name) const {
  const LoopState& state = state_for(name);
  auto it = state.non_persistent.find(name);
  return it == state.non_persistent.end() ? nullptr : it->second;
}

// On the state's loop. Nothing to open: the namespace, ownership and policies are read, then
// the topic exists (unless another load made it meanwhile).
Task<Result<std::shared_ptr<NonPersistentTopic>>> TopicRegistry::load_non_persistent(
    LoopState* state, protocol::TopicName name, bool create) {
  const std::string key = name.to_string();
  if (name.is_persistent()) {
    co_return Status(Errc::kNotSupported, fmt::format("{} is not a non-persistent topic", key));
  }
  if (auto t = loaded_non_persistent_topic(key)) co_return t;
  if (!create) co_return Status(Errc::kNotFound, fmt::format("topic {} not found", key));
  if (stopped_) co_return Status(Errc::kUnavailable, "broker is stopping");
  const uint64_t epoch = policy_epoch_.load();
  auto ns = co_await stores_.configuration->get(namespace_policies_path(name.namespace_name()));
  if (!ns.ok() || !ns->has_value()) {
    co_return Status(Errc::kNotFound,
                     ns.ok() ? fmt::format("namespace {} does not exist", name.namespace_name())
                             : ns.status().message());
  }
  MAGNETAR_CO_TRY(co_await namespaces_.check_ownership(name, (*ns)->value));
  auto policies = co_await policies_of(name, (*ns)->value);
  if (!policies.ok()) co_return policies.status();
  if (auto t = loaded_non_persistent_topic(key)) co_return t;  // made meanwhile
  auto topic = std::make_shared<NonPersistentTopic>(config_, state->loop.executor, name);
  topic->set_policies(std::move(*policies));
  state->non_persistent[key] = topic;
  if (policy_epoch_.load() != epoch) policies_changed(name.namespace_name());
  if (!co_await still_owned(name, (*ns)->value)) {
    if (auto it = state->non_persistent.find(key);
        it != state->non_persistent.end() && it->second == topic) {
      state->non_persistent.erase(it);
    }
    topic->close();
    co_return Status(Errc::kUnavailable,
                     fmt::format("the bundle of {} was unloaded while it loaded", key));
  }
  log_.info("loaded topic {}", key);
  co_return topic;
}

Task<std::vector<std::string>> TopicRegistry::loaded_non_persistent_topics(std::string ns) {
  std::vector<std::string> out;
  for (auto& loop : loops_) {
    LoopState* state = loop.get();
    auto work = [state, ns]() -> Task<std::vector<std::string>> {
      std::vector<std::string> names;
      for (const auto& [key, topic] : state->non_persistent) {
        if (topic->name().namespace_name() == ns) names.push_back(key);
      }
      co_return names;
    };
    auto names = co_await run_on<std::vector<std::string>>(state->loop.executor, std::move(work));
    for (auto& n : *names) out.push_back(std::move(n));
  }
  std::sort(out.begin(), out.end());
  co_return out;
}

void TopicRegistry::collect_inactive_non_persistent(LoopState* state,
                                                    std::chrono::steady_clock::time_point now) {
  for (auto it = state->non_persistent.begin(); it != state->non_persistent.end();) {
    NonPersistentTopic& topic = *it->second;
    const InactiveTopicPolicy& policy = topic.policies().inactive;
    // In use while it has clients or subscriptions (Pulsar's NonPersistentTopic.isActive).
    if (topic.has_clients() || !topic.subscriptions().empty()) {
      topic.mark_active(now);
    } else if (policy.delete_while_inactive &&
               now - topic.last_active() >= std::chrono::seconds(policy.max_inactive_seconds)) {
      log_.with("topic", it->first).info("deleted the inactive topic (inactive topic policy)");
      topic.close();
      it = state->non_persistent.erase(it);
      continue;
    }
    ++it;
  }
}

Task<void> TopicRegistry::close_topic(std::shared_ptr<PersistentTopic> topic) {
  if (replication_) co_await replication_->topic_closing(topic);
  co_await topic->close();
}

std::vector<std::shared_ptr<PersistentTopic>> TopicRegistry::topics_on(size_t index) const {
  std::vector<std::shared_ptr<PersistentTopic>> out;
  for (const auto& [name, topic] : loops_[index]->topics) out.push_back(topic);
  return out;
}

Task<int> TopicRegistry::close_topics(std::function<bool(const protocol::TopicName&)> which) {
  int closed = 0;
  for (auto& loop : loops_) {
    LoopState* state = loop.get();
    auto work = [this, state, which]() -> Task<int> {
      std::vector<std::shared_ptr<PersistentTopic>> chosen;
      for (auto it = state->topics.begin(); it != state->topics.end();) {
        if (which(it->second->name())) {
          chosen.push_back(it->second);
          it = state->topics.erase(it);
        } else {
          ++it;
        }
      }
      int non_persistent = 0;
      for (auto it = state->non_persistent.begin(); it != state->non_persistent.end();) {
        if (which(it->second->name())) {
          it->second->close();
          it = state->non_persistent.erase(it);
          ++non_persistent;
        } else {
          ++it;
        }
      }
      for (auto& topic : chosen) co_await close_topic(topic);
      co_return static_cast<int>(chosen.size()) + non_persistent;
    };
    auto n = co_await run_on<int>(state->loop.executor, std::move(work));
    closed += *n;
  }
  co_return closed;
}

Task<Status> TopicRegistry::delete_topic(protocol::TopicName name, bool force) {
  if (!name.is_persistent()) {
    // Nothing is stored: deleting is unloading, on the topic's loop.
    LoopState* state = &state_for(name.to_string());
    auto work = [this, state, key = name.to_string(), force]() -> Task<Status> {
      auto it = state->non_persistent.find(key);
      if (it == state->non_persistent.end()) {
        co_return Status(Errc::kNotFound, fmt::format("topic {} not found", key));
      }
      if (!force && it->second->has_clients()) {
        co_return Status(Errc::kAlreadyExists, "Topic has active producers/subscriptions");
      }
      auto topic = it->second;
      state->non_persistent.erase(it);
      topic->close();
      log_.info("deleted topic {}", key);
      co_return Status::OK();
    };
    co_return std::move(*co_await run_on<Status>(state->loop.executor, std::move(work)));
  }
  auto topic = co_await get_topic(name, false);
  if (!topic.ok()) co_return topic.status();
  LoopState* state = &state_for(name.to_string());
  std::shared_ptr<PersistentTopic> t = *topic;
  const std::string key = name.to_string();
  auto work = [this, state, t, key, force, ml_name = name.persistence_name()]() -> Task<Status> {
    if (!force && t->has_clients()) {
      co_return Status(Errc::kAlreadyExists, "Topic has active producers/subscriptions");
    }
    if (auto it = state->topics.find(key); it != state->topics.end() && it->second == t) {
      state->topics.erase(it);
    }
    co_await close_topic(t);
    co_await t->compaction()->remove();
    Status st = co_await state->loop.factory->remove(ml_name, config_.managed_ledger);
    if (st.ok()) log_.info("deleted topic {}", key);
    co_return st;
  };
  auto st = co_await run_on<Status>(state->loop.executor, std::move(work));
  co_return std::move(*st);
}

Task<std::vector<TopicLoad>> TopicRegistry::topic_loads() {
  std::vector<TopicLoad> out;
  for (auto& loop : loops_) {
    LoopState* state = loop.get();
    auto work = [state]() -> Task<std::vector<TopicLoad>> {
      std::vector<TopicLoad> loads;
      for (const auto& [name, topic] : state->topics) {
        const auto c = topic->totals();
        loads.push_back(TopicLoad{topic->name(), c.msgs_in, c.bytes_in, c.msgs_out, c.bytes_out,
                                  c.producers, c.consumers});
      }
      for (const auto& [name, topic] : state->non_persistent) {
        const auto c = topic->totals();
        loads.push_back(TopicLoad{topic->name(), c.msgs_in, c.bytes_in, c.msgs_out, c.bytes_out,
                                  c.producers, c.consumers});
      }
      co_return loads;
    };
    auto loads = co_await run_on<std::vector<TopicLoad>>(state->loop.executor, std::move(work));
    for (auto& t : *loads) out.push_back(std::move(t));
  }
  co_return out;
}

TopicRegistry::AutoCreation TopicRegistry::auto_creation_of(std::string_view policies) const {
  AutoCreation broker{config_.allow_auto_topic_creation,
                      config_.allow_auto_topic_creation_type == "partitioned",
                      config_.default_num_partitions};
  const auto j = nlohmann::json::parse(policies, nullptr, false);
  if (!j.is_object() || !j.contains("autoTopicCreationOverride")) return broker;
  const auto& o = j["autoTopicCreationOverride"];
  if (!o.is_object()) return broker;
  AutoCreation own;
  own.allowed = o.value("allowAutoTopicCreation", false);
  own.partitioned = o.value("topicType", "non-partitioned") == "partitioned";
  own.partitions = o.value("defaultNumPartitions", config_.default_num_partitions);
  return own;
}

Task<TopicRegistry::AutoCreation> TopicRegistry::auto_creation(std::string ns) {
  auto node = co_await stores_.configuration->get(namespace_policies_path(ns));
  co_return auto_creation_of(node.ok() && node->has_value() ? std::string_view((*node)->value)
                                                            : std::string_view());
}

Task<std::vector<std::pair<protocol::TopicName, std::string>>>
TopicRegistry::loaded_topic_stats() {
  using Stats = std::vector<std::pair<protocol::TopicName, std::string>>;
  Stats out;
  for (auto& loop : loops_) {
    LoopState* state = loop.get();
    auto work = [state]() -> Task<Stats> {
      Stats stats;
      for (const auto& [name, topic] : state->topics) {
        stats.emplace_back(topic->name(), topic->stats().dump());
      }
      for (const auto& [name, topic] : state->non_persistent) {
        stats.emplace_back(topic->name(), topic->stats().dump());
      }
      co_return stats;
    };
    auto stats = co_await run_on<Stats>(state->loop.executor, std::move(work));
    for (auto& t : *stats) out.push_back(std::move(t));
  }
  co_return out;
}

Task<bool> TopicRegistry::may_auto_create(protocol::TopicName name) {
  if (name.is_partition()) {
    // A partition of a partitioned topic exists below its count only, whatever auto-creation
    // says (Pulsar refuses "Illegal topic partition name"): a producer of a partition beyond
    // it waits for the count to be raised instead of making a partition nobody lists.
    auto n = co_await partitions(name.partitioned_topic_name(), false);
    if (n.ok() && *n > 0) co_return name.partition_index() < *n;
  }
  co_return (co_await auto_creation(name.namespace_name())).allowed;
}

Task<Result<int>> TopicRegistry::partitions(protocol::TopicName name, bool auto_create) {
  if (name.is_partition()) co_return 0;
  const std::string path = partitioned_topic_path(name);
  auto got = co_await stores_.configuration->get(path);
  if (!got.ok()) co_return got.status();
  if (got->has_value()) {
    if (auto n = partitions_of_metadata((*got)->value)) co_return *n;
    co_return Status(Errc::kCorruption, fmt::format("bad partitioned metadata at {}", path));
  }
  // A missing namespace is said at once (as Pulsar 3.3+ does), so that clients fail fast
  // instead of retrying the lookup until their operation timeout.
  // One read of the namespace's policies: whether it exists, and what auto-creation makes.
  auto ns = co_await stores_.configuration->get(namespace_policies_path(name.namespace_name()));
  if (!ns.ok()) co_return ns.status();
  if (!ns->has_value()) {
    co_return Status(Errc::kNotFound, fmt::format("Tenant or namespace or topic does not exist: {}",
                                                  name.namespace_name()));
  }
  if (!auto_create) co_return 0;
  const AutoCreation creation = auto_creation_of((*ns)->value);
  if (!creation.allowed || !creation.partitioned || creation.partitions <= 0) co_return 0;
  // An existing non-partitioned topic stays non-partitioned.
  const std::string ml_path = mledger::managed_ledger_path(name.persistence_name());
  auto exists = co_await stores_.cluster->exists(ml_path);
  if (exists.ok() && *exists) co_return 0;
  const nlohmann::json meta = {{"partitions", creation.partitions}};
  metadata::PutOptions create;
  create.expected_version = -1;
  auto made = co_await stores_.configuration->put_recursive(path, meta.dump(), create);
  if (!made.ok() && !made.status().is(Errc::kBadVersion)) co_return made.status();
  if (!made.ok()) co_return co_await partitions(std::move(name), false);  // made meanwhile
  co_return creation.partitions;
}

std::optional<int> partitions_of_metadata(std::string_view json) {
  auto j = nlohmann::json::parse(json, nullptr, false);
  if (j.is_object() && j.contains("partitions") && j["partitions"].is_number_integer()) {
    return j["partitions"].get<int>();
  }
  return std::nullopt;
}

namespace {

// Adds every partition of the namespace's partitioned topics of `domain`, used yet or not, as
// Pulsar (which creates them with the partitioned topic) lists them.
Task<Status> add_partitions(const metadata::MetadataStores& stores, const std::string& ns,
                            protocol::TopicDomain domain, std::set<std::string>& names) {
  auto partitioned = co_await stores.configuration->children(partitioned_topics_dir(ns, domain));
  if (!partitioned.ok()) co_return partitioned.status();
  for (const auto& child : *partitioned) {
    auto decoded = protocol::decode_local_name(child);
    auto base = protocol::TopicName::parse(fmt::format(
        "{}://{}/{}", protocol::to_string(domain), ns, decoded ? *decoded : child));
    if (!base.ok()) continue;
    auto node = co_await stores.configuration->get(partitioned_topic_path(*base));
    if (!node.ok() || !node->has_value()) continue;
    const int n = partitions_of_metadata((*node)->value).value_or(0);
    for (int i = 0; i < n; ++i) names.insert(base->partition(i).to_string());
  }
  co_return Status::OK();
}

}  // namespace

Task<Result<std::vector<std::string>>> namespace_topics(metadata::MetadataStores stores,
                                                        std::string ns) {
  const std::string path = fmt::format("/managed-ledgers/{}/persistent", ns);
  auto children = co_await stores.cluster->children(path);
  if (!children.ok()) co_return children.status();
  std::set<std::string> names;
  for (const auto& child : *children) {
    auto decoded = protocol::decode_local_name(child);
    names.insert(fmt::format("persistent://{}/{}", ns, decoded ? *decoded : child));
  }
  Status st = co_await add_partitions(stores, ns, protocol::TopicDomain::kPersistent, names);
  if (!st.ok()) co_return st;
  co_return std::vector<std::string>(names.begin(), names.end());
}

Task<Result<std::vector<std::string>>> TopicRegistry::topics_of_namespace(
    std::string ns, Listed listed) {
  std::vector<std::string> out;
  if (listed != Listed::kNonPersistent) {
    auto persistent = co_await namespace_topics(stores_, ns);
    if (!persistent.ok()) co_return persistent.status();
    out = std::move(*persistent);
  }
  if (listed != Listed::kPersistent) {
    auto loaded = co_await loaded_non_persistent_topics(ns);
    std::set<std::string> names(loaded.begin(), loaded.end());
    Status st = co_await add_partitions(stores_, ns, protocol::TopicDomain::kNonPersistent, names);
    if (!st.ok()) co_return st;
    out.insert(out.end(), names.begin(), names.end());
  }
  co_return out;
}

// The compaction threshold (topic, namespace or broker): a compaction starts once the backlog
// after the horizon passes it (as Pulsar's brokerServiceCompactionMonitorIntervalInSeconds
// check).
void TopicRegistry::compact_if_over_threshold(const std::shared_ptr<PersistentTopic>& topic) {
  const int64_t threshold = topic->policies().compaction_threshold_bytes;
  const auto& compaction = topic->compaction();
  if (threshold <= 0 || compaction->running()) return;
  const int64_t backlog = compaction->uncompacted_bytes();
  if (backlog <= threshold) return;
  log_.with("topic", topic->name().to_string())
      .info("compacting: {} bytes after the horizon, threshold {}", backlog, threshold);
  auto run = [topic]() -> Task<void> { (void)co_await topic->compaction()->run(); };
  (void)spawn_in(topic->gate(), topic->executor(), std::move(run));
}

Task<void> TopicRegistry::maintain(size_t index) {
  using std::chrono::milliseconds;
  LoopState* state = loops_[index].get();
  const auto ttl_period =
      milliseconds(static_cast<int64_t>(config_.message_expiry_check_interval_minutes * 60000));
  const auto quota_period =
      milliseconds(static_cast<int64_t>(config_.backlog_quota_check_interval_seconds * 1000));
  const auto stats_period =
      milliseconds(static_cast<int64_t>(config_.stats_update_frequency_seconds * 1000));
  const auto gc_period =
      milliseconds(int64_t{config_.broker_delete_inactive_topics_frequency_seconds} * 1000);
  const auto compaction_period = milliseconds(
      static_cast<int64_t>(config_.broker_service_compaction_monitor_interval_seconds * 1000));
  const auto snapshot_period = milliseconds(config_.replicated_subscriptions_snapshot_frequency_ms);
  const auto tick = std::clamp(std::min({ttl_period, quota_period, stats_period, gc_period,
                                         compaction_period, snapshot_period}),
                               milliseconds(10), milliseconds(1000));
  auto next_compaction = std::chrono::steady_clock::now() + compaction_period;
  auto next_ttl = std::chrono::steady_clock::now() + ttl_period;
  auto next_quota = std::chrono::steady_clock::now() + quota_period;
  auto next_gc = std::chrono::steady_clock::now() + gc_period;
  auto last_stats = std::chrono::steady_clock::now();
  state->tick = std::make_unique<asio::steady_timer>(state->loop.executor);
  while (!stopped_) {
    state->tick->expires_after(tick);
    boost::system::error_code ec;
    co_await state->tick->async_wait(asio::redirect_error(asio::use_awaitable, ec));
    if (stopped_) co_return;
    const auto now = std::chrono::steady_clock::now();
    const bool ttl_due = now >= next_ttl, quota_due = now >= next_quota, gc_due = now >= next_gc;
    if (ttl_due) next_ttl = now + ttl_period;
    if (quota_due) next_quota = now + quota_period;
    if (gc_due) next_gc = now + gc_period;
    if (now - last_stats >= stats_period) {
      const double seconds = std::chrono::duration<double>(now - last_stats).count();
      last_stats = now;
      for (auto& [name, topic] : state->topics) topic->update_rates(seconds);
      for (auto& [name, topic] : state->non_persistent) topic->update_rates(seconds);
    }
    for (auto& [name, topic] : state->non_persistent) topic->refresh_metrics();
    if (gc_due) collect_inactive_non_persistent(state, now);
    for (auto& [name, topic] : state->topics) {
      topic->refresh_metrics();
      topic->snapshot_deduplication_if_due(now);
      topic->replicated_subscriptions().tick(now);
    }
    if (now >= next_compaction) {
      next_compaction = now + compaction_period;
      for (auto& [name, topic] : state->topics) compact_if_over_threshold(topic);
    }
    if (!ttl_due && !quota_due && !gc_due) continue;
    auto topics = state->topics;
    for (auto& [name, topic] : topics) {
      if (stopped_) co_return;
      if (gc_due) topic->remove_abandoned_non_durable(now - std::chrono::seconds(10));
      if (ttl_due) co_await expire_messages(*topic);
      if (quota_due) co_await enforce_backlog_quota(*topic);
      if (gc_due && inactive_topic_to_delete(*topic, now)) {
        Status st = co_await delete_topic(topic->name(), false);
        if (st.ok()) {
          log_.with("topic", name).info("deleted the inactive topic (inactive topic policy)");
        } else if (!st.is(Errc::kNotFound)) {
          log_.with("topic", name).warn("cannot delete the inactive topic: {}", st.to_string());
        }
      }
    }
  }
}

Task<void> TopicRegistry::close_loop(size_t index) {
  LoopState* state = loops_[index].get();
  if (state->tick) state->tick->cancel();
  for (auto& [name, topic] : state->non_persistent) topic->close();
  state->non_persistent.clear();
  auto topics = state->topics;
  for (auto& [name, topic] : topics) co_await close_topic(topic);
  state->topics.clear();
}

}  // namespace magnetar::broker
