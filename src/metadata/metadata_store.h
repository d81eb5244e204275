#pragma once
// The coordination store: a tree of nodes addressed by paths ("/a/b/c"), each holding a byte
// value and a version, as in ZooKeeper. Every Magnetar component that coordinates (bookie
// registration, ledger metadata, topic ownership, cursors, policies) goes through this one
// interface; the backend is chosen by URL:
//
//   zk:host:port[,host:port...][/chroot]   a ZooKeeper ensemble (clusters)
//   etcd:http://host:port[,host:port...][/prefix]   an etcd cluster (clusters; https: TLS)
//   rocksdb:///absolute/path               embedded and durable (standalone)
//   memory:[name]                          in-process, for tests
//
// A MetadataStore object is one *session*: ephemeral nodes it creates live until it closes
// or its session is lost. Opening the same memory: or rocksdb: URL twice in one process
// gives two sessions over one shared tree (how tests stand in for two processes).
//
// Threading: methods may be called from any thread. Operations are coroutines; each resumes
// on the executor of the coroutine that awaited it (the caller's event loop), never on a
// backend thread. Blocking work (RocksDB writes, ZooKeeper I/O) runs on the backend's own
// threads. Listeners are invoked on the executor they were registered with.

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/asio.h"
#include "common/status.h"
#include "metadata/errors.h"

namespace magnetar {
class ConfigSchema;
}

namespace magnetar::metadata {

struct Stat {
  int64_t version = 0;             // 0 after creation, +1 per successful put
  int64_t creation_time_ms = 0;    // wall-clock milliseconds since the epoch
  int64_t modification_time_ms = 0;
  bool ephemeral = false;
  int64_t ephemeral_owner = 0;     // id of the owning session (0 when not ephemeral)
};

struct GetResult {
  std::string value;
  Stat stat;
};

struct PutOptions {
  // Unset: create or overwrite. -1: the node must not exist. N >= 0: the node's version
  // must be N. Mismatches fail with Error::kBadVersion; N >= 0 on a missing node fails
  // with kNotFound (as ZooKeeper answers).
  std::optional<int64_t> expected_version;
  bool ephemeral = false;   // removed when this session ends
  bool sequential = false;  // a unique increasing 10-digit suffix is appended to the name
};

struct PutResult {
  std::string path;  // differs from the requested path for sequential nodes
  Stat stat;
};

enum class NotificationType { kCreated, kModified, kDeleted, kChildrenChanged };

struct Notification {
  NotificationType type;
  std::string path;  // for kChildrenChanged: the parent whose children changed
};

enum class SessionEvent {
  kConnectionLost,        // no server reachable; the session may survive (ZooKeeper only)
  kReconnected,           // the same session is back: ephemerals are intact
  kSessionLost,           // the session expired: its ephemerals are gone
  kSessionReestablished,  // a new session is ready after kSessionLost
};

std::string_view to_string(NotificationType t);
std::string_view to_string(SessionEvent e);

// Must stay trivially destructible: callers pass it (or its default) by value to coroutines
// inside co_await, where GCC 12 destroys such temporaries twice.
struct StoreOptions {
  // Largest value accepted by put (and the largest any backend must round-trip).
  size_t max_value_size = 1024 * 1024;
  // ZooKeeper session timeout; also how long the ephemerals of a crashed process survive.
  std::chrono::milliseconds session_timeout{30000};
  // Deadline for every operation; an operation without an answer by then fails with kTimeout.
  std::chrono::milliseconds operation_timeout{30000};
};

using ListenerId = uint64_t;

class MetadataStore {
 public:
  virtual ~MetadataStore() = default;

  // The node's value and stat, or nullopt when it does not exist.
  virtual Task<Result<std::optional<GetResult>>> get(std::string path) = 0;
  // Creates or updates a node. Parents must exist (use put_recursive to create them).
  virtual Task<Result<PutResult>> put(std::string path, std::string value,
                                      PutOptions options = {}) = 0;
  // Deletes a node (with no children). expected_version as in PutOptions, -1 not allowed.
  // Deleting a missing node fails with kNotFound.
  virtual Task<Status> remove(std::string path, std::optional<int64_t> expected_version = {}) = 0;
  // Names (not paths) of the node's children, sorted; empty when the node does not exist.
  virtual Task<Result<std::vector<std::string>>> children(std::string path) = 0;
  virtual Task<Result<bool>> exists(std::string path) = 0;

  // Change notifications. Local backends (memory, rocksdb) notify every change in the tree;
  // ZooKeeper notifies changes to nodes this session has read, checked or written, and
  // children changes of nodes whose children it listed. Each change is notified once per
  // listener; rapid successive changes may be coalesced by ZooKeeper.
  virtual ListenerId add_listener(Executor executor,
                                  std::function<void(const Notification&)> listener) = 0;
  virtual ListenerId add_session_listener(Executor executor,
                                          std::function<void(SessionEvent)> listener) = 0;
  virtual void remove_listener(ListenerId id) = 0;

  // Id of the current session (changes after kSessionReestablished).
  virtual int64_t session_id() const = 0;
  // The session timeout the servers apply, which may differ from the one asked for:
  // ZooKeeper bounds it by its minSessionTimeout and maxSessionTimeout, etcd rounds the
  // lease's TTL up to whole seconds and raises it to its minimum. What an owner of
  // ephemeral nodes plans with. Before the first session: the one asked for. Any thread.
  virtual std::chrono::milliseconds session_timeout() const = 0;
  // Ends the session: its ephemeral nodes are deleted; later operations fail with kClosed.
  virtual Task<Status> close() = 0;

  // --- Helpers built on the operations above (same for every backend). ---

  // put() that creates missing parents as empty persistent nodes (one put when they exist).
  Task<Result<PutResult>> put_recursive(std::string path, std::string value,
                                        PutOptions options = {});
  // Deletes a node and everything below it; a missing node is not an error.
  Task<Status> remove_recursive(std::string path);

 private:
  Task<Status> create_ancestors(const std::string& path);
};

// Opens a store (a new session) for a URL. Errors: kBadUrl, kBackend (cannot open or
// connect), kTimeout (ZooKeeper unreachable within the operation timeout).
Task<Result<std::unique_ptr<MetadataStore>>> open_store(std::string url,
                                                        StoreOptions options = {});

// The two stores of a Pulsar-style deployment: the cluster's own (ownership, load, ledgers,
// cursors) and the instance-wide configuration store (clusters, tenants, namespaces,
// policies). When both URLs are the same (or the configuration URL is empty) they are one
// session shared by both pointers.
struct MetadataStores {
  std::shared_ptr<MetadataStore> cluster;
  std::shared_ptr<MetadataStore> configuration;
};

// Configuration keys with Pulsar's names; bind them into a role's ConfigSchema with
// bind_metadata_config().
struct MetadataConfig {
  std::string metadata_store_url = "rocksdb://data/metadata";
  std::string configuration_metadata_store_url;  // empty: same as metadata_store_url
  int32_t session_timeout_ms = 30000;
  int32_t operation_timeout_seconds = 30;

  StoreOptions store_options() const;
};

Task<Result<MetadataStores>> open_stores(const MetadataConfig& config);

// Path rules, shared by all backends: absolute, '/'-separated, no empty, "." or ".."
// components, no trailing '/', no control characters. "/" is the root.
Status validate_path(std::string_view path);
// "/a/b/c" -> "/a/b"; "/a" -> "/".
std::string parent_path(std::string_view path);
// "/a/b/c" -> "c"; "/" -> "".
std::string_view node_name(std::string_view path);
// "/a" + "b" -> "/a/b"; "/" + "b" -> "/b".
std::string join_path(std::string_view parent, std::string_view child);

// Declares metadataStoreUrl, configurationMetadataStoreUrl, metadataStoreSessionTimeoutMillis
// and metadataStoreOperationTimeoutSeconds, bound to `config` (which must outlive `schema`).
void bind_metadata_config(ConfigSchema& schema, MetadataConfig* config);
// Pulsar's deprecated ZooKeeper names of the store URLs: zookeeperServers (metadataStoreUrl),
// configurationStoreServers and globalZookeeperServers (configurationMetadataStoreUrl), their
// "host:port,..." values read as zk: URLs.
void add_zookeeper_aliases(ConfigSchema& schema);

}  // namespace magnetar::metadata
