// magnetar-perf bookie: BookKeeper's `bookkeeper-benchmark writes` over our ledger client.
// Creates --num-ledgers ledgers (E, Qw, Qa) through the metadata store the bookies register
// in, adds --size byte entries to them round robin, paced by a token bucket (--rate) and
// bounded by --max-outstanding adds in flight over all ledgers; latency is from add() to its
// completion at the ack quorum. At the end the ledgers are closed, then deleted unless
// --keep-ledgers.
//
// Threading: one event loop thread (a private io_context) owns the metadata store session,
// the BookKeeper client and the ledgers; one coroutine (BookieBench::run) makes them, writes
// and tears down. The calling thread prints the stats lines (PerfRun) and waits for the
// loop's set-up and tear-down, each for at most twice --timeout plus a few seconds: a loop
// that does not answer by then is stopped and the run fails instead of hanging. Adds still in
// flight --timeout seconds after the end are failed by closing the bookie connections.
//
// Exit code 1: bad options, no metadata store URL, the store unreachable, a ledger that
// cannot be created (e.g. fewer writable bookies than E), a failed add (a ledger handle that
// fails stays failed: no more adds go to it), adds still in flight --timeout seconds after
// the end, a ledger not closed or not deleted, or the JSON file not written.

#include <fmt/format.h>

#include <algorithm>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/redirect_error.hpp>
#include <future>
#include <optional>
#include <ostream>
#include <thread>

#include "cli/client_conf.h"
#include "cli/perf_run.h"
#include "common/token_bucket.h"
#include "common/asio.h"
#include "common/buffer.h"
#include "ledger/bookkeeper.h"
#include "metadata/metadata_store.h"

namespace magnetar::cli {

namespace {

using namespace std::chrono_literals;

// Extra time the calling thread grants the loop beyond the loop's own bounds.
constexpr auto kGrace = 5s;
// How many adds the writer starts before letting the loop run completions (when nothing
// else makes it wait).
constexpr int kAddsPerTurn = 64;

struct LedgerSlot {
  std::shared_ptr<ledger::LedgerHandle> handle;
  Status failure;  // the first failed add: no more adds go to this ledger
};

// The writing state, on the loop only; shared with every add's coroutine, which may still be
// running when the writer stops waiting for it.
struct Writing {
  explicit Writing(Executor executor) : wake(std::move(executor)) {}
  asio::steady_timer wake;  // cancelled whenever an add completes
  std::vector<LedgerSlot> ledgers;
  int outstanding = 0;
  int live = 0;  // ledgers without a failure
};

// Waits on `timer` until `until`, an add completing (which cancels it), or kPerfPoll.
Task<void> nap(asio::steady_timer& timer, PerfClock::time_point until) {
  timer.expires_at(std::min(until, PerfClock::now() + kPerfPoll));
  boost::system::error_code ec;
  co_await timer.async_wait(asio::redirect_error(asio::use_awaitable, ec));
}

class BookieBench {
 public:
  BookieBench(const BookiePerfOptions& o, std::string url)
      : o_(o),
        url_(std::move(url)),
        timeout_(std::chrono::duration_cast<std::chrono::milliseconds>(
            std::chrono::duration<double>(o.timeout_s))) {}

  // On the loop: everything, in order. Sets `setup` once the ledgers exist (or could not be
  // made), writes until `halt`, then tears down and sets `teardown`.
  Task<void> run();

  // --- Thread-safe ---
  PerfCounters counters;
  IntervalRecorder latency;
  std::atomic<bool> halt{false};          // set by the reporting thread: stop adding
  std::atomic<bool> writing_done{false};  // every ledger failed: nothing left to write to
  std::promise<Status> setup;
  std::promise<Status> teardown;

  // --- Written by the loop before it sets `setup` (ids, start) or `teardown` (the rest) ---
  std::vector<int64_t> ids;
  PerfClock::time_point start;
  PerfClock::time_point end;              // the last add completed (or the tear-down gave up on it)
  std::vector<std::string> add_failures;  // one line per failed ledger
  std::vector<int64_t> removed;           // deleted, or closed with --keep-ledgers

 private:
  Task<Status> create_ledgers(Writing& w);
  // Adds until `halt` or no ledger is left; then waits up to the timeout for the adds in
  // flight, and after that closes the bookie connections (failing what is left) and waits
  // kGrace more. True when none is left in flight.
  Task<bool> write(std::shared_ptr<Writing> w);
  // Closes every ledger, then deletes it unless --keep-ledgers, while time is left.
  Task<Status> finish(Writing& w);

  const BookiePerfOptions& o_;
  const std::string url_;
  const std::chrono::milliseconds timeout_;
  // Made and, when the run ends normally, destroyed on the loop. When adds hang they stay
  // until the BookieBench is destroyed, after the loop stopped (the hung coroutines'
  // ledger handles refer to bk_).
  std::unique_ptr<metadata::MetadataStore> store_;
  std::unique_ptr<ledger::BookKeeper> bk_;
};

Task<void> BookieBench::run() {
  auto executor = co_await asio::this_coro::executor;
  metadata::StoreOptions store_options;
  store_options.operation_timeout = timeout_;
  auto opened = co_await metadata::open_store(url_, store_options);
  if (!opened.ok()) {
    setup.set_value(Status(
        opened.status().code(),
        fmt::format("Cannot reach the metadata store {}: {}", url_, opened.status().message())));
    teardown.set_value(Status::OK());
    co_return;
  }
  store_ = std::move(opened).value();
  bk_ = std::make_unique<ledger::BookKeeper>(*store_, executor);
  auto w = std::make_shared<Writing>(executor);
  Status made = co_await create_ledgers(*w);
  bool drained = true;
  if (made.ok()) {
    start = PerfClock::now();
    setup.set_value(Status::OK());
    drained = co_await write(w);
  } else {
    setup.set_value(made);
  }
  end = PerfClock::now();
  for (const LedgerSlot& slot : w->ledgers) {
    if (!slot.failure.ok()) {
      add_failures.push_back(
          fmt::format("Adds to ledger {} failed: {}", slot.handle->id(), slot.failure.to_string()));
    }
  }
  if (!drained) {
    teardown.set_value(
        Status(Errc::kTimeout, fmt::format("{} adds were still in flight {} s after the end; the "
                                           "ledgers are left as they are",
                                           w->outstanding, o_.timeout_s)));
    co_return;
  }
  Status finished = co_await finish(*w);
  w.reset();
  co_await bk_->client().close();
  bk_.reset();
  (void)co_await store_->close();
  store_.reset();
  teardown.set_value(finished);
}

Task<Status> BookieBench::create_ledgers(Writing& w) {
  const auto deadline = PerfClock::now() + timeout_;
  const std::string password;
  const std::map<std::string, std::string> custom = {{"application", "magnetar-perf"}};
  for (int i = 0; i < o_.num_ledgers; ++i) {
    if (PerfClock::now() >= deadline) {
      co_return Status(Errc::kTimeout, fmt::format("Creating {} ledgers took longer than {} s",
                                                   o_.num_ledgers, o_.timeout_s));
    }
    auto lh =
        co_await bk_->create(o_.ensemble_size, o_.write_quorum, o_.ack_quorum, password, custom);
    if (!lh.ok()) {
      co_return Status(lh.status().code(),
                       fmt::format("Cannot create ledger {} of {} (E={}, Qw={}, Qa={}): {}", i + 1,
                                   o_.num_ledgers, o_.ensemble_size, o_.write_quorum, o_.ack_quorum,
                                   lh.status().to_string()));
    }
    ids.push_back((*lh)->id().value());
    w.ledgers.push_back(LedgerSlot{std::move(lh).value(), Status::OK()});
    ++w.live;
  }
  co_return Status::OK();
}

Task<bool> BookieBench::write(std::shared_ptr<Writing> w) {
  auto executor = co_await asio::this_coro::executor;
  const Buffer payload = Buffer::copy_of(perf_payload(o_.size));
  const auto bytes = static_cast<int64_t>(payload.size());
  TokenBucket limiter(o_.rate, std::max(1.0, o_.rate / 100));
  size_t next = 0;
  int this_turn = 0;
  while (!halt && w->live > 0) {
    const auto wait = limiter.take(PerfClock::now());
    if (wait > PerfClock::duration::zero()) {
      const auto due = PerfClock::now() + wait;
      while (!halt && PerfClock::now() < due) co_await nap(w->wake, due);
      this_turn = 0;
    }
    while (!halt && o_.max_outstanding > 0 && w->outstanding >= o_.max_outstanding) {
      co_await nap(w->wake, PerfClock::time_point::max());
      this_turn = 0;
    }
    if (++this_turn >= kAddsPerTurn) {
      co_await asio::post(executor, asio::use_awaitable);
      this_turn = 0;
    }
    // Adds may have failed while this coroutine waited.
    if (halt || w->live == 0) break;
    while (!w->ledgers[next % w->ledgers.size()].failure.ok()) ++next;
    const size_t i = next++ % w->ledgers.size();
    // Nothing was awaited since the last completion: the wait for the next starts now.
    if (w->outstanding++ == 0) counters.gaps.resume(PerfClock::now());
    const auto sent_at = PerfClock::now();
    auto added = [this, w, i, sent_at, bytes](Result<EntryId> r) {
      if (r.ok()) {
        const auto now = PerfClock::now();
        const auto us = std::chrono::duration_cast<std::chrono::microseconds>(now - sent_at);
        latency.record(us.count());
        counters.gaps.note(now);
        counters.messages.fetch_add(1);
        counters.bytes.fetch_add(bytes);
      } else {
        counters.failures.fetch_add(1);
        LedgerSlot& slot = w->ledgers[i];
        if (slot.failure.ok()) {
          slot.failure = r.status();
          --w->live;
        }
      }
      --w->outstanding;
      w->wake.cancel();
    };
    w->ledgers[i].handle->async_add(BufferChain(payload), std::move(added));
  }
  if (w->live == 0) writing_done = true;
  const auto deadline = PerfClock::now() + timeout_;
  while (w->outstanding > 0 && PerfClock::now() < deadline) co_await nap(w->wake, deadline);
  if (w->outstanding > 0) {
    co_await bk_->client().close();
    const auto last_chance = PerfClock::now() + kGrace;
    while (w->outstanding > 0 && PerfClock::now() < last_chance) {
      co_await nap(w->wake, last_chance);
    }
  }
  co_return w->outstanding == 0;
}

Task<Status> BookieBench::finish(Writing& w) {
  const auto deadline = PerfClock::now() + timeout_;
  Status result;
  for (const LedgerSlot& slot : w.ledgers) {
    if (PerfClock::now() >= deadline) {
      co_return Status(
          Errc::kTimeout,
          fmt::format("Closing and deleting the ledgers took longer than {} s", o_.timeout_s));
    }
    const LedgerId id = slot.handle->id();
    // Closed first in any case: a handle that is still open may retry an ensemble change
    // on a timer, which must not outlive the client.
    Status closed = co_await slot.handle->close();
    if (!closed.ok() && result.ok()) {
      result =
          Status(closed.code(), fmt::format("Cannot close ledger {}: {}", id, closed.to_string()));
    }
    if (o_.keep_ledgers) {
      if (closed.ok()) removed.push_back(id.value());
      continue;
    }
    Status gone = co_await bk_->remove(id);
    if (gone.ok()) {
      removed.push_back(id.value());
    } else if (result.ok()) {
      result =
          Status(gone.code(), fmt::format("Cannot delete ledger {}: {}", id, gone.to_string()));
    }
  }
  co_return result;
}

std::string join_ids(const std::vector<int64_t>& ids) {
  return fmt::format("{}", fmt::join(ids, ", "));
}

// Waits for `f` for at most `bound`; nullopt when it did not come.
std::optional<Status> wait_for(std::future<Status>& f, std::chrono::milliseconds bound) {
  if (f.wait_for(bound) != std::future_status::ready) return std::nullopt;
  return f.get();
}

}  // namespace

int run_perf_bookie(const CommonOptions& common, const BookiePerfOptions& o, std::ostream& out,
                    std::ostream& err) {
  if (o.ensemble_size < 1 || o.write_quorum < 1 || o.ack_quorum < 1 ||
      o.write_quorum > o.ensemble_size || o.ack_quorum > o.write_quorum) {
    err << "The quorums must satisfy 1 <= --ack-quorum <= --write-quorum <= --ensemble-size\n";
    return 1;
  }
  if (o.size < 0 || o.max_outstanding < 0 || o.num_ledgers < 1 || o.timeout_s <= 0) {
    err << "--size and --max-outstanding must not be negative, --num-ledgers and --timeout "
           "must be positive\n";
    return 1;
  }
  PerfRun run(common, out, err);
  if (!run.check_options()) return 1;
  auto url = resolve_metadata_store_url(o.metadata_store_url, o.conf);
  if (!url.ok()) {
    err << url.status().message() << "\n";
    return 1;
  }

  // `io` before `bench`: in the stuck case `bench` (with the client and the store) goes
  // first, then `io` with the coroutine frames that were still waiting.
  asio::io_context io;
  BookieBench bench(o, *url);
  run.watch_gaps(bench.counters);
  auto work = asio::make_work_guard(io);
  std::promise<void> loop_ended;
  auto loop_done = loop_ended.get_future();
  std::thread loop([&io, &loop_ended] {
    io.run();
    loop_ended.set_value();
  });
  // Ends the loop: at once when it was stuck, else once it ran dry (bounded by kGrace).
  auto stop_loop = [&](bool stuck) {
    work.reset();
    if (stuck || loop_done.wait_for(kGrace) != std::future_status::ready) io.stop();
    loop.join();
  };
  auto body = [&bench]() -> Task<void> { co_await bench.run(); };
  asio::co_spawn(io, std::move(body), asio::detached);

  const auto bound = std::chrono::duration_cast<std::chrono::milliseconds>(
      2 * std::chrono::duration<double>(o.timeout_s) + kGrace);
  auto setup_future = bench.setup.get_future();
  auto teardown_future = bench.teardown.get_future();
  auto set_up = wait_for(setup_future, bound);
  if (!set_up) {
    err << "The metadata store " << *url << " or the bookies did not answer within " << o.timeout_s
        << " s\n";
    stop_loop(true);
    return 1;
  }
  if (!set_up->ok()) {
    err << set_up->message() << "\n";
    auto cleaned = wait_for(teardown_future, bound);
    stop_loop(!cleaned);
    if (cleaned && !cleaned->ok()) err << cleaned->message() << "\n";
    if (!bench.removed.empty()) err << "Deleted ledgers " << join_ids(bench.removed) << "\n";
    return 1;
  }
  run.print(fmt::format("Created {} ledgers (E={}, Qw={}, Qa={}): {}", bench.ids.size(),
                        o.ensemble_size, o.write_quorum, o.ack_quorum, join_ids(bench.ids)));

  IntervalLine line("written", true, kAddUnits);
  run.report_until_done(
      bench.start, [&] { return bench.writing_done.load(); },
      [&](double seconds) { return line.next(bench.counters, bench.latency, seconds); });
  bench.halt = true;
  auto torn_down = wait_for(teardown_future, bound);
  stop_loop(!torn_down);
  if (!torn_down) {
    err << "The bookies or the metadata store did not answer within " << o.timeout_s
        << " s at the end of the run\n";
    return 1;
  }
  const double seconds = seconds_between(bench.start, bench.end);
  const nlohmann::ordered_json subject = {{"ledgers", bench.ids},
                                          {"ensemble_size", o.ensemble_size},
                                          {"write_quorum", o.write_quorum},
                                          {"ack_quorum", o.ack_quorum},
                                          {"entry_size", o.size}};
  int code =
      run.finish("bookie", "written", seconds, bench.counters, bench.latency, kAddUnits, subject);
  for (const std::string& failure : bench.add_failures) err << failure << "\n";
  if (!bench.add_failures.empty()) code = 1;
  if (!bench.removed.empty()) {
    run.print(fmt::format("{} ledgers {}", o.keep_ledgers ? "Closed" : "Deleted",
                          join_ids(bench.removed)));
  }
  if (!torn_down->ok()) {
    err << torn_down->message() << "\n";
    code = 1;
  }
  return code;
}

}  // namespace magnetar::cli
