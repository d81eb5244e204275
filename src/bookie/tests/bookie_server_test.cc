// The bookie protocol over a real TCP connection on 127.0.0.1: pipelined adds and reads,
// and garbage from one client closing only that client's connection.

#include "bookie/server/bookie_server.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <boost/asio/read.hpp>
#include <boost/asio/write.hpp>
#include <filesystem>
#include <thread>

#include "common/metrics.h"
#include "protocol/bookie_entry.h"
#include "metadata/paths.h"
#include "protocol/bookie_frame.h"
#include "testing/ids.h"

namespace magnetar::bookie {
namespace {

using magnetar::testing::L;

using asio::ip::tcp;

// A blocking test client.
class Client {
 public:
  explicit Client(int port) : socket_(io_) {
    socket_.connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), static_cast<uint16_t>(port)));
  }
  void send(const bookie_wire::BookieRequest& r, const BufferChain& body = {}) {
    write_raw(protocol::encode_bookie_frame(r, body).to_string());
  }
  void write_raw(const std::string& bytes) { asio::write(socket_, asio::buffer(bytes)); }
  // Next response, or nullopt when the bookie closed the connection.
  std::optional<protocol::BookieFrame<bookie_wire::BookieResponse>> receive() {
    while (true) {
      auto f = decoder_.next();
      if (!f.ok()) return std::nullopt;
      if (f->has_value()) return std::move(**f);
      Buffer chunk = Buffer::allocate(65536);
      boost::system::error_code ec;
      size_t n = socket_.read_some(asio::buffer(chunk.mutable_data(), chunk.size()), ec);
      if (ec) return std::nullopt;
      chunk.truncate(n);
      decoder_.feed(chunk);
    }
  }

 private:
  asio::io_context io_;
  tcp::socket socket_;
  protocol::BookieResponseDecoder decoder_;
};

class BookieServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("magnetar-bsrv-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    config_.journal_directories = {(dir_ / "journal").string()};
    config_.ledger_directories = {(dir_ / "ledgers").string()};
    config_.bookie_port = 0;
    config_.journal_max_group_wait_msec = 1;
    start();
  }
  void start() {
    auto b = Bookie::open(config_, env_);
    ASSERT_TRUE(b.ok()) << b.status().to_string();
    bookie_ = std::move(b).value();
    auto s = BookieServer::start(config_, *bookie_, nullptr);
    ASSERT_TRUE(s.ok()) << s.status().to_string();
    server_ = std::move(s).value();
  }
  void restart() {
    server_.reset();
    bookie_.reset();
    start();
  }
  void TearDown() override {
    server_.reset();
    bookie_.reset();
    std::filesystem::remove_all(dir_);
  }

  static bookie_wire::BookieRequest add(uint64_t id, int64_t ledger, int64_t entry) {
    bookie_wire::BookieRequest r;
    r.set_request_id(id);
    r.mutable_add()->set_ledger_id(ledger);
    r.mutable_add()->set_entry_id(entry);
    r.mutable_add()->set_master_key("k");
    return r;
  }
  static BufferChain body(int64_t ledger, int64_t entry) {
    return protocol::package_entry(protocol::EntryHeader{ledger, entry, entry - 1, 0},
                                   BufferChain(Buffer::copy_of("payload-" + std::to_string(entry))));
  }

  std::filesystem::path dir_;
  FaultInjectionEnv env_{posix_env()};
  BookieConfig config_;
  std::unique_ptr<Bookie> bookie_;
  std::unique_ptr<BookieServer> server_;
};

TEST_F(BookieServerTest, PipelinedAddsThenReads) {
  Client c(server_->port());
  constexpr int kEntries = 100;
  for (int i = 0; i < kEntries; ++i) c.send(add(i, 11, i), body(11, i));
  std::set<uint64_t> acked;
  for (int i = 0; i < kEntries; ++i) {
    auto r = c.receive();
    ASSERT_TRUE(r.has_value());
    ASSERT_TRUE(r->header.has_add());
    EXPECT_EQ(r->header.add().status(), bookie_wire::OK);
    acked.insert(r->header.request_id());
  }
  EXPECT_EQ(acked.size(), static_cast<size_t>(kEntries));
  bookie_wire::BookieRequest read;
  read.set_request_id(1000);
  read.mutable_read()->set_ledger_id(11);
  read.mutable_read()->set_entry_id(42);
  c.send(read);
  auto r = c.receive();
  ASSERT_TRUE(r.has_value());
  ASSERT_EQ(r->header.read().status(), bookie_wire::OK);
  EXPECT_EQ(protocol::unpack_entry(r->body, 11, 42)->view(), "payload-42");
  bookie_wire::BookieRequest info;
  info.set_request_id(1001);
  info.mutable_info();
  c.send(info);
  auto i = c.receive();
  ASSERT_TRUE(i.has_value());
  EXPECT_GT(i->header.info().total_disk_bytes(), 0u);
}

// The process-wide count of add_request_latency observations (0 before the first answer).
uint64_t add_request_latency_count() {
  const std::string text = metrics::default_registry().expose();
  const std::string key = "magnetar_bookie_add_request_latency_ms_count ";
  auto at = text.find(key);
  return at == std::string::npos ? 0 : std::stoull(text.substr(at + key.size()));
}

TEST_F(BookieServerTest, EachAnsweredAddIsTimedFromItsRequest) {
  const uint64_t before = add_request_latency_count();
  Client c(server_->port());
  for (int i = 0; i < 20; ++i) c.send(add(i, 12, i), body(12, i));
  for (int i = 0; i < 20; ++i) {
    auto r = c.receive();
    ASSERT_TRUE(r.has_value());
    ASSERT_EQ(r->header.add().status(), bookie_wire::OK);
  }
  EXPECT_EQ(add_request_latency_count(), before + 20);
  // The histogram resolves below a millisecond (an add's whole budget): its first bucket is 50 us.
  const std::string text = metrics::default_registry().expose();
  EXPECT_NE(text.find("magnetar_bookie_add_request_latency_ms_bucket{le=\"0.05\"}"),
            std::string::npos);
}

TEST_F(BookieServerTest, AtMaxAddsInProgressTheBookieStopsReadingUntilAnswersCome) {
  config_.max_adds_in_progress = 1;
  env_.sync_delay_ms = 100;  // every journal group takes 100 ms to become durable
  ASSERT_NO_FATAL_FAILURE(restart());
  Client c(server_->port());
  // 30 adds of 20 KiB: one 64 KiB socket read holds at most four of them, and each read's
  // adds must be answered (one sync, >= 100 ms) before the next read. Without the limit
  // the bookie reads them all at once and two or three groups cover them (~0.3 s).
  constexpr int kEntries = 30;
  const std::string payload(20 << 10, 'p');
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < kEntries; ++i) {
    c.send(add(i, 13, i), protocol::package_entry(protocol::EntryHeader{13, i, i - 1, 0},
                                                  BufferChain(Buffer::copy_of(payload))));
  }
  for (int i = 0; i < kEntries; ++i) {
    auto r = c.receive();
    ASSERT_TRUE(r.has_value());
    EXPECT_EQ(r->header.add().status(), bookie_wire::OK);
  }
  EXPECT_GE(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(700));
  env_.sync_delay_ms = 0;
}

TEST_F(BookieServerTest, ReadRangeAnswersConsecutiveEntriesInOneResponse) {
  Client c(server_->port());
  for (int i = 0; i < 10; ++i) c.send(add(i, 14, i), body(14, i));
  for (int i = 0; i < 10; ++i) ASSERT_EQ(c.receive()->header.add().status(), bookie_wire::OK);
  auto range = [&](uint64_t id, int64_t ledger, int64_t first, uint32_t max_entries,
                   uint64_t max_bytes = 0) {
    bookie_wire::BookieRequest r;
    r.set_request_id(id);
    r.mutable_read_range()->set_ledger_id(ledger);
    r.mutable_read_range()->set_first_entry_id(first);
    r.mutable_read_range()->set_max_entries(max_entries);
    if (max_bytes > 0) r.mutable_read_range()->set_max_bytes(max_bytes);
    c.send(r);
    auto got = c.receive();
    EXPECT_TRUE(got.has_value());
    EXPECT_TRUE(got->header.has_read_range());
    return got;
  };
  // Entries 3..7, back to back in the body.
  auto r = range(100, 14, 3, 5);
  ASSERT_EQ(r->header.read_range().status(), bookie_wire::OK);
  ASSERT_EQ(r->header.read_range().entry_sizes_size(), 5);
  EXPECT_EQ(r->header.read_range().first_entry_id(), 3);
  size_t at = 0;
  for (int i = 0; i < 5; ++i) {
    const uint32_t size = r->header.read_range().entry_sizes(i);
    EXPECT_EQ(protocol::unpack_entry(r->body.slice(at, size), 14, 3 + i)->view(),
              "payload-" + std::to_string(3 + i));
    at += size;
  }
  EXPECT_EQ(at, r->body.size());
  // It stops before the first entry the bookie lacks; with nothing at all it says why.
  r = range(101, 14, 8, 100);
  EXPECT_EQ(r->header.read_range().entry_sizes_size(), 2);
  EXPECT_EQ(range(102, 14, 10, 5)->header.read_range().status(), bookie_wire::NO_ENTRY);
  EXPECT_EQ(range(103, 99, 0, 5)->header.read_range().status(), bookie_wire::NO_LEDGER);
  EXPECT_EQ(range(104, 14, 0, 0)->header.read_range().status(), bookie_wire::BAD_REQUEST);
  // max_bytes: the first entry always, then only what fits.
  r = range(105, 14, 0, 10, 1);
  EXPECT_EQ(r->header.read_range().entry_sizes_size(), 1);
}

TEST_F(BookieServerTest, AnOperationTheBookieDoesNotKnowFailsOnlyThatRequest) {
  Client c(server_->port());
  bookie_wire::BookieRequest unknown;  // what a newer client's new operation looks like here
  unknown.set_request_id(7);
  c.send(unknown);
  auto r = c.receive();
  ASSERT_TRUE(r.has_value()) << "the bookie closed the connection";
  EXPECT_EQ(r->header.request_id(), 7u);
  EXPECT_EQ(r->header.op_case(), bookie_wire::BookieResponse::OP_NOT_SET);
  EXPECT_EQ(r->header.unsupported_op(), bookie_wire::BAD_REQUEST);
  c.send(add(8, 15, 0), body(15, 0));
  auto a = c.receive();
  ASSERT_TRUE(a.has_value());
  EXPECT_EQ(a->header.add().status(), bookie_wire::OK);
}

TEST_F(BookieServerTest, GarbageClosesOnlyThatConnection) {
  Client good(server_->port());
  Client bad(server_->port());
  bad.write_raw(std::string("\x00\x00\x00\x10\x00\x00\x00\x08garbage!garbage!", 20));
  EXPECT_FALSE(bad.receive().has_value());  // closed by the bookie
  Client huge(server_->port());
  huge.write_raw(std::string("\x7f\xff\xff\xff", 4));  // a 2 GiB frame header
  EXPECT_FALSE(huge.receive().has_value());
  good.send(add(1, 12, 0), body(12, 0));
  auto r = good.receive();
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->header.add().status(), bookie_wire::OK);
}

// A bookie on `dir`, any port, 1 ms group commit.
BookieConfig gc_test_config(const std::filesystem::path& dir) {
  BookieConfig config;
  config.journal_directories = {(dir / "journal").string()};
  config.ledger_directories = {(dir / "ledgers").string()};
  config.bookie_port = 0;
  config.journal_max_group_wait_msec = 1;
  return config;
}

// Adds entry 0 of `ledger` and waits for the answer; true when the bookie stored it.
bool add_first_entry(Client& c, int64_t ledger) {
  bookie_wire::BookieRequest r;
  r.set_request_id(static_cast<uint64_t>(ledger));
  r.mutable_add()->set_ledger_id(ledger);
  r.mutable_add()->set_entry_id(0);
  r.mutable_add()->set_master_key("k");
  c.send(r, protocol::package_entry(protocol::EntryHeader{ledger, 0, -1, 0},
                                    BufferChain(Buffer::copy_of("x"))));
  auto answer = c.receive();
  return answer && answer->header.add().status() == bookie_wire::OK;
}

TEST(BookieGcTest, LedgersWhoseMetadataIsGoneAreDropped) {
  auto dir = std::filesystem::temp_directory_path() / ("magnetar-bgc-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  BookieConfig config = gc_test_config(dir);
  std::shared_ptr<metadata::MetadataStore> store(
      run_sync<Result<std::unique_ptr<metadata::MetadataStore>>>(
          [] { return metadata::open_store("memory:bookie-gc"); })
          .value());
  auto b = Bookie::open(config);
  ASSERT_TRUE(b.ok()) << b.status().to_string();
  auto server = BookieServer::start(config, **b, store);
  ASSERT_TRUE(server.ok()) << server.status().to_string();
  Client c((*server)->port());
  for (int64_t ledger : {5, 6, 7}) ASSERT_TRUE(add_first_entry(c, ledger)) << ledger;
  // Ledger 6 still has metadata, and so has 7 at the flat path of earlier versions.
  for (const std::string& path : {metadata::ledger_path(6), metadata::flat_ledger_path(7)}) {
    ASSERT_TRUE(run_sync<Result<metadata::PutResult>>([&] {
                  return store->put_recursive(path, "{}");
                }).ok());
  }
  ASSERT_TRUE((*server)->garbage_collect().ok());
  EXPECT_EQ((*b)->read_lac(L(5)).status(), bookie_wire::NO_LEDGER);
  EXPECT_EQ((*b)->read_lac(L(6)).status(), bookie_wire::OK);
  EXPECT_EQ((*b)->read_lac(L(7)).status(), bookie_wire::OK);
  (*server)->stop();
  server->reset();
  b->reset();
  (void)run_sync<Status>([&] { return store->close(); });
  std::filesystem::remove_all(dir);
}

// A store that runs `during_listing` once, just after it answered a listing of /ledgers
// (before the caller sees the answer): what another client does while a bookie's garbage
// collection lists the ledgers.
class ListingHookStore final : public metadata::MetadataStore {
 public:
  explicit ListingHookStore(metadata::MetadataStore& inner) : inner_(inner) {}
  std::function<Task<void>()> during_listing;

  Task<Result<std::optional<metadata::GetResult>>> get(std::string path) override {
    return inner_.get(std::move(path));
  }
  Task<Result<metadata::PutResult>> put(std::string path, std::string value,
                                        metadata::PutOptions options) override {
    return inner_.put(std::move(path), std::move(value), options);
  }
  Task<Status> remove(std::string path, std::optional<int64_t> expected_version) override {
    return inner_.remove(std::move(path), expected_version);
  }
  Task<Result<std::vector<std::string>>> children(std::string path) override {
    const bool root = path == metadata::kLedgersRoot;
    auto names = co_await inner_.children(std::move(path));
    if (root && during_listing) {
      auto hook = std::move(during_listing);
      during_listing = nullptr;
      Task<void> run = hook();
      co_await std::move(run);
    }
    co_return names;
  }
  Task<Result<bool>> exists(std::string path) override { return inner_.exists(std::move(path)); }
  metadata::ListenerId add_listener(Executor executor,
                                    std::function<void(const metadata::Notification&)> l) override {
    return inner_.add_listener(std::move(executor), std::move(l));
  }
  metadata::ListenerId add_session_listener(
      Executor executor, std::function<void(metadata::SessionEvent)> l) override {
    return inner_.add_session_listener(std::move(executor), std::move(l));
  }
  void remove_listener(metadata::ListenerId id) override { inner_.remove_listener(id); }
  int64_t session_id() const override { return inner_.session_id(); }
  std::chrono::milliseconds session_timeout() const override { return inner_.session_timeout(); }
  Task<Status> close() override { co_return Status::OK(); }

 private:
  metadata::MetadataStore& inner_;
};

TEST(BookieGcTest, ALedgerCreatedWhileTheMetadataIsListedIsKept) {
  auto dir = std::filesystem::temp_directory_path() /
             ("magnetar-bgcr-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  BookieConfig config = gc_test_config(dir);
  auto inner = run_sync<Result<std::unique_ptr<metadata::MetadataStore>>>(
                   [] { return metadata::open_store("memory:bookie-gc-race"); })
                   .value();
  auto store = std::make_shared<ListingHookStore>(*inner);
  auto b = Bookie::open(config);
  ASSERT_TRUE(b.ok()) << b.status().to_string();
  auto server = BookieServer::start(config, **b, store);
  ASSERT_TRUE(server.ok()) << server.status().to_string();
  Client c((*server)->port());
  ASSERT_TRUE(add_first_entry(c, 5));  // its metadata is gone: garbage
  // While the bookie lists the metadata, a writer creates ledger 8 (metadata first, as
  // always) and its first entry reaches this bookie; the listing the bookie got has no 8.
  bool added = false;
  store->during_listing = [&]() -> Task<void> {
    auto put = co_await inner->put_recursive(metadata::ledger_path(8), "{}");
    EXPECT_TRUE(put.ok());
    added = add_first_entry(c, 8);
  };
  ASSERT_TRUE((*server)->garbage_collect().ok());
  ASSERT_TRUE(added);
  EXPECT_EQ((*b)->read_lac(L(5)).status(), bookie_wire::NO_LEDGER);
  EXPECT_EQ((*b)->read_lac(L(8)).status(), bookie_wire::OK);
  (*server)->stop();
  server->reset();
  b->reset();
  (void)run_sync<Status>([&] { return inner->close(); });
  std::filesystem::remove_all(dir);
}

TEST(BookieRegistrationTest, ReadOnlyBookieRegistersUnderReadonly) {
  auto dir = std::filesystem::temp_directory_path() / ("magnetar-bro-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  BookieConfig config;
  config.journal_directories = {(dir / "journal").string()};
  config.ledger_directories = {(dir / "ledgers").string()};
  config.bookie_port = 0;
  std::shared_ptr<metadata::MetadataStore> store(
      run_sync<Result<std::unique_ptr<metadata::MetadataStore>>>(
          [] { return metadata::open_store("memory:bookie-ro"); })
          .value());
  auto b = Bookie::open(config);
  ASSERT_TRUE(b.ok()) << b.status().to_string();
  auto server = BookieServer::start(config, **b, store);
  ASSERT_TRUE(server.ok()) << server.status().to_string();
  std::string path = "/ledgers/available/readonly/127.0.0.1:" + std::to_string((*server)->port());
  auto registered = [&] {
    return run_sync<Result<bool>>([&] { return store->exists(path); }).value_or(false);
  };
  EXPECT_FALSE(registered());
  (*b)->set_read_only("test");
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (!registered() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_TRUE(registered());
  (*server)->stop();
  server->reset();
  b->reset();
  (void)run_sync<Status>([&] { return store->close(); });
  std::filesystem::remove_all(dir);
}

TEST_F(BookieServerTest, StopClosesAcceptedConnections) {
  Client c(server_->port());
  c.send(add(1, 13, 0), body(13, 0));
  ASSERT_TRUE(c.receive().has_value());
  auto started = std::chrono::steady_clock::now();
  server_->stop();
  EXPECT_FALSE(c.receive().has_value());  // EOF, not a hang
  EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(3));
}

}  // namespace
}  // namespace magnetar::bookie
