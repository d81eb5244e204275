// The BookKeeper layer across real processes: a ZooKeeper JVM (testing/zookeeper_server.h)
// and `magnetar bookie` processes (testing/bookie_process.h) on 127.0.0.1, killed with
// SIGKILL and restarted over their directories. The ledger client runs in this process, on
// an io_context the test thread drives (await() and run_until()).
//
// What each test proves, with the item:
//   a. a bookie killed mid-stream is replaced; every acknowledged entry reads back
//   b. a bookie killed without a checkpoint replays its journal: it still has every entry
//      it acknowledged
//   c. a second client's recovery fences the writer; both agree on the last entry
//   d. a flipped byte in one bookie's entry log is caught; the read is served by a replica
//   e. a bookie whose journal directory cannot be created never acknowledges anything
//   f. garbage and truncated requests close only their own connection

#include <arpa/inet.h>
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <boost/asio/executor_work_guard.hpp>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "cluster_fixture.h"
#include "common/asio.h"
#include "ledger/bookie_client.h"
#include "ledger/bookkeeper.h"
#include "metadata/metadata_store.h"
#include "protocol/bookie_entry.h"
#include "protocol/bookie_frame.h"
#include "testing/bookie_process.h"
#include "testing/ids.h"
#include "testing/zookeeper_server.h"

namespace magnetar::ledger {
namespace {

using magnetar::testing::E;
using magnetar::testing::L;

using namespace std::chrono_literals;
using magnetar::testing::BookieProcess;
using magnetar::testing::BookieProcessOptions;
using magnetar::testing::ZooKeeperServer;
using Clock = std::chrono::steady_clock;
using magnetar::testing::Settings;
using magnetar::testing::test_name;

constexpr const char* kPassword = "it-secret";

// Entry i's payload: its id, then 200 bytes that depend on it, so a copy of another entry,
// a shifted copy or a flipped byte never passes for it.
std::string payload_text(int64_t i) {
  std::string text = fmt::format("entry-{:07d}-", i);
  for (int k = 0; k < 200; ++k) text.push_back(static_cast<char>('a' + (i * 31 + k * 7) % 26));
  return text;
}

BufferChain payload(int64_t i) {
  return BufferChain(Buffer::copy_of(payload_text(i)));
}

// A stream of adds 0..count-1 to one ledger, `window` of them in flight at all times: each of
// `window` writer coroutines issues its next add as soon as its last one completes. Shared
// with the coroutines, which may outlive a test that gave up on them.
struct AddStream {
  std::shared_ptr<LedgerHandle> lh;
  int64_t count = 0;
  int window = 0;
  int64_t next = 0;                // next entry to add
  std::vector<int64_t> acked_ids;  // in completion order
  int64_t misnumbered = 0;         // adds whose entry id was not the index they were issued as
  int64_t failed = 0;
  Status first_error;
  int finished_writers = 0;

  bool done() const { return finished_writers == window; }
  int64_t acked() const { return static_cast<int64_t>(acked_ids.size()); }
};

Task<void> stream_writer(std::shared_ptr<AddStream> s) {
  while (s->next < s->count && s->first_error.ok()) {
    const int64_t i = s->next++;
    BufferChain p = payload(i);
    Result<EntryId> r = co_await s->lh->add(std::move(p));
    if (r.ok()) {
      if (r->value() != i) ++s->misnumbered;
      s->acked_ids.push_back(r->value());
    } else {
      ++s->failed;
      if (s->first_error.ok()) s->first_error = r.status();
    }
  }
  ++s->finished_writers;
}

std::shared_ptr<AddStream> start_stream(Executor executor, std::shared_ptr<LedgerHandle> lh,
                                        int64_t count, int window) {
  auto s = std::make_shared<AddStream>();
  s->lh = std::move(lh);
  s->count = count;
  s->window = window;
  for (int w = 0; w < window; ++w) asio::co_spawn(executor, stream_writer(s), asio::detached);
  return s;
}

// The bytes of a frame as they go on the wire.
std::string frame_bytes(const bookie_wire::BookieRequest& header, const BufferChain& body = {}) {
  return protocol::encode_bookie_frame(header, body).to_string();
}

std::string be32(uint32_t v) {
  std::string out(4, '\0');
  for (int i = 0; i < 4; ++i) out[static_cast<size_t>(i)] = static_cast<char>(v >> (24 - 8 * i));
  return out;
}

// A raw TCP connection to a bookie, for requests no client would send.
class RawConnection {
 public:
  explicit RawConnection(int port) : fd_(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) {
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(port));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    connected_ = fd_ >= 0 && ::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
  }
  RawConnection(const RawConnection&) = delete;
  RawConnection& operator=(const RawConnection&) = delete;
  ~RawConnection() {
    if (fd_ >= 0) ::close(fd_);
  }

  bool connected() const { return connected_; }
  bool send_all(std::string_view bytes) {
    while (!bytes.empty()) {
      const ssize_t n = ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL);
      if (n <= 0) return false;
      bytes.remove_prefix(static_cast<size_t>(n));
    }
    return true;
  }
  void close_write() { ::shutdown(fd_, SHUT_WR); }
  // True when the peer closes (EOF or reset) within `timeout`; bytes it sends first are
  // skipped.
  bool closed_by_peer_within(std::chrono::milliseconds timeout) {
    const auto deadline = Clock::now() + timeout;
    char buf[4096];
    while (Clock::now() < deadline) {
      pollfd p{fd_, POLLIN, 0};
      const auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
      if (::poll(&p, 1, static_cast<int>(std::max<int64_t>(left.count(), 1))) <= 0) continue;
      const ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
      if (n == 0) return true;
      if (n < 0 && errno != EINTR && errno != EAGAIN) return true;  // ECONNRESET
    }
    return false;
  }

 private:
  int fd_;
  bool connected_ = false;
};

// Counts the occurrences of `needle` in the entry logs (*.log) under `dir`.
int count_in_entry_logs(const std::string& dir, const std::string& needle) {
  int found = 0;
  std::error_code ec;
  for (auto it = std::filesystem::recursive_directory_iterator(dir, ec);
       !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
    if (it->path().extension() != ".log") continue;
    std::ifstream in(it->path(), std::ios::binary);
    std::string bytes{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
    for (size_t at = bytes.find(needle); at != std::string::npos; at = bytes.find(needle, at + 1)) {
      ++found;
    }
  }
  return found;
}

// Flips one byte, `offset` bytes into the first copy of `needle` in the entry logs under
// `dir`. True when it found and changed one.
bool flip_byte_in_entry_logs(const std::string& dir, const std::string& needle, size_t offset) {
  for (const auto& f : std::filesystem::recursive_directory_iterator(dir)) {
    if (f.path().extension() != ".log") continue;
    std::fstream file(f.path(), std::ios::in | std::ios::out | std::ios::binary);
    std::string bytes{std::istreambuf_iterator<char>(file), std::istreambuf_iterator<char>()};
    const size_t at = bytes.find(needle);
    if (at == std::string::npos) continue;
    file.clear();
    file.seekp(static_cast<std::streamoff>(at + offset));
    file.put(static_cast<char>(bytes[at + offset] ^ 0x20));
    file.flush();
    return static_cast<bool>(file);
  }
  return false;
}

class BookKeeperClusterTest : public testing::ClusterFixture {
 protected:
  // Reads entries [first, last] through `lh` and checks each payload.
  void expect_entries(LedgerHandle& lh, int64_t first, int64_t last) {
    constexpr int64_t kBatch = 500;
    for (int64_t from = first; from <= last; from += kBatch) {
      const int64_t to = std::min(last, from + kBatch - 1);
      auto entries = await(lh.read(E(from), E(to)));
      ASSERT_TRUE(entries.ok()) << "entries " << from << ".." << to << ": "
                                << entries.status().to_string();
      ASSERT_EQ(entries->size(), static_cast<size_t>(to - from + 1));
      for (const LedgerEntry& e : *entries) {
        ASSERT_EQ(e.payload.view(), payload_text(e.entry_id.value())) << "entry " << e.entry_id;
      }
    }
  }
};

// a. E=3, Qw=3, Qa=2 over 4 bookies, 20k adds with 64 in flight; one bookie of the ensemble is
// SIGKILLed a quarter of the way in.
TEST_F(BookKeeperClusterTest, KilledBookieMidStreamIsReplacedAndEveryAckedEntryReadsBack) {
  constexpr int64_t kEntries = 20000;
  ASSERT_NO_FATAL_FAILURE(start_bookies(4));
  BookKeeper bk(*store_, executor());
  auto created = await(bk.create(3, 3, 2, kPassword));
  ASSERT_TRUE(created.ok()) << created.status().to_string();
  std::shared_ptr<LedgerHandle> lh = *created;
  const std::string victim_id = lh->metadata().segments.front().ensemble[1];
  BookieProcess* victim = bookie(victim_id);
  ASSERT_NE(victim, nullptr);

  const auto began = Clock::now();
  auto stream = start_stream(executor(), lh, kEntries, 64);
  ASSERT_TRUE(run_until([&] { return stream->acked() >= kEntries / 4 || stream->done(); }, 30s));
  const int64_t acked_before_kill = stream->acked();
  victim->kill();
  ASSERT_TRUE(run_until([&] { return stream->done(); }, 45s))
      << "the stream stalled after the kill at " << stream->acked() << " acked entries";
  std::fprintf(
      stderr, "[ timing ] %lld adds in %lld ms, bookie %s killed after %lld acks\n",
      static_cast<long long>(kEntries),
      static_cast<long long>(
          std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - began).count()),
      victim_id.c_str(), static_cast<long long>(acked_before_kill));

  EXPECT_EQ(stream->failed, 0) << stream->first_error.to_string();
  EXPECT_EQ(stream->acked(), kEntries);
  EXPECT_EQ(stream->misnumbered, 0);
  EXPECT_TRUE(std::is_sorted(stream->acked_ids.begin(), stream->acked_ids.end()));
  EXPECT_EQ(lh->last_add_confirmed().value(), kEntries - 1);

  // The ensemble change is in the stored metadata: a new segment without the dead bookie.
  auto stored = await(bk.read_metadata(lh->id()));
  ASSERT_TRUE(stored.ok()) << stored.status().to_string();
  ASSERT_GE(stored->segments.size(), 2u);
  const Segment& last = stored->segments.back();
  EXPECT_EQ(std::count(last.ensemble.begin(), last.ensemble.end(), victim_id), 0);
  EXPECT_GT(last.first_entry_id, 0);
  // Soon after the kill: the two survivors (Qa = 2) go on acknowledging, and the client may
  // issue a window or two more before it reads the victim's closed connection (one run saw
  // 125 requests pending on it, and the change at the kill's acked count + 66).
  EXPECT_LE(last.first_entry_id, acked_before_kill + 4 * 64);

  ASSERT_TRUE(await(lh->close()).ok());
  // Another client, as a reader in another process would, sees every acknowledged entry.
  BookKeeper reader_bk(*store_, executor());
  auto reader = await(reader_bk.open(lh->id(), kPassword, false));
  ASSERT_TRUE(reader.ok()) << reader.status().to_string();
  EXPECT_TRUE((*reader)->closed());
  EXPECT_EQ((*reader)->metadata().last_entry_id, kEntries - 1);
  ASSERT_NO_FATAL_FAILURE(expect_entries(**reader, 0, kEntries - 1));
}

// a'. The same with exactly three bookies: no replacement exists, so the writer goes on with
// the two live bookies of each write set (ack quorum 2) — BookKeeper's delayed ensemble
// change — and every acknowledged entry still reads back.
TEST_F(BookKeeperClusterTest, KilledBookieWithoutASpareLeavesTheWriterOnTheAckQuorum) {
  constexpr int64_t kEntries = 20000;
  ASSERT_NO_FATAL_FAILURE(start_bookies(3));
  BookKeeper bk(*store_, executor());
  auto created = await(bk.create(3, 3, 2, kPassword));
  ASSERT_TRUE(created.ok()) << created.status().to_string();
  std::shared_ptr<LedgerHandle> lh = *created;
  BookieProcess* victim = bookie(lh->metadata().segments.front().ensemble[2]);
  ASSERT_NE(victim, nullptr);
  auto stream = start_stream(executor(), lh, kEntries, 64);
  ASSERT_TRUE(run_until([&] { return stream->acked() >= kEntries / 4 || stream->done(); }, 30s));
  victim->kill();
  ASSERT_TRUE(run_until([&] { return stream->done(); }, 45s))
      << "the stream stalled after the kill at " << stream->acked() << " acked entries";
  EXPECT_EQ(stream->failed, 0) << stream->first_error.to_string();
  EXPECT_EQ(stream->acked(), kEntries);
  EXPECT_TRUE(std::is_sorted(stream->acked_ids.begin(), stream->acked_ids.end()));
  ASSERT_TRUE(await(lh->close()).ok());
  BookKeeper reader_bk(*store_, executor());
  auto reader = await(reader_bk.open(lh->id(), kPassword, false));
  ASSERT_TRUE(reader.ok()) << reader.status().to_string();
  EXPECT_EQ((*reader)->metadata().last_entry_id, kEntries - 1);
  ASSERT_NO_FATAL_FAILURE(expect_entries(**reader, 0, kEntries - 1));
}

// b. E=Qw=Qa=3 over 3 bookies, so every bookie acknowledged every entry. One is SIGKILLed
// right after the adds (no checkpoint ran: flushInterval is an hour), restarted, and asked
// for each entry directly.
TEST_F(BookKeeperClusterTest, RestartedBookieStillHasEveryEntryItAcknowledged) {
  constexpr int64_t kEntries = 3000;
  ASSERT_NO_FATAL_FAILURE(start_bookies(3));
  BookKeeper bk(*store_, executor());
  auto created = await(bk.create(3, 3, 3, kPassword));
  ASSERT_TRUE(created.ok()) << created.status().to_string();
  std::shared_ptr<LedgerHandle> lh = *created;
  auto stream = start_stream(executor(), lh, kEntries, 64);
  ASSERT_TRUE(run_until([&] { return stream->done(); }, 30s));
  ASSERT_EQ(stream->acked(), kEntries) << stream->first_error.to_string();

  BookieProcess* victim = bookie(lh->metadata().segments.front().ensemble[1]);
  ASSERT_NE(victim, nullptr);
  victim->kill();
  const auto began = Clock::now();
  Status restarted = victim->restart();
  ASSERT_TRUE(restarted.ok()) << restarted.to_string();
  ASSERT_TRUE(registered(*victim, 10s));
  const auto restart_ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - began).count();
  std::fprintf(stderr, "[ timing ] bookie restart (with journal replay) took %lld ms\n",
               static_cast<long long>(restart_ms));
  EXPECT_NE(victim->log_of_this_run().find("replayed"), std::string::npos)
      << "the restarted bookie did not replay its journal:\n"
      << victim->log_of_this_run();

  BookieClient client(executor());
  int64_t verified = 0;
  for (int64_t e = 0; e < kEntries; ++e) {
    bookie_wire::ReadRequest request;
    request.set_ledger_id(lh->id().value());
    request.set_entry_id(e);
    auto r = await(client.read(victim->id(), std::move(request)));
    ASSERT_TRUE(r.ok()) << "entry " << e << ": " << r.status().to_string();
    ASSERT_EQ(r->status, bookie_wire::OK)
        << "entry " << e << ": " << bookie_wire::BookieStatus_Name(r->status);
    auto unpacked = protocol::unpack_entry(r->entry, lh->id().value(), e);
    ASSERT_TRUE(unpacked.ok()) << "entry " << e << ": " << unpacked.status().to_string();
    ASSERT_EQ(unpacked->view(), payload_text(e)) << "entry " << e;
    ++verified;
  }
  EXPECT_EQ(verified, kEntries);
  await(client.close());
}

// BookKeeper's bookie, restarted while the ZooKeeper session of its killed predecessor still
// holds /ledgers/available/<id>, waits for that node to expire (ZKRegistrationManager's
// checkRegNodeAndWaitExpired) and then registers. A crash-looping supervisor restarts a
// bookie within seconds, well inside a session timeout.
TEST_F(BookKeeperClusterTest, BookieRestartedWithinItsSessionTimeoutRegistersAgain) {
  ASSERT_NO_FATAL_FAILURE(start_bookies(1));
  BookieProcess& b = *bookies_.front();
  const int64_t dead_session = registration_owner(b.id());
  ASSERT_NE(dead_session, 0);
  b.kill();
  // restart() returns at the "serving" line, which comes before the registration.
  Status restarted = b.restart();
  // The stale node goes after the 4 s session timeout; allow that plus ZooKeeper's slack.
  ::testing::AssertionResult back = ::testing::AssertionFailure() << restarted.to_string();
  if (restarted.ok()) back = registered(b, 15s, dead_session);
  if (!back) {
    ADD_FAILURE() << "regression (src/bookie/server/bookie_server.cc register_bookie): "
                     "a bookie restarted within its metadata session "
                     "timeout fails to register because its killed predecessor's ephemeral "
                     "/ledgers/available/"
                  << b.id()
                  << " still exists, and exits instead of "
                     "waiting for that node to expire: "
                  << back.message();
  }
}

// c. Writer A adds entries; client B (its own metadata session, as another process would
// have) opens the ledger with recovery. A is fenced, and both agree on the last entry.
TEST_F(BookKeeperClusterTest, RecoveryByAnotherClientFencesTheWriterAndBothAgreeOnTheEnd) {
  constexpr int64_t kEntries = 1000;
  ASSERT_NO_FATAL_FAILURE(start_bookies(3));
  BookKeeper writer_bk(*store_, executor());
  auto created = await(writer_bk.create(3, 3, 2, kPassword));
  ASSERT_TRUE(created.ok()) << created.status().to_string();
  std::shared_ptr<LedgerHandle> writer = *created;
  auto stream = start_stream(executor(), writer, kEntries, 32);
  ASSERT_TRUE(run_until([&] { return stream->done(); }, 30s));
  ASSERT_EQ(stream->acked(), kEntries) << stream->first_error.to_string();
  const int64_t last_acked = stream->acked_ids.back();
  ASSERT_EQ(writer->last_add_confirmed().value(), last_acked);

  auto other_store = await(metadata::open_store(url_));
  ASSERT_TRUE(other_store.ok()) << other_store.status().to_string();
  {
    BookKeeper recovering_bk(**other_store, executor());
    auto recovered = await(recovering_bk.open(writer->id(), kPassword, true));
    ASSERT_TRUE(recovered.ok()) << recovered.status().to_string();
    EXPECT_TRUE((*recovered)->closed());
    EXPECT_EQ((*recovered)->metadata().last_entry_id, last_acked);

    auto late = await(writer->add(payload(kEntries)));
    ASSERT_FALSE(late.ok()) << "the fenced writer got entry " << *late << " acknowledged";
    EXPECT_TRUE(late.status().is(Errc::kFenced)) << late.status().to_string();
    EXPECT_EQ(writer->last_add_confirmed().value(), last_acked);

    // Both see the same entries: the writer through its handle, B through the closed one.
    ASSERT_NO_FATAL_FAILURE(expect_entries(*writer, 0, last_acked));
    ASSERT_NO_FATAL_FAILURE(expect_entries(**recovered, 0, last_acked));
    EXPECT_FALSE(await((*recovered)->read(E(last_acked + 1), E(last_acked + 1))).ok());
  }
  (void)await((*other_store)->close());
}

// c, with the writer still running: recovery fences the ledger while 64 adds are in flight.
// The writer's stream ends with kFenced, and the recovered ledger holds every entry the writer
// got acknowledged (it may hold a few more, whose acknowledgements the fence cut off).
TEST_F(BookKeeperClusterTest, RecoveryInTheMiddleOfAStreamKeepsEveryAcknowledgedEntry) {
  constexpr int64_t kMaxEntries = 200000;  // far more than get written before the fence
  ASSERT_NO_FATAL_FAILURE(start_bookies(3));
  BookKeeper writer_bk(*store_, executor());
  auto created = await(writer_bk.create(3, 3, 2, kPassword));
  ASSERT_TRUE(created.ok()) << created.status().to_string();
  std::shared_ptr<LedgerHandle> writer = *created;
  auto stream = start_stream(executor(), writer, kMaxEntries, 64);
  ASSERT_TRUE(run_until([&] { return stream->acked() >= 2000 || stream->done(); }, 30s));
  ASSERT_FALSE(stream->done()) << stream->first_error.to_string();

  auto other_store = await(metadata::open_store(url_));
  ASSERT_TRUE(other_store.ok()) << other_store.status().to_string();
  {
    BookKeeper recovering_bk(**other_store, executor());
    // The writer's adds go on while this runs on the same loop.
    auto recovered = await(recovering_bk.open(writer->id(), kPassword, true));
    ASSERT_TRUE(recovered.ok()) << recovered.status().to_string();
    ASSERT_TRUE(run_until([&] { return stream->done(); }, 30s));
    EXPECT_GT(stream->failed, 0);
    EXPECT_TRUE(stream->first_error.is(Errc::kFenced)) << stream->first_error.to_string();
    EXPECT_EQ(stream->misnumbered, 0);
    const int64_t last_acked = stream->acked_ids.empty() ? -1 : stream->acked_ids.back();
    const int64_t last_recovered = (*recovered)->metadata().last_entry_id;
    std::fprintf(stderr, "[ info   ] writer acked up to %lld, recovery closed at %lld\n",
                 static_cast<long long>(last_acked), static_cast<long long>(last_recovered));
    EXPECT_EQ(writer->last_add_confirmed().value(), last_acked);
    EXPECT_GE(last_recovered, last_acked);
    EXPECT_LT(last_recovered, last_acked + 64 + 1);
    ASSERT_NO_FATAL_FAILURE(expect_entries(**recovered, 0, last_recovered));
  }
  (void)await((*other_store)->close());
}

// d. E=Qw=Qa=3; after a checkpoint moved the entries into entry logs, one byte of entry 0 is
// flipped in the entry log of the bookie a reader asks first.
TEST_F(BookKeeperClusterTest, FlippedByteInAnEntryLogIsCaughtAndReadFromAnotherReplica) {
  constexpr int64_t kEntries = 20;
  ASSERT_NO_FATAL_FAILURE(start_bookies(3, {{"flushInterval", "200"}}));
  BookKeeper bk(*store_, executor());
  auto created = await(bk.create(3, 3, 3, kPassword));
  ASSERT_TRUE(created.ok()) << created.status().to_string();
  std::shared_ptr<LedgerHandle> lh = *created;
  for (int64_t i = 0; i < kEntries; ++i) {
    auto id = await(lh->add(payload(i)));
    ASSERT_TRUE(id.ok()) << id.status().to_string();
  }
  ASSERT_TRUE(await(lh->close()).ok());

  const LedgerMetadata& md = lh->metadata();
  const std::string first_id = md.ensemble_for(0)[static_cast<size_t>(md.write_set(0).front())];
  BookieProcess* target = bookie(first_id);
  ASSERT_NE(target, nullptr);
  // A checkpoint (every 200 ms) writes entry 0 to an entry log.
  const std::string needle = payload_text(0);
  const auto deadline = Clock::now() + 10s;
  while (count_in_entry_logs(target->ledger_dir(), needle) == 0 && Clock::now() < deadline) {
    run_for(50ms);
  }
  ASSERT_EQ(count_in_entry_logs(target->ledger_dir(), needle), 1)
      << "entry 0 never reached an entry log of " << first_id;
  ASSERT_TRUE(flip_byte_in_entry_logs(target->ledger_dir(), needle, 20));

  // The target itself must no longer hand out a valid entry 0. Until the checkpoint that
  // wrote the log has also dropped the entry from the write cache, it may still serve the
  // good copy from memory: poll.
  BookieClient client(executor());
  std::string caught_by;
  while (caught_by.empty() && Clock::now() < deadline + 10s) {
    bookie_wire::ReadRequest request;
    request.set_ledger_id(lh->id().value());
    request.set_entry_id(0);
    auto r = await(client.read(first_id, std::move(request)));
    ASSERT_TRUE(r.ok()) << "the bookie stopped answering: " << r.status().to_string();
    if (r->status != bookie_wire::OK) {
      caught_by = "the bookie (" + bookie_wire::BookieStatus_Name(r->status) + ")";
    } else if (auto unpacked = protocol::unpack_entry(r->entry, lh->id().value(), 0);
               !unpacked.ok()) {
      caught_by = "the client's digest (" + unpacked.status().to_string() + ")";
    } else {
      run_for(100ms);
    }
  }
  ASSERT_FALSE(caught_by.empty()) << first_id << " still serves a good entry 0";
  std::fprintf(stderr, "[ info   ] corruption caught by %s\n", caught_by.c_str());
  await(client.close());

  BookKeeper reader_bk(*store_, executor());
  auto reader = await(reader_bk.open(lh->id(), kPassword, false));
  ASSERT_TRUE(reader.ok()) << reader.status().to_string();
  ASSERT_NO_FATAL_FAILURE(expect_entries(**reader, 0, kEntries - 1));
  EXPECT_TRUE(target->running()) << target->describe_state();
}

// e. The journal path is a regular file where a directory is expected (root ignores
// permission bits, so chmod cannot make it unwritable in CI).
TEST_F(BookKeeperClusterTest, BookieWhoseJournalCannotBeWrittenNeverAcknowledges) {
  BookieProcessOptions options = bookie_options();
  std::filesystem::create_directories(options.data_dir);
  const std::string journal = options.data_dir + "/journal";
  std::ofstream(journal) << "a regular file, not a directory\n";
  auto launched = BookieProcess::launch(options);
  ASSERT_TRUE(launched.ok()) << launched.status().to_string();
  BookieProcess& b = **launched;

  const bool exited = b.wait_for_exit(20s);
  const std::string log = b.log_tail(60);
  // Whatever it did, it never acknowledges an add.
  BookieClient client(executor());
  bookie_wire::AddRequest request;
  request.set_ledger_id(1);
  request.set_entry_id(0);
  request.set_master_key(std::string(20, 'k'));
  protocol::EntryHeader header;
  header.ledger_id = 1;
  header.entry_id = 0;
  BufferChain entry = protocol::package_entry(header, payload(0));
  auto added = await(client.add(b.id(), std::move(request), std::move(entry)));
  EXPECT_TRUE(!added.ok() || added->status != bookie_wire::OK)
      << "a bookie without a journal acknowledged an add";
  await(client.close());
  EXPECT_FALSE(await(store_->exists("/ledgers/available/" + b.id())).value_or(true))
      << "a bookie without a journal registered as available";

  ASSERT_TRUE(exited) << "the bookie is still " << b.describe_state() << ":\n" << log;
  EXPECT_NE(b.exit_code(), 0) << b.describe_state();
  EXPECT_NE(log.find(journal), std::string::npos) << "the error does not name " << journal << ":\n"
                                                  << log;
  EXPECT_EQ(log.find("serving the bookie protocol"), std::string::npos) << log;
}

// f. Requests no client sends, each on its own connection: each connection is closed (a
// well-formed request with an unknown operation only fails), and the bookie goes on serving
// a client connected before and one connected after.
TEST_F(BookKeeperClusterTest, GarbageAndTruncatedRequestsCloseOnlyTheirConnection) {
  ASSERT_NO_FATAL_FAILURE(start_bookies(1));
  BookieProcess& b = *bookies_.front();
  BookieClient client(executor());
  auto before = await(client.info(b.id()));
  ASSERT_TRUE(before.ok()) << before.status().to_string();

  bookie_wire::BookieRequest add;
  add.set_request_id(7);
  add.mutable_add()->set_ledger_id(999999);
  add.mutable_add()->set_entry_id(0);
  add.mutable_add()->set_master_key(std::string(20, 'k'));
  protocol::EntryHeader header;
  header.ledger_id = 999999;
  const std::string valid_add = frame_bytes(add, protocol::package_entry(header, payload(0)));
  bookie_wire::BookieRequest no_op;
  no_op.set_request_id(8);

  struct Case {
    std::string name;
    std::string bytes;
    bool close_write;  // half-close after sending: the request can never be completed
  };
  const std::vector<Case> cases = {
      {"HTTP request", "GET / HTTP/1.1\r\nHost: bookie\r\n\r\n", false},
      {"frame larger than the limit", be32(0xFFFFFFF0u) + std::string(64, 'x'), false},
      {"header size past the frame", be32(8) + be32(100) + std::string(8, 'h'), false},
      {"zero-size frame", be32(0), false},
      {"header that is not protobuf", be32(14) + be32(10) + std::string(10, '\xff'), false},
      {"add cut in the middle", valid_add.substr(0, valid_add.size() / 2), true},
      {"size prefix cut", valid_add.substr(0, 2), true},
      {"valid add followed by garbage", valid_add + std::string(16, '\xee'), false},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    RawConnection raw(b.port());
    ASSERT_TRUE(raw.connected());
    ASSERT_TRUE(raw.send_all(c.bytes));
    if (c.close_write) raw.close_write();
    EXPECT_TRUE(raw.closed_by_peer_within(5s)) << "the bookie kept the connection open";
    ASSERT_TRUE(b.running()) << b.describe_state();
  }
  {
    // A well-formed request with an operation the bookie does not know (a newer client's) is
    // not garbage: it is answered as unsupported and the connection stays up.
    RawConnection raw(b.port());
    ASSERT_TRUE(raw.connected());
    ASSERT_TRUE(raw.send_all(frame_bytes(no_op)));
    EXPECT_FALSE(raw.closed_by_peer_within(1s)) << "a request without an operation closed it";
  }

  // The connection made before the garbage still works, and so does a new client.
  auto after = await(client.info(b.id()));
  EXPECT_TRUE(after.ok()) << after.status().to_string();
  await(client.close());
  BookKeeper bk(*store_, executor());
  auto created = await(bk.create(1, 1, 1, kPassword));
  ASSERT_TRUE(created.ok()) << created.status().to_string();
  for (int64_t i = 0; i < 100; ++i) {
    auto id = await((*created)->add(payload(i)));
    ASSERT_TRUE(id.ok()) << id.status().to_string();
  }
  ASSERT_NO_FATAL_FAILURE(expect_entries(**created, 0, 99));
}

}  // namespace
}  // namespace magnetar::ledger
