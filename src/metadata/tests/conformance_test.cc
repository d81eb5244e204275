// One suite, every backend: the semantics of metadata_store.h hold the same on memory:,
// rocksdb:, and real ZooKeeper and etcd servers started by the test.

#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <map>

#include "metadata/metadata_store.h"
#include "metadata/tests/store_test_support.h"
#include "testing/etcd_server.h"
#include "testing/zookeeper_server.h"

namespace magnetar::metadata {
namespace {

using test::Loop;

enum class Backend { kMemory, kRocksDb, kZooKeeper, kEtcd };

std::string backend_name(const ::testing::TestParamInfo<Backend>& info) {
  switch (info.param) {
    case Backend::kMemory: return "Memory";
    case Backend::kRocksDb: return "RocksDb";
    case Backend::kZooKeeper: return "ZooKeeper";
    case Backend::kEtcd: return "Etcd";
  }
  return "?";
}

class ConformanceTest : public ::testing::TestWithParam<Backend> {
 protected:
  void SetUp() override {
    static std::atomic<int> counter{0};
    std::string unique = std::to_string(::getpid()) + "-" + std::to_string(++counter);
    switch (GetParam()) {
      case Backend::kMemory:
        url_ = "memory:conformance-" + unique;
        break;
      case Backend::kRocksDb:
        dir_ = std::filesystem::temp_directory_path() / ("magnetar-meta-" + unique);
        std::filesystem::remove_all(dir_);
        url_ = "rocksdb://" + dir_.string();
        break;
      case Backend::kZooKeeper: {
        auto zk = testing::ZooKeeperServer::start();
        ASSERT_TRUE(zk.ok()) << zk.status().to_string();
        zk_ = std::move(zk).value();
        url_ = "zk:" + zk_->connect_string() + "/conformance";
        break;
      }
      case Backend::kEtcd: {
        auto etcd = testing::EtcdServer::start();
        ASSERT_TRUE(etcd.ok()) << etcd.status().to_string();
        etcd_ = std::move(etcd).value();
        url_ = etcd_->url() + "/conformance";
        break;
      }
    }
    a_ = open();
    b_ = open();
  }

  void TearDown() override {
    for (auto* s : {&a_, &b_}) {
      if (*s) (void)loop_.await((*s)->close());
      s->reset();
    }
    zk_.reset();
    etcd_.reset();
    if (!dir_.empty()) std::filesystem::remove_all(dir_);
  }

  std::unique_ptr<MetadataStore> open() {
    StoreOptions options;
    options.session_timeout = std::chrono::milliseconds(4000);
    options.operation_timeout = std::chrono::milliseconds(10000);
    auto s = loop_.await(open_store(url_, options));
    EXPECT_TRUE(s.ok()) << s.status().to_string();
    return s.ok() ? std::move(s).value() : nullptr;
  }

  Result<PutResult> put(MetadataStore& s, const std::string& path, const std::string& value,
                        PutOptions o = {}) {
    return loop_.await(s.put(path, value, o));
  }
  std::optional<GetResult> get(MetadataStore& s, const std::string& path) {
    auto r = loop_.await(s.get(path));
    EXPECT_TRUE(r.ok()) << r.status().to_string();
    return r.ok() ? *r : std::nullopt;
  }

  Loop loop_;
  std::string url_;
  std::filesystem::path dir_;
  std::unique_ptr<testing::ZooKeeperServer> zk_;
  std::unique_ptr<testing::EtcdServer> etcd_;
  std::unique_ptr<MetadataStore> a_, b_;
};

TEST_P(ConformanceTest, PutThenGetRoundTripsValueAndVersion) {
  ASSERT_NE(a_, nullptr);
  auto p = put(*a_, "/node", "v1");
  ASSERT_TRUE(p.ok()) << p.status().to_string();
  EXPECT_EQ(p->path, "/node");
  EXPECT_EQ(p->stat.version, 0);
  auto g = get(*b_, "/node");
  ASSERT_TRUE(g.has_value());
  EXPECT_EQ(g->value, "v1");
  EXPECT_EQ(g->stat.version, 0);
  EXPECT_FALSE(g->stat.ephemeral);
  auto p2 = put(*b_, "/node", "v2");
  ASSERT_TRUE(p2.ok());
  EXPECT_EQ(p2->stat.version, 1);
  auto g2 = get(*a_, "/node");
  EXPECT_EQ(g2->value, "v2");
  EXPECT_LE(g2->stat.creation_time_ms, g2->stat.modification_time_ms);
  EXPECT_GT(g2->stat.creation_time_ms, 1600000000000);  // wall-clock milliseconds
}

TEST_P(ConformanceTest, MissingNodesAreEmptyNotErrors) {
  ASSERT_NE(a_, nullptr);
  EXPECT_FALSE(get(*a_, "/nope").has_value());
  auto e = loop_.await(a_->exists("/nope"));
  ASSERT_TRUE(e.ok());
  EXPECT_FALSE(*e);
  auto c = loop_.await(a_->children("/nope"));
  ASSERT_TRUE(c.ok());
  EXPECT_TRUE(c->empty());
  Status r = loop_.await(a_->remove("/nope"));
  EXPECT_EQ(r.code(), make_error_code(Error::kNotFound)) << r.to_string();
}

TEST_P(ConformanceTest, CompareAndSetConflicts) {
  ASSERT_NE(a_, nullptr);
  ASSERT_TRUE(put(*a_, "/cas", "0", PutOptions{-1, false, false}).ok());
  // Must-not-exist on an existing node.
  EXPECT_EQ(put(*b_, "/cas", "x", PutOptions{-1, false, false}).status().code(),
            make_error_code(Error::kBadVersion));
  // Wrong version.
  EXPECT_EQ(put(*b_, "/cas", "x", PutOptions{5, false, false}).status().code(),
            make_error_code(Error::kBadVersion));
  // Right version.
  auto ok = put(*b_, "/cas", "1", PutOptions{0, false, false});
  ASSERT_TRUE(ok.ok()) << ok.status().to_string();
  EXPECT_EQ(ok->stat.version, 1);
  // The loser of a race: same expected version again.
  EXPECT_EQ(put(*a_, "/cas", "1", PutOptions{0, false, false}).status().code(),
            make_error_code(Error::kBadVersion));
  // Versioned put on a missing node.
  EXPECT_EQ(put(*a_, "/missing", "x", PutOptions{0, false, false}).status().code(),
            make_error_code(Error::kNotFound));
  // Versioned delete.
  EXPECT_EQ(loop_.await(a_->remove("/cas", 0)).code(), make_error_code(Error::kBadVersion));
  EXPECT_TRUE(loop_.await(a_->remove("/cas", 1)).ok());
  EXPECT_FALSE(get(*b_, "/cas").has_value());
}

TEST_P(ConformanceTest, ConcurrentCasIncrementsLoseNoUpdate) {
  ASSERT_NE(a_, nullptr);
  ASSERT_TRUE(put(*a_, "/counter", "0").ok());
  std::vector<std::unique_ptr<MetadataStore>> writers;
  writers.push_back(std::move(a_));
  writers.push_back(std::move(b_));
  writers.push_back(open());
  writers.push_back(open());
  constexpr int kIncrements = 25;
  int finished = 0;
  for (auto& w : writers) {
    ASSERT_NE(w, nullptr);
    asio::co_spawn(
        loop_.executor(),
        [&finished, store = w.get()]() -> Task<void> {
          for (int i = 0; i < kIncrements; ++i) {
            while (true) {
              auto cur = co_await store->get("/counter");
              if (!cur.ok() || !cur->has_value()) throw std::runtime_error("get failed");
              int v = std::stoi((*cur)->value);
              auto r = co_await store->put("/counter", std::to_string(v + 1),
                                           PutOptions{(*cur)->stat.version, false, false});
              if (r.ok()) break;
              if (!r.status().is(Errc::kBadVersion)) throw std::runtime_error(r.status().to_string());
            }
          }
          ++finished;
        },
        asio::detached);
  }
  ASSERT_TRUE(loop_.run_until([&] { return finished == 4; }, std::chrono::seconds(60)));
  auto g = get(*writers[2], "/counter");
  ASSERT_TRUE(g.has_value());
  EXPECT_EQ(g->value, std::to_string(4 * kIncrements));
  EXPECT_EQ(g->stat.version, 4 * kIncrements);
  for (auto& w : writers) (void)loop_.await(w->close());
}

TEST_P(ConformanceTest, EphemeralNodesVanishWhenTheirSessionCloses) {
  ASSERT_NE(a_, nullptr);
  auto p = put(*a_, "/eph", "mine", PutOptions{std::nullopt, true, false});
  ASSERT_TRUE(p.ok()) << p.status().to_string();
  auto g = get(*b_, "/eph");
  ASSERT_TRUE(g.has_value());
  EXPECT_TRUE(g->stat.ephemeral);
  EXPECT_EQ(g->stat.ephemeral_owner, a_->session_id());
  EXPECT_NE(a_->session_id(), b_->session_id());
  ASSERT_TRUE(put(*a_, "/persistent", "stays").ok());
  ASSERT_TRUE(loop_.await(a_->close()).ok());
  EXPECT_FALSE(get(*b_, "/eph").has_value());
  EXPECT_TRUE(get(*b_, "/persistent").has_value());
  // A closed session refuses work.
  EXPECT_EQ(loop_.await(a_->get("/persistent")).status().code(),
            make_error_code(Error::kClosed));
}

TEST_P(ConformanceTest, SequentialSuffixesIncrease) {
  ASSERT_NE(a_, nullptr);
  ASSERT_TRUE(put(*a_, "/seq", "").ok());
  std::vector<std::string> paths;
  for (int i = 0; i < 5; ++i) {
    auto p = put(i % 2 ? *a_ : *b_, "/seq/n-", std::to_string(i),
                 PutOptions{std::nullopt, i == 4, true});
    ASSERT_TRUE(p.ok()) << p.status().to_string();
    paths.push_back(p->path);
  }
  for (size_t i = 0; i < paths.size(); ++i) {
    ASSERT_EQ(paths[i].size(), std::string("/seq/n-").size() + 10) << paths[i];
    EXPECT_EQ(paths[i].rfind("/seq/n-", 0), 0u);
    if (i > 0) {
      EXPECT_LT(paths[i - 1], paths[i]);
    }
  }
  auto kids = loop_.await(b_->children("/seq"));
  ASSERT_TRUE(kids.ok());
  ASSERT_EQ(kids->size(), 5u);
  EXPECT_TRUE(std::is_sorted(kids->begin(), kids->end()));
  EXPECT_EQ("/seq/" + kids->back(), paths.back());
}

TEST_P(ConformanceTest, EachChangeNotifiesOnce) {
  ASSERT_NE(a_, nullptr);
  std::map<std::pair<NotificationType, std::string>, int> seen;
  b_->add_listener(loop_.executor(), [&](const Notification& n) { ++seen[{n.type, n.path}]; });
  ASSERT_TRUE(put(*a_, "/watched", "1").ok());
  ASSERT_TRUE(put(*a_, "/parent", "").ok());
  // Observe through b (ZooKeeper only notifies what the session looked at).
  ASSERT_TRUE(get(*b_, "/watched").has_value());
  ASSERT_TRUE(loop_.await(b_->children("/parent")).ok());
  loop_.run_for(std::chrono::milliseconds(200));
  seen.clear();

  ASSERT_TRUE(put(*a_, "/watched", "2").ok());
  auto key_mod = std::make_pair(NotificationType::kModified, std::string("/watched"));
  ASSERT_TRUE(loop_.run_until([&] { return seen[key_mod] >= 1; }));

  ASSERT_TRUE(put(*a_, "/parent/child", "").ok());
  auto key_kids = std::make_pair(NotificationType::kChildrenChanged, std::string("/parent"));
  ASSERT_TRUE(loop_.run_until([&] { return seen[key_kids] >= 1; }));

  ASSERT_TRUE(loop_.await(a_->remove("/watched")).ok());
  auto key_del = std::make_pair(NotificationType::kDeleted, std::string("/watched"));
  ASSERT_TRUE(loop_.run_until([&] { return seen[key_del] >= 1; }));

  loop_.run_for(std::chrono::milliseconds(500));  // room for duplicates to show up
  EXPECT_EQ(seen[key_mod], 1);
  EXPECT_EQ(seen[key_kids], 1);
  EXPECT_EQ(seen[key_del], 1);
}

TEST_P(ConformanceTest, RemovedListenerIsNotCalled) {
  ASSERT_NE(a_, nullptr);
  int calls = 0;
  ListenerId id = b_->add_listener(loop_.executor(), [&](const Notification&) { ++calls; });
  ASSERT_TRUE(put(*a_, "/quiet", "1").ok());
  ASSERT_TRUE(get(*b_, "/quiet").has_value());
  // Notifications already queued for the loop must not arrive after removal either.
  int at_removal = calls;
  b_->remove_listener(id);
  ASSERT_TRUE(put(*a_, "/quiet", "2").ok());
  loop_.run_for(std::chrono::milliseconds(300));
  EXPECT_EQ(calls, at_removal);
}

TEST_P(ConformanceTest, ValuesUpToOneMebibyteRoundTrip) {
  ASSERT_NE(a_, nullptr);
  std::string big(1024 * 1024, '\0');
  for (size_t i = 0; i < big.size(); ++i) big[i] = static_cast<char>((i * 131) ^ (i >> 9));
  auto p = put(*a_, "/big", big);
  ASSERT_TRUE(p.ok()) << p.status().to_string();
  auto g = get(*b_, "/big");
  ASSERT_TRUE(g.has_value());
  EXPECT_TRUE(g->value == big);
  auto too_big = put(*a_, "/bigger", big + "x");
  EXPECT_EQ(too_big.status().code(), make_error_code(Error::kTooLarge));
  // Binary values, including NUL bytes and an empty value.
  ASSERT_TRUE(put(*a_, "/empty", "").ok());
  EXPECT_EQ(get(*b_, "/empty")->value, "");
}

TEST_P(ConformanceTest, DeletingANodeWithChildrenFailsCleanly) {
  ASSERT_NE(a_, nullptr);
  ASSERT_TRUE(put(*a_, "/dir", "").ok());
  ASSERT_TRUE(put(*a_, "/dir/file", "x").ok());
  Status st = loop_.await(b_->remove("/dir"));
  EXPECT_EQ(st.code(), make_error_code(Error::kNotEmpty)) << st.to_string();
  EXPECT_TRUE(get(*a_, "/dir").has_value());
  EXPECT_TRUE(get(*a_, "/dir/file").has_value());
  // The recursive helper removes the subtree.
  ASSERT_TRUE(loop_.await(b_->remove_recursive("/dir")).ok());
  EXPECT_FALSE(get(*a_, "/dir").has_value());
}

TEST_P(ConformanceTest, MissingParentFailsAndPutRecursiveCreatesIt) {
  ASSERT_NE(a_, nullptr);
  EXPECT_EQ(put(*a_, "/no/such/parent", "x").status().code(), make_error_code(Error::kNotFound));
  auto p = loop_.await(a_->put_recursive("/deep/er/node", "x"));
  ASSERT_TRUE(p.ok()) << p.status().to_string();
  EXPECT_TRUE(get(*b_, "/deep/er").has_value());
  EXPECT_EQ(get(*b_, "/deep/er/node")->value, "x");
}

TEST_P(ConformanceTest, PutRecursiveKeepsTheConditionsOfPut) {
  ASSERT_NE(a_, nullptr);
  PutOptions must_not_exist;
  must_not_exist.expected_version = -1;
  auto made = loop_.await(a_->put_recursive("/cond/a/node", "1", must_not_exist));
  ASSERT_TRUE(made.ok()) << made.status().to_string();
  EXPECT_EQ(loop_.await(a_->put_recursive("/cond/a/node", "2", must_not_exist)).status().code(),
            make_error_code(Error::kBadVersion));
  PutOptions at_version;
  at_version.expected_version = made->stat.version;
  ASSERT_TRUE(loop_.await(a_->put_recursive("/cond/a/node", "3", at_version)).ok());
  EXPECT_EQ(get(*b_, "/cond/a/node")->value, "3");
  // A version expected of a node that does not exist, below parents that do not either.
  at_version.expected_version = 0;
  EXPECT_EQ(loop_.await(a_->put_recursive("/cond/b/node", "x", at_version)).status().code(),
            make_error_code(Error::kNotFound));
  // A sequential node below missing parents is created once.
  PutOptions sequential;
  sequential.sequential = true;
  auto seq = loop_.await(a_->put_recursive("/cond/c/d/item-", "x", sequential));
  ASSERT_TRUE(seq.ok()) << seq.status().to_string();
  EXPECT_EQ(seq->path.rfind("/cond/c/d/item-", 0), 0u) << seq->path;
  auto kids = loop_.await(b_->children("/cond/c/d"));
  ASSERT_TRUE(kids.ok());
  EXPECT_EQ(kids->size(), 1u);
  // Beside an existing sibling (parents there already).
  ASSERT_TRUE(loop_.await(a_->put_recursive("/cond/a/other", "y")).ok());
  EXPECT_EQ(get(*b_, "/cond/a/other")->value, "y");
}

TEST_P(ConformanceTest, BadPathsAreRejected) {
  ASSERT_NE(a_, nullptr);
  for (const char* bad : {"", "relative", "/trailing/", "//double", "/a//b", "/a/./b", "/a/../b",
                          "/ctl\x01"}) {
    auto code = make_error_code(Error::kInvalidPath);
    EXPECT_EQ(loop_.await(a_->get(bad)).status().code(), code) << bad;
    EXPECT_EQ(put(*a_, bad, "x").status().code(), code) << bad;
    EXPECT_EQ(loop_.await(a_->remove(bad)).code(), code) << bad;
    EXPECT_EQ(loop_.await(a_->children(bad)).status().code(), code) << bad;
    EXPECT_EQ(loop_.await(a_->exists(bad)).status().code(), code) << bad;
  }
}

INSTANTIATE_TEST_SUITE_P(Backends, ConformanceTest,
                         ::testing::Values(Backend::kMemory, Backend::kRocksDb,
                                           Backend::kZooKeeper, Backend::kEtcd),
                         backend_name);

TEST(PathTest, ParentAndJoin) {
  EXPECT_EQ(parent_path("/a/b/c"), "/a/b");
  EXPECT_EQ(parent_path("/a"), "/");
  EXPECT_EQ(join_path("/", "a"), "/a");
  EXPECT_EQ(join_path("/a", "b"), "/a/b");
  EXPECT_TRUE(validate_path("/").ok());
  EXPECT_TRUE(validate_path("/managed-ledgers/public/default/persistent/t%20x").ok());
}

TEST(OpenStoreTest, BadUrlsAreRejected) {
  Loop loop;
  for (const char* url : {"", "etcd://x", "/just/a/path", "rocksdb:"}) {
    auto s = loop.await(open_store(url));
    EXPECT_EQ(s.status().code(), make_error_code(Error::kBadUrl)) << url;
  }
}

}  // namespace
}  // namespace magnetar::metadata
