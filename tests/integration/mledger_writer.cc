// A managed-ledger owner to be SIGKILLed by mledger_crash_test: it appends entries to one
// managed ledger and consumes them through a durable cursor, and reports on stdout, one line
// per event, what it has been told is durable:
//
//   ADD <i> <ledger>:<entry>   entry i ("msg-<i>") was acknowledged at that position
//   ACKING <ledger>:<entry>    an individual acknowledgement is about to be requested
//   ACKED <ledger>:<entry>     that acknowledgement completed
//
// Every fifth entry is acknowledged 200 entries late, so the cursor always has holes.
//
// usage: mledger_writer <metadataStoreUrl> <managed ledger name> <mark-delete rate limit>

#include <fmt/format.h>

#include <boost/asio/redirect_error.hpp>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <string>

#include "common/asio.h"
#include "common/logging.h"
#include "ledger/bookkeeper.h"
#include "metadata/metadata_store.h"
#include "mledger/managed_ledger.h"

namespace magnetar {
namespace {

using mledger::Position;

mledger::ManagedLedgerConfig writer_config(double rate) {
  mledger::ManagedLedgerConfig c;
  c.ensemble_size = 3;
  c.write_quorum = 3;
  c.ack_quorum = 2;
  c.max_entries_per_ledger = 400;
  c.min_ledger_rollover_time_minutes = 0;
  c.retention_time_minutes = -1;
  c.retention_size_mb = -1;
  c.mark_delete_rate_limit = rate;
  return c;
}

void fail(const std::string& what) {
  std::fprintf(stdout, "FATAL %s\n", what.c_str());
  std::fflush(stdout);
  std::_Exit(2);
}

Task<void> produce(std::shared_ptr<mledger::ManagedLedger> ml) {
  int64_t sent = 0, done = 0;
  asio::steady_timer timer(co_await asio::this_coro::executor);
  while (true) {
    while (sent - done < 100) {
      const int64_t i = sent++;
      BufferChain data(Buffer::copy_of(fmt::format("msg-{}", i)));
      ml->async_add(std::move(data), [i, &done](Result<Position> p) {
        if (!p.ok()) fail("add " + std::to_string(i) + ": " + p.status().to_string());
        std::fprintf(stdout, "ADD %lld %lld:%lld\n", static_cast<long long>(i),
                     static_cast<long long>(p->ledger_id.value()),
                     static_cast<long long>(p->entry_id.value()));
        ++done;
      });
    }
    timer.expires_after(std::chrono::milliseconds(1));
    boost::system::error_code ec;
    co_await timer.async_wait(asio::redirect_error(asio::use_awaitable, ec));
  }
}

Task<void> consume(std::shared_ptr<mledger::ManagedCursor> cursor) {
  int64_t expected = 0;
  std::deque<std::pair<int64_t, Position>> held;  // late acknowledgements
  while (true) {
    auto entries = co_await cursor->read_or_wait(100);
    if (!entries.ok()) fail("read: " + entries.status().to_string());
    std::vector<Position> acks;
    for (const auto& e : *entries) {
      const int64_t i = std::stoll(e.data.to_string().substr(4));
      if (i != expected) fail(fmt::format("read msg-{}, expected msg-{}", i, expected));
      ++expected;
      if (i % 5 == 0) {
        held.emplace_back(i, e.position);
      } else {
        acks.push_back(e.position);
      }
      while (!held.empty() && held.front().first + 200 < i) {
        acks.push_back(held.front().second);
        held.pop_front();
      }
    }
    for (const auto& p : acks) std::fprintf(stdout, "ACKING %s\n", p.to_string().c_str());
    std::fflush(stdout);
    Status st = co_await cursor->delete_positions(acks);
    if (!st.ok()) fail("acknowledge: " + st.to_string());
    for (const auto& p : acks) std::fprintf(stdout, "ACKED %s\n", p.to_string().c_str());
    std::fflush(stdout);
  }
}

Task<void> run(std::string url, std::string name, double rate) {
  auto store = co_await metadata::open_store(url);
  if (!store.ok()) fail("metadata store: " + store.status().to_string());
  auto executor = co_await asio::this_coro::executor;
  // This coroutine never returns (produce() loops until the process is killed), so its
  // locals live as long as the process.
  std::unique_ptr<metadata::MetadataStore> keep_store = std::move(store).value();
  ledger::BookKeeper bk(*keep_store, executor);
  mledger::ManagedLedgerFactory factory(*keep_store, bk);
  const auto config = writer_config(rate);
  auto ml = co_await factory.open(name, config);
  if (!ml.ok()) fail("open: " + ml.status().to_string());
  auto cursor = co_await (*ml)->open_cursor("sub", mledger::InitialPosition::kEarliest);
  if (!cursor.ok()) fail("cursor: " + cursor.status().to_string());
  std::fprintf(stdout, "READY\n");
  std::fflush(stdout);
  asio::co_spawn(executor, consume(*cursor), asio::detached);
  co_await produce(*ml);
}

}  // namespace
}  // namespace magnetar

int main(int argc, char** argv) {
  using namespace magnetar;
  if (argc != 4) {
    std::fprintf(stderr, "usage: %s <metadataStoreUrl> <name> <mark-delete rate>\n", argv[0]);
    return 1;
  }
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  log::Options options;
  options.level = log::Level::kWarn;
  log::init(options);
  asio::io_context io;
  asio::co_spawn(io, run(argv[1], argv[2], std::atof(argv[3])), [](std::exception_ptr e) {
    if (e) fail("the writer threw");
  });
  io.run();
  return 0;
}
