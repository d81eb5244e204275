#include "metadata/metadata_store.h"

#include <filesystem>
#include <type_traits>

#include <fmt/format.h>

#include "common/config.h"
#include "metadata/etcd_store.h"
#include "metadata/local_store.h"
#include "metadata/zookeeper_store.h"

namespace magnetar::metadata {

static_assert(std::is_trivially_destructible_v<StoreOptions>,
              "StoreOptions is passed by value into coroutines (see metadata_store.h)");

std::string_view to_string(NotificationType t) {
  switch (t) {
    case NotificationType::kCreated: return "created";
    case NotificationType::kModified: return "modified";
    case NotificationType::kDeleted: return "deleted";
    case NotificationType::kChildrenChanged: return "children-changed";
  }
  return "?";
}

std::string_view to_string(SessionEvent e) {
  switch (e) {
    case SessionEvent::kConnectionLost: return "connection-lost";
    case SessionEvent::kReconnected: return "reconnected";
    case SessionEvent::kSessionLost: return "session-lost";
    case SessionEvent::kSessionReestablished: return "session-reestablished";
  }
  return "?";
}

Status validate_path(std::string_view path) {
  auto bad = [&](std::string_view why) {
    return Status(Error::kInvalidPath, fmt::format("invalid path '{}': {}", path, why));
  };
  if (path.empty()) return bad("empty");
  if (path.front() != '/') return bad("must start with '/'");
  if (path == "/") return Status::OK();
  if (path.back() == '/') return bad("must not end with '/'");
  for (char c : path) {
    auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7f) return bad("control character");
  }
  size_t start = 1;
  while (start <= path.size()) {
    size_t slash = path.find('/', start);
    std::string_view part = path.substr(start, slash == std::string_view::npos
                                                   ? std::string_view::npos
                                                   : slash - start);
    if (part.empty()) return bad("empty component");
    if (part == "." || part == "..") return bad("'.' and '..' are not allowed");
    if (slash == std::string_view::npos) break;
    start = slash + 1;
  }
  return Status::OK();
}

std::string parent_path(std::string_view path) {
  size_t slash = path.rfind('/');
  if (slash == 0 || slash == std::string_view::npos) return "/";
  return std::string(path.substr(0, slash));
}

std::string_view node_name(std::string_view path) { return path.substr(path.rfind('/') + 1); }

std::string join_path(std::string_view parent, std::string_view child) {
  if (parent == "/") return fmt::format("/{}", child);
  return fmt::format("{}/{}", parent, child);
}

Task<Result<PutResult>> MetadataStore::put_recursive(std::string path, std::string value,
                                                     PutOptions options) {
  MAGNETAR_CO_TRY(validate_path(path));
  // The parents usually exist (a ledger's directory, a namespace's bundles): then this is one
  // put, not a check of every ancestor first. kNotFound is also what put answers for
  // expected_version >= 0 on a missing node; creating the ancestors then does no harm.
  auto first = co_await put(path, value, options);
  if (!first.ok() && first.status().is(Errc::kNotFound)) {
    Status made = co_await create_ancestors(path);
    if (!made.ok()) co_return made;
    co_return co_await put(std::move(path), std::move(value), options);
  }
  co_return first;
}

Task<Status> MetadataStore::create_ancestors(const std::string& path) {
  // Top-down; "already exists" (kBadVersion for a node that must not exist) is fine.
  std::vector<std::string> ancestors;
  for (std::string p = parent_path(path); p != "/"; p = parent_path(p)) ancestors.push_back(p);
  const PutOptions must_not_exist{-1, false, false};
  for (auto it = ancestors.rbegin(); it != ancestors.rend(); ++it) {
    auto created = co_await put(*it, "", must_not_exist);
    if (!created.ok() && !created.status().is(Errc::kBadVersion)) co_return created.status();
  }
  co_return Status::OK();
}

Task<Status> MetadataStore::remove_recursive(std::string path) {
  MAGNETAR_CO_TRY(validate_path(path));
  auto kids = co_await children(path);
  if (!kids.ok()) co_return kids.status();
  for (const std::string& child : *kids) {
    Status st = co_await remove_recursive(join_path(path, child));
    if (!st.ok()) co_return st;
  }
  if (path == "/") co_return Status::OK();
  Status st = co_await remove(path);
  if (st.is(Errc::kNotFound)) co_return Status::OK();
  co_return st;
}

Task<Result<std::unique_ptr<MetadataStore>>> open_store(std::string url, StoreOptions options) {
  auto starts = [&](std::string_view prefix) { return url.rfind(prefix, 0) == 0; };
  if (starts("memory:")) {
    std::string name = url.substr(7);
    if (name.rfind("//", 0) == 0) name = name.substr(2);
    co_return open_local_store(LocalBackend::kMemory, name.empty() ? "default" : name, options);
  }
  if (starts("rocksdb:")) {
    std::string path = url.substr(8);
    if (path.rfind("//", 0) == 0) path = path.substr(2);  // rocksdb:///abs -> /abs
    if (path.empty()) {
      co_return Status(Error::kBadUrl, fmt::format("'{}': rocksdb: needs a directory", url));
    }
    std::error_code ec;
    std::filesystem::path abs = std::filesystem::absolute(path, ec);
    if (ec) co_return Status(Error::kBadUrl, fmt::format("'{}': {}", url, ec.message()));
    co_return open_local_store(LocalBackend::kRocksDb, abs.lexically_normal().string(), options);
  }
  if (starts("zk:")) co_return co_await open_zookeeper_store(url.substr(3), options);
  if (starts("etcd:")) co_return co_await open_etcd_store(url.substr(5), options);
  // Pulsar also accepts a bare ZooKeeper connect string ("host:2181,host2:2181/chroot").
  if (!url.empty() && url.find("://") == std::string::npos && url.find(':') != std::string::npos &&
      url.front() != '/') {
    co_return co_await open_zookeeper_store(url, options);
  }
  co_return Status(Error::kBadUrl,
                   fmt::format("'{}' is not a metadata store URL (zk:host:port[/chroot], "
                               "etcd:http://host:port[,host:port][/prefix], rocksdb:///path or "
                               "memory:[name])",
                               url));
}

StoreOptions MetadataConfig::store_options() const {
  StoreOptions o;
  o.session_timeout = std::chrono::milliseconds(session_timeout_ms);
  o.operation_timeout = std::chrono::seconds(operation_timeout_seconds);
  return o;
}

Task<Result<MetadataStores>> open_stores(const MetadataConfig& config) {
  MetadataStores out;
  auto cluster = co_await open_store(config.metadata_store_url, config.store_options());
  if (!cluster.ok()) co_return cluster.status();
  out.cluster = std::shared_ptr<MetadataStore>(std::move(cluster).value());
  const std::string& conf_url = config.configuration_metadata_store_url;
  if (conf_url.empty() || conf_url == config.metadata_store_url) {
    out.configuration = out.cluster;
    co_return out;
  }
  auto configuration = co_await open_store(conf_url, config.store_options());
  if (!configuration.ok()) {
    (void)co_await out.cluster->close();
    co_return configuration.status();
  }
  out.configuration = std::shared_ptr<MetadataStore>(std::move(configuration).value());
  co_return out;
}

void bind_metadata_config(ConfigSchema& schema, MetadataConfig* c) {
  schema.bind("metadataStoreUrl", &c->metadata_store_url,
              "Cluster metadata store: zk:host:port[,host:port][/chroot], "
              "etcd:http://host:port[,host:port][/prefix], rocksdb:///path or memory:name");
  schema.bind("configurationMetadataStoreUrl", &c->configuration_metadata_store_url,
              "Instance-wide configuration store (clusters, tenants, namespaces, policies); "
              "empty means the same as metadataStoreUrl");
  schema.bind("metadataStoreSessionTimeoutMillis", &c->session_timeout_ms,
              "Metadata store session timeout: how long ephemeral state outlives a dead process")
      .range(1000, 600000);
  schema.bind("metadataStoreOperationTimeoutSeconds", &c->operation_timeout_seconds,
              "Deadline of every metadata store operation")
      .range(1, 3600);
}

void add_zookeeper_aliases(ConfigSchema& schema) {
  auto zk = [](std::string_view servers) {
    return servers.starts_with("zk:") ? std::string(servers) : "zk:" + std::string(servers);
  };
  schema.alias("zookeeperServers", "metadataStoreUrl", zk);
  schema.alias("configurationStoreServers", "configurationMetadataStoreUrl", zk);
  schema.alias("globalZookeeperServers", "configurationMetadataStoreUrl", zk);
}

}  // namespace magnetar::metadata
