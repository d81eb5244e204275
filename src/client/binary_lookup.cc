// The binary protocol's lookups (lookup_service.h): LOOKUP with redirects,
// PARTITIONED_METADATA and GET_TOPICS_OF_NAMESPACE over the client's broker connections.
//
// Proxies (Pulsar's proxy answers every LOOKUP with proxy_through_service_url=true): the
// broker named is then only the logical address; the physical one stays the service host
// the lookup was sent to, and connections to the broker go through it (CONNECT with
// proxy_to_broker_url, connection.h). A Redirect with the flag is asked again through the
// same service host, spliced to the broker it names; once an answer of the chain carried
// the flag, the final broker is reached through the proxy too, whatever later answers say.

#include <fmt/format.h>

#include "client/lookup_service.h"

namespace magnetar::client {

namespace {

class BinaryLookup final : public LookupService {
 public:
  // `client` owns this object.
  explicit BinaryLookup(ClientImpl& client) : client_(client) {}

  Task<Result<BrokerAddress>> lookup(int loop, std::string topic, Deadline deadline) override;
  Task<Result<int>> partitioned_metadata(int loop, std::string topic, Deadline deadline) override;
  Task<Result<std::vector<std::string>>> topics_of_namespace(int loop, std::string ns,
                                                             Deadline deadline) override;

 private:
  ClientImpl& client_;
};

Task<Result<BrokerAddress>> BinaryLookup::lookup(int loop, std::string topic, Deadline deadline) {
  auto self = client_.shared_from_this();
  auto first = co_await client_.service_connection(loop, deadline);
  if (!first.ok()) co_return first.status();
  std::shared_ptr<ClientConnection> cnx = *first;
  const bool tls = client_.uses_tls();
  bool authoritative = false;
  bool proxied = false;  // an answer said: go through the service host
  for (int redirects = 0;; ++redirects) {
    wire::BaseCommand cmd;
    cmd.set_type(wire::BaseCommand::LOOKUP);
    const uint64_t id = client_.next_request_id();
    auto* l = cmd.mutable_lookuptopic();
    l->set_topic(topic);
    l->set_request_id(id);
    l->set_authoritative(authoritative);
    auto r = co_await cnx->request(cmd, id, deadline);
    if (!r.ok()) co_return r.status();
    const auto& resp = r->lookuptopicresponse();
    // A TLS client goes on over TLS, as Pulsar's clients do (brokerServiceUrlTls).
    const std::string& broker_url = tls ? resp.brokerserviceurltls() : resp.brokerserviceurl();
    if (broker_url.empty()) {
      co_return Status(ClientError::kProtocolError,
                       tls ? fmt::format("lookup of {} named no TLS URL for broker '{}' (is "
                                         "brokerServicePortTls set there?)",
                                         topic, resp.brokerserviceurl())
                           : fmt::format("lookup of {} named no broker", topic));
    }
    proxied = proxied || resp.proxy_through_service_url();
    // The service host (the proxy) this chain of lookups went through.
    const std::string& physical = proxied ? cnx->physical_address() : broker_url;
    if (resp.response() == wire::CommandLookupTopicResponse::Connect) {
      co_return BrokerAddress{broker_url, physical};
    }
    // Redirect: ask the named broker, with the authoritative flag it gave.
    if (redirects + 1 >= client_.options().max_lookup_redirects) {
      co_return Status(ClientError::kTooManyLookupRedirects,
                       fmt::format("lookup of {} redirected {} times", topic, redirects + 1));
    }
    authoritative = resp.authoritative();
    auto next = co_await client_.get_connection(loop, broker_url, physical, deadline);
    if (!next.ok()) co_return next.status();
    cnx = *next;
  }
}

Task<Result<int>> BinaryLookup::partitioned_metadata(int loop, std::string topic,
                                                     Deadline deadline) {
  auto self = client_.shared_from_this();
  auto cnx = co_await client_.service_connection(loop, deadline);
  if (!cnx.ok()) co_return cnx.status();
  wire::BaseCommand cmd;
  cmd.set_type(wire::BaseCommand::PARTITIONED_METADATA);
  const uint64_t id = client_.next_request_id();
  cmd.mutable_partitionmetadata()->set_topic(topic);
  cmd.mutable_partitionmetadata()->set_request_id(id);
  auto r = co_await (*cnx)->request(cmd, id, deadline);
  if (!r.ok()) co_return r.status();
  co_return static_cast<int>(r->partitionmetadataresponse().partitions());
}

Task<Result<std::vector<std::string>>> BinaryLookup::topics_of_namespace(int loop, std::string ns,
                                                                         Deadline deadline) {
  auto self = client_.shared_from_this();
  auto cnx = co_await client_.service_connection(loop, deadline);
  if (!cnx.ok()) co_return cnx.status();
  wire::BaseCommand cmd;
  cmd.set_type(wire::BaseCommand::GET_TOPICS_OF_NAMESPACE);
  const uint64_t id = client_.next_request_id();
  cmd.mutable_gettopicsofnamespace()->set_namespace_(ns);
  cmd.mutable_gettopicsofnamespace()->set_request_id(id);
  cmd.mutable_gettopicsofnamespace()->set_mode(wire::CommandGetTopicsOfNamespace::PERSISTENT);
  auto r = co_await (*cnx)->request(cmd, id, deadline);
  if (!r.ok()) co_return r.status();
  std::vector<std::string> out(r->gettopicsofnamespaceresponse().topics().begin(),
                               r->gettopicsofnamespaceresponse().topics().end());
  co_return out;
}

}  // namespace

std::unique_ptr<LookupService> make_binary_lookup(ClientImpl& client) {
  return std::make_unique<BinaryLookup>(client);
}

}  // namespace magnetar::client
