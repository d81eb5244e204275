#pragma once
// The fixture of process-level tests: a real ZooKeeper JVM (testing/zookeeper_server.h), or
// real etcd (testing/etcd_server.h) when a test class asks for it, and `magnetar bookie`
// processes (testing/bookie_process.h) on 127.0.0.1, under a per-test directory; clients run in the test process on an io_context the test thread drives
// (await(), run_until(), run_for()). Logs of the bookies are printed when a test fails.

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <boost/asio/executor_work_guard.hpp>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/asio.h"
#include "metadata/metadata_store.h"
#include "testing/bookie_process.h"
#include "testing/etcd_server.h"
#include "testing/zookeeper_server.h"

#ifndef MAGNETAR_BINARY
#error "tests/integration/CMakeLists.txt passes MAGNETAR_BINARY, the magnetar executable"
#endif

namespace magnetar::testing {

using namespace std::chrono_literals;
using Settings = std::vector<std::pair<std::string, std::string>>;

inline std::string test_name() {
  return ::testing::UnitTest::GetInstance()->current_test_info()->name();
}

class ClusterFixture : public ::testing::Test {
 protected:
  // ZooKeeper servers for the test: 1 (a standalone server) or an ensemble of N.
  virtual int zookeeper_servers() const { return 1; }
  // etcd members instead of ZooKeeper: 0 (ZooKeeper), 1, or a cluster of N.
  virtual int etcd_members() const { return 0; }
  // The options of a standalone ZooKeeper server (zookeeper_servers() == 1).
  virtual ZooKeeperOptions zookeeper_options() const { return {}; }

  void SetUp() override {
    if (etcd_members() > 0) {
      auto etcd = EtcdCluster::start(etcd_members());
      ASSERT_TRUE(etcd.ok()) << etcd.status().to_string();
      etcd_ = std::move(etcd).value();
      url_ = etcd_->url() + "/bk";
    } else if (zookeeper_servers() > 1) {
      auto ensemble = ZooKeeperEnsemble::start(zookeeper_servers());
      ASSERT_TRUE(ensemble.ok()) << ensemble.status().to_string();
      ensemble_ = std::move(ensemble).value();
      url_ = "zk:" + ensemble_->connect_string() + "/bk";
    } else {
      auto zk = ZooKeeperServer::start(zookeeper_options());
      ASSERT_TRUE(zk.ok()) << zk.status().to_string();
      zk_ = std::move(zk).value();
      url_ = "zk:" + zk_->connect_string() + "/bk";
    }
    auto store = await(metadata::open_store(url_));
    ASSERT_TRUE(store.ok()) << store.status().to_string();
    store_ = std::move(store).value();
    root_ = std::filesystem::temp_directory_path() /
            fmt::format("magnetar-it-{}-{}", ::getpid(), test_name());
    std::filesystem::remove_all(root_);
    std::filesystem::create_directories(root_);
  }

  void TearDown() override {
    if (HasFailure()) {
      for (const auto& b : bookies_) {
        std::fprintf(stderr, "--- bookie %s (%s), last lines of %s ---\n%s\n", b->id().c_str(),
                     b->describe_state().c_str(), b->log_path().c_str(), b->log_tail(25).c_str());
      }
    }
    bookies_.clear();  // SIGKILL
    if (store_) (void)await(store_->close());
    store_.reset();
    zk_.reset();
    ensemble_.reset();
    etcd_.reset();
    std::error_code ec;
    std::filesystem::remove_all(root_, ec);
  }

  // A hung metadata store (SIGSTOP): connections stay open, nothing answers. A single server
  // only (ZooKeeper or etcd).
  void pause_metadata() {
    if (zk_) zk_->pause();
    if (etcd_) etcd_->member(0).pause();
  }
  void resume_metadata() {
    if (zk_) zk_->resume();
    if (etcd_) etcd_->member(0).resume();
  }

  // Fast group commit; no checkpoint during a test unless asked (so restarts replay the
  // journal); a short ZooKeeper session, so a killed bookie's registration goes soon.
  static Settings bookie_settings(const Settings& extra = {}) {
    Settings s = {{"journalMaxGroupWaitMSec", "1"},
                  {"journalPreAllocSizeMB", "1"},
                  {"flushInterval", "3600000"},
                  {"metadataStoreSessionTimeoutMillis", "4000"}};
    s.insert(s.end(), extra.begin(), extra.end());
    return s;
  }

  BookieProcessOptions bookie_options(const Settings& extra = {}) {
    BookieProcessOptions o;
    o.binary = MAGNETAR_BINARY;
    o.metadata_url = url_;
    o.data_dir = (root_ / fmt::format("bookie-{}", next_bookie_++)).string();
    o.settings = bookie_settings(extra);
    return o;
  }

  // Starts `n` bookies and waits until each is registered as available.
  void start_bookies(int n, const Settings& extra = {}) {
    for (int i = 0; i < n; ++i) {
      auto b = BookieProcess::start(bookie_options(extra));
      ASSERT_TRUE(b.ok()) << b.status().to_string();
      bookies_.push_back(std::move(b).value());
    }
    for (const auto& b : bookies_) ASSERT_TRUE(registered(*b, 10s));
  }

  BookieProcess* bookie(const std::string& id) {
    for (const auto& b : bookies_) {
      if (b->id() == id) return b.get();
    }
    return nullptr;
  }

  // Polls /ledgers/available/<id> until it exists (`present`) or not.
  bool wait_for_registration(const std::string& id, bool present,
                             std::chrono::milliseconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (true) {
      auto there = await(store_->exists("/ledgers/available/" + id));
      if (there.ok() && *there == present) return true;
      if (std::chrono::steady_clock::now() >= deadline) return false;
      run_for(50ms);
    }
  }

  // Waits until the running `b` is registered as available by a session other than
  // `stale_owner` (the session of a killed predecessor, 0: none); fails early, quoting its
  // log, when it exits.
  ::testing::AssertionResult registered(BookieProcess& b, std::chrono::milliseconds timeout,
                                        int64_t stale_owner = 0) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (true) {
      auto node = await(store_->get("/ledgers/available/" + b.id()));
      const bool mine =
          node.ok() && node->has_value() && (*node)->stat.ephemeral_owner != stale_owner;
      if (!b.running()) {
        return ::testing::AssertionFailure() << "bookie " << b.id() << " " << b.describe_state()
                                             << "; last lines of " << b.log_path() << ":\n"
                                             << b.log_tail(8);
      }
      if (mine) return ::testing::AssertionSuccess();
      if (std::chrono::steady_clock::now() >= deadline) {
        return ::testing::AssertionFailure()
               << "bookie " << b.id() << " not registered after " << timeout.count() << " ms";
      }
      run_for(50ms);
    }
  }

  // The session owning /ledgers/available/<id>; 0 when there is no such node.
  int64_t registration_owner(const std::string& id) {
    auto node = await(store_->get("/ledgers/available/" + id));
    return node.ok() && node->has_value() ? (*node)->stat.ephemeral_owner : 0;
  }

  template <typename T>
  T await(Task<T> task) {
    std::optional<T> out;
    std::exception_ptr error;
    bool done = false;
    asio::co_spawn(
        io_, [&]() -> Task<void> { out.emplace(co_await std::move(task)); },
        [&](std::exception_ptr e) {
          error = e;
          done = true;
        });
    while (!done) io_.run_one_for(50ms);
    if (error) std::rethrow_exception(error);
    return std::move(*out);
  }

  void await(Task<void> task) {
    std::exception_ptr error;
    bool done = false;
    asio::co_spawn(io_, std::move(task), [&](std::exception_ptr e) {
      error = e;
      done = true;
    });
    while (!done) io_.run_one_for(50ms);
    if (error) std::rethrow_exception(error);
  }

  // Runs the event loop until `done()` or `timeout`; returns done().
  bool run_until(const std::function<bool()>& done, std::chrono::milliseconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (!done() && std::chrono::steady_clock::now() < deadline) io_.run_one_for(10ms);
    return done();
  }

  void run_for(std::chrono::milliseconds d) {
    const auto deadline = std::chrono::steady_clock::now() + d;
    while (std::chrono::steady_clock::now() < deadline)
      io_.run_one_for(deadline - std::chrono::steady_clock::now());
  }

  Executor executor() { return io_.get_executor(); }

  asio::io_context io_;
  asio::executor_work_guard<asio::io_context::executor_type> guard_{io_.get_executor()};
  std::unique_ptr<ZooKeeperServer> zk_;
  std::unique_ptr<ZooKeeperEnsemble> ensemble_;  // instead of zk_ when zookeeper_servers() > 1
  std::unique_ptr<EtcdCluster> etcd_;            // instead of both when etcd_members() > 0
  std::string url_;
  std::unique_ptr<metadata::MetadataStore> store_;
  std::filesystem::path root_;
  int next_bookie_ = 0;
  std::vector<std::unique_ptr<BookieProcess>> bookies_;
};

}  // namespace magnetar::testing
