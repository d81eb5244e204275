#pragma once
// The Magnetar C++ client: a connection to a Pulsar-compatible cluster from which producers,
// consumers and readers are made.
//
//   auto client = magnetar::client::Client::create("pulsar://localhost:6650");
//   // or, over TLS: Client::create("pulsar+ssl://localhost:6651", options) with
//   // options.tls_trust_certs_file_path = "ca.cert.pem";
//   auto producer = client->create_producer("my-topic");
//   producer->send(magnetar::client::Message("hello"));
//
// A Client owns IO threads (one event loop each), a pool of broker connections and a
// listener thread. Copies of a Client share it; it stops when close() is called or the last
// copy (and every producer, consumer and reader made from it) is gone.
//
// Every blocking call is bounded by the operation timeout (30 s by default): with no broker
// reachable, creating a producer or consumer fails with kTimeout or kConnectError instead of
// hanging.

#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/status.h"
#include "magnetar/authentication.h"
#include "magnetar/consumer.h"
#include "magnetar/errors.h"
#include "magnetar/message.h"
#include "magnetar/producer.h"
#include "magnetar/reader.h"

namespace magnetar::client {

// Failover between clusters (Pulsar's AutoClusterFailover / ControlledClusterFailover): the
// service URL given to Client::create is the primary. Off unless secondary_service_urls or
// url_provider is set.
struct ClusterFailoverOptions {
  // Automatic: tried in order once the primary has been unreachable for failover_delay; back
  // to the primary once it has been reachable for switch_back_delay. Same scheme as the
  // primary (pulsar:// or pulsar+ssl://).
  std::vector<std::string> secondary_service_urls;
  std::chrono::milliseconds failover_delay{30'000};
  std::chrono::milliseconds switch_back_delay{60'000};
  std::chrono::milliseconds check_interval{30'000};  // probe (or provider) period
  // Controlled: an http(s) URL answering {"serviceUrl": "pulsar://..."}, polled every
  // check_interval; a new URL is moved to at once.
  std::string url_provider;
  std::map<std::string, std::string> url_provider_headers;
  // Beyond Pulsar (automatic mode): learn secondaries from the cluster itself. Its web
  // service (discovery_web_service_url; empty: http://<the primary's first host>:8080) is
  // asked for its name (brokers/configuration/runtime, else the ClusterData whose broker URL
  // is the primary) and ClusterData; the brokerServiceUrl (brokerServiceUrlTls for
  // pulsar+ssl://) of each of its peerClusterNames, or of every other registered cluster
  // when it names no peers, is a secondary after secondary_service_urls. Learned at start,
  // retried every check_interval until it succeeds, refreshed every 100 checks on the
  // primary. The calls are admin calls: with authorization on, the client's role must be
  // allowed them. Off by default.
  bool discover_peer_clusters = false;
  std::string discovery_web_service_url;
  bool enabled() const {
    return !secondary_service_urls.empty() || !url_provider.empty() || discover_peer_clusters;
  }
};

struct ClientOptions {
  std::chrono::milliseconds operation_timeout{30'000};
  std::chrono::milliseconds connection_timeout{10'000};
  int io_threads = 1;
  std::chrono::seconds keep_alive_interval{30};
  int max_lookup_redirects = 20;
  // A host of a multi-host service URL whose connection fails is skipped for a while: from
  // `initial`, doubling with each later failure up to `max`; a success ends it. When every
  // host is skipped, the one that failed longest ago is tried anyway. initial 0: plain
  // round robin (Pulsar's C++ client). Binary and HTTP lookups alike.
  std::chrono::milliseconds service_url_quarantine_initial{100};
  std::chrono::milliseconds service_url_quarantine_max{30'000};
  // Reconnect backoff of producers and consumers (jittered, doubling).
  std::chrono::milliseconds initial_backoff{100};
  std::chrono::milliseconds max_backoff{60'000};

  // TLS, used when the service URL is pulsar+ssl:// (the brokers' brokerServiceUrlTls is
  // then used after lookups). Files are PEM.
  // CAs the broker's certificate must chain to; empty: the system's default CAs.
  std::string tls_trust_certs_file_path;
  // Accept any broker certificate (no verification at all; tests only).
  bool tls_allow_insecure_connection = false;
  // The broker's certificate must also name the host connected to (SAN DNS name or IP).
  bool tls_validate_hostname = false;
  // A client certificate and its key, for brokers that require one (mutual TLS).
  std::string tls_certificate_file_path;
  std::string tls_private_key_file_path;
  // Credentials for the brokers (magnetar/authentication.h); null: none ("none" in CONNECT).
  std::shared_ptr<Authentication> authentication;
  ClusterFailoverOptions cluster_failover;
};

class ClientImpl;  // internal

class Client {
 public:
  // `service_url`: "pulsar://host:port[,host2:port2...]", or "pulsar+ssl://..." for TLS,
  // or "http[s]://host:port[,...]" (a broker's web service URL) for HTTP lookup: topics are
  // looked up through the brokers' REST API (redirects followed), producers and consumers
  // then connect to the broker URL it names with the binary protocol. A missing port is the
  // scheme's default (6650, 6651, 80, 443). A proxy's URL works too: lookup answers with
  // proxy_through_service_url make every connection go through it.
  // No network activity yet; TLS files are read now. Errors: kInvalidConfiguration naming
  // the URL (bad scheme, empty host, bad port) or the file.
  static Result<Client> create(const std::string& service_url, ClientOptions options = {});

  Result<Producer> create_producer(const std::string& topic, ProducerOptions options = {});
  Result<Consumer> subscribe(const std::string& topic, const std::string& subscription,
                             ConsumerOptions options = {});
  // One consumer over several topics (each may be partitioned).
  Result<Consumer> subscribe(const std::vector<std::string>& topics,
                             const std::string& subscription, ConsumerOptions options = {});
  // Every topic of the pattern's namespace whose full name matches `regex` (ECMAScript);
  // topics created later are added every pattern_auto_discovery_period.
  Result<Consumer> subscribe_pattern(const std::string& regex, const std::string& subscription,
                                     ConsumerOptions options = {});
  Result<Reader> create_reader(const std::string& topic, const MessageId& start,
                               ReaderOptions options = {});

  // The partitions of a topic ("...-partition-<i>"), or the topic itself when it is not
  // partitioned.
  Result<std::vector<std::string>> get_partitions_for_topic(const std::string& topic);

  // Closes every producer and consumer, then the connections and threads.
  Status close();

  // The service URL in use (another cluster's after a failover), and how many times the
  // client moved between clusters.
  std::string service_url() const;
  int64_t cluster_switches() const;

 private:
  friend class RawProducer;  // internal: the broker's replicators (client/raw_producer.h)
  explicit Client(std::shared_ptr<ClientImpl> impl) : impl_(std::move(impl)) {}
  std::shared_ptr<ClientImpl> impl_;
};

}  // namespace magnetar::client
