#pragma once
// The fixture of the broker's protocol-level tests (broker_test.cc and the tests of one
// feature each beside it): a broker and a bookie in this process over a memory: metadata
// store, driven frame by frame by a blocking Pulsar protocol client
// (testing/pulsar_test_client.h).

#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "broker/broker.h"
#include "ledger/tests/ledger_test_support.h"
#include "testing/pulsar_test_client.h"
#include "testing/test_name.h"

namespace magnetar::broker::test {

using ledger::test::Cluster;
using testing::PulsarTestClient;
using magnetar::testing::test_name;

// The ledger and entry of a message id (what a client sends back).
inline wire::MessageIdData id_of(const wire::MessageIdData& id) {
  wire::MessageIdData out;
  out.set_ledgerid(id.ledgerid());
  out.set_entryid(id.entryid());
  return out;
}

class BrokerTest : public ::testing::Test {
 protected:
  BrokerTest() : cluster_(test_name()) {
    cluster_.add_bookie();
    store_ = std::shared_ptr<metadata::MetadataStore>(&cluster_.store(),
                                                      [](metadata::MetadataStore*) {});
    auto made = cluster_.await(store_->put_recursive("/admin/policies/public/default", "{}"));
    EXPECT_TRUE(made.ok()) << made.status().to_string();
    start_broker();
  }
  ~BrokerTest() override {
    if (broker_) broker_->stop();
  }

  void start_broker(const std::function<void(BrokerConfig&)>& tweak = {}) {
    BrokerConfig c;
    c.broker_service_port = 0;
    c.bind_address = "127.0.0.1";
    c.num_io_threads = 3;  // connections and topics on different loops
    c.managed_ledger.ensemble_size = 1;
    c.managed_ledger.write_quorum = 1;
    c.managed_ledger.ack_quorum = 1;
    c.managed_ledger.mark_delete_rate_limit = 0;
    c.managed_ledger_factory.cache_size_mb = 16;
    if (tweak) tweak(c);
    auto b = Broker::start(c, metadata::MetadataStores{store_, store_});
    ASSERT_TRUE(b.ok()) << b.status().to_string();
    broker_ = std::move(b).value();
  }

  std::unique_ptr<PulsarTestClient> client(int protocol_version = 21) {
    PulsarTestClient::Options o;
    o.port = broker_->port();
    o.protocol_version = protocol_version;
    auto c = PulsarTestClient::connect(o);
    EXPECT_TRUE(c.ok()) << c.status().to_string();
    return c.ok() ? std::move(c).value() : nullptr;
  }

  // Sends n messages "msg-<i>" and returns their ids.
  std::vector<wire::MessageIdData> produce(PulsarTestClient& c, const std::string& topic, int n,
                                           uint64_t producer_id = 1) {
    auto p = c.create_producer(topic, producer_id);
    EXPECT_TRUE(p.ok()) << p.status().to_string();
    std::vector<wire::MessageIdData> ids;
    for (int i = 0; i < n; ++i) {
      auto r = c.send_message(producer_id, static_cast<uint64_t>(i), "msg-" + std::to_string(i));
      EXPECT_TRUE(r.ok()) << r.status().to_string();
      if (r.ok()) ids.push_back(r->message_id());
    }
    return ids;
  }

  Cluster cluster_;
  std::shared_ptr<metadata::MetadataStore> store_;
  std::unique_ptr<Broker> broker_;
};

}  // namespace magnetar::broker::test
