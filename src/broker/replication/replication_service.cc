#include "broker/replication/replication_service.h"

#include <fmt/format.h>

#include <algorithm>
#include <boost/asio/redirect_error.hpp>
#include <nlohmann/json.hpp>
#include <set>

#include "broker/config/store_paths.h"
#include "broker/replication/replicator.h"
#include "broker/service/policies.h"
#include "broker/service/topic.h"
#include "broker/service/topic_registry.h"

namespace magnetar::broker {

// The replicators of one topic, by remote cluster; what the topic's stats show of them.
class ReplicationService::TopicSet final : public TopicReplicators {
 public:
  std::map<std::string, std::shared_ptr<Replicator>> by_remote;
  bool busy = false;  // a reconcile or close is changing by_remote

  nlohmann::json stats() const override {
    nlohmann::json j = nlohmann::json::object();
    for (const auto& [remote, r] : by_remote) j[remote] = r->stats();
    return j;
  }
};

namespace {

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
      remotes_(*stores.configuration),
      loops_(topics.loop_count()),
      log_(log::Logger("replication").with("cluster", config.cluster_name)) {}

ReplicationService::~ReplicationService() = default;

ReplicationService::LoopState& ReplicationService::state_of(const PersistentTopic& topic) {
  return loops_[topics_.loop_index(topic.name().to_string())];
}

Task<void> ReplicationService::topic_loaded(std::shared_ptr<PersistentTopic> topic) {
  if (stopped_) co_return;
  co_await reconcile(topic, topic->policies().replication_clusters, true);
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
                                config_.replication_producer_queue_size};
    auto r = std::make_shared<Replicator>(topic->executor(), topic->ledger_ptr(), *cursor, remotes_,
                                          gate_, std::move(options));
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

Task<Result<std::vector<std::string>>> ReplicationService::replication_clusters(
    const std::string& ns) {
  auto node = co_await stores_.configuration->get(namespace_policies_path(ns));
  if (!node.ok()) co_return node.status();
  if (!node->has_value()) co_return std::vector<std::string>{};
  co_return topic_policies(config_, (*node)->value).replication_clusters;
}

Task<void> ReplicationService::maintain(size_t index) {
  LoopState& state = loops_[index];
  state.tick = std::make_unique<asio::steady_timer>(topics_.loop_executor(index));
  while (!stopped_) {
    state.tick->expires_after(std::chrono::seconds(1));
    boost::system::error_code ec;
    co_await state.tick->async_wait(asio::redirect_error(asio::use_awaitable, ec));
    if (stopped_) co_return;
    for (auto& [name, set] : state.topics) {
      for (auto& [remote, r] : set->by_remote) r->sample();
    }
    // One policy read per namespace per tick.
    std::map<std::string, std::vector<std::string>> clusters_of;
    for (const auto& topic : topics_.topics_on(index)) {
      if (stopped_) co_return;
      const std::string ns = topic->name().namespace_name();
      auto known = clusters_of.find(ns);
      if (known == clusters_of.end()) {
        auto clusters = co_await replication_clusters(ns);
        if (!clusters.ok()) continue;  // the store is away: keep what runs
        known = clusters_of.emplace(ns, std::move(*clusters)).first;
      }
      co_await reconcile(topic, known->second, false);
    }
  }
}

void ReplicationService::stop() {
  stopped_ = true;
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
