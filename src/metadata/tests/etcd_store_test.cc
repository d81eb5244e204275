// etcd-only behaviour of the etcd: backend, against real servers (testing/etcd_server.h): the
// key layout, session loss when etcd hangs and re-establishment, a 3-member cluster losing the
// member we talk to under load, prefixes, etcd's own request limit, and bounded failure when
// nothing answers. The shared semantics are in conformance_test.cc.

#include "metadata/etcd_store.h"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <string>
#include <vector>

#include "common/ports.h"
#include "metadata/etcd_keys.h"
#include "metadata/metadata_store.h"
#include "metadata/tests/store_test_support.h"
#include "testing/child_process.h"
#include "testing/etcd_server.h"
#include "testing/tls_certs.h"

namespace magnetar::metadata {
namespace {

using namespace std::chrono_literals;
using test::ephemeral;
using test::Loop;
using test::SessionEvents;

constexpr auto timeouts = test::store_options;

std::unique_ptr<MetadataStore> open_etcd(Loop& loop, const std::string& url,
                                         const StoreOptions& options) {
  auto store = loop.await(open_store(url, options));
  EXPECT_TRUE(store.ok()) << store.status().to_string();
  return store.ok() ? std::move(store).value() : nullptr;
}

TEST(EtcdKeysTest, ChildrenOfANodeAreOneRangeAndNothingElse) {
  etcd::KeyLayout keys("/p");
  EXPECT_EQ(keys.node("/a/b"), "/p/n/002/a/b");
  EXPECT_EQ(keys.children_begin("/a/b"), "/p/n/003/a/b/");
  EXPECT_EQ(keys.children_end("/a/b"), "/p/n/003/a/b0");
  EXPECT_EQ(keys.children_begin("/"), "/p/n/001/");
  const std::string child = keys.node("/a/b/c");
  const std::string grandchild = keys.node("/a/b/c/d");
  const std::string sibling = keys.node("/a/bc");
  const std::string cousin = keys.node("/a/bc/x");
  auto in_children = [&](const std::string& key) {
    return key >= keys.children_begin("/a/b") && key < keys.children_end("/a/b");
  };
  EXPECT_TRUE(in_children(child));
  EXPECT_FALSE(in_children(grandchild));
  EXPECT_FALSE(in_children(sibling));
  EXPECT_FALSE(in_children(cousin));
  EXPECT_FALSE(in_children(keys.node("/a/b")));
  EXPECT_TRUE(keys.node("/x") >= keys.nodes_begin() && keys.node("/x") < keys.nodes_end());
  EXPECT_FALSE(keys.creation_time("/x") >= keys.nodes_begin() &&
               keys.creation_time("/x") < keys.nodes_end());
}

TEST(EtcdKeysTest, NodeKeysMapBackToTheirPathsAndOthersDoNot) {
  etcd::KeyLayout keys("");
  for (const char* path : {"/a", "/a/b", "/managed-ledgers/t/ns/persistent/x%20y"}) {
    EXPECT_EQ(keys.path_of(keys.node(path)), std::optional<std::string>(path));
  }
  for (const char* key : {"/t/a", "/s/a", "/n/", "/n/00", "/n/001", "/n/002/a", "/n/x01/a",
                          "/n/001a", "/n/003/a//b", "/n/002/a/.", "other"}) {
    EXPECT_EQ(keys.path_of(key), std::nullopt) << key;
  }
  std::string deep;
  for (int i = 0; i < 999; ++i) deep += "/d";
  EXPECT_EQ(etcd::check_depth(deep).code(), make_error_code(Error::kInvalidPath));
  EXPECT_TRUE(etcd::check_depth(deep.substr(2)).ok());
}

TEST(EtcdKeysTest, ValuesCarryTheirHeaderAndForeignValuesAreReadWhole) {
  std::string stored = etcd::encode_value(std::string("a\0b", 3), 1234567, 42);
  EXPECT_EQ(stored.size(), etcd::kValueHeaderSize + 3);
  etcd::StoredValue back = etcd::decode_value(stored);
  EXPECT_EQ(back.value, std::string_view("a\0b", 3));
  EXPECT_EQ(back.modification_time_ms, 1234567);
  EXPECT_EQ(back.write_id, 42u);
  etcd::StoredValue foreign = etcd::decode_value("written by etcdctl");
  EXPECT_EQ(foreign.value, "written by etcdctl");
  EXPECT_EQ(foreign.write_id, 0u);
  EXPECT_EQ(etcd::decode_time(etcd::encode_time(99)), 99);
  EXPECT_EQ(etcd::decode_time("short"), 0);
}

TEST(EtcdStoreTest, MalformedUrlsAreBadUrls) {
  Loop loop;
  for (const char* url : {"etcd:", "etcd:http://", "etcd:http://host", "etcd:ftp://h:1",
                          "etcd:http://h:1,https://h:2", "etcd:http://h:1/a,h:2",
                          "etcd:http://h:99999", "etcd:http://:1", "etcd:http://h:1/a//b",
                          "etcd:http://h:1?tlsTrustCertsFilePath=/ca.pem",
                          "etcd:https://h:1?sslmode=on",
                          "etcd:https://h:1?tlsCertificateFilePath=/c.pem"}) {
    auto store = loop.await(open_store(url, timeouts(2000ms, 2000ms)));
    EXPECT_EQ(store.status().code(), make_error_code(Error::kBadUrl))
        << url << ": " << store.status().to_string();
  }
}

TEST(EtcdStoreTest, NothingListeningFailsWithTimeoutWithinTheDeadline) {
  auto ports = pick_free_ports(1);
  ASSERT_TRUE(ports.ok());
  Loop loop;
  auto started = std::chrono::steady_clock::now();
  auto store = loop.await(open_store(fmt::format("etcd:http://127.0.0.1:{}", ports->front()),
                                     timeouts(2000ms, 1500ms)));
  EXPECT_EQ(store.status().code(), make_error_code(Error::kTimeout)) << store.status().to_string();
  EXPECT_LT(std::chrono::steady_clock::now() - started, 5s);
}

TEST(EtcdStoreTest, PrefixesIsolateStores) {
  auto etcd = testing::EtcdServer::start();
  ASSERT_TRUE(etcd.ok()) << etcd.status().to_string();
  Loop loop;
  auto a = open_etcd(loop, (*etcd)->url() + "/tenant-a", timeouts(5000ms, 5000ms));
  auto b = open_etcd(loop, (*etcd)->url() + "/tenant-b", timeouts(5000ms, 5000ms));
  auto root = open_etcd(loop, (*etcd)->url(), timeouts(5000ms, 5000ms));
  ASSERT_TRUE(a && b && root);
  ASSERT_TRUE(loop.await(a->put("/x", "from a")).ok());
  ASSERT_TRUE(loop.await(b->put("/x", "from b")).ok());
  EXPECT_EQ((*loop.await(a->get("/x")))->value, "from a");
  EXPECT_EQ((*loop.await(b->get("/x")))->value, "from b");
  auto kids = loop.await(root->children("/"));
  ASSERT_TRUE(kids.ok());
  EXPECT_TRUE(kids->empty());
  for (auto* s : {&a, &b, &root}) EXPECT_TRUE(loop.await((*s)->close()).ok());
}

// What `magnetar cluster up` does to wait for etcd: a session opened, closed and destroyed at
// once, again and again. A store destroyed before its janitor opened the session's streams
// must still wait for them (a stream ending after the store was gone crashed the launcher).
TEST(EtcdStoreTest, StoresOpenedClosedAndDestroyedAtOnceLeaveNothingRunning) {
  auto etcd = testing::EtcdServer::start();
  ASSERT_TRUE(etcd.ok()) << etcd.status().to_string();
  for (int i = 0; i < 60; ++i) {
    Loop loop;
    auto store = open_etcd(loop, (*etcd)->url(), timeouts(2000ms, 2000ms));
    ASSERT_TRUE(store);
    if (i % 2 == 0) EXPECT_TRUE(loop.await(store->close()).ok());
    store.reset();  // half of them destroyed without close()
  }
}

TEST(EtcdStoreTest, ValuesOverEtcdsRequestLimitAreRefusedClearly) {
  auto etcd = testing::EtcdServer::start();
  ASSERT_TRUE(etcd.ok()) << etcd.status().to_string();
  Loop loop;
  StoreOptions options = timeouts(5000ms, 5000ms);
  options.max_value_size = 4 * 1024 * 1024;  // above etcd's default 1.5 MiB request limit
  auto store = open_etcd(loop, (*etcd)->url(), options);
  ASSERT_NE(store, nullptr);
  auto put = loop.await(store->put("/big", std::string(2 * 1024 * 1024, 'x')));
  ASSERT_EQ(put.status().code(), make_error_code(Error::kTooLarge)) << put.status().to_string();
  EXPECT_NE(put.status().message().find("max-request-bytes"), std::string::npos)
      << put.status().to_string();
  EXPECT_TRUE(loop.await(store->close()).ok());
}

// etcd serving clients over TLS and requiring client certificates: a store with the CA and a
// client certificate works; without the certificate, or trusting another CA, it is refused
// within its deadline, and a CA file that cannot be read is named.
TEST(EtcdStoreTest, TlsWithClientCertificates) {
  const std::string dir = ::testing::TempDir() + "etcd-tls-" + std::to_string(::getpid());
  auto certs = testing::make_test_certs(dir);
  ASSERT_TRUE(certs.ok()) << certs.status().to_string();
  testing::EtcdOptions tls;
  tls.tls_cert_file = certs->server_cert;
  tls.tls_key_file = certs->server_key;
  tls.tls_client_ca_file = certs->ca_cert;
  auto etcd = testing::EtcdServer::start(tls);
  ASSERT_TRUE(etcd.ok()) << etcd.status().to_string();
  ASSERT_EQ((*etcd)->url().rfind("etcd:https://", 0), 0u);
  Loop loop;
  const std::string base = (*etcd)->url() + "/secure?tlsTrustCertsFilePath=" + certs->ca_cert;
  auto store = open_etcd(loop,
                         base + "&tlsCertificateFilePath=" + certs->client_cert +
                             "&tlsKeyFilePath=" + certs->client_key,
                         timeouts(5000ms, 5000ms));
  ASSERT_NE(store, nullptr);
  ASSERT_TRUE(loop.await(store->put("/x", "over tls")).ok());
  EXPECT_EQ((*loop.await(store->get("/x")))->value, "over tls");
  EXPECT_TRUE(loop.await(store->close()).ok());

  auto no_client_cert = loop.await(open_store(base, timeouts(2000ms, 2000ms)));
  EXPECT_FALSE(no_client_cert.ok());
  auto other_ca = loop.await(open_store(
      (*etcd)->url() + "?tlsTrustCertsFilePath=" + certs->other_ca_cert +
          "&tlsCertificateFilePath=" + certs->client_cert + "&tlsKeyFilePath=" +
          certs->client_key,
      timeouts(2000ms, 2000ms)));
  EXPECT_FALSE(other_ca.ok());
  auto missing = loop.await(open_store((*etcd)->url() + "?tlsTrustCertsFilePath=/nonexistent.pem",
                                       timeouts(2000ms, 2000ms)));
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("/nonexistent.pem"), std::string::npos)
      << missing.status().to_string();
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
}

// etcd hangs (SIGSTOP) past the lease's TTL: the store declares its session lost on its own
// clock, no later than a TTL after its last answered keep-alive (so before etcd, which counts
// from receiving it, can expire the lease and let another session take what it held), then
// gets a new lease once etcd answers again; the old ephemerals are gone.
TEST(EtcdStoreTest, TheGrantedTtlIsTheSessionTimeoutInForce) {
  // A lease's TTL is whole seconds: 1.5 s asked for is at least 2 s granted, and the store
  // reports what etcd granted, which is what its ephemerals live by.
  auto etcd = testing::EtcdServer::start();
  ASSERT_TRUE(etcd.ok()) << etcd.status().to_string();
  Loop loop;
  auto store = open_etcd(loop, (*etcd)->url(), timeouts(1500ms, 3000ms));
  ASSERT_TRUE(store);
  const auto granted = store->session_timeout();
  EXPECT_GE(granted, 2000ms);
  EXPECT_EQ(granted.count() % 1000, 0) << granted.count();
  (void)loop.await(store->close());
}

TEST(EtcdStoreTest, HungEtcdLosesTheSessionBeforeTheLeaseCanExpire) {
  auto etcd = testing::EtcdServer::start();
  ASSERT_TRUE(etcd.ok()) << etcd.status().to_string();
  Loop loop;
  auto store = open_etcd(loop, (*etcd)->url(), timeouts(2000ms, 3000ms));
  auto observer = open_etcd(loop, (*etcd)->url(), timeouts(30000ms, 10000ms));
  ASSERT_TRUE(store && observer);
  SessionEvents events;
  events.attach(*store, loop);
  ASSERT_TRUE(loop.await(store->put("/eph", "mine", ephemeral())).ok());
  const int64_t first_session = store->session_id();

  loop.run_for(200ms);  // a keep-alive answered just now
  (*etcd)->pause();
  const auto paused_at = std::chrono::steady_clock::now();
  auto during = loop.await(store->get("/eph"));
  EXPECT_FALSE(during.ok());
  EXPECT_TRUE(during.status().is(Errc::kTimeout) || during.status().is(Errc::kUnavailable))
      << during.status().to_string();
  ASSERT_TRUE(loop.run_until([&] { return events.has(SessionEvent::kSessionLost); }, 5s))
      << events.describe();
  // Lost within the TTL (2 s) of the pause, the last keep-alive having been answered before.
  EXPECT_LE(*events.when(SessionEvent::kSessionLost) - paused_at, 2100ms) << events.describe();
  ASSERT_TRUE(events.has(SessionEvent::kConnectionLost)) << events.describe();
  EXPECT_LT(*events.when(SessionEvent::kConnectionLost), *events.when(SessionEvent::kSessionLost));
  // No ephemeral can be created on a lost session.
  auto refused = loop.await(store->put("/eph2", "x", ephemeral()));
  EXPECT_EQ(refused.status().code(), make_error_code(Error::kSessionLost))
      << refused.status().to_string();
  loop.run_for(1500ms);
  (*etcd)->resume();

  ASSERT_TRUE(loop.run_until([&] { return events.has(SessionEvent::kSessionReestablished); }, 20s))
      << events.describe();
  EXPECT_FALSE(events.has(SessionEvent::kReconnected)) << events.describe();
  EXPECT_NE(store->session_id(), first_session);
  // The old lease is revoked or expired: its ephemeral is gone.
  ASSERT_TRUE(loop.run_until(
      [&] {
        auto eph = loop.await(observer->get("/eph"));
        return eph.ok() && !eph->has_value();
      },
      15s));
  EXPECT_TRUE(test::new_session_owns_a_new_ephemeral(loop, *store, *observer, "/eph"));
  EXPECT_TRUE(loop.await(store->close()).ok());
  EXPECT_TRUE(loop.await(observer->close()).ok());
}

// A short stall (below half the TTL) is invisible; a longer one below the TTL is a connection
// loss and a reconnect, with the session and its ephemerals intact.
TEST(EtcdStoreTest, AStallShorterThanTheTtlKeepsTheSession) {
  auto etcd = testing::EtcdServer::start();
  ASSERT_TRUE(etcd.ok()) << etcd.status().to_string();
  Loop loop;
  auto store = open_etcd(loop, (*etcd)->url(), timeouts(8000ms, 5000ms));
  ASSERT_NE(store, nullptr);
  SessionEvents events;
  events.attach(*store, loop);
  ASSERT_TRUE(loop.await(store->put("/eph", "mine", ephemeral())).ok());
  const int64_t session = store->session_id();
  loop.run_for(200ms);
  (*etcd)->pause();
  loop.run_for(5000ms);  // past half the 8 s TTL, short of the TTL less a keep-alive period
  (*etcd)->resume();
  ASSERT_TRUE(loop.run_until([&] { return events.has(SessionEvent::kReconnected); }, 10s))
      << events.describe();
  EXPECT_TRUE(events.has(SessionEvent::kConnectionLost)) << events.describe();
  EXPECT_FALSE(events.has(SessionEvent::kSessionLost)) << events.describe();
  EXPECT_EQ(store->session_id(), session);
  auto eph = loop.await(store->get("/eph"));
  ASSERT_TRUE(eph.ok() && eph->has_value()) << eph.status().to_string();
  EXPECT_EQ((*eph)->stat.ephemeral_owner, session);
  EXPECT_TRUE(loop.await(store->close()).ok());
}

// Four writers increment one counter by CAS while the member the store talks to (the first
// endpoint) is killed: every increment that reported success is there exactly once, no
// session is lost, ephemerals and notifications carry on.
TEST(EtcdStoreTest, ClusterKeepsServingWithTheConnectedMemberKilledUnderLoad) {
  auto cluster = testing::EtcdCluster::start(3);
  ASSERT_TRUE(cluster.ok()) << cluster.status().to_string();
  Loop loop;
  auto store = open_etcd(loop, (*cluster)->url(), timeouts(10000ms, 10000ms));
  auto watcher = open_etcd(loop, (*cluster)->url(), timeouts(10000ms, 10000ms));
  ASSERT_TRUE(store && watcher);
  SessionEvents events;
  events.attach(*store, loop);
  ASSERT_TRUE(loop.await(store->put("/counter", "0")).ok());
  ASSERT_TRUE(loop.await(store->put("/eph", "mine", ephemeral())).ok());
  const int64_t session = store->session_id();
  int notified = 0;
  watcher->add_listener(loop.executor(), [&](const Notification& n) {
    if (n.path == "/counter" && n.type == NotificationType::kModified) ++notified;
  });

  int succeeded = 0;
  int failed = 0;
  int writers_done = 0;
  bool stop = false;
  std::string last_error;
  for (int w = 0; w < 4; ++w) {
    asio::co_spawn(
        loop.executor(),
        [&, s = store.get()]() -> Task<void> {
          while (!stop) {
            auto cur = co_await s->get("/counter");
            if (!cur.ok() || !cur->has_value()) {
              ++failed;
              last_error = cur.status().to_string();
              continue;
            }
            int v = std::stoi((*cur)->value);
            auto r = co_await s->put("/counter", std::to_string(v + 1),
                                     PutOptions{(*cur)->stat.version, false, false});
            if (r.ok()) {
              ++succeeded;
            } else if (!r.status().is(Errc::kBadVersion)) {
              ++failed;
              last_error = r.status().to_string();
            }
          }
          ++writers_done;
        },
        asio::detached);
  }
  ASSERT_TRUE(loop.run_until([&] { return succeeded >= 50; }, 30s));
  (*cluster)->member(0).kill();
  const int at_kill = succeeded;
  ASSERT_TRUE(loop.run_until([&] { return succeeded >= at_kill + 100; }, 60s))
      << "stuck at " << succeeded << " after the kill; last error: " << last_error;
  stop = true;
  ASSERT_TRUE(loop.run_until([&] { return writers_done == 4; }, 30s));

  auto counter = loop.await(store->get("/counter"));
  ASSERT_TRUE(counter.ok() && counter->has_value()) << counter.status().to_string();
  EXPECT_EQ((*counter)->value, std::to_string(succeeded)) << failed << " failed";
  EXPECT_EQ((*counter)->stat.version, succeeded);
  EXPECT_FALSE(events.has(SessionEvent::kSessionLost)) << events.describe();
  EXPECT_EQ(store->session_id(), session);
  auto eph = loop.await(watcher->get("/eph"));
  ASSERT_TRUE(eph.ok() && eph->has_value());
  EXPECT_EQ((*eph)->stat.ephemeral_owner, session);
  // The watcher's stream moved too: later changes are still notified.
  const int before = notified;
  ASSERT_TRUE(loop.await(store->put("/counter", "done")).ok());
  EXPECT_TRUE(loop.run_until([&] { return notified > before; }, 10s));
  EXPECT_TRUE(loop.await(store->close()).ok());
  EXPECT_TRUE(loop.await(watcher->close()).ok());
}

}  // namespace
}  // namespace magnetar::metadata
