// ZooKeeper-only behaviour of the zk: backend, against real servers (testing/zookeeper_server.h):
// session expiry and re-establishment, transparent reconnects, ensemble fail-over, chroots,
// and bounded failure when nothing answers. The shared semantics are in conformance_test.cc.

#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "metadata/metadata_store.h"
#include "metadata/tests/store_test_support.h"
#include "metadata/zookeeper_store.h"
#include "testing/zookeeper_server.h"

namespace magnetar::metadata {
namespace {

using namespace std::chrono_literals;
using test::ephemeral;
using test::Loop;
using test::SessionEvents;

// Short timeouts: the fixture's tick of 200 ms allows sessions down to 400 ms.
constexpr auto short_timeouts = test::store_options;

std::unique_ptr<MetadataStore> open_zk(Loop& loop, const std::string& url_rest,
                                       const StoreOptions& options) {
  auto store = loop.await(open_zookeeper_store(url_rest, options));
  EXPECT_TRUE(store.ok()) << store.status().to_string();
  return store.ok() ? std::move(store).value() : nullptr;
}


// A port on 127.0.0.1 where nothing listens (bound, then released).
int unused_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof(addr);
  if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    if (fd >= 0) ::close(fd);
    return -1;
  }
  int port = ntohs(addr.sin_port);
  ::close(fd);
  return port;
}

// A TCP relay on 127.0.0.1 in front of one server port, to cut a client off the server
// without touching the server. While cut, it drops every relayed connection and closes new
// ones as soon as it accepts them. One thread accepts, one thread per connection copies.
class Relay {
 public:
  explicit Relay(int target_port) : target_port_(target_port) {
    listen_fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr = loopback(0);
    socklen_t len = sizeof(addr);
    if (listen_fd_ < 0 || ::bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), len) != 0 ||
        ::listen(listen_fd_, 64) != 0 ||
        ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
      return;
    }
    port_ = ntohs(addr.sin_port);
    acceptor_ = std::thread([this] { accept_loop(); });
  }

  ~Relay() {
    stop_ = true;
    if (acceptor_.joinable()) acceptor_.join();
    std::vector<std::thread> pumps;
    {
      std::lock_guard lock(mu_);
      pumps.swap(pumps_);
    }
    for (auto& t : pumps) t.join();
    if (listen_fd_ >= 0) ::close(listen_fd_);
  }

  int port() const { return port_; }  // 0 if the relay could not listen

  void cut() {
    cut_ = true;
    ++generation_;
  }
  void restore() { cut_ = false; }

 private:
  static sockaddr_in loopback(int port) {
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = htons(static_cast<uint16_t>(port));
    return addr;
  }

  void accept_loop() {
    while (!stop_) {
      pollfd p{listen_fd_, POLLIN, 0};
      if (::poll(&p, 1, 20) <= 0) continue;
      int client = ::accept(listen_fd_, nullptr, nullptr);
      if (client < 0) continue;
      if (cut_) {
        ::close(client);
        continue;
      }
      int server = ::socket(AF_INET, SOCK_STREAM, 0);
      sockaddr_in addr = loopback(target_port_);
      if (server < 0 ||
          ::connect(server, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
        if (server >= 0) ::close(server);
        ::close(client);
        continue;
      }
      uint64_t generation = generation_;
      std::lock_guard lock(mu_);
      pumps_.emplace_back([this, client, server, generation] { pump(client, server, generation); });
    }
  }

  // Copies both ways until either side closes, the relay is cut or it stops.
  void pump(int client, int server, uint64_t generation) {
    char buffer[64 * 1024];
    bool open = true;
    while (open && !stop_ && generation_ == generation) {
      pollfd p[2] = {{client, POLLIN, 0}, {server, POLLIN, 0}};
      if (::poll(p, 2, 20) <= 0) continue;
      for (int i = 0; i < 2 && open; ++i) {
        if (!(p[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
        ssize_t n = ::read(p[i].fd, buffer, sizeof(buffer));
        int to = i == 0 ? server : client;
        for (ssize_t off = 0; n > 0 && off < n;) {
          ssize_t w = ::write(to, buffer + off, static_cast<size_t>(n - off));
          if (w <= 0) {
            n = -1;
            break;
          }
          off += w;
        }
        if (n <= 0) open = false;
      }
    }
    ::close(client);
    ::close(server);
  }

  const int target_port_;
  int listen_fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::atomic<bool> cut_{false};
  std::atomic<uint64_t> generation_{0};  // cut() bumps it: older connections end
  std::mutex mu_;
  std::vector<std::thread> pumps_;  // guarded by mu_
  std::thread acceptor_;
};

TEST(ZooKeeperStoreTest, ExpiredSessionIsReplacedAndItsEphemeralsAreGone) {
  auto zk = testing::ZooKeeperServer::start();
  ASSERT_TRUE(zk.ok()) << zk.status().to_string();
  Relay relay((*zk)->port());
  ASSERT_GT(relay.port(), 0);
  Loop loop;
  auto store = open_zk(loop, fmt::format("127.0.0.1:{}", relay.port()),
                       short_timeouts(1600ms, 2000ms));
  auto observer = open_zk(loop, (*zk)->connect_string(), short_timeouts(20000ms, 5000ms));
  ASSERT_TRUE(store && observer);
  SessionEvents events;
  events.attach(*store, loop);
  ASSERT_TRUE(loop.await(store->put("/eph", "mine", ephemeral())).ok());
  const int64_t first_session = store->session_id();
  ASSERT_NE(first_session, 0);

  // The server hangs (SIGSTOP) past the 1.6 s session timeout. The relay keeps our client
  // away until the server, resumed, has expired the session: ZooKeeper revives a session
  // whose reconnect it reads before its expiry thread runs, which would make this a race.
  relay.cut();
  (*zk)->pause();
  // Nobody answers: an operation fails within its deadline instead of hanging.
  auto started = std::chrono::steady_clock::now();
  auto during = loop.await(store->get("/eph"));
  EXPECT_FALSE(during.ok());
  EXPECT_TRUE(during.status().is(Errc::kUnavailable) || during.status().is(Errc::kTimeout))
      << during.status().to_string();
  EXPECT_LT(std::chrono::steady_clock::now() - started, 4s);
  loop.run_for(2500ms);
  (*zk)->resume();
  // The server expires the session and deletes its ephemeral.
  ASSERT_TRUE(loop.run_until(
      [&] {
        auto eph = loop.await(observer->get("/eph"));
        return eph.ok() && !eph->has_value();
      },
      15s));
  relay.restore();

  ASSERT_TRUE(loop.run_until([&] { return events.has(SessionEvent::kSessionReestablished); },
                             20s))
      << events.describe();
  ASSERT_TRUE(events.has(SessionEvent::kSessionLost)) << events.describe();
  EXPECT_LT(events.first(SessionEvent::kConnectionLost),
            events.first(SessionEvent::kSessionLost))
      << events.describe();
  EXPECT_LT(events.first(SessionEvent::kSessionLost),
            events.first(SessionEvent::kSessionReestablished))
      << events.describe();
  EXPECT_FALSE(events.has(SessionEvent::kReconnected)) << events.describe();
  EXPECT_NE(store->session_id(), first_session);
  EXPECT_NE(store->session_id(), 0);

  // The new session works, sees the ephemeral gone, and owns what it creates.
  EXPECT_TRUE(test::new_session_owns_a_new_ephemeral(loop, *store, *observer, "/eph"));
  EXPECT_TRUE(loop.await(store->close()).ok());
  EXPECT_TRUE(loop.await(observer->close()).ok());
}

TEST(ZooKeeperStoreTest, PartitionedClientTreatsItsSessionAsLostAfterTheTimeout) {
  // The server stays healthy; only this client is cut off. It must not wait for a reconnect
  // to learn that its ephemerals may be gone: after the session timeout it says so itself.
  auto zk = testing::ZooKeeperServer::start();
  ASSERT_TRUE(zk.ok()) << zk.status().to_string();
  Relay relay((*zk)->port());
  Loop loop;
  auto store = open_zk(loop, fmt::format("127.0.0.1:{}", relay.port()),
                       short_timeouts(1600ms, 2000ms));
  ASSERT_TRUE(store);
  SessionEvents events;
  events.attach(*store, loop);
  ASSERT_TRUE(loop.await(store->put("/owned", "mine", ephemeral())).ok());
  const int64_t first_session = store->session_id();

  auto cut_at = std::chrono::steady_clock::now();
  relay.cut();
  ASSERT_TRUE(loop.run_until([&] { return events.has(SessionEvent::kSessionLost); }, 10s))
      << events.describe();
  auto lost_after = std::chrono::steady_clock::now() - cut_at;
  EXPECT_GE(lost_after, 1500ms);  // not before the session timeout...
  EXPECT_LT(lost_after, 6s);      // ...and without waiting for a reconnection
  EXPECT_FALSE(events.has(SessionEvent::kReconnected)) << events.describe();

  relay.restore();
  ASSERT_TRUE(loop.run_until([&] { return events.has(SessionEvent::kSessionReestablished); },
                             20s))
      << events.describe();
  EXPECT_NE(store->session_id(), first_session);
  auto mine = loop.await(store->put("/owned", "again", ephemeral()));
  EXPECT_TRUE(mine.ok()) << mine.status().to_string();
  (void)loop.await(store->close());
}

TEST(ZooKeeperStoreTest, TheServersSessionTimeoutIsTheOneInForce) {
  // Servers bound the timeout a client asks for by their maxSessionTimeout. The store must
  // plan with theirs: a broker that kept the 6 s it asked for would go on serving after the
  // servers had expired its session and let another broker take its bundles.
  testing::ZooKeeperOptions server;
  server.max_session_timeout_ms = 2000;
  auto zk = testing::ZooKeeperServer::start(server);
  ASSERT_TRUE(zk.ok()) << zk.status().to_string();
  Relay relay((*zk)->port());
  Loop loop;
  auto store =
      open_zk(loop, fmt::format("127.0.0.1:{}", relay.port()), short_timeouts(6000ms, 2000ms));
  ASSERT_TRUE(store);
  EXPECT_EQ(store->session_timeout(), 2000ms);
  SessionEvents events;
  events.attach(*store, loop);
  ASSERT_TRUE(loop.await(store->put("/owned", "mine", ephemeral())).ok());

  auto cut_at = std::chrono::steady_clock::now();
  relay.cut();
  ASSERT_TRUE(loop.run_until([&] { return events.has(SessionEvent::kSessionLost); }, 15s))
      << events.describe();
  auto lost_after = std::chrono::steady_clock::now() - cut_at;
  EXPECT_GE(lost_after, 1900ms);  // the servers' timeout...
  EXPECT_LT(lost_after, 5s);      // ...not the 6 s asked for
  relay.restore();
  (void)loop.await(store->close());
}

TEST(ZooKeeperStoreTest, ServerRestartWithinTheSessionTimeoutIsTransparent) {
  auto zk = testing::ZooKeeperServer::start();
  ASSERT_TRUE(zk.ok()) << zk.status().to_string();
  Loop loop;
  auto store = open_zk(loop, (*zk)->connect_string(), short_timeouts(15000ms, 5000ms));
  ASSERT_NE(store, nullptr);
  SessionEvents events;
  events.attach(*store, loop);
  ASSERT_TRUE(loop.await(store->put("/eph", "mine", ephemeral())).ok());
  const int64_t session = store->session_id();

  ASSERT_TRUE((*zk)->stop().ok());
  ASSERT_TRUE(loop.run_until([&] { return events.has(SessionEvent::kConnectionLost); }, 10s))
      << events.describe();
  ASSERT_TRUE((*zk)->restart().ok());
  ASSERT_TRUE(loop.run_until([&] { return events.has(SessionEvent::kReconnected); }, 15s))
      << events.describe();

  EXPECT_LT(events.first(SessionEvent::kConnectionLost),
            events.first(SessionEvent::kReconnected));
  EXPECT_FALSE(events.has(SessionEvent::kSessionLost)) << events.describe();
  EXPECT_EQ(store->session_id(), session);
  auto eph = loop.await(store->get("/eph"));
  ASSERT_TRUE(eph.ok()) << eph.status().to_string();
  ASSERT_TRUE(eph->has_value());
  EXPECT_EQ((*eph)->stat.ephemeral_owner, session);
  EXPECT_TRUE(loop.await(store->put("/after", "x")).ok());
  EXPECT_TRUE(loop.await(store->close()).ok());
}

TEST(ZooKeeperStoreTest, EnsembleKeepsServingWithTheConnectedServerKilled) {
  auto ensemble = testing::ZooKeeperEnsemble::start(3);
  ASSERT_TRUE(ensemble.ok()) << ensemble.status().to_string();
  Loop loop;
  auto store = open_zk(loop, (*ensemble)->connect_string(), short_timeouts(10000ms, 5000ms));
  ASSERT_NE(store, nullptr);
  SessionEvents events;
  events.attach(*store, loop);
  ASSERT_TRUE(loop.await(store->put("/before", "1")).ok());
  ASSERT_TRUE(loop.await(store->put("/eph", "mine", ephemeral())).ok());
  const int64_t session = store->session_id();

  // Kill the member serving our session, so the client has to move to another one.
  int victim = 0;
  const std::string sid = fmt::format("sid={:#x}", session);
  for (int i = 0; i < (*ensemble)->size(); ++i) {
    auto cons = testing::four_letter_word((*ensemble)->server(i).port(), "cons", 2s);
    if (cons.ok() && cons->find(sid) != std::string::npos) victim = i;
  }
  (*ensemble)->server(victim).kill();

  // Writes go through again once the client has moved (and a leader, if it was the one
  // killed, is elected); a failure meanwhile is a retriable connection loss or timeout.
  Status last;
  bool written = loop.run_until(
      [&] {
        auto put = loop.await(store->put("/after", "2"));
        last = put.status();
        return put.ok();
      },
      30s);
  ASSERT_TRUE(written) << last.to_string() << " events: " << events.describe();
  EXPECT_FALSE(events.has(SessionEvent::kSessionLost)) << events.describe();
  EXPECT_EQ(store->session_id(), session);
  auto before = loop.await(store->get("/before"));
  ASSERT_TRUE(before.ok() && before->has_value());
  EXPECT_EQ((*before)->value, "1");
  auto eph = loop.await(store->get("/eph"));
  ASSERT_TRUE(eph.ok() && eph->has_value());
  EXPECT_EQ((*eph)->stat.ephemeral_owner, session);
  auto kids = loop.await(store->children("/"));
  ASSERT_TRUE(kids.ok());
  EXPECT_TRUE(std::is_sorted(kids->begin(), kids->end()));
  EXPECT_TRUE(loop.await(store->close()).ok());
}

TEST(ZooKeeperStoreTest, ChrootsIsolateStoresAndAreCreated) {
  auto zk = testing::ZooKeeperServer::start();
  ASSERT_TRUE(zk.ok()) << zk.status().to_string();
  Loop loop;
  const std::string hosts = (*zk)->connect_string();
  const StoreOptions options = short_timeouts(4000ms, 5000ms);
  auto a = open_zk(loop, hosts + "/tenants/a", options);
  auto b = open_zk(loop, hosts + "/tenants/b", options);
  auto root = open_zk(loop, hosts, options);
  ASSERT_TRUE(a && b && root);

  ASSERT_TRUE(loop.await(a->put("/x", "from-a")).ok());
  ASSERT_TRUE(loop.await(b->put("/y", "from-b")).ok());
  EXPECT_FALSE(loop.await(b->get("/x"))->has_value());
  EXPECT_FALSE(loop.await(a->get("/y"))->has_value());
  EXPECT_EQ(*loop.await(a->children("/")), std::vector<std::string>{"x"});
  EXPECT_EQ(*loop.await(b->children("/")), std::vector<std::string>{"y"});

  // Both chroots (and their parent) were created; the nodes live below them.
  EXPECT_TRUE(*loop.await(root->exists("/tenants")));
  EXPECT_EQ(*loop.await(root->children("/tenants")), (std::vector<std::string>{"a", "b"}));
  auto x = loop.await(root->get("/tenants/a/x"));
  ASSERT_TRUE(x.ok() && x->has_value());
  EXPECT_EQ((*x)->value, "from-a");

  // Notifications and created paths are relative to the chroot too.
  std::vector<Notification> seen;
  a->add_listener(loop.executor(), [&](const Notification& n) { seen.push_back(n); });
  // A read arms the watch before the change (the watch a write arms is set asynchronously,
  // so a change racing with it may be missed: ZooKeeper's one-shot watch model).
  ASSERT_TRUE(loop.await(a->get("/x")).ok());
  ASSERT_TRUE(loop.await(root->put("/tenants/a/x", "changed")).ok());
  ASSERT_TRUE(loop.run_until([&] { return !seen.empty(); }, 10s));
  EXPECT_EQ(seen.front().type, NotificationType::kModified);
  EXPECT_EQ(seen.front().path, "/x");
  auto seq = loop.await(a->put("/s-", "", PutOptions{std::nullopt, false, true}));
  ASSERT_TRUE(seq.ok()) << seq.status().to_string();
  EXPECT_EQ(seq->path.rfind("/s-", 0), 0u) << seq->path;

  for (auto* s : {&a, &b, &root}) EXPECT_TRUE(loop.await((*s)->close()).ok());
}

TEST(ZooKeeperStoreTest, DestroyingAnOpenStoreEndsItsSession) {
  auto zk = testing::ZooKeeperServer::start();
  ASSERT_TRUE(zk.ok()) << zk.status().to_string();
  Loop loop;
  const StoreOptions options = short_timeouts(30000ms, 5000ms);
  auto owner = open_zk(loop, (*zk)->connect_string(), options);
  auto watcher = open_zk(loop, (*zk)->connect_string(), options);
  ASSERT_TRUE(owner && watcher);
  ASSERT_TRUE(loop.await(owner->put("/eph", "", ephemeral())).ok());
  owner.reset();  // no close(): the destructor closes the session (not its 30 s timeout)
  auto eph = loop.await(watcher->get("/eph"));
  ASSERT_TRUE(eph.ok());
  EXPECT_FALSE(eph->has_value());
  EXPECT_TRUE(loop.await(watcher->close()).ok());
  EXPECT_TRUE(loop.await(watcher->close()).ok());  // twice is fine
  EXPECT_EQ(loop.await(watcher->exists("/eph")).status().code(),
            make_error_code(Error::kClosed));
}

TEST(ZooKeeperStoreTest, NothingListeningFailsWithTimeoutWithinTheDeadline) {
  const int port = unused_port();
  ASSERT_GT(port, 0);
  Loop loop;
  const std::string hosts = fmt::format("127.0.0.1:{}", port);
  for (const std::string& url : {hosts, hosts + "/with/chroot"}) {
    auto started = std::chrono::steady_clock::now();
    auto store = loop.await(open_zookeeper_store(url, short_timeouts(4000ms, 1000ms)));
    auto elapsed = std::chrono::steady_clock::now() - started;
    EXPECT_EQ(store.status().code(), make_error_code(Error::kTimeout))
        << url << ": " << store.status().to_string();
    EXPECT_NE(store.status().message().find(hosts), std::string::npos)
        << store.status().message();
    EXPECT_LT(elapsed, 4s) << url;
  }
}

TEST(ZooKeeperStoreTest, MalformedConnectStringsAreBadUrls) {
  Loop loop;
  for (const char* url : {"", "localhost", "host:port", ":2181", "h:2181,", "h:99999",
                          "h:2181/bad//chroot", "h:2181/trailing/"}) {
    auto store = loop.await(open_zookeeper_store(url, {}));
    EXPECT_EQ(store.status().code(), make_error_code(Error::kBadUrl)) << url;
  }
}

}  // namespace
}  // namespace magnetar::metadata
