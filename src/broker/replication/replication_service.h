#pragma once
// The broker's replicators: for every loaded topic, one Replicator per remote cluster it
// replicates to, started when the topic loads (before it serves clients: the cursor exists
// before the first message it must carry) and reconciled with the policies when they change,
// so adding a cluster starts its replicator and removing one stops it and deletes its
// cursor, without a topic reload.
//
// A topic's replication clusters, less this cluster, are the first of: its local topic
// policy, its global topic policy (store_paths.h, topic_policies_path), its namespace's
// `replication_clusters`. The stores' change notifications for those nodes mark the
// namespace; each loop reconciles the topics of marked namespaces at its next tick (every
// second), and every topic once a minute whatever was notified (a notification can be lost
// with a ZooKeeper session).
//
// A topic replicates only while it is loaded. So that replication resumes by itself after a
// restart or a bundle move even when no client comes (Pulsar waits for one), loop 0 looks
// for unloaded topics of this cluster with a replication cursor (`pulsar.repl.*` in the
// managed ledger's metadata) 5 s after start and every 5 minutes, and loads those whose bundle
// is owned here or by nobody (taking it, as a client connecting without a lookup would).
//
// Threading: a topic's replicators live on the topic's loop; each loop's state is touched
// only there. maintain(i) runs on loop i until stop().

#include <atomic>
#include <chrono>
#include <boost/asio/steady_timer.hpp>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "broker/config/broker_config.h"
#include "broker/replication/remote_clusters.h"
#include "broker/replication/remote_topics.h"
#include "broker/service/replication_hooks.h"
#include "common/asio.h"
#include "common/gate.h"
#include "common/logging.h"
#include "metadata/metadata_store.h"

namespace magnetar::broker {

class PersistentTopic;
class Replicator;
class TopicRegistry;

class ReplicationService final : public TopicReplication {
 public:
  // Everything given outlives the service.
  ReplicationService(const BrokerConfig& config, metadata::MetadataStores stores,
                     TopicRegistry& topics, Gate& gate);
  ~ReplicationService() override;

  // TopicReplication (on the topic's loop).
  Task<void> topic_loaded(std::shared_ptr<PersistentTopic> topic) override;
  Task<void> topic_closing(std::shared_ptr<PersistentTopic> topic) override;
  Task<Status> prepare_remote_topic(std::string cluster, protocol::TopicName topic) override;

  // On loop `index`: reconciles and samples that loop's replicators every second.
  Task<void> maintain(size_t index);
  // No more replicators start; maintain() ends at its next tick.
  void stop();
  // On loop `index`, after stop(): stops that loop's replicators.
  Task<void> close_loop(size_t index);
  // After every loop's close_loop(), from a thread that is not an event loop.
  void close_clients() { remotes_.close(); }

 private:
  class TopicSet;
  struct LoopState {
    std::map<std::string, std::shared_ptr<TopicSet>> topics;  // by topic name
    std::unique_ptr<asio::steady_timer> tick;
    std::set<std::string> changed;  // namespaces whose policies were notified
    int ticks = 0;
    std::chrono::steady_clock::time_point sampled_at = std::chrono::steady_clock::now();
  };
  // Brings the topic's replicators in line with `clusters` (the namespace's replication
  // clusters, this one included or not). `loading`: from topic_loaded (the topic is not in
  // the registry yet); otherwise only a topic the registry still serves is touched.
  Task<void> reconcile(const std::shared_ptr<PersistentTopic>& topic,
                       const std::vector<std::string>& clusters, bool loading);
  // The namespace's replication clusters; `cache` saves the reads of one tick.
  Task<Result<std::vector<std::string>>> namespace_clusters(
      const std::string& ns, std::map<std::string, std::vector<std::string>>& cache);
  // The topic's own replication clusters (local, else global), nullopt when it has none.
  Task<Result<std::optional<std::vector<std::string>>>> topic_clusters(
      const protocol::TopicName& topic);
  // Marks a namespace whose policies changed (or kEverything) on every loop.
  void mark(std::string ns);
  // Loads the unloaded topics that have a replication cursor (on loop 0).
  Task<void> resume_unloaded();
  bool resuming_ = false;  // a resume_unloaded() runs (loop 0)
  LoopState& state_of(const PersistentTopic& topic);

  const BrokerConfig& config_;
  const metadata::MetadataStores stores_;
  TopicRegistry& topics_;
  Gate& gate_;
  RemoteClusters remotes_;
  RemoteTopics remote_topics_;
  std::vector<LoopState> loops_;
  std::vector<std::pair<metadata::MetadataStore*, metadata::ListenerId>> listeners_;
  std::atomic<bool> stopped_{false};
  log::Logger log_;
};

}  // namespace magnetar::broker
