#pragma once
// Clients to the other clusters of the instance, one per remote cluster, made from the
// cluster's ClusterData in the configuration store (/admin/clusters/<name>): its
// brokerServiceUrl (or brokerServiceUrlTls when brokerClientTlsEnabled, with
// brokerClientTrustCertsFilePath and tlsAllowInsecureConnection), else its serviceUrl (HTTP
// lookup). A client is made on first use and kept; when the cluster's URLs change (the
// ClusterData is re-read at most every `refresh`), the next use gets a new client; the old
// one is closed by close() (closing joins threads, which an event loop must not wait for).
//
// Threading: client_for() may be awaited on any event loop (one mutex guards the cache; the
// store read happens outside it). close() joins the clients' threads: call it from a thread
// that is not an event loop, after every replicator stopped.

#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "common/asio.h"
#include "common/logging.h"
#include "common/status.h"
#include "http/http_client.h"
#include "magnetar/client.h"
#include "metadata/metadata_store.h"

namespace magnetar::broker {

// How a broker reaches a cluster: what ClusterData says, reduced to what a client needs.
// The credentials of the broker's own clients: brokerClientAuthenticationPlugin and
// brokerClientAuthenticationParameters, which a cluster's ClusterData authenticationPlugin
// and authenticationParameters override (Pulsar's rule for replication).
struct BrokerClientAuth {
  std::string plugin;
  std::string params;
  bool operator==(const BrokerClientAuth&) const = default;
};

struct RemoteEndpoint {
  std::string service_url;        // pulsar://..., pulsar+ssl://... or http://...
  client::ClientOptions options;  // with the credentials (options.authentication)
  BrokerClientAuth auth;          // what options.authentication was made from
  // The admin REST API: serviceUrl, or serviceUrlTls when brokerClientTlsEnabled (with the
  // same trust settings); empty when ClusterData names neither.
  std::string web_service_url;
  http::ClientOptions web_options;
  bool operator==(const RemoteEndpoint& o) const {
    return service_url == o.service_url && auth == o.auth &&
           options.tls_trust_certs_file_path == o.options.tls_trust_certs_file_path &&
           options.tls_allow_insecure_connection == o.options.tls_allow_insecure_connection;
  }
};
// From ClusterData JSON; kInvalidArgument (naming the cluster) when it has no usable URL, or
// credentials that cannot be used (an unknown plugin, an unreadable token file). The web
// options carry the credentials' HTTP headers, read now.
Result<RemoteEndpoint> remote_endpoint(const std::string& cluster, std::string_view json,
                                       const BrokerClientAuth& defaults = {});

class RemoteClusters {
 public:
  RemoteClusters(metadata::MetadataStore& configuration, BrokerClientAuth auth = {},
                 std::chrono::milliseconds refresh = std::chrono::seconds(5));
  ~RemoteClusters();

  // What ClusterData says of `cluster`, read now. Errors: kNotFound, kInvalidArgument, the
  // store's.
  Task<Result<RemoteEndpoint>> endpoint(std::string cluster);
  // A client to `cluster`. Errors: kNotFound (no such cluster), kInvalidArgument (its
  // ClusterData has no usable URL), the store's.
  Task<Result<std::shared_ptr<client::Client>>> client_for(std::string cluster);
  void close();

 private:
  struct Cached {
    RemoteEndpoint endpoint;
    std::shared_ptr<client::Client> client;
    std::chrono::steady_clock::time_point checked;
  };
  metadata::MetadataStore& configuration_;
  const BrokerClientAuth auth_;
  const std::chrono::milliseconds refresh_;
  log::Logger log_{"replication"};
  std::mutex mu_;
  std::map<std::string, Cached> clients_;
  std::vector<std::shared_ptr<client::Client>> retired_;  // replaced after a URL change
  bool closed_ = false;
};

}  // namespace magnetar::broker
