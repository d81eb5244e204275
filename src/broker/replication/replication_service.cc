#include "broker/replication/replication_service.h"

#include <fmt/format.h>

#include <algorithm>
#include <boost/asio/redirect_error.hpp>
#include <nlohmann/json.hpp>
#include <set>
#include <string_view>

#include "broker/config/store_paths.h"
#include "broker/replication/replicator.h"
#include "broker/service/policies.h"
#include "broker/service/producer.h"
#include "broker/service/topic.h"
#include "broker/service/topic_registry.h"
#include "mledger/managed_ledger.h"
#include "protocol/replication.h"

namespace magnetar::broker {

// The replicators of one topic, by remote cluster; what the topic's stats show of them.
class ReplicationService::TopicSet final : public TopicReplicators {
 public:
  // What a remote cluster's replicator publishes here (Pulsar's inbound half of
  // ReplicatorStats), sampled every second.
  struct Inbound {
    int64_t msgs = 0, bytes = 0;
    double rate = 0, throughput = 0;
    std::string address;
    int64_t connected_since_ms = 0;
    bool connected = false;
  };
  std::map<std::string, std::shared_ptr<Replicator>> by_remote;
  std::map<std::string, Inbound> inbound;  // by source cluster
  bool busy = false;                       // a reconcile or close is changing by_remote

  // As Pulsar, the inbound half shows only beside a replicator towards the same cluster.
  std::vector<std::string> remotes() const override {
    std::vector<std::string> out;
    for (const auto& [remote, r] : by_remote) out.push_back(remote);
    return out;
  }
  bool all_connected() const override {
    for (const auto& [remote, r] : by_remote) {
      if (!r->connected()) return false;
    }
    return !by_remote.empty();
  }
  nlohmann::json stats() const override {
    nlohmann::json j = nlohmann::json::object();
    for (const auto& [remote, r] : by_remote) {
      nlohmann::json& out = j[remote] = r->stats();
      auto in = inbound.find(remote);
      if (in == inbound.end() || !in->second.connected) continue;
      out["msgRateIn"] = in->second.rate;
      out["msgThroughputIn"] = in->second.throughput;
      out["inboundConnection"] = in->second.address;
      out["inboundConnectedSince"] = fmt::format("{}", in->second.connected_since_ms);
    }
    return j;
  }

  void sample_inbound(const PersistentTopic& topic, double seconds) {
    std::map<std::string, Inbound> now;
    for (const auto& p : topic.replicator_producers()) {
      auto source = protocol::replicator_source(p->name());
      if (!source) continue;
      Inbound& in = now[*source];
      in.msgs += p->msgs_in;
      in.bytes += p->bytes_in;
      in.connected = true;
      if (in.address.empty()) {
        auto sink = p->sink();
        in.address = sink ? sink->remote() : std::string();
        in.connected_since_ms = p->connected_since_ms();
      }
    }
    for (auto& [source, in] : now) {
      auto before = inbound.find(source);
      // A producer that reconnected counts from 0 again: its first second counts from there.
      const int64_t msgs0 =
          before != inbound.end() && before->second.msgs <= in.msgs ? before->second.msgs : 0;
      const int64_t bytes0 =
          before != inbound.end() && before->second.bytes <= in.bytes ? before->second.bytes : 0;
      if (seconds > 0) {
        in.rate = static_cast<double>(in.msgs - msgs0) / seconds;
        in.throughput = static_cast<double>(in.bytes - bytes0) / seconds;
      }
    }
    inbound = std::move(now);
  }
};

namespace {

constexpr int kSweepTicks = 60;           // every topic reconciled once a minute
constexpr int kResumeFirstTick = 5;       // unloaded topics with a replication cursor: first look
constexpr int kResumeTicks = 300;         // and then every 5 minutes
constexpr const char* kEverything = "*";  // a `changed` mark: every namespace

// "/admin/policies/<t>/<ns>", "/admin/topic-policies/<t>/<ns>/...",
// "/admin/local-topic-policies/<t>/<ns>/...": "<t>/<ns>"; "" for any other path.
std::string policy_namespace(std::string_view path) {
  for (std::string_view prefix :
       {"/admin/policies/", "/admin/topic-policies/", "/admin/local-topic-policies/"}) {
    if (path.substr(0, prefix.size()) != prefix) continue;
    std::string_view rest = path.substr(prefix.size());
    const auto slash = rest.find('/');
    if (slash == std::string_view::npos) return {};
    const auto end = rest.find('/', slash + 1);
    return std::string(rest.substr(0, end));
  }
  return {};
}

// The "replicationClusters" of a topic-policies node; nullopt when absent or not a list.
std::optional<std::vector<std::string>> replication_clusters_of(const std::string& json) {
  auto j = nlohmann::json::parse(json, nullptr, false);
  if (!j.is_object()) return std::nullopt;
  auto it = j.find("replicationClusters");
  if (it == j.end() || !it->is_array()) return std::nullopt;
  std::vector<std::string> out;
  for (const auto& c : *it) {
    if (c.is_string()) out.push_back(c.get<std::string>());
  }
  return out;
}

Task<void> sleep_for(Executor executor, std::chrono::milliseconds d) {
  asio::steady_timer timer(executor, d);
  boost::system::error_code ec;
  co_await timer.async_wait(asio::redirect_error(asio::use_awaitable, ec));
}

}  // namespace

ReplicationService::ReplicationService(const BrokerConfig& config, metadata::MetadataStores stores,
                                       TopicRegistry& topics, Gate& gate)
    : config_(config),
      stores_(stores),
      topics_(topics),
      gate_(gate),
      remotes_(*stores.configuration,
               BrokerClientAuth{config.broker_client_authentication_plugin,
                                config.broker_client_authentication_parameters}),
      remote_topics_(remotes_, topics),
      loops_(topics.loop_count()),
      log_(log::Logger("replication").with("cluster", config.cluster_name)) {
  std::vector<metadata::MetadataStore*> stores_to_watch{stores.configuration.get()};
  if (stores.cluster != stores.configuration) stores_to_watch.push_back(stores.cluster.get());
  const Executor first = topics.loop_executor(0);
  for (metadata::MetadataStore* store : stores_to_watch) {
    auto changed = [this](const metadata::Notification& n) {
      if (std::string ns = policy_namespace(n.path); !ns.empty()) mark(std::move(ns));
    };
    // A session event may mean lost notifications.
    auto session = [this](metadata::SessionEvent) { mark(kEverything); };
    listeners_.emplace_back(store, store->add_listener(first, changed));
    listeners_.emplace_back(store, store->add_session_listener(first, session));
  }
}

ReplicationService::~ReplicationService() {
  for (auto& [store, id] : listeners_) store->remove_listener(id);
}

void ReplicationService::mark(std::string ns) {
  if (stopped_) return;
  for (size_t i = 0; i < loops_.size(); ++i) {
    asio::post(topics_.loop_executor(i), [this, i, ns] {
      if (!stopped_) loops_[i].changed.insert(ns);
    });
  }
}

Task<Status> ReplicationService::prepare_remote_topic(std::string cluster,
                                                      protocol::TopicName topic) {
  co_return co_await remote_topics_.ensure(std::move(cluster), std::move(topic), false);
}

ReplicationService::LoopState& ReplicationService::state_of(const PersistentTopic& topic) {
  return loops_[topics_.loop_index(topic.name().to_string())];
}

Task<void> ReplicationService::topic_loaded(std::shared_ptr<PersistentTopic> topic) {
  if (stopped_) co_return;
  auto own = co_await topic_clusters(topic->name());
  if (!own.ok()) {
    // The topic still gets its namespace's replicators; the next sweep reads again.
    log_.with("topic", topic->name().to_string())
        .warn("cannot read the topic's policies: {}", own.status().to_string());
  }
  const bool has_own = own.ok() && own->has_value();
  const std::vector<std::string> clusters =
      has_own ? **own : topic->policies().replication_clusters;
  co_await reconcile(topic, clusters, true);
}

Task<void> ReplicationService::topic_closing(std::shared_ptr<PersistentTopic> topic) {
  LoopState& state = state_of(*topic);
  const std::string name = topic->name().to_string();
  auto it = state.topics.find(name);
  if (it == state.topics.end()) co_return;
  std::shared_ptr<TopicSet> set = it->second;
  while (set->busy) co_await sleep_for(topic->executor(), std::chrono::milliseconds(10));
  set->busy = true;
  for (auto& [remote, r] : set->by_remote) co_await r->stop();
  set->by_remote.clear();
  state.topics.erase(name);
  topic->set_replicators(nullptr);
  set->busy = false;
}

Task<void> ReplicationService::reconcile(const std::shared_ptr<PersistentTopic>& topic,
                                         const std::vector<std::string>& clusters, bool loading) {
  std::set<std::string> wanted(clusters.begin(), clusters.end());
  wanted.erase(config_.cluster_name);
  LoopState& state = state_of(*topic);
  const std::string name = topic->name().to_string();
  // A topic that closed (or was replaced) while the caller waited gets no replicators.
  if (!loading && topics_.loaded_topic(name) != topic) co_return;
  auto it = state.topics.find(name);
  if (it == state.topics.end()) {
    if (wanted.empty()) co_return;
    it = state.topics.emplace(name, std::make_shared<TopicSet>()).first;
    topic->set_replicators(it->second);
  }
  std::shared_ptr<TopicSet> set = it->second;
  if (set->busy) co_return;  // the next tick looks again
  set->busy = true;
  auto& ml = topic->ledger();
  // Clusters dropped from the policy: stop, and forget the cursor (it would keep the
  // topic's data forever).
  for (auto r = set->by_remote.begin(); r != set->by_remote.end();) {
    if (wanted.count(r->first)) {
      ++r;
      continue;
    }
    const std::string remote = r->first;
    co_await r->second->stop();
    r = set->by_remote.erase(r);
    Status st = co_await ml.delete_cursor(Replicator::cursor_name(remote));
    log_.with("topic", name)
        .with("remote_cluster", remote)
        .info("replication stopped (the cluster left the namespace's replication clusters){}",
              st.ok() ? "" : "; deleting its cursor failed: " + st.to_string());
  }
  for (const std::string& remote : wanted) {
    if (stopped_ || set->by_remote.count(remote)) continue;
    const std::string cursor_name = Replicator::cursor_name(remote);
    // A cursor from an earlier load resumes where it was; a new one starts per
    // replicationStartAt.
    const bool existed = ml.find_cursor(cursor_name) != nullptr;
    const auto initial = config_.replication_start_at == "earliest"
                             ? mledger::InitialPosition::kEarliest
                             : mledger::InitialPosition::kLatest;
    auto cursor = co_await ml.open_cursor(cursor_name, initial);
    if (!cursor.ok()) {
      log_.with("topic", name)
          .with("remote_cluster", remote)
          .warn("cannot open the replication cursor: {}; retrying", cursor.status().to_string());
      continue;
    }
    (*cursor)->set_active(true);  // it reads right behind the producers: keep entries cached
    Replicator::Options options{name, config_.cluster_name, remote,
                                config_.replication_producer_queue_size,
                                topic->policies().message_ttl_seconds,
                                topic->replicator_limiter()};
    auto r = std::make_shared<Replicator>(topic->executor(), topic->ledger_ptr(), *cursor, remotes_,
                                          remote_topics_, gate_, std::move(options));
    set->by_remote[remote] = r;
    r->start();
    log_.with("topic", name)
        .with("remote_cluster", remote)
        .info("replication started ({} cursor at {})", existed ? "existing" : "new",
              (*cursor)->mark_delete_position().to_string());
  }
  set->busy = false;
  if (set->by_remote.empty() && !stopped_) {
    state.topics.erase(name);
    topic->set_replicators(nullptr);
  }
}

Task<Result<std::vector<std::string>>> ReplicationService::namespace_clusters(
    const std::string& ns, std::map<std::string, std::vector<std::string>>& cache) {
  if (auto known = cache.find(ns); known != cache.end()) co_return known->second;
  auto node = co_await stores_.configuration->get(namespace_policies_path(ns));
  if (!node.ok()) co_return node.status();
  std::vector<std::string> clusters;
  if (node->has_value()) clusters = topic_policies(config_, (*node)->value).replication_clusters;
  cache[ns] = clusters;
  co_return clusters;
}

Task<Result<std::optional<std::vector<std::string>>>> ReplicationService::topic_clusters(
    const protocol::TopicName& topic) {
  for (const bool global : {false, true}) {
    metadata::MetadataStore& store = global ? *stores_.configuration : *stores_.cluster;
    auto node = co_await store.get(topic_policies_path(topic, global));
    if (!node.ok()) co_return node.status();
    if (!node->has_value()) continue;
    if (auto clusters = replication_clusters_of((*node)->value)) co_return clusters;
  }
  co_return std::optional<std::vector<std::string>>();
}

Task<void> ReplicationService::maintain(size_t index) {
  LoopState& state = loops_[index];
  state.tick = std::make_unique<asio::steady_timer>(topics_.loop_executor(index));
  while (!stopped_) {
    state.tick->expires_after(std::chrono::seconds(1));
    boost::system::error_code ec;
    co_await state.tick->async_wait(asio::redirect_error(asio::use_awaitable, ec));
    if (stopped_) co_return;
    const auto sampled_at = std::chrono::steady_clock::now();
    const double seconds = std::chrono::duration<double>(sampled_at - state.sampled_at).count();
    state.sampled_at = sampled_at;
    for (auto& [name, set] : state.topics) {
      for (auto& [remote, r] : set->by_remote) r->sample();
      if (auto topic = topics_.loaded_topic(name)) set->sample_inbound(*topic, seconds);
    }
    ++state.ticks;
    if (index == 0 && !resuming_ &&
        (state.ticks == kResumeFirstTick || state.ticks % kResumeTicks == 0)) {
      resuming_ = true;
      spawn_in(gate_, topics_.loop_executor(0), [this]() { return resume_unloaded(); });
    }
    const bool sweep = state.ticks % kSweepTicks == 0 || state.changed.count(kEverything);
    if (!sweep && state.changed.empty()) continue;
    std::set<std::string> changed;
    changed.swap(state.changed);
    std::map<std::string, std::vector<std::string>> namespaces;  // one read per tick each
    for (const auto& topic : topics_.topics_on(index)) {
      if (stopped_) co_return;
      const std::string ns = topic->name().namespace_name();
      if (!sweep && !changed.count(ns)) continue;
      auto own = co_await topic_clusters(topic->name());
      if (!own.ok()) {
        state.changed.insert(ns);  // the store is away: keep what runs, look again
        continue;
      }
      std::vector<std::string> clusters;
      if (own->has_value()) {
        clusters = std::move(**own);
      } else {
        auto of_namespace = co_await namespace_clusters(ns, namespaces);
        if (!of_namespace.ok()) {
          state.changed.insert(ns);
          continue;
        }
        clusters = std::move(*of_namespace);
      }
      co_await reconcile(topic, clusters, false);
    }
  }
}

Task<void> ReplicationService::resume_unloaded() {
  metadata::MetadataStore& store = *stores_.cluster;
  int loaded = 0;
  auto tenants = co_await store.children("/managed-ledgers");
  for (const std::string& tenant : tenants.ok() ? *tenants : std::vector<std::string>{}) {
    auto namespaces = co_await store.children("/managed-ledgers/" + tenant);
    for (const std::string& local : namespaces.ok() ? *namespaces : std::vector<std::string>{}) {
      if (stopped_) break;
      const std::string ns = tenant + "/" + local;
      auto names = co_await topics_.topics_of_namespace(ns);
      for (const std::string& full : names.ok() ? *names : std::vector<std::string>{}) {
        if (stopped_) break;
        auto name = protocol::TopicName::parse(full);
        if (!name.ok()) continue;
        auto cursors =
            co_await store.children(mledger::managed_ledger_path(name->persistence_name()));
        if (!cursors.ok()) continue;
        const bool replicating = std::any_of(cursors->begin(), cursors->end(), [](const auto& c) {
          return c.starts_with(protocol::kReplicatorPrefix);
        });
        if (!replicating) continue;
        // Loaded already (here), owned by another broker (kUnavailable), gone: nothing to do.
        auto topic = co_await topics_.get_topic(*name, false);
        if (topic.ok()) ++loaded;
      }
    }
  }
  if (loaded > 0) {
    log_.debug("{} topic(s) with a replication cursor served here", loaded);
  }
  resuming_ = false;
}

void ReplicationService::stop() {
  stopped_ = true;
  for (auto& [store, id] : listeners_) store->remove_listener(id);
  listeners_.clear();
}

Task<void> ReplicationService::close_loop(size_t index) {
  LoopState& state = loops_[index];
  if (state.tick) state.tick->cancel();
  auto topics = state.topics;
  for (auto& [name, set] : topics) {
    for (auto& [remote, r] : set->by_remote) co_await r->stop();
    set->by_remote.clear();
  }
  state.topics.clear();
}

}  // namespace magnetar::broker
