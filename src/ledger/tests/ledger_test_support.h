#pragma once
// Real bookies (journal, storage, TCP server) running in the test process on 127.0.0.1,
// registered in a metadata store, for ledger client tests.

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <memory>
#include <vector>

#include "bookie/bookie.h"
#include "bookie/server/bookie_server.h"
#include "common/asio.h"
#include "metadata/metadata_store.h"
#include "testing/event_loop.h"

namespace magnetar::ledger::test {

struct TestBookie {
  bookie::BookieConfig config;
  std::unique_ptr<bookie::Bookie> bookie;
  std::unique_ptr<bookie::BookieServer> server;
  std::string id() const { return config.bookie_id(); }
  void stop() {
    if (server) server->stop();
    server.reset();
    bookie.reset();
  }
};

// Owns an io_context the client runs on, a memory: store, and N bookies.
class Cluster {
 public:
  explicit Cluster(const std::string& name) {
    dir_ = std::filesystem::temp_directory_path() /
           ("magnetar-ledger-" + std::to_string(::getpid()) + "-" + name);
    std::filesystem::remove_all(dir_);
    url_ = "memory:" + name + std::to_string(::getpid());
    store_ = await(metadata::open_store(url_)).value();
  }
  ~Cluster() {
    for (auto& b : bookies_) b->stop();
    (void)await(store_->close());
    std::filesystem::remove_all(dir_);
  }

  TestBookie& add_bookie() {
    auto b = std::make_unique<TestBookie>();
    size_t n = bookies_.size();
    b->config.journal_directories = {(dir_ / ("bk" + std::to_string(n)) / "journal").string()};
    b->config.ledger_directories = {(dir_ / ("bk" + std::to_string(n)) / "ledgers").string()};
    b->config.bookie_port = 0;
    b->config.journal_max_group_wait_msec = 1;
    b->config.flush_interval_ms = 3600000;
    bookies_.push_back(std::move(b));
    start(*bookies_.back());
    return *bookies_.back();
  }

  // (Re)starts a bookie on its directories; a restart keeps its port, hence its id.
  void start(TestBookie& b) {
    auto opened = bookie::Bookie::open(b.config);
    ASSERT_TRUE(opened.ok()) << opened.status().to_string();
    b.bookie = std::move(opened).value();
    std::shared_ptr<metadata::MetadataStore> shared(store_.get(), [](metadata::MetadataStore*) {});
    auto server = bookie::BookieServer::start(b.config, *b.bookie, shared);
    ASSERT_TRUE(server.ok()) << server.status().to_string();
    b.server = std::move(server).value();
    b.config.bookie_port = b.server->port();
  }

  TestBookie* find(const std::string& id) {
    for (auto& b : bookies_) {
      if (b->server && b->id() == id) return b.get();
    }
    return nullptr;
  }

  // Removes a stopped bookie's registration (its ephemeral node would linger in a memory
  // store shared by the whole test, as a dead process's would until its session expires).
  void unregister(const std::string& id) {
    (void)await(store_->remove("/ledgers/available/" + id));
  }

  template <typename T>
  T await(Task<T> task) {
    return loop_.await(std::move(task));
  }

  Executor executor() { return loop_.executor(); }
  testing::EventLoop& loop() { return loop_; }
  metadata::MetadataStore& store() { return *store_; }
  // The store's URL: another session opened with it shares the tree (tools run in-process).
  const std::string& url() const { return url_; }
  std::vector<std::unique_ptr<TestBookie>>& bookies() { return bookies_; }

 private:
  testing::EventLoop loop_;
  std::filesystem::path dir_;
  std::string url_;
  std::unique_ptr<metadata::MetadataStore> store_;
  std::vector<std::unique_ptr<TestBookie>> bookies_;
};

}  // namespace magnetar::ledger::test
