// BookieClient against a real bookie served in-process on 127.0.0.1, and against fake
// bookies (plain acceptors in the test) that stay silent or answer garbage.

#include "ledger/bookie_client.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/write.hpp>
#include <filesystem>
#include <stdexcept>
#include <thread>
#include <vector>

#include "bookie/bookie.h"
#include "bookie/server/bookie_server.h"
#include "common/ports.h"
#include "protocol/bookie_entry.h"
#include "testing/event_loop.h"

namespace magnetar::ledger {
namespace {

using asio::ip::tcp;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

using TestLoop = magnetar::testing::EventLoop;

class BookieClientTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("magnetar-bkc-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    config_.journal_directories = {(dir_ / "journal").string()};
    config_.ledger_directories = {(dir_ / "ledgers").string()};
    config_.bookie_port = 0;
    config_.journal_max_group_wait_msec = 1;
    config_.journal_sync_data = false;
    start_bookie();
  }

  void TearDown() override {
    stop_bookie();
    std::filesystem::remove_all(dir_);
  }

  // (Re)starts the bookie and its server; the port is kept across restarts.
  void start_bookie() {
    auto b = bookie::Bookie::open(config_);
    ASSERT_TRUE(b.ok()) << b.status().to_string();
    bookie_ = std::move(b).value();
    auto s = bookie::BookieServer::start(config_, *bookie_, nullptr);
    ASSERT_TRUE(s.ok()) << s.status().to_string();
    server_ = std::move(s).value();
    config_.bookie_port = server_->port();
    bookie_id_ = "127.0.0.1:" + std::to_string(server_->port());
  }

  // Stops the server's loops, then destroys the bookie (which answers its pending long polls
  // into the stopped loops, where they are dropped) and the server (which closes the sockets).
  // In this order no bookie callback can reach a destroyed server loop.
  void stop_bookie() {
    if (server_) server_->stop();
    bookie_.reset();
    server_.reset();
  }

  BookieClientOptions fast_options() {
    BookieClientOptions o;
    o.connect_timeout = 2s;
    o.request_timeout = 5s;
    return o;
  }

  static bookie_wire::AddRequest add_request(int64_t ledger, int64_t entry,
                                             const std::string& key = "key") {
    bookie_wire::AddRequest r;
    r.set_ledger_id(ledger);
    r.set_entry_id(entry);
    r.set_master_key(key);
    return r;
  }
  static std::string payload(int64_t entry) { return "payload-" + std::to_string(entry); }
  static BufferChain packaged(int64_t ledger, int64_t entry) {
    return protocol::package_entry(protocol::EntryHeader{ledger, entry, entry - 1, 0},
                                   BufferChain(Buffer::copy_of(payload(entry))));
  }
  static bookie_wire::ReadRequest read_request(int64_t ledger, int64_t entry) {
    bookie_wire::ReadRequest r;
    r.set_ledger_id(ledger);
    r.set_entry_id(entry);
    return r;
  }
  static bookie_wire::ReadRequest long_poll(int64_t ledger, int64_t entry, int64_t previous_lac,
                                            uint32_t timeout_ms) {
    bookie_wire::ReadRequest r = read_request(ledger, entry);
    r.set_previous_lac(previous_lac);
    r.set_timeout_ms(timeout_ms);
    return r;
  }

  // Adds entry 0 to `ledger`, so that a long poll for entry 1 waits (a long poll on a ledger
  // the bookie does not have answers NO_LEDGER at once).
  void seed(BookieClient& client, int64_t ledger) {
    auto r = loop_.await(client.add(bookie_id_, add_request(ledger, 0), packaged(ledger, 0)));
    ASSERT_TRUE(r.ok()) << r.status().to_string();
    ASSERT_EQ(r->status, bookie_wire::OK);
  }

  // Adds entries 0..n-1 of `ledger` to `bookie`, all in flight at once; every one must be
  // answered OK.
  void add_entries(BookieClient& client, const std::string& bookie, int64_t ledger, int n) {
    std::vector<std::shared_ptr<std::optional<Result<AddResult>>>> adds;
    for (int i = 0; i < n; ++i) {
      adds.push_back(loop_.spawn(client.add(bookie, add_request(ledger, i), packaged(ledger, i))));
    }
    ASSERT_TRUE(loop_.run_until([&] {
      return std::all_of(adds.begin(), adds.end(), [](auto& a) { return a->has_value(); });
    }));
    for (int i = 0; i < n; ++i) {
      const Result<AddResult>& r = **adds[i];
      ASSERT_TRUE(r.ok()) << i << ": " << r.status().to_string();
      EXPECT_EQ(r->status, bookie_wire::OK) << i;
    }
  }

  // A port on 127.0.0.1 where nothing listens (bound once, then released).
  static int free_port() {
    auto ports = pick_free_ports(1);
    EXPECT_TRUE(ports.ok()) << ports.status().to_string();
    return ports.ok() ? ports->front() : 0;
  }

  std::filesystem::path dir_;
  bookie::BookieConfig config_;
  std::unique_ptr<bookie::Bookie> bookie_;
  std::unique_ptr<bookie::BookieServer> server_;
  std::string bookie_id_;
  TestLoop loop_;
};

TEST_F(BookieClientTest, PipelinedAddsThenReads) {
  BookieClient client(loop_.executor(), fast_options());
  constexpr int kEntries = 500;
  constexpr int64_t kLedger = 7;
  ASSERT_NO_FATAL_FAILURE(add_entries(client, bookie_id_, kLedger, kEntries));

  std::vector<std::shared_ptr<std::optional<Result<ReadResult>>>> reads;
  for (int i = 0; i < kEntries; ++i) {
    reads.push_back(loop_.spawn(client.read(bookie_id_, read_request(kLedger, i))));
  }
  ASSERT_TRUE(loop_.run_until([&] {
    for (auto& r : reads) {
      if (!r->has_value()) return false;
    }
    return true;
  }));
  for (int i = 0; i < kEntries; ++i) {
    const Result<ReadResult>& r = **reads[i];
    ASSERT_TRUE(r.ok()) << i << ": " << r.status().to_string();
    ASSERT_EQ(r->status, bookie_wire::OK) << i;
    auto body = protocol::unpack_entry(r->entry, kLedger, i);
    ASSERT_TRUE(body.ok()) << i << ": " << body.status().to_string();
    EXPECT_EQ(body->view(), payload(i));
  }

  auto lac = loop_.await(client.read_lac(bookie_id_, kLedger));
  ASSERT_TRUE(lac.ok()) << lac.status().to_string();
  EXPECT_EQ(lac->status(), bookie_wire::OK);
  EXPECT_EQ(lac->last_entry_id(), kEntries - 1);
  auto info = loop_.await(client.info(bookie_id_));
  ASSERT_TRUE(info.ok()) << info.status().to_string();
  EXPECT_GT(info->total_disk_bytes(), 0u);
}

TEST_F(BookieClientTest, BookieErrorStatusesAreResultsNotErrors) {
  BookieClient client(loop_.executor(), fast_options());
  auto first = loop_.await(client.add(bookie_id_, add_request(3, 0), packaged(3, 0)));
  ASSERT_TRUE(first.ok()) << first.status().to_string();
  EXPECT_EQ(first->status, bookie_wire::OK);

  bookie_wire::ReadRequest fence = read_request(3, 0);
  fence.set_fence(true);
  fence.set_master_key("key");
  auto fenced = loop_.await(client.read(bookie_id_, fence));
  ASSERT_TRUE(fenced.ok()) << fenced.status().to_string();
  EXPECT_EQ(fenced->status, bookie_wire::OK);

  auto refused = loop_.await(client.add(bookie_id_, add_request(3, 1), packaged(3, 1)));
  ASSERT_TRUE(refused.ok()) << refused.status().to_string();
  EXPECT_EQ(refused->status, bookie_wire::FENCED);

  auto missing = loop_.await(client.read(bookie_id_, read_request(99, 0)));
  ASSERT_TRUE(missing.ok()) << missing.status().to_string();
  EXPECT_EQ(missing->status, bookie_wire::NO_LEDGER);
  EXPECT_TRUE(missing->entry.empty());
}

TEST_F(BookieClientTest, LongPollReadCompletesWhenTheEntryArrives) {
  BookieClient client(loop_.executor(), fast_options());
  auto first = loop_.await(client.add(bookie_id_, add_request(4, 0), packaged(4, 0)));
  ASSERT_TRUE(first.ok() && first->status == bookie_wire::OK);

  auto poll = loop_.spawn(client.read(bookie_id_, long_poll(4, 1, -1, 10000)));
  loop_.run_for(300ms);
  EXPECT_FALSE(poll->has_value()) << "the long poll answered before entry 1 existed";

  const auto added_at = Clock::now();
  auto second = loop_.await(client.add(bookie_id_, add_request(4, 1), packaged(4, 1)));
  ASSERT_TRUE(second.ok() && second->status == bookie_wire::OK);
  ASSERT_TRUE(loop_.run_until([&] { return poll->has_value(); }, 5s));
  EXPECT_LT(Clock::now() - added_at, 2s);
  const Result<ReadResult>& r = **poll;
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  ASSERT_EQ(r->status, bookie_wire::OK);
  EXPECT_EQ(protocol::unpack_entry(r->entry, 4, 1)->view(), payload(1));
}

TEST_F(BookieClientTest, StoppedBookieFailsEveryPendingRequestThenReconnects) {
  BookieClient client(loop_.executor(), fast_options());
  auto warm = loop_.await(client.add(bookie_id_, add_request(5, 0), packaged(5, 0)));
  ASSERT_TRUE(warm.ok() && warm->status == bookie_wire::OK);

  // Long polls stay pending at the bookie; adds keep streaming while it goes away.
  ASSERT_NO_FATAL_FAILURE(seed(client, 6));
  std::vector<std::shared_ptr<std::optional<Result<ReadResult>>>> polls;
  for (int i = 0; i < 20; ++i) {
    polls.push_back(loop_.spawn(client.read(bookie_id_, long_poll(6, 1, -1, 30000))));
  }
  std::vector<std::shared_ptr<std::optional<Result<AddResult>>>> adds;
  for (int i = 1; i <= 1000; ++i) {
    adds.push_back(loop_.spawn(client.add(bookie_id_, add_request(5, i), packaged(5, i))));
  }
  // Stop once the bookie has answered some of the adds: the rest are in flight.
  ASSERT_TRUE(loop_.run_until([&] {
    int answered = 0;
    for (auto& a : adds) answered += a->has_value();
    return answered >= 20;
  }));

  stop_bookie();
  const auto stopped_at = Clock::now();
  ASSERT_TRUE(loop_.run_until([&] {
    for (auto& p : polls) {
      if (!p->has_value()) return false;
    }
    for (auto& a : adds) {
      if (!a->has_value()) return false;
    }
    return true;
  }));
  EXPECT_LT(Clock::now() - stopped_at, 2s) << "failures waited for the request timeout";
  for (auto& p : polls) {
    ASSERT_FALSE((*p)->ok());
    EXPECT_TRUE((*p)->status().is(Errc::kUnavailable)) << (*p)->status().to_string();
  }
  for (auto& a : adds) {
    // Adds the bookie answered before it stopped are fine; the others must be unavailable.
    if ((*a)->ok()) {
      EXPECT_EQ((**a)->status, bookie_wire::OK);
    } else {
      EXPECT_TRUE((*a)->status().is(Errc::kUnavailable)) << (*a)->status().to_string();
    }
  }

  // While the bookie is down, requests fail fast.
  auto down = loop_.await(client.info(bookie_id_));
  ASSERT_FALSE(down.ok());
  EXPECT_TRUE(down.status().is(Errc::kUnavailable)) << down.status().to_string();

  start_bookie();
  ASSERT_EQ(bookie_id_, "127.0.0.1:" + std::to_string(config_.bookie_port));
  // The refused connect above quarantines the bookie for a second: no connect attempt, an
  // immediate error. After that, the next request reconnects.
  auto quarantined = loop_.await(client.read(bookie_id_, read_request(5, 0)));
  ASSERT_FALSE(quarantined.ok());
  EXPECT_NE(quarantined.status().message().find("unreachable"), std::string::npos)
      << quarantined.status().to_string();
  std::this_thread::sleep_for(std::chrono::milliseconds(1100));
  auto again = loop_.await(client.read(bookie_id_, read_request(5, 0)));
  ASSERT_TRUE(again.ok()) << again.status().to_string();
  ASSERT_EQ(again->status, bookie_wire::OK);
  EXPECT_EQ(protocol::unpack_entry(again->entry, 5, 0)->view(), payload(0));
}

TEST_F(BookieClientTest, NothingListeningIsUnavailableAtOnce) {
  BookieClient client(loop_.executor(), fast_options());
  const std::string nobody = "127.0.0.1:" + std::to_string(free_port());
  const auto start = Clock::now();
  auto r = loop_.await(client.info(nobody));
  EXPECT_LT(Clock::now() - start, 1s);
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(r.status().is(Errc::kUnavailable)) << r.status().to_string();
  EXPECT_NE(r.status().message().find(nobody), std::string::npos) << r.status().message();
}

TEST_F(BookieClientTest, ConnectThatHangsFailsAtTheConnectTimeout) {
  // A listener whose accept queue is full: Linux drops further SYNs, so a connect hangs.
  tcp::acceptor full(loop_.context());
  full.open(tcp::v4());
  full.bind(tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0));
  full.listen(0);
  const tcp::endpoint where = full.local_endpoint();
  std::vector<std::unique_ptr<tcp::socket>> fillers;
  for (int i = 0; i < 4; ++i) {
    fillers.push_back(std::make_unique<tcp::socket>(loop_.context()));
    fillers.back()->async_connect(where, [](const boost::system::error_code&) {});
  }
  loop_.run_for(200ms);

  BookieClientOptions options = fast_options();
  options.connect_timeout = 300ms;
  options.request_timeout = 5s;
  BookieClient client(loop_.executor(), options);
  const auto start = Clock::now();
  auto r = loop_.await(client.info("127.0.0.1:" + std::to_string(where.port())));
  const auto elapsed = Clock::now() - start;
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(r.status().is(Errc::kUnavailable)) << r.status().to_string();
  EXPECT_NE(r.status().message().find("connect timed out"), std::string::npos)
      << r.status().message();
  EXPECT_GE(elapsed, 290ms);
  EXPECT_LT(elapsed, 2s);
}

TEST_F(BookieClientTest, BookieIdsMustBeIpv4AndPort) {
  BookieClient client(loop_.executor(), fast_options());
  for (const char* bad : {"localhost:3181", "127.0.0.1", "127.0.0.1:0", "127.0.0.1:70000",
                          "127.0.0.1:31x", ":3181"}) {
    auto r = loop_.await(client.info(bad));
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_TRUE(r.status().is(Errc::kInvalidArgument)) << bad << ": " << r.status().to_string();
  }
}

// A fake bookie: accepts one connection on the test loop and hands it to `serve`.
class FakeBookie {
 public:
  using Serve = std::function<Task<void>(std::shared_ptr<tcp::socket>)>;
  FakeBookie(asio::io_context& io, Serve serve)
      : acceptor_(io, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0)) {
    auto* acceptor = &acceptor_;
    asio::co_spawn(
        io,
        [acceptor, serve = std::move(serve)]() -> Task<void> {
          auto socket = std::make_shared<tcp::socket>(acceptor->get_executor());
          boost::system::error_code ec;
          co_await acceptor->async_accept(*socket, asio::redirect_error(asio::use_awaitable, ec));
          if (ec) co_return;
          co_await serve(socket);
        },
        asio::detached);
  }
  std::string id() const {
    return "127.0.0.1:" + std::to_string(acceptor_.local_endpoint().port());
  }

 private:
  tcp::acceptor acceptor_;
};

// Reads and discards until the peer goes away; keeps the socket open meanwhile.
Task<void> swallow(std::shared_ptr<tcp::socket> socket) {
  std::vector<char> sink(4096);
  while (true) {
    boost::system::error_code ec;
    co_await socket->async_read_some(asio::buffer(sink),
                                     asio::redirect_error(asio::use_awaitable, ec));
    if (ec) co_return;
  }
}

TEST_F(BookieClientTest, SilentBookieTimesOutAtTheRequestTimeout) {
  FakeBookie silent(loop_.context(), [](std::shared_ptr<tcp::socket> s) { return swallow(s); });
  BookieClientOptions options = fast_options();
  options.request_timeout = 300ms;
  BookieClient client(loop_.executor(), options);
  const auto start = Clock::now();
  auto a = loop_.spawn(client.add(silent.id(), add_request(1, 0), packaged(1, 0)));
  auto b = loop_.spawn(client.info(silent.id()));
  ASSERT_TRUE(loop_.run_until([&] { return a->has_value() && b->has_value(); }, 5s));
  const auto elapsed = Clock::now() - start;
  EXPECT_GE(elapsed, 290ms);
  EXPECT_LT(elapsed, 2s);
  ASSERT_FALSE((*a)->ok());
  EXPECT_TRUE((*a)->status().is(Errc::kTimeout)) << (*a)->status().to_string();
  ASSERT_FALSE((*b)->ok());
  EXPECT_TRUE((*b)->status().is(Errc::kTimeout)) << (*b)->status().to_string();
}

TEST_F(BookieClientTest, GarbageFromABookieClosesTheConnection) {
  // A header that does not parse as a BookieResponse, then a 2 GiB frame size.
  for (std::string garbage : {std::string("\x00\x00\x00\x10\x00\x00\x00\x08garbage!garbage!", 20),
                              std::string("\x7f\xff\xff\xff", 4)}) {
    FakeBookie liar(loop_.context(), [garbage](std::shared_ptr<tcp::socket> s) -> Task<void> {
      std::vector<char> request(64);
      boost::system::error_code ec;
      co_await s->async_read_some(asio::buffer(request),
                                  asio::redirect_error(asio::use_awaitable, ec));
      if (ec) co_return;
      co_await asio::async_write(*s, asio::buffer(garbage),
                                 asio::redirect_error(asio::use_awaitable, ec));
      co_await swallow(s);
    });
    BookieClient client(loop_.executor(), fast_options());
    const auto start = Clock::now();
    auto r = loop_.await(client.info(liar.id()));
    EXPECT_LT(Clock::now() - start, 2s);
    ASSERT_FALSE(r.ok());
    EXPECT_TRUE(r.status().is(Errc::kUnavailable)) << r.status().to_string();
  }
}

TEST_F(BookieClientTest, AnOperationAnOlderBookieDoesNotKnowFailsOnlyThatRequest) {
  // Answers every request as an older bookie answers an operation it does not know.
  FakeBookie older(loop_.context(), [](std::shared_ptr<tcp::socket> s) -> Task<void> {
    protocol::BookieRequestDecoder decoder(1 << 20);
    std::vector<char> chunk(65536);
    while (true) {
      boost::system::error_code ec;
      size_t n = co_await s->async_read_some(asio::buffer(chunk),
                                             asio::redirect_error(asio::use_awaitable, ec));
      if (ec) co_return;
      decoder.feed(Buffer::copy_of(chunk.data(), n));
      while (true) {
        auto frame = decoder.next();
        if (!frame.ok() || !frame->has_value()) break;
        bookie_wire::BookieResponse r;
        r.set_request_id((**frame).header.request_id());
        r.set_unsupported_op(bookie_wire::BAD_REQUEST);
        const std::string bytes = protocol::encode_bookie_frame(r).to_string();
        co_await asio::async_write(*s, asio::buffer(bytes),
                                   asio::redirect_error(asio::use_awaitable, ec));
        if (ec) co_return;
      }
    }
  });
  BookieClient client(loop_.executor(), fast_options());
  std::optional<Result<ReadRangeResult>> range;
  bookie_wire::ReadRangeRequest request;
  request.set_ledger_id(1);
  request.set_first_entry_id(0);
  request.set_max_entries(8);
  client.async_read_range(older.id(), request, [&](Result<ReadRangeResult> r) { range = r; });
  ASSERT_TRUE(loop_.run_until([&] { return range.has_value(); }, 5s));
  ASSERT_FALSE(range->ok());
  EXPECT_TRUE(range->status().is(Errc::kNotSupported)) << range->status().to_string();
  // The same connection answers the next request (the fake accepts only one connection).
  auto info = loop_.await(client.info(older.id()));
  ASSERT_FALSE(info.ok());
  EXPECT_TRUE(info.status().is(Errc::kNotSupported)) << info.status().to_string();
}

TEST_F(BookieClientTest, DisconnectFailsPendingAndNextRequestReconnects) {
  BookieClient client(loop_.executor(), fast_options());
  ASSERT_NO_FATAL_FAILURE(seed(client, 8));
  auto poll = loop_.spawn(client.read(bookie_id_, long_poll(8, 1, -1, 30000)));
  loop_.run_for(100ms);
  client.disconnect(bookie_id_);
  ASSERT_TRUE(loop_.run_until([&] { return poll->has_value(); }, 2s));
  ASSERT_FALSE((*poll)->ok());
  EXPECT_TRUE((*poll)->status().is(Errc::kUnavailable)) << (*poll)->status().to_string();
  auto info = loop_.await(client.info(bookie_id_));
  ASSERT_TRUE(info.ok()) << info.status().to_string();
}

TEST_F(BookieClientTest, DestroyingTheClientCancelsPendingRequests) {
  auto client = std::make_unique<BookieClient>(loop_.executor(), fast_options());
  ASSERT_NO_FATAL_FAILURE(seed(*client, 9));
  auto poll = loop_.spawn(client->read(bookie_id_, long_poll(9, 1, -1, 30000)));
  loop_.run_for(100ms);
  client.reset();
  ASSERT_TRUE(loop_.run_until([&] { return poll->has_value(); }, 2s));
  ASSERT_FALSE((*poll)->ok());
  EXPECT_TRUE((*poll)->status().is(Errc::kCancelled)) << (*poll)->status().to_string();
}


// --- A bookie in this process (BookieClientOptions::local_bookies) ---

// Requests to `id` go to the real bookie by calls. `id` is an address where nothing listens,
// so a request that went through a socket would fail.
BookieClientOptions in_process(BookieClientOptions o, const std::string& id,
                               std::shared_ptr<protocol::LocalBookie> bookie) {
  o.local_bookies[id] = std::move(bookie);
  return o;
}

TEST_F(BookieClientTest, AnInProcessBookieServesEveryOperationWithoutASocket) {
  const std::string id = "127.0.0.1:" + std::to_string(free_port());
  BookieClient client(loop_.executor(), in_process(fast_options(), id, server_->in_process()));
  constexpr int kEntries = 300;
  constexpr int64_t kLedger = 11;
  ASSERT_NO_FATAL_FAILURE(add_entries(client, id, kLedger, kEntries));
  auto read = loop_.await(client.read(id, read_request(kLedger, 7)));
  ASSERT_TRUE(read.ok()) << read.status().to_string();
  ASSERT_EQ(read->status, bookie_wire::OK);
  EXPECT_EQ(protocol::unpack_entry(read->entry, kLedger, 7)->view(), payload(7));

  std::optional<Result<ReadRangeResult>> range;
  bookie_wire::ReadRangeRequest request;
  request.set_ledger_id(kLedger);
  request.set_first_entry_id(10);
  request.set_max_entries(5);
  client.async_read_range(id, request, [&](Result<ReadRangeResult> r) { range = std::move(r); });
  ASSERT_TRUE(loop_.run_until([&] { return range.has_value(); }, 5s));
  ASSERT_TRUE(range->ok()) << range->status().to_string();
  ASSERT_EQ((*range)->entries.size(), 5u);
  for (int i = 0; i < 5; ++i) {
    EXPECT_EQ(protocol::unpack_entry((*range)->entries[i], kLedger, 10 + i)->view(),
              payload(10 + i));
  }

  auto lac = loop_.await(client.read_lac(id, kLedger));
  ASSERT_TRUE(lac.ok()) << lac.status().to_string();
  EXPECT_EQ(lac->last_entry_id(), kEntries - 1);
  auto info = loop_.await(client.info(id));
  ASSERT_TRUE(info.ok()) << info.status().to_string();
  EXPECT_GT(info->total_disk_bytes(), 0u);

  // Fencing and its refusals travel the same way.
  bookie_wire::ReadRequest fence = read_request(kLedger, kEntries - 1);
  fence.set_fence(true);
  fence.set_master_key("key");
  auto fenced = loop_.await(client.read(id, fence));
  ASSERT_TRUE(fenced.ok()) << fenced.status().to_string();
  EXPECT_EQ(fenced->status, bookie_wire::OK);
  auto refused = loop_.await(client.add(id, add_request(kLedger, kEntries), packaged(kLedger, kEntries)));
  ASSERT_TRUE(refused.ok()) << refused.status().to_string();
  EXPECT_EQ(refused->status, bookie_wire::FENCED);

  // What was written in-process is the bookie's like anything else: its TCP side serves it.
  BookieClient tcp_client(loop_.executor(), fast_options());
  auto over_tcp = loop_.await(tcp_client.read(bookie_id_, read_request(kLedger, 0)));
  ASSERT_TRUE(over_tcp.ok()) << over_tcp.status().to_string();
  EXPECT_EQ(protocol::unpack_entry(over_tcp->entry, kLedger, 0)->view(), payload(0));
}

TEST_F(BookieClientTest, AStoppedInProcessBookieFailsRequestsAsUnavailable) {
  const std::string id = "127.0.0.1:" + std::to_string(free_port());
  BookieClient client(loop_.executor(), in_process(fast_options(), id, server_->in_process()));
  ASSERT_TRUE(loop_.await(client.info(id)).ok());
  server_->stop();
  auto after = loop_.await(client.add(id, add_request(12, 0), packaged(12, 0)));
  ASSERT_FALSE(after.ok());
  EXPECT_TRUE(after.status().is(Errc::kUnavailable)) << after.status().to_string();
}

// A LocalBookie that keeps what it is given and answers only when told to.
class HeldLocalBookie : public protocol::LocalBookie {
 public:
  bool serve(std::vector<protocol::LocalBookieRequest> requests,
             std::shared_ptr<const Answer> answer) override {
    batches.push_back(requests.size());
    for (auto& r : requests) held.emplace_back(r.header.request_id(), answer);
    return true;
  }
  // Answers every held request as a bookie would answer an info request.
  void answer_all() {
    for (auto& [id, answer] : held) {
      bookie_wire::BookieResponse r;
      r.set_request_id(id);
      r.mutable_info()->set_status(bookie_wire::OK);
      (*answer)(std::move(r), BufferChain());
    }
    held.clear();
  }
  std::vector<size_t> batches;
  std::vector<std::pair<uint64_t, std::shared_ptr<const Answer>>> held;
};

TEST_F(BookieClientTest, InProcessRequestsOfOneLoopTurnGoTogetherAndKeepTheirDeadlines) {
  auto held = std::make_shared<HeldLocalBookie>();
  const std::string id = "127.0.0.1:" + std::to_string(free_port());
  BookieClientOptions options = in_process(fast_options(), id, held);
  options.request_timeout = 300ms;
  BookieClient client(loop_.executor(), options);
  const auto start = Clock::now();
  auto a = loop_.spawn(client.info(id));
  auto b = loop_.spawn(client.info(id));
  auto c = loop_.spawn(client.info(id));
  ASSERT_TRUE(loop_.run_until([&] { return a->has_value() && b->has_value() && c->has_value(); }, 5s));
  EXPECT_GE(Clock::now() - start, 290ms);
  EXPECT_EQ(held->batches, std::vector<size_t>{3}) << "one serve() for one turn's requests";
  for (auto* r : {&a, &b, &c}) {
    ASSERT_FALSE((**r)->ok());
    EXPECT_TRUE((**r)->status().is(Errc::kTimeout)) << (**r)->status().to_string();
  }
  // Late answers are dropped; the next request is answered normally.
  held->answer_all();
  auto next = loop_.spawn(client.info(id));
  ASSERT_TRUE(loop_.run_until([&] { return !held->held.empty(); }, 5s));
  held->answer_all();
  ASSERT_TRUE(loop_.run_until([&] { return next->has_value(); }, 5s));
  ASSERT_TRUE((*next)->ok()) << (*next)->status().to_string();
  EXPECT_EQ((**next)->status(), bookie_wire::OK);
}

TEST_F(BookieClientTest, AnInProcessAnswerAfterTheClientIsGoneIsDropped) {
  auto held = std::make_shared<HeldLocalBookie>();
  const std::string id = "127.0.0.1:" + std::to_string(free_port());
  auto client =
      std::make_unique<BookieClient>(loop_.executor(), in_process(fast_options(), id, held));
  auto pending = loop_.spawn(client->info(id));
  ASSERT_TRUE(loop_.run_until([&] { return !held->held.empty(); }, 5s));
  client.reset();
  ASSERT_TRUE(loop_.run_until([&] { return pending->has_value(); }, 2s));
  EXPECT_TRUE((*pending)->status().is(Errc::kCancelled)) << (*pending)->status().to_string();
  loop_.run_for(50ms);  // whatever the client's end left queued
  held->answer_all();   // as from a bookie thread, into the closed inbox
  EXPECT_EQ(loop_.context().poll(), 0u) << "an answer for a gone client was posted to its loop";
}

TEST_F(BookieClientTest, ADialOverrideWinsOverAnInProcessBookie) {
  auto held = std::make_shared<HeldLocalBookie>();
  const std::string id = "127.0.0.1:" + std::to_string(free_port());
  BookieClientOptions options = in_process(fast_options(), id, held);
  options.dial_overrides[id] = bookie_id_;  // the real bookie, over TCP
  BookieClient client(loop_.executor(), options);
  auto info = loop_.await(client.info(id));
  ASSERT_TRUE(info.ok()) << info.status().to_string();
  EXPECT_TRUE(held->batches.empty());
}

}  // namespace
}  // namespace magnetar::ledger
