// `magnetar bookkeeper [--conf FILE] [--set key=value] <command>`: BookKeeper's shell
// commands over our ledger client, under our names and BookKeeper's (listbookies, ...). The
// configuration (a bookkeeper.conf: --conf, else conf/bookkeeper.conf) gives metadataStoreUrl.

#include <fmt/format.h>

#include <chrono>
#include <cstdio>

#include "autorecovery/autorecovery.h"
#include "bookie/bookie_config.h"
#include "common/config.h"
#include "ledger/bookkeeper.h"
#include "tools/bookkeeper_shell_recovery.h"
#include "tools/commands.h"
#include "tools/server_setup.h"

namespace magnetar::tools {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

std::string preview(const Buffer& b) {
  std::string out;
  for (size_t i = 0; i < b.size() && i < 32; ++i) {
    char c = static_cast<char>(b.data()[i]);
    out += (c >= 0x20 && c < 0x7f) ? c : '.';
  }
  if (b.size() > 32) out += "...";
  return out;
}

Task<int> simpletest(ledger::BookKeeper& bk, const ShellArgs& a) {
  auto lh = co_await bk.create(a.ensemble, a.write_quorum, a.ack_quorum, "");
  if (!lh.ok()) {
    std::fprintf(stderr, "error: cannot create a ledger: %s\n", lh.status().to_string().c_str());
    co_return 1;
  }
  std::printf("Created ledger %lld (E=%d, Qw=%d, Qa=%d)\n",
              static_cast<long long>((*lh)->id().value()), a.ensemble, a.write_quorum,
              a.ack_quorum);
  std::string data(static_cast<size_t>(a.entry_size), 'x');
  auto start = Clock::now();
  // A window of adds in flight, as a real writer pipelines them.
  int next = 0, done = 0, failed = 0;
  auto executor = co_await asio::this_coro::executor;
  asio::steady_timer tick(executor);
  const int window = 256;
  while (done < a.entries) {
    while (next < a.entries && next - done < window) {
      ++next;
      auto writer = [&, h = *lh]() -> Task<void> {
        BufferChain payload(Buffer::copy_of(data));
        auto r = co_await h->add(std::move(payload));
        if (!r.ok() && failed++ == 0) {
          std::fprintf(stderr, "error: add failed: %s\n", r.status().to_string().c_str());
        }
        ++done;
      };
      asio::co_spawn(executor, writer, asio::detached);
    }
    tick.expires_after(std::chrono::milliseconds(1));
    co_await tick.async_wait(asio::use_awaitable);
  }
  double write_s = seconds_since(start);
  if (failed > 0) co_return 1;
  std::printf("Wrote %d entries of %d bytes in %.2f s: %.0f entries/s, %.2f MB/s\n", a.entries,
              a.entry_size, write_s, a.entries / write_s,
              a.entries * static_cast<double>(a.entry_size) / write_s / 1e6);
  start = Clock::now();
  auto entries = co_await (*lh)->read(EntryId{0}, EntryId{a.entries - 1});
  if (!entries.ok()) {
    std::fprintf(stderr, "error: read back failed: %s\n", entries.status().to_string().c_str());
    co_return 1;
  }
  double read_s = seconds_since(start);
  for (const auto& e : *entries) {
    if (e.payload.view() != data) {
      std::fprintf(stderr, "error: entry %lld read back differs\n",
                   static_cast<long long>(e.entry_id.value()));
      co_return 1;
    }
  }
  std::printf("Read %zu entries back in %.2f s: %.0f entries/s\n", entries->size(), read_s,
              static_cast<double>(entries->size()) / read_s);
  Status closed = co_await (*lh)->close();
  if (!closed.ok()) {
    std::fprintf(stderr, "error: close failed: %s\n", closed.to_string().c_str());
    co_return 1;
  }
  std::printf("Ledger %lld closed at entry %lld\n", static_cast<long long>((*lh)->id().value()),
              static_cast<long long>((*lh)->last_add_confirmed().value()));
  co_return 0;
}

Task<int> run_command(ledger::BookKeeper& bk, const ShellArgs& a) {
  if (a.command == "simpletest") co_return co_await simpletest(bk, a);
  auto recovery = co_await run_recovery_command(bk, a);
  if (recovery) co_return *recovery;
  if (a.command == "list-bookies") {
    auto all = co_await bk.store().children("/ledgers/available");
    auto ro = co_await bk.store().children("/ledgers/available/readonly");
    if (!all.ok()) {
      std::fprintf(stderr, "error: %s\n", all.status().to_string().c_str());
      co_return 1;
    }
    std::vector<std::string> writable, readonly = ro.ok() ? *ro : std::vector<std::string>{};
    for (const auto& b : *all) {
      if (b == "readonly") continue;
      if (std::find(readonly.begin(), readonly.end(), b) == readonly.end()) writable.push_back(b);
    }
    // BookKeeper's headers; without -rw, -ro or -a both lists.
    const bool both = !a.readwrite && !a.readonly && !a.all_bookies;
    if (a.all_bookies) {
      std::printf("All Bookies :\n");
      for (const auto& b : writable) std::printf("%s\n", b.c_str());
      for (const auto& b : readonly) std::printf("%s\n", b.c_str());
    }
    if (a.readwrite || both) {
      std::printf("ReadWrite Bookies :\n");
      for (const auto& b : writable) std::printf("%s\n", b.c_str());
    }
    if (a.readonly || both) {
      std::printf("Readonly Bookies :\n");
      for (const auto& b : readonly) std::printf("%s\n", b.c_str());
    }
    co_return 0;
  }
  if (a.command != "simpletest" && a.command != "list-ledgers" && a.ledger_id < 0) {
    std::fprintf(stderr, "error: %s needs a ledger id (LEDGER_ID or -l/--ledgerid)\n",
                 a.command.c_str());
    co_return 2;
  }
  if (a.command == "list-ledgers") {
    auto ids = co_await bk.list_ledgers();
    if (!ids.ok()) {
      std::fprintf(stderr, "error: %s\n", ids.status().to_string().c_str());
      co_return 1;
    }
    for (LedgerId id : *ids) {
      std::printf("ledgerID: %lld\n", static_cast<long long>(id.value()));
      if (!a.meta) continue;
      auto md = co_await bk.read_metadata(id);
      if (md.ok()) std::printf("%s\n", md->to_json().c_str());
    }
    co_return 0;
  }
  if (a.command == "ledger-metadata") {
    auto md = co_await bk.read_metadata(LedgerId{a.ledger_id});
    if (!md.ok()) {
      std::fprintf(stderr, "error: %s\n", md.status().to_string().c_str());
      co_return 1;
    }
    std::printf("ledgerID: %lld\n%s\n", static_cast<long long>(a.ledger_id), md->to_json().c_str());
    co_return 0;
  }
  if (a.command == "read-ledger") {
    auto md = co_await bk.read_metadata(LedgerId{a.ledger_id});
    if (!md.ok()) {
      std::fprintf(stderr, "error: %s\n", md.status().to_string().c_str());
      co_return 1;
    }
    std::string password = md->password;
    auto lh = co_await bk.open(LedgerId{a.ledger_id}, password, false);
    if (!lh.ok()) {
      std::fprintf(stderr, "error: %s\n", lh.status().to_string().c_str());
      co_return 1;
    }
    int64_t last = (*lh)->last_add_confirmed().value();
    int64_t from = std::max<int64_t>(a.from, 0);
    int64_t to = a.to < 0 ? last : std::min(a.to, last);
    if (to < from) co_return 0;
    auto entries = co_await (*lh)->read(EntryId{from}, EntryId{to});
    if (!entries.ok()) {
      std::fprintf(stderr, "error: %s\n", entries.status().to_string().c_str());
      co_return 1;
    }
    for (const auto& e : *entries) {
      std::printf("--------- Lid=%lld, Eid=%lld, EntrySize=%zu ---------\n",
                  static_cast<long long>(a.ledger_id), static_cast<long long>(e.entry_id.value()),
                  e.payload.size());
      if (a.print_entries) std::printf("%s\n", preview(e.payload).c_str());
    }
    co_return 0;
  }
  if (a.command == "delete-ledger") {
    Status st = co_await bk.remove(LedgerId{a.ledger_id});
    if (!st.ok()) {
      std::fprintf(stderr, "error: %s\n", st.to_string().c_str());
      co_return 1;
    }
    std::printf("Deleted ledger %lld\n", static_cast<long long>(a.ledger_id));
    co_return 0;
  }
  std::fprintf(stderr, "error: unknown command '%s'\n", a.command.c_str());
  co_return 2;
}

}  // namespace

int run_bookkeeper_shell(const ShellArgs& given) {
  ShellArgs args = given;
  bookie::BookieConfig config;
  ConfigSchema schema("bookie");
  bookie::bind_bookie_config(schema, &config);
  autorecovery::AutoRecoveryConfig recovery;  // the same file carries the auto-recovery keys
  autorecovery::bind_autorecovery_config(schema, &recovery);
  Status st = load_server_config(schema, args.server, "bookkeeper.conf");
  if (!st.ok()) {
    std::fprintf(stderr, "error: %s\n", st.message().c_str());
    return 2;
  }
  if (args.bookie_id.empty()) args.bookie_id = config.bookie_id();  // decommissionbookie
  log::set_level(log::Level::kWarn);
  asio::io_context io;
  int rc = 1;
  metadata::StoreOptions options = config.metadata.store_options();
  options.operation_timeout = std::chrono::seconds(10);
  std::string url = config.metadata.metadata_store_url;
  auto body = [&]() -> Task<void> {
    auto store = co_await metadata::open_store(url, options);
    if (!store.ok()) {
      std::fprintf(stderr, "error: cannot reach the metadata store '%s': %s\n", url.c_str(),
                   store.status().to_string().c_str());
      co_return;
    }
    {
      ledger::BookKeeper bk(**store, io.get_executor());
      rc = co_await run_command(bk, args);
    }
    (void)co_await (*store)->close();
  };
  asio::co_spawn(io, body, asio::detached);
  io.run();
  return rc;
}

}  // namespace magnetar::tools
