#pragma once
// Ownership of namespace bundles and topic lookup (../shared/reference/pulsar-internals.md
// §5.4–5.5, pulsar-protocol.md §2.4).
//
// A bundle is owned by the broker whose ephemeral node /namespace/<tenant>/<ns>/<range>
// exists in the cluster metadata store (JSON NamespaceEphemeralData: nativeUrl,
// nativeUrlTls, httpUrl, httpUrlTls, disabled). Creating the node is the only way to own a
// bundle, so two brokers never own one together; a broker serves a topic only while it owns
// the topic's bundle (ledger fencing backs this up if a session ends unnoticed).
//
// Lookup of a topic: owned here -> Connect here; owned by another broker -> Connect there;
// unowned -> placement: an authoritative lookup (redirected here by the placement) takes
// the bundle; otherwise the load manager's leader chooses the least-loaded broker and the
// answer is a Redirect there with authoritative = true (or a non-authoritative Redirect to
// the leader, when this broker is not the leader). Without a load manager (standalone)
// every bundle is taken here.
//
// Session: when the metadata store reports the connection lost, the broker stops serving
// (closes every topic, refuses new ones) after a sixth of the session timeout — the one the
// servers gave (MetadataStore::session_timeout()); the client notices a hung server after
// two thirds of it — before the session can expire and another broker take the bundles;
// kSessionLost drops every bundle at once. Reconnecting within the session resumes serving
// with the same bundles.
//
// Threading: the state lives on one executor (the broker's first loop). Public coroutines
// may be awaited from any executor: they hop there.

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "broker/config/broker_config.h"
#include "broker/namespace/bundle_topics.h"
#include "broker/namespace/bundles.h"
#include "common/asio.h"
#include "common/gate.h"
#include "common/logging.h"
#include "common/status.h"
#include "metadata/metadata_store.h"
#include "protocol/topic_name.h"

namespace magnetar::broker {

class LoadManager;

// Where a broker is reached (NamespaceEphemeralData / LookupData).
struct BrokerUrls {
  std::string broker_url;      // pulsar://host:6650
  std::string broker_url_tls;  // pulsar+ssl://host:6651, or empty
  std::string http_url;        // http://host:8080
  std::string http_url_tls;    // https://host:8443, or empty

  std::string to_json() const;  // NamespaceEphemeralData
  static std::optional<BrokerUrls> from_json(std::string_view json);
  bool operator==(const BrokerUrls&) const = default;
};

struct LookupAnswer {
  bool redirect = false;       // Redirect (look up again there) rather than Connect
  bool authoritative = false;  // for a Redirect: the target must take the bundle
  bool self = false;           // Connect to this very broker
  BrokerUrls target;
};

class NamespaceService {
 public:
  // `executor`: where the state lives (the broker's first loop). `config` outlives the
  // service; set_topics() and set_load_manager() name what the service works with.
  // `gate`: the broker's task group, which the service's own coroutines join.
  NamespaceService(Executor executor, metadata::MetadataStores stores, const BrokerConfig& config,
                   Gate& gate, BrokerUrls self);
  ~NamespaceService();

  // Listens to the cluster store's session.
  void start();
  // Releases every bundle (graceful shutdown: topics closed, nodes deleted).
  Task<void> stop();

  const BrokerUrls& self() const { return self_; }
  // Null (standalone): every bundle is taken here. Outlives the service's use of it.
  void set_load_manager(LoadManager* load) { load_ = load; }
  // The topics served here (closed when their bundle goes); set before start().
  void set_topics(BundleTopics* topics) { topics_ = topics; }
  BundleTopics& topics() { return *topics_; }
  metadata::MetadataStore& store() { return *stores_.cluster; }
  metadata::MetadataStore& configuration_store() { return *stores_.configuration; }
  const BrokerConfig& config() const { return config_; }

  // Errors: kNotFound (namespace), kUnavailable (not serving, bundle being unloaded),
  // metadata errors.
  Task<Result<LookupAnswer>> lookup(protocol::TopicName topic, bool authoritative);
  // OK when this broker owns the topic's bundle, taking it when nobody does (a client that
  // connected without a lookup); kUnavailable ("redo the lookup") otherwise.
  // `policies_json`: the namespace's Policies, as read by the caller.
  Task<Status> check_ownership(protocol::TopicName topic, std::string policies_json);
  // On the service's executor only: whether the topic's bundle is owned here right now
  // (after a load, to catch an unload that raced with it). `range` from bundle_of().
  bool owns(const std::string& ns, const BundleRange& range) const;

  // The bundle a topic belongs to, from the namespace's current policies.
  Task<Result<BundleRange>> bundle_of(protocol::TopicName topic);

  // The owner of a bundle (nullopt: unowned). `self` set when it is this broker.
  Task<Result<std::optional<LookupAnswer>>> owner_of(std::string ns, BundleRange range);
  // Owner only. Closes the bundle's topics (clients reconnect and look up again) and
  // deletes the ownership node. `destination` (a broker id host:port, may be empty) is where
  // the placement sends the bundle next; without one, the next placement avoids this broker
  // when another is available.
  Task<Status> unload_bundle(std::string ns, BundleRange range, std::string destination = {});
  // Owner only. Cuts the bundle in two at its middle (namespace policies updated with
  // compare-and-set); both halves stay here unless `unload`.
  Task<Status> split_bundle(std::string ns, BundleRange range, bool unload);
  // Every bundle of `ns` owned here (full names).
  Task<std::vector<std::string>> owned_bundles_of(std::string ns);
  // Every bundle owned here (full names), for load reports. On the service's executor.
  std::vector<std::string> owned_bundles() const;
  bool serving() const { return serving_; }
  Executor executor() const { return executor_; }

 private:
  struct Owned {
    bool releasing = false;
  };
  Task<Result<LookupAnswer>> lookup_here(protocol::TopicName topic, bool authoritative);
  Task<Result<LookupAnswer>> take(std::string ns, BundleRange range);
  Task<Result<std::optional<LookupAnswer>>> read_owner(const std::string& ns,
                                                       const BundleRange& range);
  Task<Result<std::string>> policies_of(const std::string& ns);
  void on_session_event(metadata::SessionEvent event);
  void stop_serving(const char* why);
  LookupAnswer connect_here() const;

  const metadata::MetadataStores stores_;
  const BrokerConfig& config_;
  Gate& gate_;
  const BrokerUrls self_;
  LoadManager* load_ = nullptr;
  BundleTopics* topics_ = nullptr;
  Executor executor_;
  metadata::MetadataStore& store_;
  log::Logger log_;
  std::map<std::string, Owned> owned_;  // full bundle name -> state
  bool serving_ = true;
  uint64_t session_generation_ = 0;  // bumped on every session event (cancels the timer)
  std::optional<metadata::ListenerId> session_listener_;
};

}  // namespace magnetar::broker
