// The coordination helpers (MetadataCache, LockManager/ResourceLock, LeaderElection,
// IdGenerator) on the memory backend. Two open_store() calls on one memory:NAME are two
// sessions over one tree, standing in for two processes. Session expiry, which the memory
// backend never produces, comes from SessionControlStore below.
//
// The tests use only the documented semantics of MetadataStore, so that they hold on
// ZooKeeper and etcd too: MAGNETAR_COORDINATION_BACKEND=zookeeper (or =etcd) runs them against
// a real ZooKeeper server (or etcd member), one per test binary with a chroot (prefix) per
// test, instead of memory:.

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <vector>

#include "metadata/id_generator.h"
#include "metadata/leader_election.h"
#include "metadata/metadata_cache.h"
#include "metadata/metadata_store.h"
#include "metadata/resource_lock.h"
#include "metadata/tests/store_test_support.h"
#include "testing/etcd_server.h"
#include "testing/zookeeper_server.h"

namespace magnetar::metadata {
namespace {

using namespace std::chrono_literals;
using test::Loop;

// A session that forwards to a real one, counts the reads that reach it, and lets a test
// expire it: lose_session() ends the inner session (its ephemerals go) and reports
// kSessionLost; reestablish_session() opens a new inner session on the same tree and reports
// kSessionReestablished. Notification listeners follow the inner session across the swap.
// Used on the test's loop only.
class SessionControlStore final : public MetadataStore {
 public:
  SessionControlStore(std::string url, std::unique_ptr<MetadataStore> inner)
      : url_(std::move(url)), inner_(std::move(inner)) {}

  int gets() const { return gets_; }

  Task<Result<std::optional<GetResult>>> get(std::string path) override {
    ++gets_;
    if (lost_) co_return lost_status();
    co_return co_await inner_->get(std::move(path));
  }
  Task<Result<PutResult>> put(std::string path, std::string value, PutOptions options) override {
    if (lost_) co_return lost_status();
    co_return co_await inner_->put(std::move(path), std::move(value), options);
  }
  Task<Status> remove(std::string path, std::optional<int64_t> expected_version) override {
    if (lost_) co_return lost_status();
    co_return co_await inner_->remove(std::move(path), expected_version);
  }
  Task<Result<std::vector<std::string>>> children(std::string path) override {
    if (lost_) co_return lost_status();
    co_return co_await inner_->children(std::move(path));
  }
  Task<Result<bool>> exists(std::string path) override {
    if (lost_) co_return lost_status();
    co_return co_await inner_->exists(std::move(path));
  }

  ListenerId add_listener(Executor executor,
                          std::function<void(const Notification&)> listener) override {
    ListenerId id = ++next_id_;
    ListenerId inner_id = inner_->add_listener(executor, listener);
    listeners_[id] = Forwarded{std::move(executor), std::move(listener), inner_id};
    return id;
  }
  ListenerId add_session_listener(Executor executor,
                                  std::function<void(SessionEvent)> listener) override {
    ListenerId id = ++next_id_;
    session_listeners_[id] = SessionListener{std::move(executor), std::move(listener)};
    return id;
  }
  void remove_listener(ListenerId id) override {
    auto it = listeners_.find(id);
    if (it != listeners_.end()) {
      inner_->remove_listener(it->second.inner_id);
      listeners_.erase(it);
    }
    session_listeners_.erase(id);
  }

  int64_t session_id() const override { return inner_->session_id(); }
  std::chrono::milliseconds session_timeout() const override { return inner_->session_timeout(); }
  Task<Status> close() override { co_return co_await inner_->close(); }

  // Fault seam: the session expires.
  Task<Status> lose_session() {
    lost_ = true;
    Status st = co_await inner_->close();
    fire(SessionEvent::kSessionLost);
    co_return st;
  }

  // A new session on the same tree replaces the expired one.
  Task<Status> reestablish_session() {
    auto fresh = co_await open_store(url_);
    if (!fresh.ok()) co_return fresh.status();
    inner_ = std::move(fresh).value();
    for (auto& [id, l] : listeners_) l.inner_id = inner_->add_listener(l.executor, l.listener);
    lost_ = false;
    fire(SessionEvent::kSessionReestablished);
    co_return Status::OK();
  }

 private:
  struct Forwarded {
    Executor executor;
    std::function<void(const Notification&)> listener;
    ListenerId inner_id = 0;
  };
  struct SessionListener {
    Executor executor;
    std::function<void(SessionEvent)> listener;
  };

  static Status lost_status() { return Status(Error::kSessionLost, "test: session expired"); }

  void fire(SessionEvent e) {
    for (auto& [id, l] : session_listeners_) {
      asio::post(l.executor, [this, id = id, e] {
        auto it = session_listeners_.find(id);  // skip listeners removed meanwhile
        if (it != session_listeners_.end()) it->second.listener(e);
      });
    }
  }

  const std::string url_;
  std::unique_ptr<MetadataStore> inner_;
  int gets_ = 0;
  bool lost_ = false;
  ListenerId next_id_ = 0;
  std::map<ListenerId, Forwarded> listeners_;
  std::map<ListenerId, SessionListener> session_listeners_;
};

// Runs `task` on the loop in the background; the result appears when it completes.
template <typename T>
std::shared_ptr<std::optional<T>> spawn(Loop& loop, Task<T> task) {
  auto out = std::make_shared<std::optional<T>>();
  asio::co_spawn(
      loop.executor(),
      [out, task = std::move(task)]() mutable -> Task<void> {
        out->emplace(co_await std::move(task));
      },
      asio::detached);
  return out;
}

std::string_view coordination_backend() {
  const char* backend = std::getenv("MAGNETAR_COORDINATION_BACKEND");
  return backend != nullptr ? std::string_view(backend) : std::string_view("memory");
}

// The etcd member shared by every test of the binary (started on first use).
Result<std::string> etcd_url() {
  static Result<std::unique_ptr<testing::EtcdServer>> server = testing::EtcdServer::start();
  if (!server.ok()) return server.status();
  return (*server)->url();
}

// The ZooKeeper server shared by every test of the binary (started on first use).
Result<std::string> zookeeper_connect_string() {
  static Result<std::unique_ptr<testing::ZooKeeperServer>> server =
      testing::ZooKeeperServer::start();
  if (!server.ok()) return server.status();
  return (*server)->connect_string();
}

class CoordinationTest : public ::testing::Test {
 protected:
  void SetUp() override {
    static std::atomic<int> counter{0};
    std::string unique = std::to_string(::getpid()) + "-" + std::to_string(++counter);
    if (coordination_backend() == "zookeeper") {
      auto zk = zookeeper_connect_string();
      ASSERT_TRUE(zk.ok()) << zk.status().to_string();
      url_ = "zk:" + *zk + "/coordination-" + unique;
    } else if (coordination_backend() == "etcd") {
      auto etcd = etcd_url();
      ASSERT_TRUE(etcd.ok()) << etcd.status().to_string();
      url_ = *etcd + "/coordination-" + unique;
    } else {
      url_ = "memory:coordination-" + unique;
    }
  }

  void TearDown() override {
    for (MetadataStore* s : open_) (void)loop_.await(s->close());
  }

  // A new session on this test's tree, closed by TearDown (objects using it must be gone).
  MetadataStore* session() {
    auto store = loop_.await(open_store(url_));
    EXPECT_TRUE(store.ok()) << store.status().to_string();
    stores_.push_back(std::move(store).value());
    open_.push_back(stores_.back().get());
    return stores_.back().get();
  }

  SessionControlStore* controlled_session() {
    auto store = loop_.await(open_store(url_));
    EXPECT_TRUE(store.ok()) << store.status().to_string();
    auto wrapped = std::make_unique<SessionControlStore>(url_, std::move(store).value());
    SessionControlStore* raw = wrapped.get();
    stores_.push_back(std::move(wrapped));
    open_.push_back(raw);
    return raw;
  }

  // Lets queued notifications reach their listeners.
  void settle() { loop_.run_for(50ms); }

  size_t child_count(MetadataStore* store, const std::string& path) {
    auto kids = loop_.await(store->children(path));
    EXPECT_TRUE(kids.ok()) << kids.status().to_string();
    return kids.ok() ? kids->size() : 0;
  }

  Loop loop_;
  std::string url_;
  // Declared after loop_: destroyed first.
  std::vector<std::unique_ptr<MetadataStore>> stores_;
  std::vector<MetadataStore*> open_;
};

// ---------------------------------------------------------------------------------------
// MetadataCache

struct Counter {
  int64_t count = 0;
  std::string writer;
};

void to_json(nlohmann::json& j, const Counter& c) {
  j = nlohmann::json{{"count", c.count}, {"writer", c.writer}};
}

void from_json(const nlohmann::json& j, Counter& c) {
  j.at("count").get_to(c.count);
  j.at("writer").get_to(c.writer);
}

std::string encoded(int64_t count, const std::string& writer) {
  return nlohmann::json(Counter{count, writer}).dump();
}

class MetadataCacheTest : public CoordinationTest {
 protected:
  // `updates` read-modify-updates of /c/counter, each adding one.
  static Task<Status> increment_many(MetadataCache<Counter>* cache, std::string name, int updates) {
    // Named, not a temporary in the co_await operand: see the note in metadata_cache.h.
    MetadataCache<Counter>::Modifier increment =
        [name](std::optional<Counter> c) -> Result<Counter> {
      Counter next = c.value_or(Counter{});
      next.count += 1;
      next.writer = name;
      return next;
    };
    for (int n = 0; n < updates; ++n) {
      auto r = co_await cache->read_modify_update("/c/counter", increment);
      if (!r.ok()) co_return r.status();
    }
    co_return Status::OK();
  }
};

TEST_F(MetadataCacheTest, GetIsServedFromMemoryAfterTheFirstRead) {
  MetadataStore* writer = session();
  SessionControlStore* reader = controlled_session();
  ASSERT_TRUE(loop_.await(writer->put_recursive("/c/a", encoded(7, "w"))).ok());
  settle();

  MetadataCache<Counter> cache(reader, loop_.executor());
  auto first = loop_.await(cache.get("/c/a"));
  ASSERT_TRUE(first.ok()) << first.status().to_string();
  ASSERT_TRUE(first->has_value());
  EXPECT_EQ((*first)->count, 7);
  EXPECT_EQ(reader->gets(), 1);

  auto second = loop_.await(cache.get_with_stat("/c/a"));
  ASSERT_TRUE(second.ok() && second->has_value());
  EXPECT_EQ((*second)->value.count, 7);
  EXPECT_EQ((*second)->stat.version, 0);
  EXPECT_EQ(reader->gets(), 1) << "a cached value must not be read from the store again";
  EXPECT_TRUE(cache.is_cached("/c/a"));
}

TEST_F(MetadataCacheTest, MissingNodeIsNulloptAndNotCached) {
  SessionControlStore* reader = controlled_session();
  MetadataCache<Counter> cache(reader, loop_.executor());
  auto got = loop_.await(cache.get("/c/none"));
  ASSERT_TRUE(got.ok()) << got.status().to_string();
  EXPECT_FALSE(got->has_value());
  EXPECT_FALSE(cache.is_cached("/c/none"));
}

TEST_F(MetadataCacheTest, OwnWriteIsCachedWithItsVersion) {
  SessionControlStore* store = controlled_session();
  MetadataCache<Counter> cache(store, loop_.executor());
  // Each step runs in one coroutine, so that nothing runs between the write and the read.
  // (Between steps our own writes' notifications arrive and, like anyone's, invalidate.)
  auto created = loop_.await([&]() -> Task<Result<std::optional<Versioned<Counter>>>> {
    Counter initial{1, "me"};
    auto st = co_await cache.create("/c/own", initial);
    if (!st.ok()) co_return st.status();
    co_return co_await cache.get_with_stat("/c/own");
  }());
  ASSERT_TRUE(created.ok()) << created.status().to_string();
  ASSERT_TRUE(created->has_value());
  EXPECT_EQ((*created)->value.count, 1);
  EXPECT_EQ((*created)->stat.version, 0);
  // ZooKeeper delivers a write's own notification before its answer (the backend watches
  // before writing), etcd's watch stream races the answer; the cache cannot tell it from
  // another session's and reads again.
  const bool exact = coordination_backend() == "memory";
  if (exact) {
    EXPECT_EQ(store->gets(), 0) << "create must leave the value and its version cached";
  }
  const int gets_before_update = store->gets();

  settle();
  auto updated = loop_.await([&]() -> Task<Result<std::optional<Versioned<Counter>>>> {
    MetadataCache<Counter>::Modifier bump = [](std::optional<Counter> c) -> Result<Counter> {
      Counter next = c.value_or(Counter{});
      next.count += 1;
      return next;
    };
    auto st = co_await cache.read_modify_update("/c/own", bump);
    if (!st.ok()) co_return st.status();
    co_return co_await cache.get_with_stat("/c/own");
  }());
  ASSERT_TRUE(updated.ok()) << updated.status().to_string();
  ASSERT_TRUE(updated->has_value());
  EXPECT_EQ((*updated)->value.count, 2);
  EXPECT_EQ((*updated)->stat.version, 1);
  if (exact) {
    EXPECT_EQ(store->gets(), gets_before_update + 1)
        << "only the read before the update may reach the store";
  }
}

TEST_F(MetadataCacheTest, AnotherSessionsWriteInvalidates) {
  MetadataStore* writer = session();
  MetadataStore* reader = session();
  ASSERT_TRUE(loop_.await(writer->put_recursive("/c/shared", encoded(1, "a"))).ok());
  settle();
  MetadataCache<Counter> cache(reader, loop_.executor());
  auto before = loop_.await(cache.get("/c/shared"));
  ASSERT_TRUE(before.ok() && before->has_value());
  EXPECT_EQ((*before)->count, 1);

  ASSERT_TRUE(loop_.await(writer->put("/c/shared", encoded(2, "b"))).ok());
  ASSERT_TRUE(loop_.run_until([&] { return !cache.is_cached("/c/shared"); }))
      << "the write of another session did not invalidate the cached value";
  auto after = loop_.await(cache.get("/c/shared"));
  ASSERT_TRUE(after.ok() && after->has_value());
  EXPECT_EQ((*after)->count, 2);
  EXPECT_EQ((*after)->writer, "b");

  ASSERT_TRUE(loop_.await(writer->remove("/c/shared")).ok());
  ASSERT_TRUE(loop_.run_until([&] { return !cache.is_cached("/c/shared"); }));
  auto gone = loop_.await(cache.get("/c/shared"));
  ASSERT_TRUE(gone.ok());
  EXPECT_FALSE(gone->has_value());
}

TEST_F(MetadataCacheTest, CreateFailsWithBadVersionWhenTheNodeExists) {
  MetadataStore* store = session();
  MetadataCache<Counter> cache(store, loop_.executor());
  ASSERT_TRUE(loop_.await(cache.create("/c/x", Counter{1, "first"})).ok());
  auto again = loop_.await(cache.create("/c/x", Counter{2, "second"}));
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.status().code(), make_error_code(Error::kBadVersion))
      << again.status().to_string();
  auto value = loop_.await(cache.get("/c/x"));
  ASSERT_TRUE(value.ok() && value->has_value());
  EXPECT_EQ((*value)->writer, "first");
}

TEST_F(MetadataCacheTest, UndecodableValueIsACorruptionStatusNamingThePath) {
  MetadataStore* store = session();
  ASSERT_TRUE(loop_.await(store->put_recursive("/c/garbage", "{not json")).ok());
  ASSERT_TRUE(loop_.await(store->put_recursive("/c/wrong-type", R"({"count":"seven"})")).ok());
  MetadataCache<Counter> cache(store, loop_.executor());
  for (const std::string path : {"/c/garbage", "/c/wrong-type"}) {
    auto got = loop_.await(cache.get(path));
    ASSERT_FALSE(got.ok()) << path;
    EXPECT_TRUE(got.status().is(Errc::kCorruption)) << got.status().to_string();
    EXPECT_NE(got.status().message().find(path), std::string::npos) << got.status().to_string();
    EXPECT_FALSE(cache.is_cached(path));
  }
}

TEST_F(MetadataCacheTest, ReadModifyUpdateCreatesAndModifierErrorsAbort) {
  MetadataStore* store = session();
  MetadataCache<Counter> cache(store, loop_.executor());
  auto created = loop_.await(
      cache.read_modify_update("/c/rmw/new", [](std::optional<Counter> c) -> Result<Counter> {
        if (c) return Status(Errc::kInternal, "expected no value");
        return Counter{10, "init"};
      }));
  ASSERT_TRUE(created.ok()) << created.status().to_string();
  EXPECT_EQ(created->stat.version, 0);

  auto refused = loop_.await(
      cache.read_modify_update("/c/rmw/new", [](std::optional<Counter>) -> Result<Counter> {
        return Status(Errc::kInvalidArgument, "not today");
      }));
  ASSERT_FALSE(refused.ok());
  EXPECT_TRUE(refused.status().is(Errc::kInvalidArgument));
  auto raw = loop_.await(store->get("/c/rmw/new"));
  ASSERT_TRUE(raw.ok() && raw->has_value());
  EXPECT_EQ((*raw)->stat.version, 0) << "a refused update must not write";
}

TEST_F(MetadataCacheTest, ReadModifyUpdateUnderFourConcurrentUpdatersLosesNoUpdate) {
  constexpr int kUpdaters = 4;
  constexpr int kUpdatesEach = 25;
  std::vector<std::unique_ptr<MetadataCache<Counter>>> caches;
  for (int i = 0; i < kUpdaters; ++i) {
    caches.push_back(std::make_unique<MetadataCache<Counter>>(session(), loop_.executor()));
  }
  std::vector<std::shared_ptr<std::optional<Status>>> done;
  for (int i = 0; i < kUpdaters; ++i) {
    MetadataCache<Counter>* cache = caches[i].get();
    std::string name = "updater-" + std::to_string(i);
    done.push_back(spawn(loop_, increment_many(cache, name, kUpdatesEach)));
  }
  ASSERT_TRUE(loop_.run_until(
      [&] { return std::all_of(done.begin(), done.end(), [](auto& d) { return d->has_value(); }); },
      60s));
  for (auto& d : done) EXPECT_TRUE(d->value().ok()) << d->value().to_string();

  MetadataStore* checker = session();
  auto raw = loop_.await(checker->get("/c/counter"));
  ASSERT_TRUE(raw.ok() && raw->has_value());
  Counter final_value = nlohmann::json::parse((*raw)->value).get<Counter>();
  EXPECT_EQ(final_value.count, kUpdaters * kUpdatesEach);
  EXPECT_EQ((*raw)->stat.version, kUpdaters * kUpdatesEach - 1);
}

TEST_F(MetadataCacheTest, RemoveDropsTheValue) {
  MetadataStore* store = session();
  MetadataCache<Counter> cache(store, loop_.executor());
  ASSERT_TRUE(loop_.await(cache.create("/c/r", Counter{1, "x"})).ok());
  ASSERT_TRUE(loop_.await(cache.remove("/c/r")).ok());
  EXPECT_FALSE(cache.is_cached("/c/r"));
  auto got = loop_.await(cache.get("/c/r"));
  ASSERT_TRUE(got.ok());
  EXPECT_FALSE(got->has_value());
  EXPECT_TRUE(loop_.await(cache.remove("/c/r")).is(Errc::kNotFound));
}

TEST_F(MetadataCacheTest, InvalidateForcesARead) {
  SessionControlStore* store = controlled_session();
  MetadataStore* writer = session();
  ASSERT_TRUE(loop_.await(writer->put_recursive("/c/i/a", encoded(1, "w"))).ok());
  ASSERT_TRUE(loop_.await(writer->put_recursive("/c/i/b", encoded(2, "w"))).ok());
  settle();
  MetadataCache<Counter> cache(store, loop_.executor());
  ASSERT_TRUE(loop_.await(cache.get("/c/i/a")).ok());
  ASSERT_TRUE(loop_.await(cache.get("/c/i/b")).ok());
  EXPECT_EQ(store->gets(), 2);
  cache.invalidate("/c/i/a");
  ASSERT_TRUE(loop_.await(cache.get("/c/i/a")).ok());
  ASSERT_TRUE(loop_.await(cache.get("/c/i/b")).ok());
  EXPECT_EQ(store->gets(), 3);
  cache.invalidate_all();
  ASSERT_TRUE(loop_.await(cache.get("/c/i/b")).ok());
  EXPECT_EQ(store->gets(), 4);
}

TEST_F(MetadataCacheTest, SessionReestablishedInvalidatesEverything) {
  SessionControlStore* store = controlled_session();
  MetadataCache<Counter> cache(store, loop_.executor());
  ASSERT_TRUE(loop_.await(cache.create("/c/s", Counter{1, "x"})).ok());
  settle();
  ASSERT_TRUE(loop_.await(cache.get("/c/s")).ok());
  ASSERT_TRUE(cache.is_cached("/c/s"));
  ASSERT_TRUE(loop_.await(store->lose_session()).ok());
  ASSERT_TRUE(loop_.await(store->reestablish_session()).ok());
  ASSERT_TRUE(loop_.run_until([&] { return !cache.is_cached("/c/s"); }));
  auto got = loop_.await(cache.get("/c/s"));
  ASSERT_TRUE(got.ok() && got->has_value());
  EXPECT_EQ((*got)->count, 1);
}

// ---------------------------------------------------------------------------------------
// LockManager / ResourceLock

class ResourceLockTest : public CoordinationTest {
 protected:
  static constexpr const char* kBundle = "/namespace/public/default/0x00000000_0x40000000";
};

TEST_F(ResourceLockTest, ExclusiveBetweenTwoSessions) {
  LockManager a(session(), loop_.executor());
  MetadataStore* b_store = session();
  LockManager b(b_store, loop_.executor());

  auto first = loop_.await(a.try_acquire(kBundle, "pulsar://broker-a:6650"));
  ASSERT_TRUE(first.ok()) << first.status().to_string();
  ASSERT_TRUE(first->acquired());
  EXPECT_TRUE(first->lock->is_held());

  auto second = loop_.await(b.try_acquire(kBundle, "pulsar://broker-b:6650"));
  ASSERT_TRUE(second.ok()) << second.status().to_string();
  EXPECT_FALSE(second->acquired());
  EXPECT_EQ(second->holder_value, "pulsar://broker-a:6650");
  EXPECT_EQ(child_count(b_store, kBundle), 1u) << "a busy attempt must leave no node";

  auto holder = loop_.await(b.holder_value(kBundle));
  ASSERT_TRUE(holder.ok() && holder->has_value());
  EXPECT_EQ(**holder, "pulsar://broker-a:6650");

  ASSERT_TRUE(loop_.await(first->lock->release()).ok());
  EXPECT_FALSE(first->lock->is_held());
  auto free_now = loop_.await(b.holder_value(kBundle));
  ASSERT_TRUE(free_now.ok());
  EXPECT_FALSE(free_now->has_value());
  auto third = loop_.await(b.try_acquire(kBundle, "pulsar://broker-b:6650"));
  ASSERT_TRUE(third.ok() && third->acquired());
  ASSERT_TRUE(loop_.await(third->lock->release()).ok());
}

TEST_F(ResourceLockTest, TryAcquireRaceHasExactlyOneWinner) {
  std::vector<std::unique_ptr<LockManager>> managers;
  std::vector<std::shared_ptr<std::optional<Result<LockAttempt>>>> attempts;
  for (int i = 0; i < 4; ++i) {
    managers.push_back(std::make_unique<LockManager>(session(), loop_.executor()));
  }
  for (int i = 0; i < 4; ++i) {
    attempts.push_back(
        spawn(loop_, managers[i]->try_acquire(kBundle, "broker-" + std::to_string(i))));
  }
  ASSERT_TRUE(loop_.run_until([&] {
    return std::all_of(attempts.begin(), attempts.end(), [](auto& a) { return a->has_value(); });
  }));
  int winners = 0;
  std::string winner;
  for (auto& a : attempts) {
    ASSERT_TRUE((*a)->ok()) << (*a)->status().to_string();
    if ((**a)->acquired()) {
      ++winners;
      winner = (**a)->lock->value();
    }
  }
  ASSERT_EQ(winners, 1);
  for (auto& a : attempts) {
    if (!(**a)->acquired()) {
      EXPECT_EQ((**a)->holder_value, winner);
    }
  }
  for (auto& a : attempts) {
    if ((**a)->acquired()) {
      ASSERT_TRUE(loop_.await((**a)->lock->release()).ok());
    }
  }
}

TEST_F(ResourceLockTest, AcquireWaitsUntilTheHolderReleases) {
  LockManager a(session(), loop_.executor());
  LockManager b(session(), loop_.executor());
  auto held = loop_.await(a.acquire(kBundle, "a", 1s));
  ASSERT_TRUE(held.ok()) << held.status().to_string();

  auto waiting = spawn(loop_, b.acquire(kBundle, "b", 10s));
  loop_.run_for(100ms);
  EXPECT_FALSE(waiting->has_value()) << "acquired a lock that is held";

  ASSERT_TRUE(loop_.await((*held)->release()).ok());
  ASSERT_TRUE(loop_.run_until([&] { return waiting->has_value(); }));
  ASSERT_TRUE((*waiting)->ok()) << (*waiting)->status().to_string();
  EXPECT_TRUE((***waiting)->is_held());
  auto holder = loop_.await(a.holder_value(kBundle));
  ASSERT_TRUE(holder.ok() && holder->has_value());
  EXPECT_EQ(**holder, "b");
  ASSERT_TRUE(loop_.await((***waiting)->release()).ok());
}

TEST_F(ResourceLockTest, AcquireGetsTheLockWhenTheHoldersSessionCloses) {
  MetadataStore* a_store = session();
  LockManager a(a_store, loop_.executor());
  LockManager b(session(), loop_.executor());
  auto held = loop_.await(a.acquire(kBundle, "a", 1s));
  ASSERT_TRUE(held.ok()) << held.status().to_string();

  auto waiting = spawn(loop_, b.acquire(kBundle, "b", 10s));
  loop_.run_for(100ms);
  EXPECT_FALSE(waiting->has_value());

  ASSERT_TRUE(loop_.await(a_store->close()).ok());  // the holder "crashes"
  ASSERT_TRUE(loop_.run_until([&] { return waiting->has_value(); }));
  EXPECT_TRUE(loop_.await((*held)->release()).ok()) << "the node went with the session";
  ASSERT_TRUE((*waiting)->ok()) << (*waiting)->status().to_string();
  auto holder = loop_.await(b.holder_value(kBundle));
  ASSERT_TRUE(holder.ok() && holder->has_value());
  EXPECT_EQ(**holder, "b");
  ASSERT_TRUE(loop_.await((***waiting)->release()).ok());
}

TEST_F(ResourceLockTest, WaitersAreServedInArrivalOrder) {
  MetadataStore* store = session();
  LockManager a(store, loop_.executor());
  LockManager b(session(), loop_.executor());
  LockManager c(session(), loop_.executor());
  auto held = loop_.await(a.acquire(kBundle, "a", 1s));
  ASSERT_TRUE(held.ok());
  auto b_wait = spawn(loop_, b.acquire(kBundle, "b", 10s));
  loop_.run_for(50ms);
  auto c_wait = spawn(loop_, c.acquire(kBundle, "c", 10s));
  loop_.run_for(50ms);
  EXPECT_EQ(child_count(store, kBundle), 3u);

  ASSERT_TRUE(loop_.await((*held)->release()).ok());
  ASSERT_TRUE(loop_.run_until([&] { return b_wait->has_value(); }));
  ASSERT_TRUE((*b_wait)->ok());
  loop_.run_for(50ms);
  EXPECT_FALSE(c_wait->has_value()) << "the second waiter overtook the first";

  ASSERT_TRUE(loop_.await((***b_wait)->release()).ok());
  ASSERT_TRUE(loop_.run_until([&] { return c_wait->has_value(); }));
  ASSERT_TRUE((*c_wait)->ok());
  ASSERT_TRUE(loop_.await((***c_wait)->release()).ok());
}

TEST_F(ResourceLockTest, AcquireTimesOutNamingTheHolderAndLeavesNoNode) {
  MetadataStore* store = session();
  LockManager a(store, loop_.executor());
  LockManager b(session(), loop_.executor());
  LockManager c(session(), loop_.executor());
  auto held = loop_.await(a.acquire(kBundle, "broker-a", 1s));
  ASSERT_TRUE(held.ok());

  // c queues behind b; b gives up; c must then watch a, and still get the lock.
  auto b_wait = spawn(loop_, b.acquire(kBundle, "broker-b", 200ms));
  loop_.run_for(20ms);
  auto c_wait = spawn(loop_, c.acquire(kBundle, "broker-c", 10s));
  ASSERT_TRUE(loop_.run_until([&] { return b_wait->has_value(); }));
  ASSERT_FALSE((*b_wait)->ok());
  EXPECT_EQ((*b_wait)->status().code(), make_error_code(Error::kTimeout));
  EXPECT_NE((*b_wait)->status().message().find("broker-a"), std::string::npos)
      << (*b_wait)->status().to_string();
  loop_.run_for(50ms);
  EXPECT_EQ(child_count(store, kBundle), 2u) << "the timed-out waiter left its node";
  EXPECT_FALSE(c_wait->has_value());

  ASSERT_TRUE(loop_.await((*held)->release()).ok());
  ASSERT_TRUE(loop_.run_until([&] { return c_wait->has_value(); }));
  ASSERT_TRUE((*c_wait)->ok()) << (*c_wait)->status().to_string();
  ASSERT_TRUE(loop_.await((***c_wait)->release()).ok());
}

TEST_F(ResourceLockTest, SessionLossLosesTheLockAndItIsNotTakenBack) {
  SessionControlStore* a_store = controlled_session();
  LockManager a(a_store, loop_.executor());
  LockManager b(session(), loop_.executor());
  auto held = loop_.await(a.acquire(kBundle, "a", 1s));
  ASSERT_TRUE(held.ok()) << held.status().to_string();
  std::optional<Status> lost;
  (*held)->on_lost([&](const Status& why) { lost = why; });

  ASSERT_TRUE(loop_.await(a_store->lose_session()).ok());
  ASSERT_TRUE(loop_.run_until([&] { return lost.has_value(); }));
  EXPECT_EQ(lost->code(), make_error_code(Error::kSessionLost)) << lost->to_string();
  EXPECT_FALSE((*held)->is_held());

  auto taken = loop_.await(b.try_acquire(kBundle, "b"));
  ASSERT_TRUE(taken.ok() && taken->acquired()) << "the lost lock's node is still there";

  ASSERT_TRUE(loop_.await(a_store->reestablish_session()).ok());
  settle();
  EXPECT_FALSE((*held)->is_held()) << "a lost lock must not come back by itself";
  auto holder = loop_.await(a.holder_value(kBundle));
  ASSERT_TRUE(holder.ok() && holder->has_value());
  EXPECT_EQ(**holder, "b");
  EXPECT_TRUE(loop_.await((*held)->release()).ok());  // releasing a lost lock is harmless
  EXPECT_EQ(**loop_.await(a.holder_value(kBundle)), "b");

  // A callback registered after the loss runs at once.
  bool late = false;
  (*held)->on_lost([&](const Status&) { late = true; });
  EXPECT_TRUE(late);
  ASSERT_TRUE(loop_.await(taken->lock->release()).ok());
}

TEST_F(ResourceLockTest, DeletionOfTheNodeByAnotherSessionLosesTheLock) {
  LockManager a(session(), loop_.executor());
  MetadataStore* admin = session();
  auto held = loop_.await(a.acquire(kBundle, "a", 1s));
  ASSERT_TRUE(held.ok());
  bool lost = false;
  (*held)->on_lost([&](const Status& why) {
    lost = true;
    EXPECT_TRUE(why.is(Errc::kFenced)) << why.to_string();
  });
  ASSERT_TRUE(loop_.await(admin->remove((*held)->node_path())).ok());
  ASSERT_TRUE(loop_.run_until([&] { return lost; }));
  EXPECT_FALSE((*held)->is_held());
}

TEST_F(ResourceLockTest, AcquireFailsWhenTheSessionIsLostWhileWaiting) {
  LockManager a(session(), loop_.executor());
  SessionControlStore* b_store = controlled_session();
  LockManager b(b_store, loop_.executor());
  auto held = loop_.await(a.acquire(kBundle, "a", 1s));
  ASSERT_TRUE(held.ok());
  auto waiting = spawn(loop_, b.acquire(kBundle, "b", 10s));
  loop_.run_for(50ms);
  ASSERT_TRUE(loop_.await(b_store->lose_session()).ok());
  ASSERT_TRUE(loop_.run_until([&] { return waiting->has_value(); }));
  ASSERT_FALSE((*waiting)->ok());
  EXPECT_EQ((*waiting)->status().code(), make_error_code(Error::kSessionLost));
  ASSERT_TRUE(loop_.await((*held)->release()).ok());
}

// ---------------------------------------------------------------------------------------
// LeaderElection

class LeaderElectionTest : public CoordinationTest {
 protected:
  static constexpr const char* kPath = "/loadbalance/leader";

  struct Candidate {
    MetadataStore* store = nullptr;
    std::unique_ptr<LeaderElection> election;
    std::vector<bool> events;  // what the callback reported, in order
  };

  // A candidate owned by the fixture: stopped by TearDown even when an assertion failed.
  Candidate* candidate(MetadataStore* store, LeaderElection::Options options = {}) {
    auto c = std::make_unique<Candidate>();
    c->store = store;
    Candidate* raw = c.get();
    c->election = std::make_unique<LeaderElection>(
        store, loop_.executor(), kPath, [raw](bool leading) { raw->events.push_back(leading); },
        options);
    cs_.push_back(std::move(c));
    return raw;
  }

  int leaders() const {
    int n = 0;
    for (auto& c : cs_) n += c->election->is_leader() ? 1 : 0;
    return n;
  }

  void TearDown() override {
    for (auto& c : cs_) EXPECT_TRUE(loop_.await(c->election->stop()).ok());
    cs_.clear();
    CoordinationTest::TearDown();
  }

  std::vector<std::unique_ptr<Candidate>> cs_;
};

TEST_F(LeaderElectionTest, ExactlyOneLeaderAmongThreeAndAllAgreeOnIt) {
  std::vector<Candidate*> cs;
  for (int i = 0; i < 3; ++i) cs.push_back(candidate(session()));
  for (int i = 0; i < 3; ++i) {
    Status st = loop_.await(cs[i]->election->start("broker-" + std::to_string(i)));
    ASSERT_TRUE(st.ok()) << st.to_string();
  }
  settle();
  ASSERT_EQ(leaders(), 1);
  EXPECT_TRUE(cs[0]->election->is_leader()) << "the first candidate must lead";
  EXPECT_EQ(cs[0]->events, std::vector<bool>{true});
  EXPECT_TRUE(cs[1]->events.empty());
  for (auto& c : cs) {
    auto v = loop_.await(c->election->leader_value());
    ASSERT_TRUE(v.ok() && v->has_value()) << v.status().to_string();
    EXPECT_EQ(**v, "broker-0");
  }
}

TEST_F(LeaderElectionTest, ConcurrentStartsElectExactlyOne) {
  std::vector<Candidate*> cs;
  std::vector<std::shared_ptr<std::optional<Status>>> started;
  for (int i = 0; i < 3; ++i) cs.push_back(candidate(session()));
  for (int i = 0; i < 3; ++i) {
    started.push_back(spawn(loop_, cs[i]->election->start("broker-" + std::to_string(i))));
  }
  ASSERT_TRUE(loop_.run_until([&] {
    return std::all_of(started.begin(), started.end(), [](auto& s) { return s->has_value(); });
  }));
  for (auto& s : started) ASSERT_TRUE(s->value().ok()) << s->value().to_string();
  settle();
  EXPECT_EQ(leaders(), 1);
}

TEST_F(LeaderElectionTest, FailoverToTheNextWhenTheLeadersSessionCloses) {
  std::vector<Candidate*> cs;
  for (int i = 0; i < 3; ++i) cs.push_back(candidate(session()));
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(loop_.await(cs[i]->election->start("broker-" + std::to_string(i))).ok());
  }
  ASSERT_TRUE(cs[0]->election->is_leader());

  ASSERT_TRUE(loop_.await(cs[0]->store->close()).ok());  // the leader's process dies
  ASSERT_TRUE(loop_.run_until([&] { return cs[1]->election->is_leader(); }));
  settle();
  EXPECT_FALSE(cs[2]->election->is_leader());
  EXPECT_EQ(cs[1]->events, std::vector<bool>{true});
  for (int i = 1; i < 3; ++i) {
    auto v = loop_.await(cs[i]->election->leader_value());
    ASSERT_TRUE(v.ok() && v->has_value());
    EXPECT_EQ(**v, "broker-1");
  }

  ASSERT_TRUE(loop_.await(cs[1]->election->stop()).ok());  // a clean hand-over
  ASSERT_TRUE(loop_.run_until([&] { return cs[2]->election->is_leader(); }));
  EXPECT_TRUE(cs[1]->events == std::vector<bool>{true}) << "stop() must not call back";
  auto v = loop_.await(cs[2]->election->leader_value());
  ASSERT_TRUE(v.ok() && v->has_value());
  EXPECT_EQ(**v, "broker-2");
}

TEST_F(LeaderElectionTest, FollowerBehindALeavingFollowerStillFollowsTheLeader) {
  std::vector<Candidate*> cs;
  for (int i = 0; i < 3; ++i) cs.push_back(candidate(session()));
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(loop_.await(cs[i]->election->start("broker-" + std::to_string(i))).ok());
  }
  ASSERT_TRUE(loop_.await(cs[1]->election->stop()).ok());  // the middle one leaves
  settle();
  EXPECT_EQ(leaders(), 1);
  EXPECT_TRUE(cs[0]->election->is_leader());
  ASSERT_TRUE(loop_.await(cs[0]->election->stop()).ok());
  ASSERT_TRUE(loop_.run_until([&] { return cs[2]->election->is_leader(); }));
}

TEST_F(LeaderElectionTest, SessionLossEndsLeadershipAtOnceThenRejoinsAsFollower) {
  SessionControlStore* a_store = controlled_session();
  std::vector<Candidate*> cs;
  cs.push_back(candidate(a_store));
  cs.push_back(candidate(session()));
  ASSERT_TRUE(loop_.await(cs[0]->election->start("a")).ok());
  ASSERT_TRUE(loop_.await(cs[1]->election->start("b")).ok());
  ASSERT_TRUE(cs[0]->election->is_leader());

  ASSERT_TRUE(loop_.await(a_store->lose_session()).ok());
  ASSERT_TRUE(loop_.run_until([&] { return !cs[0]->election->is_leader(); }));
  EXPECT_EQ(cs[0]->events, (std::vector<bool>{true, false}));
  ASSERT_TRUE(loop_.run_until([&] { return cs[1]->election->is_leader(); }));

  ASSERT_TRUE(loop_.await(a_store->reestablish_session()).ok());
  ASSERT_TRUE(loop_.run_until([&] { return !cs[0]->election->candidate_node().empty(); }));
  settle();
  EXPECT_FALSE(cs[0]->election->is_leader()) << "rejoins at the back of the queue";
  EXPECT_EQ(leaders(), 1);

  ASSERT_TRUE(loop_.await(cs[1]->election->stop()).ok());
  ASSERT_TRUE(loop_.run_until([&] { return cs[0]->election->is_leader(); }));
  EXPECT_EQ(cs[0]->events, (std::vector<bool>{true, false, true}));
  auto v = loop_.await(cs[0]->election->leader_value());
  ASSERT_TRUE(v.ok() && v->has_value());
  EXPECT_EQ(**v, "a");
}

TEST_F(LeaderElectionTest, WithoutRejoinASessionLossLeavesTheElection) {
  SessionControlStore* a_store = controlled_session();
  LeaderElection::Options options;
  options.rejoin_after_session_loss = false;
  Candidate* a = candidate(a_store, options);
  ASSERT_TRUE(loop_.await(a->election->start("a")).ok());
  ASSERT_TRUE(a->election->is_leader());
  ASSERT_TRUE(loop_.await(a_store->lose_session()).ok());
  ASSERT_TRUE(loop_.await(a_store->reestablish_session()).ok());
  settle();
  EXPECT_FALSE(a->election->is_leader());
  EXPECT_TRUE(a->election->candidate_node().empty());
  auto v = loop_.await(a->election->leader_value());
  ASSERT_TRUE(v.ok());
  EXPECT_FALSE(v->has_value());
  ASSERT_TRUE(loop_.await(a->election->stop()).ok());
  ASSERT_TRUE(loop_.await(a->election->start("a")).ok());  // the caller decides to enter again
  EXPECT_TRUE(a->election->is_leader());
  EXPECT_EQ(a->events, (std::vector<bool>{true, false, true}));
}

// ---------------------------------------------------------------------------------------
// IdGenerator

class IdGeneratorTest : public CoordinationTest {
 protected:
  static constexpr const char* kCounter = "/counters/ledger-id";

  static Task<Result<std::vector<int64_t>>> take(IdGenerator* gen, int n) {
    std::vector<int64_t> ids;
    ids.reserve(n);
    for (int i = 0; i < n; ++i) {
      auto id = co_await gen->next();
      if (!id.ok()) co_return id.status();
      ids.push_back(*id);
    }
    co_return ids;
  }
};

TEST_F(IdGeneratorTest, ThreeGeneratorsInDifferentSessionsNeverShareAnId) {
  constexpr int kGenerators = 3;
  constexpr int kIdsEach = 5000;
  std::vector<std::unique_ptr<IdGenerator>> gens;
  std::vector<std::shared_ptr<std::optional<Result<std::vector<int64_t>>>>> runs;
  for (int i = 0; i < kGenerators; ++i) {
    gens.push_back(std::make_unique<IdGenerator>(session(), loop_.executor(), kCounter));
  }
  for (auto& g : gens) runs.push_back(spawn(loop_, take(g.get(), kIdsEach)));
  ASSERT_TRUE(loop_.run_until(
      [&] { return std::all_of(runs.begin(), runs.end(), [](auto& r) { return r->has_value(); }); },
      60s));

  std::set<int64_t> all;
  for (auto& r : runs) {
    ASSERT_TRUE((*r)->ok()) << (*r)->status().to_string();
    const std::vector<int64_t>& ids = ***r;
    ASSERT_EQ(ids.size(), static_cast<size_t>(kIdsEach));
    EXPECT_TRUE(std::is_sorted(ids.begin(), ids.end()) &&
                std::adjacent_find(ids.begin(), ids.end()) == ids.end())
        << "ids of one generator must strictly increase";
    all.insert(ids.begin(), ids.end());
  }
  EXPECT_EQ(all.size(), static_cast<size_t>(kGenerators * kIdsEach))
      << "an id was handed out twice";
  EXPECT_GE(*all.begin(), 0);
}

TEST_F(IdGeneratorTest, NewGeneratorAfterRestartStartsAboveAllPreviousIds) {
  MetadataStore* first = session();
  int64_t highest = -1;
  {
    IdGenerator gen(first, loop_.executor(), kCounter, IdGenerator::Options{.block_size = 100});
    auto ids = loop_.await(take(&gen, 250));
    ASSERT_TRUE(ids.ok()) << ids.status().to_string();
    highest = ids->back();
  }
  ASSERT_TRUE(loop_.await(first->close()).ok());  // the process "restarts"

  IdGenerator again(session(), loop_.executor(), kCounter);
  auto next = loop_.await(again.next());
  ASSERT_TRUE(next.ok()) << next.status().to_string();
  EXPECT_GT(*next, highest);
}

// Two brokers' generators: the one that reserved its block first holds smaller ids than the
// other's. Asked for an id above the other's (the last ledger of a log it takes over), it
// skips the rest of its block and reserves a new one, which is above every id reserved.
TEST_F(IdGeneratorTest, AnIdAboveAnotherGeneratorsComesFromANewBlock) {
  IdGenerator early(session(), loop_.executor(), kCounter, IdGenerator::Options{.block_size = 100});
  IdGenerator late(session(), loop_.executor(), kCounter, IdGenerator::Options{.block_size = 100});
  auto a = loop_.await(early.next());
  auto b = loop_.await(late.next());
  ASSERT_TRUE(a.ok() && b.ok());
  ASSERT_LT(*a, *b);
  auto above = loop_.await(early.next(*b));
  ASSERT_TRUE(above.ok()) << above.status().to_string();
  EXPECT_GT(*above, *b);
  // Within its own block, ids at or below `above` are skipped.
  auto skipped = loop_.await(early.next(*above + 10));
  ASSERT_TRUE(skipped.ok());
  EXPECT_EQ(*skipped, *above + 11);
  auto plain = loop_.await(early.next());
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(*plain, *skipped + 1);
  // An id above anything ever reserved is a caller's error, not an endless reservation.
  auto beyond = loop_.await(early.next(int64_t{1} << 40));
  ASSERT_FALSE(beyond.ok());
  EXPECT_TRUE(beyond.status().is(Errc::kInvalidArgument)) << beyond.status().to_string();
}

TEST_F(IdGeneratorTest, ConcurrentCallersOnOneGeneratorGetDistinctIds) {
  IdGenerator gen(session(), loop_.executor(), kCounter, IdGenerator::Options{.block_size = 7});
  std::vector<std::shared_ptr<std::optional<Result<std::vector<int64_t>>>>> runs;
  for (int i = 0; i < 5; ++i) runs.push_back(spawn(loop_, take(&gen, 100)));
  ASSERT_TRUE(loop_.run_until([&] {
    return std::all_of(runs.begin(), runs.end(), [](auto& r) { return r->has_value(); });
  }));
  std::set<int64_t> all;
  for (auto& r : runs) {
    ASSERT_TRUE((*r)->ok()) << (*r)->status().to_string();
    EXPECT_TRUE(std::is_sorted((***r).begin(), (***r).end()));
    all.insert((***r).begin(), (***r).end());
  }
  EXPECT_EQ(all.size(), 500u);
  EXPECT_EQ(*all.rbegin(), 499) << "one generator wastes no block while it runs";
}

TEST_F(IdGeneratorTest, CorruptCounterIsReported) {
  MetadataStore* store = session();
  ASSERT_TRUE(loop_.await(store->put_recursive(kCounter, "twelve")).ok());
  IdGenerator gen(store, loop_.executor(), kCounter);
  auto id = loop_.await(gen.next());
  ASSERT_FALSE(id.ok());
  EXPECT_TRUE(id.status().is(Errc::kCorruption)) << id.status().to_string();
  EXPECT_NE(id.status().message().find(kCounter), std::string::npos);
}

}  // namespace
}  // namespace magnetar::metadata
