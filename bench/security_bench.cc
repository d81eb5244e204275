// What security costs a broker, in this process over TCP on 127.0.0.1 (a Broker over a
// memory: store; no bookie: nothing here stores messages):
//  - BM_Connect/mode: a new connection's CONNECT handshake, then its close, from a blocking
//    protocol client (testing/pulsar_test_client.h). connections_per_s, with no
//    authentication (mode 0), a token (1: HS256 checked at CONNECT), a token and authorization
//    on (2: no per-command cost at CONNECT, for comparison).
//  - BM_Lookup/mode: one LOOKUP round trip on an open connection, the command a client sends
//    before every producer and consumer: lookups_per_s without authorization (0, 1) and with
//    it (2: the role's grants read from the broker's caches, one hop to their loop).
//  - BM_Decide: the authorization decision alone (auth::Authorizer::topic_allows) over a
//    namespace with 100 roles' grants and 100 topics' grants.
//
//   build/release/bin/security_bench

#include <benchmark/benchmark.h>

#include <chrono>
#include <memory>
#include <string>

#include "auth/authorization.h"
#include "auth/base64.h"
#include "auth/jwt.h"
#include "broker/broker.h"
#include "common/logging.h"
#include "metadata/metadata_store.h"
#include "testing/event_loop.h"
#include "testing/pulsar_test_client.h"

namespace {

using namespace magnetar;
using namespace std::chrono_literals;
using magnetar::testing::PulsarTestClient;

[[noreturn]] void die(const std::string& what) {
  std::fprintf(stderr, "security_bench: %s\n", what.c_str());
  std::abort();
}

class Broker {
 public:
  explicit Broker(int mode) {
    log::set_level(log::Level::kWarn);
    static int instances = 0;
    const std::string name = "security-bench-" + std::to_string(++instances);
    store_ = std::shared_ptr<metadata::MetadataStore>(
        loop_.await(metadata::open_store("memory:" + name)).value());
    const std::string policies =
        R"({"auth_policies":{"namespace_auth":{"app":["consume","produce"]}}})";
    if (!loop_.await(store_->put_recursive("/admin/policies/public", R"({"adminRoles":[]})"))
             .ok() ||
        !loop_.await(store_->put_recursive("/admin/policies/public/default", policies)).ok()) {
      die("creating public/default");
    }
    broker::BrokerConfig c;
    c.broker_service_port = 0;
    c.bind_address = "127.0.0.1";
    if (mode >= 1) {
      c.authentication.enabled = true;
      c.authentication.providers = {
          "org.apache.pulsar.broker.authentication.AuthenticationProviderToken"};
      c.authentication.token.secret_key = "data:;base64," + auth::base64_encode(secret_);
    }
    if (mode >= 2) c.authorization_enabled = true;
    auto b = broker::Broker::start(c, metadata::MetadataStores{store_, store_});
    if (!b.ok()) die(b.status().to_string());
    broker_ = std::move(b).value();
    token_ = *auth::encode_jwt({{"sub", "app"}}, *auth::TokenKey::secret(secret_),
                               auth::Algorithm::kHS256);
    mode_ = mode;
  }
  ~Broker() {
    broker_->stop();
    broker_.reset();
    (void)loop_.await(store_->close());
  }
  Result<std::unique_ptr<PulsarTestClient>> connect() const {
    PulsarTestClient::Options o;
    o.port = broker_->port();
    o.timeout = 10s;
    if (mode_ >= 1) {
      o.auth_method = "token";
      o.auth_data = token_;
    }
    return PulsarTestClient::connect(o);
  }

 private:
  magnetar::testing::EventLoop loop_;  // first: destroyed last
  std::string secret_ = auth::generate_secret(auth::Algorithm::kHS256);
  std::string token_;
  int mode_ = 0;
  std::shared_ptr<metadata::MetadataStore> store_;
  std::unique_ptr<broker::Broker> broker_;
};

void BM_Connect(benchmark::State& state) {
  Broker broker(static_cast<int>(state.range(0)));
  for (auto _ : state) {
    auto c = broker.connect();
    if (!c.ok()) {
      state.SkipWithError(c.status().to_string().c_str());
      break;
    }
    (*c)->close();
  }
  state.counters["connections_per_s"] =
      benchmark::Counter(static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_Connect)->Arg(0)->Arg(1)->Arg(2)->UseRealTime()->MinTime(2.0);

void BM_Lookup(benchmark::State& state) {
  Broker broker(static_cast<int>(state.range(0)));
  auto c = broker.connect();
  if (!c.ok()) {
    state.SkipWithError(c.status().to_string().c_str());
    return;
  }
  const std::string topic = "persistent://public/default/looked-up";
  if (!(*c)->lookup(topic).ok()) state.SkipWithError("first lookup failed");
  for (auto _ : state) {
    auto r = (*c)->lookup(topic);
    if (!r.ok()) {
      state.SkipWithError(r.status().to_string().c_str());
      break;
    }
  }
  state.counters["lookups_per_s"] =
      benchmark::Counter(static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_Lookup)->Arg(0)->Arg(1)->Arg(2)->UseRealTime()->MinTime(2.0);

void BM_Decide(benchmark::State& state) {
  nlohmann::json p;
  for (int i = 0; i < 100; ++i) {
    p["auth_policies"]["namespace_auth"]["role-" + std::to_string(i)] = {"consume"};
    p["auth_policies"]["destination_auth"]["persistent://t/ns/topic-" + std::to_string(i)]["app"] =
        {"produce"};
  }
  const auth::AuthPolicies policies = auth::AuthPolicies::from_policies(p);
  const auth::Authorizer authz({});
  const auth::ActionSet produce = {auth::AuthAction::kProduce};
  for (auto _ : state) {
    bool ok = authz.topic_allows(policies, "app", "persistent://t/ns/topic-57", produce);
    benchmark::DoNotOptimize(ok);
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_Decide);

}  // namespace
