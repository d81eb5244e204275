#pragma once
// The topics this broker serves: loaded on first use (namespace checked, bundle ownership
// checked, managed ledger opened, namespace policies applied), closed when their bundle is
// unloaded, deleted on request; partitioned-topic metadata; the periodic policy work of each
// loop (TTL, backlog quotas, gauges).
//
// Namespace policies reach loaded topics without an unload: the registry listens to the
// configuration store (which notifies the policy nodes this broker read when it loaded a
// topic), re-reads a changed namespace's node on the first loop and applies the result to
// the namespace's loaded topics on every loop (PersistentTopic::apply_policies). Changes are
// read one at a time, a namespace again if it changed while it was read; a session event
// (notifications possibly missed) re-reads every namespace with a loaded topic.
//
// The dynamic configuration (broker/config/dynamic_config.h) is read at start and again at
// every change of its node; what changed reaches loaded topics as a policy change of every
// namespace (the broker's defaults under their policies).
//
// Threading: each topic belongs to one event loop, chosen by hashing its name; that loop's
// map of topics is only touched there. Public coroutines may be awaited from any loop:
// they hop to the topic's loop and back. The loops, their managed-ledger factories, the
// stores, the config and the namespace service outlive the registry.

#include <atomic>
#include <chrono>
#include <boost/asio/steady_timer.hpp>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "broker/config/broker_config.h"
#include "broker/config/dynamic_config.h"
#include "broker/namespace/bundle_topics.h"
#include "broker/service/policies.h"
#include "common/asio.h"
#include "common/gate.h"
#include "common/logging.h"
#include "common/status.h"
#include "metadata/metadata_store.h"
#include "protocol/topic_name.h"

namespace magnetar::mledger {
class ManagedLedgerFactory;
}

namespace magnetar::broker {

class NamespaceService;
class NonPersistentTopic;
class PersistentTopic;
class Topic;
class TopicReplication;

class TopicRegistry final : public BundleTopics {
 public:
  struct Loop {
    Executor executor;
    mledger::ManagedLedgerFactory* factory;
  };
  // `gate`: the broker's task group, which the topics' coroutines join.
  TopicRegistry(std::vector<Loop> loops, metadata::MetadataStores stores,
                const BrokerConfig& config, NamespaceService& namespaces, Gate& gate);
  ~TopicRegistry() override;

  // The loop that owns a topic.
  Executor topic_executor(const std::string& topic) const;
  // The broker's configuration with the cluster's dynamic overrides.
  const DynamicConfig& dynamic_config() const { return dynamic_; }

  // The topic, loaded on first use, on its own loop: use the result only there
  // (topic->executor()). create = false: only if it exists already. Errors: kNotFound
  // (namespace or topic), kNotSupported (non-persistent), kUnavailable (not owned here,
  // stopping), the managed ledger's.
  Task<Result<std::shared_ptr<PersistentTopic>>> get_topic(protocol::TopicName name, bool create);
  // A non-persistent topic, made in memory on first use (namespace and ownership checked as
  // for a persistent one). create = false: only if it is loaded here already (nothing else of
  // it exists). Errors: kNotFound, kNotSupported (persistent), kUnavailable.
  Task<Result<std::shared_ptr<NonPersistentTopic>>> get_non_persistent_topic(
      protocol::TopicName name, bool create);
  // A topic of either kind (by its domain), as connections use it.
  Task<Result<std::shared_ptr<Topic>>> get_any_topic(protocol::TopicName name, bool create);
  // On the topic's loop: the topic if loaded.
  std::shared_ptr<PersistentTopic> loaded_topic(const std::string& name) const;
  std::shared_ptr<NonPersistentTopic> loaded_non_persistent_topic(const std::string& name) const;
  // The non-persistent topics of namespace `ns` loaded on this broker, sorted.
  Task<std::vector<std::string>> loaded_non_persistent_topics(std::string ns);
  // What a client's use of a missing topic of `ns` creates: the namespace's
  // autoTopicCreationOverride when it has one, else allowAutoTopicCreation,
  // allowAutoTopicCreationType and defaultNumPartitions.
  struct AutoCreation {
    bool allowed = false;
    bool partitioned = false;
    int partitions = 0;
  };
  Task<AutoCreation> auto_creation(std::string ns);
  // The same from the namespace's policies JSON (empty or without an override: the broker's).
  AutoCreation auto_creation_of(std::string_view policies) const;
  // Whether a client's use may create the topic: a partition of an existing partitioned topic
  // if its index is below the topic's count (created on demand, as Pulsar does), anything
  // else if auto_creation() allows it.
  Task<bool> may_auto_create(protocol::TopicName name);
  // Partitions of a topic (0: not partitioned); creates a partitioned topic when asked and
  // auto-creation says so.
  Task<Result<int>> partitions(protocol::TopicName name, bool auto_create);
  Task<Result<bool>> namespace_exists(std::string ns);
  // The topics of `ns` a client listing the namespace sees (GET_TOPICS_OF_NAMESPACE's mode):
  // the persistent ones of namespace_topics(); non-persistent ones loaded on this broker
  // (Pulsar asks every bundle's owner; here each broker lists its own) and every partition
  // of the namespace's non-persistent partitioned topics.
  enum class Listed { kPersistent, kNonPersistent, kAll };  // Pulsar's Mode
  Task<Result<std::vector<std::string>>> topics_of_namespace(std::string ns,
                                                             Listed listed = Listed::kPersistent);
  // Deletes a topic owned here with its managed ledger and cursors (a non-persistent one:
  // unloads it). Errors: kNotFound, kAlreadyExists when clients are connected and not `force`
  // (they are disconnected with force).
  Task<Status> delete_topic(protocol::TopicName name, bool force);

  // BundleTopics. Topics loading meanwhile check ownership again once loaded.
  Task<int> close_topics(std::function<bool(const protocol::TopicName&)> which) override;
  Task<std::vector<TopicLoad>> topic_loads() override;
  // Every loaded topic's name and stats (PersistentTopic::stats(), NonPersistentTopic::stats(),
  // as JSON text), read on each topic's loop: broker-stats topics.
  Task<std::vector<std::pair<protocol::TopicName, std::string>>> loaded_topic_stats();

  // On loop `index`: TTL, backlog quotas and gauges at their configured periods, until stop().
  Task<void> maintain(size_t index);
  void compact_if_over_threshold(const std::shared_ptr<PersistentTopic>& topic);
  // No new loads; maintain() ends at its next tick.
  void stop() { stopped_ = true; }
  // On loop `index`, after stop(): closes its topics.
  Task<void> close_loop(size_t index);

  // The replication room's hooks (set once by the wiring, before any topic loads).
  void set_replication(TopicReplication* replication) { replication_ = replication; }
  TopicReplication* replication() const { return replication_; }
  size_t loop_count() const { return loops_.size(); }
  size_t loop_index(const std::string& topic) const;  // the loop that owns a topic
  Executor loop_executor(size_t index) const { return loops_[index]->loop.executor; }
  // On loop `index`: the topics loaded there.
  std::vector<std::shared_ptr<PersistentTopic>> topics_on(size_t index) const;

 private:
  struct LoopState {
    Loop loop;
    std::unique_ptr<asio::steady_timer> tick;  // maintain()'s; close_loop() cancels it
    std::map<std::string, std::shared_ptr<PersistentTopic>> topics;
    std::map<std::string, std::shared_ptr<NonPersistentTopic>> non_persistent;
    std::map<std::string, std::vector<std::function<void(bool)>>> loading;
  };
  LoopState& state_for(const std::string& topic) const;
  // The replication hook, then the topic's close.
  Task<void> close_topic(std::shared_ptr<PersistentTopic> topic);
  Task<Result<std::shared_ptr<PersistentTopic>>> load_topic(LoopState* state,
                                                            protocol::TopicName name, bool create);
  Task<Result<std::shared_ptr<NonPersistentTopic>>> load_non_persistent(LoopState* state,
                                                                        protocol::TopicName name,
                                                                        bool create);
  // Whether the bundle of `name` (by its namespace's Policies node) is still owned here, asked
  // after a load: an unload of the bundle may have run meanwhile without seeing the topic.
  Task<bool> still_owned(const protocol::TopicName& name, const std::string& namespace_json);
  // On the state's loop: deletes the non-persistent topics nobody used for the inactive
  // topic policy's time.
  void collect_inactive_non_persistent(LoopState* state, std::chrono::steady_clock::time_point now);
  // Policy changes (on the first loop): `ns` (empty: every namespace with a loaded topic)
  // is to be read again; the worker reads and applies them one at a time.
  void policies_changed(std::string ns);
  // On the first loop: reads the dynamic configuration's node, applies it, and the result
  // to the loaded topics (one read at a time; again if it changed meanwhile).
  void dynamic_config_changed();
  Task<void> reload_dynamic_config();
  Task<void> apply_changed_policies();
  Task<void> apply_namespace_policies(std::string ns);
  // The policies of `name` (a partition: its partitioned topic's) with its namespace's
  // Policies node `namespace_json`: reads the topic's global and local policy nodes.
  Task<Result<TopicPolicies>> policies_of(const protocol::TopicName& name,
                                          std::string namespace_json);

  std::vector<std::unique_ptr<LoopState>> loops_;
  const metadata::MetadataStores stores_;
  const BrokerConfig& config_;
  DynamicConfig dynamic_;
  NamespaceService& namespaces_;
  Gate& gate_;
  TopicReplication* replication_ = nullptr;
  log::Logger log_{"broker"};
  std::atomic<bool> stopped_{false};
  // Policy watch. On the first loop: the namespaces to read again, whether the worker runs.
  std::vector<std::pair<metadata::MetadataStore*, metadata::ListenerId>> policy_listeners_;
  std::set<std::string> policies_dirty_;
  bool policies_worker_ = false;
  bool dynamic_reloading_ = false, dynamic_dirty_ = false;  // on the first loop
  // Bumped at every policy notification: a load that read its namespace's policies before a
  // bump applies them again once the topic is in its loop's map (or it would miss the change).
  std::atomic<uint64_t> policy_epoch_{0};
};

// The "partitions" of a partitioned topic's metadata node; nullopt when it has none.
std::optional<int> partitions_of_metadata(std::string_view json);

// The persistent topics of namespace `ns` ("tenant/ns"), sorted: those with a managed ledger
// and every partition of its partitioned topics (used or not, as Pulsar lists them). For the
// admin API too, which may run without a broker.
Task<Result<std::vector<std::string>>> namespace_topics(metadata::MetadataStores stores,
                                                        std::string ns);

}  // namespace magnetar::broker
