#pragma once
// How a client learns which broker serves a topic, how many partitions a topic has and which
// topics a namespace holds: one interface, two ways of asking, chosen by the service URL's
// scheme when the client is made.
//
//  - binary (pulsar://, pulsar+ssl://; binary_lookup.cc): LOOKUP, following Redirect answers
//    up to max_lookup_redirects, PARTITIONED_METADATA and GET_TOPICS_OF_NAMESPACE over a
//    connection to one of the service URL's brokers;
//  - HTTP (http://; http_lookup.cc): the brokers' REST API, as Pulsar's HttpLookupService
//    asks it:
//      GET /lookup/v2/topic/{domain}/{tenant}/{namespace}/{topic}
//          -> {"brokerUrl", "brokerUrlTls", "httpUrl", "httpUrlTls"}
//      GET /admin/v2/{domain}/{tenant}/{namespace}/{topic}/partitions?checkAllowAutoCreation=true
//          -> {"partitions": N}
//      GET /admin/v2/namespaces/{tenant}/{namespace}/topics?mode=PERSISTENT -> ["...", ...]
//    307 (and 301/302/303/308) redirects are followed, at most max_lookup_redirects hops in
//    all. Producers and consumers then connect to the brokerUrl with the binary protocol.
//
// One call is one attempt: the callers retry with backoff (ClientImpl::partitions_with_retry,
// the reconnect loops of producers and consumers). Every call is bounded by its deadline.
// Failures come back as the binary protocol's would: ClientError (kConnectError, kTimeout,
// kTooManyLookupRedirects, kProtocolError) or the broker's ServerError.
//
// Threading: called from coroutines on the client's event loop `loop`. A LookupService is
// owned by its ClientImpl; callers keep the ClientImpl alive while they wait.

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "client/client_impl.h"

namespace magnetar::client {

class LookupService {
 public:
  virtual ~LookupService() = default;
  // The broker serving `topic` (a full topic name).
  virtual Task<Result<BrokerAddress>> lookup(int loop, std::string topic, Deadline deadline) = 0;
  // The partition count of `topic` (0: not partitioned).
  virtual Task<Result<int>> partitioned_metadata(int loop, std::string topic,
                                                 Deadline deadline) = 0;
  // Full names of the persistent topics of `ns` ("tenant/namespace").
  virtual Task<Result<std::vector<std::string>>> topics_of_namespace(int loop, std::string ns,
                                                                     Deadline deadline) = 0;
};

// The binary protocol's lookups, over `client`'s connections (`client` owns the result).
std::unique_ptr<LookupService> make_binary_lookup(ClientImpl& client);

// True for http:// and https:// service URLs.
bool is_http_service_url(std::string_view service_url);

// HTTP lookups for "http[s]://host:port[,host2:port2...][/]" (the hosts are tried in turn,
// one per call). https:// uses `options`' tls_* fields and answers the brokers' TLS URLs
// (brokerUrlTls), as Pulsar's clients do.
Result<std::unique_ptr<LookupService>> make_http_lookup(const std::string& service_url,
                                                        const ClientOptions& options);

}  // namespace magnetar::client
