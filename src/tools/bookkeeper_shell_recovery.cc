#include "tools/bookkeeper_shell_recovery.h"

#include <fmt/format.h>

#include <algorithm>
#include <boost/asio/redirect_error.hpp>
#include <chrono>
#include <cstdio>
#include <set>
#include <sstream>

#include "autorecovery/auditor.h"
#include "autorecovery/ledger_replicator.h"
#include "autorecovery/underreplication.h"

namespace magnetar::tools {
namespace {

int shell_error(const Status& st) {
  std::fprintf(stderr, "error: %s\n", st.to_string().c_str());
  return 1;
}

std::set<std::string> split_bookies(const std::string& list) {
  std::set<std::string> out;
  std::stringstream in(list);
  std::string item;
  while (std::getline(in, item, ',')) {
    if (!item.empty()) out.insert(item);
  }
  return out;
}

Task<void> shell_sleep(std::chrono::milliseconds d) {
  asio::steady_timer timer(co_await asio::this_coro::executor, d);
  boost::system::error_code ignored;
  co_await timer.async_wait(asio::redirect_error(asio::use_awaitable, ignored));
}

// Ledgers whose metadata names any of `bookies`, with their state.
Task<Result<std::map<int64_t, bool>>> ledgers_naming(metadata::MetadataStore& store,
                                                    std::set<std::string> bookies,
                                                    ledger::BookKeeper& bk) {
  auto scanned = co_await autorecovery::scan_ledger_bookies(store);
  if (!scanned.ok()) co_return scanned.status();
  std::map<int64_t, bool> out;  // ledger -> closed
  for (const auto& [id, named] : *scanned) {
    bool hit = std::any_of(bookies.begin(), bookies.end(),
                           [&in = named](const std::string& b) { return in.count(b) != 0; });
    if (!hit) continue;
    auto md = co_await bk.read_metadata(LedgerId{id});
    if (!md.ok()) continue;  // deleted meanwhile
    out[id] = md->state == ledger::LedgerState::kClosed;
  }
  co_return out;
}

Task<int> list_underreplicated(ledger::BookKeeper& bk, const ShellArgs& a) {
  autorecovery::UnderreplicationManager urm(bk.store(), "shell");
  auto all = co_await urm.list();
  if (!all.ok()) co_return shell_error(all.status());
  size_t count = 0;
  for (const auto& u : *all) {
    const auto& r = u.data.replicas;
    if (!a.missing_replica.empty() &&
        std::find(r.begin(), r.end(), a.missing_replica) == r.end()) {
      continue;
    }
    if (!a.excluding_missing_replica.empty() &&
        std::find(r.begin(), r.end(), a.excluding_missing_replica) != r.end()) {
      continue;
    }
    ++count;
    if (a.only_count) continue;
    // BookKeeper's layout: the id, then tab-indented "Name : value" lines.
    std::printf("%lld\n", static_cast<long long>(u.ledger_id));
    if (u.data.ctime_ms >= 0) std::printf("\tCtime : %lld\n", static_cast<long long>(u.data.ctime_ms));
    if (a.print_missing_replica) {
      for (const std::string& b : r) std::printf("\tMissingReplica : %s\n", b.c_str());
    }
    if (a.print_worker_id) {
      auto owner = co_await urm.lock_owner(u.ledger_id);
      if (owner.ok() && owner->has_value()) {
        std::printf("\tReplicationWorkerId : %s\n", (*owner)->c_str());
      }
    }
  }
  if (a.only_count) std::printf("%zu\n", count);
  co_return 0;
}

Task<int> who_is_auditor(ledger::BookKeeper& bk) {
  auto auditor = co_await autorecovery::current_auditor(bk.store());
  if (!auditor.ok()) co_return shell_error(auditor.status());
  if (!auditor->has_value()) {
    std::fprintf(stderr, "No auditor elected\n");
    co_return 1;
  }
  std::printf("Auditor: %s\n", (*auditor)->c_str());
  co_return 0;
}

Task<int> autorecovery_switch(ledger::BookKeeper& bk, const ShellArgs& a) {
  autorecovery::UnderreplicationManager urm(bk.store(), "shell");
  Status layout = co_await urm.ensure_layout();
  if (!layout.ok()) co_return shell_error(layout);
  if (a.enable || a.disable) {
    Status st = co_await urm.set_replication_enabled(a.enable);
    if (!st.ok()) co_return shell_error(st);
  }
  auto enabled = co_await urm.replication_enabled();
  if (!enabled.ok()) co_return shell_error(enabled.status());
  std::printf("Autorecovery is %s.\n", *enabled ? "enabled" : "disabled");
  co_return 0;
}

Task<int> recover_bookies(ledger::BookKeeper& bk, const ShellArgs& a) {
  const std::set<std::string> lost = split_bookies(a.recover_bookies);
  if (lost.empty()) {
    std::fprintf(stderr, "error: recover needs the bookie(s) to recover: host:port[,host:port]\n");
    co_return 2;
  }
  auto ledgers = co_await ledgers_naming(bk.store(), lost, bk);
  if (!ledgers.ok()) co_return shell_error(ledgers.status());
  if (a.query) {
    for (const auto& [id, closed] : *ledgers) {
      std::printf("ledgerID: %lld%s\n", static_cast<long long>(id), closed ? "" : " (open)");
    }
    co_return 0;
  }
  autorecovery::ReplicatorOptions options;
  options.open_ledger_grace = std::chrono::milliseconds(0);  // recover fences open ledgers now
  autorecovery::LedgerReplicator replicator(bk, options);
  int failed = 0;
  const auto started = std::chrono::steady_clock::now();
  for (const auto& [id, closed] : *ledgers) {
    if (!closed && a.skip_open_ledgers) {
      std::printf("ledger %lld: open, skipped (-skipOpenLedgers)\n", static_cast<long long>(id));
      continue;
    }
    if (a.dry_run) {
      std::printf("ledger %lld: would be re-replicated%s\n", static_cast<long long>(id),
                  closed ? "" : " (open: recovered first)");
      continue;
    }
    auto done = co_await replicator.replicate(id, lost);
    if (!done.ok()) {
      ++failed;
      std::fprintf(stderr, "ledger %lld: %s\n", static_cast<long long>(id),
                   done.status().to_string().c_str());
      continue;
    }
    std::printf("ledger %lld: %d fragments, %lld entries re-replicated%s\n",
                static_cast<long long>(id), done->fragments, static_cast<long long>(done->entries),
                done->recovered ? " (recovered first)" : "");
  }
  if (a.dry_run) co_return 0;
  std::printf("Recovered %zu ledgers of %s in %.2f s, %d failed\n", ledgers->size() - failed,
              a.recover_bookies.c_str(),
              std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count(),
              failed);
  if (failed > 0) co_return 1;
  if (a.delete_cookie) {
    for (const std::string& b : lost) {
      Status st = co_await bk.store().remove("/ledgers/cookies/" + b);
      if (!st.ok() && !st.is(Errc::kNotFound)) co_return shell_error(st);
    }
  }
  co_return 0;
}

Task<int> decommission_bookie(ledger::BookKeeper& bk, const ShellArgs& a) {
  const std::string bookie = a.bookie_id;
  auto registered = co_await ledger::registered_bookies(bk.store());
  if (!registered.ok()) co_return shell_error(registered.status());
  if (std::find(registered->begin(), registered->end(), bookie) != registered->end()) {
    std::fprintf(stderr,
                 "error: bookie %s is still registered under /ledgers/available: stop it "
                 "before decommissioning it\n",
                 bookie.c_str());
    co_return 1;
  }
  autorecovery::UnderreplicationManager urm(bk.store(), "shell");
  Status layout = co_await urm.ensure_layout();
  if (!layout.ok()) co_return shell_error(layout);
  std::set<std::string> only{bookie};
  auto ledgers = co_await ledgers_naming(bk.store(), only, bk);
  if (!ledgers.ok()) co_return shell_error(ledgers.status());
  const std::vector<std::string> missing = {bookie};
  for (const auto& [id, closed] : *ledgers) {
    Status st = co_await urm.mark(id, missing);
    if (!st.ok()) co_return shell_error(st);
  }
  std::printf("Marked %zu ledgers of %s under-replicated; waiting for auto-recovery\n",
              ledgers->size(), bookie.c_str());
  std::fflush(stdout);
  auto auditor = co_await autorecovery::current_auditor(bk.store());
  if (auditor.ok() && !auditor->has_value()) {
    std::fprintf(stderr,
                 "warning: no auto-recovery instance runs (no auditor elected): start `magnetar "
                 "autorecovery` or set autoRecoveryDaemonEnabled=true on the bookies\n");
  }
  const auto started = std::chrono::steady_clock::now();
  auto last_report = started;
  while (true) {
    auto left = co_await ledgers_naming(bk.store(), only, bk);
    if (!left.ok()) co_return shell_error(left.status());
    if (left->empty()) break;
    if (std::chrono::steady_clock::now() - last_report >= std::chrono::seconds(10)) {
      last_report = std::chrono::steady_clock::now();
      std::printf("%zu ledgers still have copies on %s\n", left->size(), bookie.c_str());
      std::fflush(stdout);
    }
    co_await shell_sleep(std::chrono::milliseconds(500));
  }
  Status cookie = co_await bk.store().remove("/ledgers/cookies/" + bookie);
  if (!cookie.ok() && !cookie.is(Errc::kNotFound)) co_return shell_error(cookie);
  std::printf("Decommission of bookie %s completed in %.1f s\n", bookie.c_str(),
              std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count());
  co_return 0;
}

}  // namespace

Task<std::optional<int>> run_recovery_command(ledger::BookKeeper& bk, const ShellArgs& a) {
  int rc = 0;
  if (a.command == "listunderreplicated") {
    rc = co_await list_underreplicated(bk, a);
  } else if (a.command == "whoisauditor") {
    rc = co_await who_is_auditor(bk);
  } else if (a.command == "autorecovery") {
    rc = co_await autorecovery_switch(bk, a);
  } else if (a.command == "recover") {
    rc = co_await recover_bookies(bk, a);
  } else if (a.command == "decommissionbookie") {
    rc = co_await decommission_bookie(bk, a);
  } else {
    co_return std::optional<int>();
  }
  co_return std::optional<int>(rc);
}

}  // namespace magnetar::tools
