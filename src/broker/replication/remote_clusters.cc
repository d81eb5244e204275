#include "broker/replication/remote_clusters.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "broker/config/store_paths.h"
#include "magnetar/authentication.h"

namespace magnetar::broker {

namespace {

std::string string_field(const nlohmann::json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}

bool bool_field(const nlohmann::json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_boolean() && it->get<bool>();
}

// The endpoint's credentials: ClusterData's own, else the broker's.
Status add_credentials(const std::string& cluster, const nlohmann::json& j,
                       const BrokerClientAuth& defaults, RemoteEndpoint& out) {
  out.auth = defaults;
  if (const std::string plugin = string_field(j, "authenticationPlugin"); !plugin.empty()) {
    out.auth = BrokerClientAuth{plugin, string_field(j, "authenticationParameters")};
  }
  auto made = client::create_authentication(out.auth.plugin, out.auth.params);
  if (!made.ok()) {
    return Status(Errc::kInvalidArgument,
                  fmt::format("cluster {}: credentials: {}", cluster, made.status().message()));
  }
  out.options.authentication = *made;
  if (!*made) return Status::OK();
  auto headers = (*made)->http_headers();
  if (!headers.ok()) {
    return Status(Errc::kInvalidArgument,
                  fmt::format("cluster {}: credentials: {}", cluster, headers.status().message()));
  }
  for (auto& [name, value] : *headers) out.web_options.default_headers[name] = value;
  return Status::OK();
}

}  // namespace

Result<RemoteEndpoint> remote_endpoint(const std::string& cluster, std::string_view json,
                                       const BrokerClientAuth& defaults) {
  auto j = nlohmann::json::parse(json, nullptr, false);
  if (!j.is_object()) {
    return Status(Errc::kInvalidArgument, fmt::format("cluster {}: ClusterData is not a JSON "
                                                      "object",
                                                      cluster));
  }
  RemoteEndpoint out;
  MAGNETAR_TRY(add_credentials(cluster, j, defaults, out));
  out.web_service_url = string_field(j, "serviceUrl");
  if (bool_field(j, "brokerClientTlsEnabled")) {
    if (const std::string tls = string_field(j, "serviceUrlTls"); !tls.empty()) {
      out.web_service_url = tls;
    }
    out.web_options.tls_trust_certs_file_path = string_field(j, "brokerClientTrustCertsFilePath");
    out.web_options.tls_allow_insecure_connection = bool_field(j, "tlsAllowInsecureConnection");
    out.service_url = string_field(j, "brokerServiceUrlTls");
    out.options.tls_trust_certs_file_path = string_field(j, "brokerClientTrustCertsFilePath");
    out.options.tls_allow_insecure_connection = bool_field(j, "tlsAllowInsecureConnection");
    if (out.service_url.empty()) {
      return Status(
          Errc::kInvalidArgument,
          fmt::format("cluster {}: brokerClientTlsEnabled without brokerServiceUrlTls", cluster));
    }
    return out;
  }
  out.service_url = string_field(j, "brokerServiceUrl");
  if (out.service_url.empty()) out.service_url = string_field(j, "serviceUrl");
  if (out.service_url.empty()) {
    return Status(
        Errc::kInvalidArgument,
        fmt::format("cluster {}: neither brokerServiceUrl nor serviceUrl is set", cluster));
  }
  return out;
}

RemoteClusters::RemoteClusters(metadata::MetadataStore& configuration, BrokerClientAuth auth,
                               std::chrono::milliseconds refresh)
    : configuration_(configuration), auth_(std::move(auth)), refresh_(refresh) {}

RemoteClusters::~RemoteClusters() {
  close();
}

Task<Result<RemoteEndpoint>> RemoteClusters::endpoint(std::string cluster) {
  auto node = co_await configuration_.get(cluster_path(cluster));
  if (!node.ok()) co_return node.status();
  if (!node->has_value()) {
    co_return Status(Errc::kNotFound, fmt::format("cluster {} does not exist", cluster));
  }
  co_return remote_endpoint(cluster, (*node)->value, auth_);
}

Task<Result<std::shared_ptr<client::Client>>> RemoteClusters::client_for(std::string cluster) {
  const auto now = std::chrono::steady_clock::now();
  {
    std::lock_guard lock(mu_);
    if (closed_) co_return Status(Errc::kUnavailable, "the broker is stopping");
    auto it = clients_.find(cluster);
    if (it != clients_.end() && now - it->second.checked < refresh_) co_return it->second.client;
  }
  auto endpoint = co_await this->endpoint(cluster);
  if (!endpoint.ok()) co_return endpoint.status();
  std::lock_guard lock(mu_);
  if (closed_) co_return Status(Errc::kUnavailable, "the broker is stopping");
  auto it = clients_.find(cluster);
  if (it != clients_.end() && it->second.endpoint == *endpoint) {
    it->second.checked = now;
    co_return it->second.client;
  }
  auto made = client::Client::create(endpoint->service_url, endpoint->options);
  if (!made.ok()) {
    co_return Status(made.status().code(),
                     fmt::format("cluster {} ({}): {}", cluster, endpoint->service_url,
                                 made.status().message()));
  }
  log_.with("remote_cluster", cluster)
      .info("{} client to {}", it == clients_.end() ? "new" : "URL changed: new",
            endpoint->service_url);
  if (it != clients_.end()) retired_.push_back(std::move(it->second.client));
  Cached cached{*endpoint, std::make_shared<client::Client>(std::move(*made)), now};
  auto client = cached.client;
  clients_[cluster] = std::move(cached);
  co_return client;
}

void RemoteClusters::close() {
  std::map<std::string, Cached> clients;
  std::vector<std::shared_ptr<client::Client>> retired;
  {
    std::lock_guard lock(mu_);
    closed_ = true;
    clients.swap(clients_);
    retired.swap(retired_);
  }
  for (auto& [name, cached] : clients) (void)cached.client->close();
  for (auto& c : retired) (void)c->close();
}

}  // namespace magnetar::broker
