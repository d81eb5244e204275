#include "autorecovery/ledger_replicator.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <boost/asio/redirect_error.hpp>

#include "metadata/paths.h"
#include "protocol/bookie_entry.h"

namespace magnetar::autorecovery {
namespace {

// The copies in flight of one fragment, shared with their completion handlers (which run on
// the same executor as the coroutine waiting in wait_copies).
struct CopyWindow {
  explicit CopyWindow(const Executor& executor) : wake(executor) {}
  int running = 0;
  int64_t copied = 0;
  Status error;  // the first failure
  asio::steady_timer wake;
};

Task<void> wait_for_one_copy(const std::shared_ptr<CopyWindow>& window) {
  std::shared_ptr<CopyWindow> w = window;
  w->wake.expires_at(asio::steady_timer::time_point::max());
  boost::system::error_code ignored;  // cancelled by a finishing copy
  co_await w->wake.async_wait(asio::redirect_error(asio::use_awaitable, ignored));
}

// Reads entry `entry_id` from the first of `sources` that serves an intact copy and stores
// those exact bytes on `target` with a recovery add.
Task<Status> copy_one_entry(ledger::BookieClient& client, int64_t ledger_id, int64_t entry_id,
                            std::vector<std::string> sources, std::string target,
                            std::string master_key) {
  Status last = Status(Errc::kUnavailable,
                       fmt::format("ledger {}: entry {} has no surviving replica to copy from",
                                   ledger_id, entry_id));
  for (const std::string& source : sources) {
    bookie_wire::ReadRequest read;
    read.set_ledger_id(ledger_id);
    read.set_entry_id(entry_id);
    auto got = co_await client.read(source, std::move(read));
    if (!got.ok()) {
      last = got.status();
      continue;
    }
    if (got->status != bookie_wire::OK) {
      last = Status(Errc::kUnavailable,
                    fmt::format("ledger {}: bookie {} answered {} for entry {}", ledger_id, source,
                                bookie_wire::BookieStatus_Name(got->status), entry_id));
      continue;
    }
    auto intact = protocol::unpack_entry(got->entry, ledger_id, entry_id, nullptr);
    if (!intact.ok()) {
      last = intact.status();
      continue;
    }
    bookie_wire::AddRequest add;
    add.set_ledger_id(ledger_id);
    add.set_entry_id(entry_id);
    add.set_master_key(master_key);
    add.set_recovery(true);
    BufferChain packaged(std::move(got->entry));
    auto stored = co_await client.add(target, std::move(add), std::move(packaged));
    if (!stored.ok()) co_return stored.status();
    if (stored->status != bookie_wire::OK) {
      co_return Status(Errc::kUnavailable,
                       fmt::format("ledger {}: replacement bookie {} answered {} for entry {}",
                                   ledger_id, target,
                                   bookie_wire::BookieStatus_Name(stored->status), entry_id));
    }
    co_return Status::OK();
  }
  co_return last;
}

bool names_any(const std::vector<std::string>& ensemble, const std::set<std::string>& lost) {
  return std::any_of(ensemble.begin(), ensemble.end(),
                     [&](const std::string& b) { return lost.count(b) != 0; });
}

bool segments_name_any(const ledger::LedgerMetadata& md, const std::set<std::string>& lost) {
  return std::any_of(md.segments.begin(), md.segments.end(),
                     [&](const ledger::Segment& s) { return names_any(s.ensemble, lost); });
}

}  // namespace

struct LedgerReplicator::Stored {
  std::string path;
  ledger::LedgerMetadata md;
  int64_t version = 0;
};

LedgerReplicator::LedgerReplicator(ledger::BookKeeper& bk, ReplicatorOptions options)
    : bk_(bk), options_(options), log_("autorecovery") {
  options_.entry_batch_size = std::max(options_.entry_batch_size, 1);
  auto& registry = metrics::default_registry();
  fragments_total_ = registry
                         .counter("magnetar_autorecovery_rereplicated_fragments_total",
                                  "Ledger fragments (segment positions) copied to a replacement "
                                  "bookie and replaced in the ledger metadata")
                         .value()
                         ->get();
  entries_total_ = registry
                       .counter("magnetar_autorecovery_rereplicated_entries_total",
                                "Entries copied to replacement bookies by re-replication")
                       .value()
                       ->get();
}

Task<Result<LedgerReplicator::Stored>> LedgerReplicator::read_stored(int64_t ledger_id) {
  const std::array<std::string, 2> paths = {ledger::ledger_path(ledger_id),
                                            metadata::flat_ledger_path(ledger_id)};
  for (const std::string& path : paths) {
    auto got = co_await bk_.store().get(path);
    if (!got.ok()) co_return got.status();
    if (!got->has_value()) continue;
    auto md = ledger::LedgerMetadata::from_json((*got)->value);
    if (!md.ok()) co_return md.status();
    Stored out;
    out.path = path;
    out.md = std::move(md).value();
    out.version = (*got)->stat.version;
    co_return out;
  }
  co_return Status(Errc::kNotFound, fmt::format("ledger {} does not exist", ledger_id));
}

Task<Result<ReplicationOutcome>> LedgerReplicator::replicate(int64_t ledger_id,
                                                             std::set<std::string> lost,
                                                             const bool* stopping) {
  const log::Logger log = log_.with("ledger_id", ledger_id);
  ReplicationOutcome outcome;
  auto stored = co_await read_stored(ledger_id);
  if (!stored.ok() && stored.status().is(Errc::kNotFound)) co_return outcome;  // deleted
  if (!stored.ok()) co_return stored.status();
  if (!segments_name_any(stored->md, lost)) co_return outcome;

  // An open ledger whose writer already replaced the lost bookie in its current ensemble: the
  // earlier fragments are immutable (every entry below an ensemble change was confirmed) and
  // are copied under the live writer, which takes the metadata change into its own next
  // update (LedgerHandle::write_metadata rebases on it).
  if (stored->md.state != ledger::LedgerState::kClosed &&
      names_any(stored->md.segments.back().ensemble, lost)) {
    // Give the writer the grace period to replace the bookie itself.
    log.info("ledger is open and its last ensemble names a lost bookie: waiting {} ms before "
             "recovering it",
             options_.open_ledger_grace.count());
    asio::steady_timer timer(bk_.executor());
    const auto until = std::chrono::steady_clock::now() + options_.open_ledger_grace;
    while (std::chrono::steady_clock::now() < until) {
      if (stopping && *stopping) co_return Status(Errc::kCancelled, "stopping");
      timer.expires_at(std::min(until, std::chrono::steady_clock::now() +
                                           std::chrono::milliseconds(100)));
      boost::system::error_code ignored;
      co_await timer.async_wait(asio::redirect_error(asio::use_awaitable, ignored));
    }
    stored = co_await read_stored(ledger_id);
    if (!stored.ok() && stored.status().is(Errc::kNotFound)) co_return outcome;
    if (!stored.ok()) co_return stored.status();
    if (stored->md.state != ledger::LedgerState::kClosed &&
        names_any(stored->md.segments.back().ensemble, lost)) {
      std::string password = stored->md.password;
      auto recovered = co_await bk_.open(LedgerId{ledger_id}, std::move(password), true);
      if (!recovered.ok()) {
        co_return Status(recovered.status().code(),
                         fmt::format("ledger {}: recovery of the open ledger failed: {}",
                                     ledger_id, recovered.status().message()));
      }
      outcome.recovered = true;
      log.info("recovered the open ledger (fenced, closed at entry {})",
               (*recovered)->metadata().last_entry_id);
      stored = co_await read_stored(ledger_id);
      if (!stored.ok()) co_return stored.status();
    }
  }

  ledger::LedgerMetadata md = stored->md;
  for (size_t si = 0; si < md.segments.size(); ++si) {
    for (int p = 0; p < md.ensemble_size; ++p) {
      const std::string from = md.segments[si].ensemble[static_cast<size_t>(p)];
      if (!lost.count(from)) continue;
      if (stopping && *stopping) co_return Status(Errc::kCancelled, "stopping");
      auto available = co_await bk_.available_bookies();
      if (!available.ok()) co_return available.status();
      std::set<std::string> excluded = lost;
      excluded.insert(md.segments[si].ensemble.begin(), md.segments[si].ensemble.end());
      auto target = bk_.placement().replace_bookie(md.segments[si].ensemble, p, md.write_quorum,
                                                   md.ack_quorum, *available, excluded);
      if (!target.ok()) {
        bk_.count_placement_failure(true);
        co_return Status(Errc::kUnavailable,
                         fmt::format("ledger {}: no bookie to replace {} in the segment from "
                                     "entry {}: {}",
                                     ledger_id, from, md.segments[si].first_entry_id,
                                     target.status().message()));
      }
      auto copied = co_await copy_fragment(md, si, p, *target, lost, stopping);
      if (!copied.ok()) co_return copied.status();
      Status replaced = co_await replace_in_metadata(ledger_id, md.segments[si].first_entry_id, p,
                                                     from, *target);
      if (!replaced.ok()) co_return replaced;
      ++outcome.fragments;
      outcome.entries += *copied;
      fragments_total_->inc();
      log.with("bookie", from)
          .info("re-replicated the fragment from entry {} ({} entries) to {}",
                md.segments[si].first_entry_id, *copied, *target);
      auto again = co_await read_stored(ledger_id);
      if (!again.ok()) co_return again.status();
      md = std::move(again->md);
      if (si >= md.segments.size()) break;
    }
  }
  co_return outcome;
}

Task<Result<int64_t>> LedgerReplicator::copy_fragment(const ledger::LedgerMetadata& md,
                                                      size_t segment_index, int position,
                                                      std::string target,
                                                      std::set<std::string> lost,
                                                      const bool* stopping) {
  const ledger::Segment& segment = md.segments[segment_index];
  const int64_t first = segment.first_entry_id;
  const int64_t last = segment_index + 1 < md.segments.size()
                           ? md.segments[segment_index + 1].first_entry_id - 1
                           : md.last_entry_id;
  const std::vector<std::string> ensemble = segment.ensemble;
  const std::string master_key = md.master_key();
  const int64_t ledger_id = md.ledger_id;
  auto executor = co_await asio::this_coro::executor;
  auto window = std::make_shared<CopyWindow>(executor);
  for (int64_t e = first; e <= last && window->error.ok(); ++e) {
    const std::vector<int> write_set = md.write_set(e);
    if (std::find(write_set.begin(), write_set.end(), position) == write_set.end()) continue;
    std::vector<std::string> sources;
    for (int i : write_set) {
      const std::string& b = ensemble[static_cast<size_t>(i)];
      if (i != position && !lost.count(b)) sources.push_back(b);
    }
    while (window->running >= options_.entry_batch_size && window->error.ok()) {
      co_await wait_for_one_copy(window);
    }
    if (!window->error.ok()) break;
    if (stopping && *stopping) {
      window->error = Status(Errc::kCancelled, "stopping");
      break;
    }
    ++window->running;
    auto finished = [window](std::exception_ptr thrown, Status st) {
      if (thrown) st = Status(Errc::kInternal, "an entry copy threw");
      if (st.ok()) {
        ++window->copied;
      } else if (window->error.ok()) {
        window->error = std::move(st);
      }
      --window->running;
      window->wake.cancel();
    };
    asio::co_spawn(executor,
                   copy_one_entry(bk_.client(), ledger_id, e, std::move(sources), target,
                                  master_key),
                   std::move(finished));
  }
  while (window->running > 0) co_await wait_for_one_copy(window);
  entries_total_->inc(window->copied);
  if (!window->error.ok()) co_return window->error;
  co_return window->copied;
}

Task<Status> LedgerReplicator::replace_in_metadata(int64_t ledger_id, int64_t first_entry_id,
                                                   int position, std::string from,
                                                   std::string to) {
  for (int attempt = 0; attempt < 20; ++attempt) {
    auto stored = co_await read_stored(ledger_id);
    if (!stored.ok()) co_return stored.status();
    ledger::LedgerMetadata md = std::move(stored->md);
    auto segment = std::find_if(md.segments.begin(), md.segments.end(), [&](const auto& s) {
      return s.first_entry_id == first_entry_id;
    });
    if (segment == md.segments.end() ||
        segment->ensemble[static_cast<size_t>(position)] != from) {
      co_return Status::OK();  // replaced by someone else meanwhile
    }
    segment->ensemble[static_cast<size_t>(position)] = to;
    Status valid = md.validate();
    if (!valid.ok()) co_return valid;
    metadata::PutOptions cas;
    cas.expected_version = stored->version;
    auto put = co_await bk_.store().put(stored->path, md.to_json(), cas);
    if (put.ok()) co_return Status::OK();
    if (!put.status().is(Errc::kBadVersion)) co_return put.status();
  }
  co_return Status(Errc::kUnavailable,
                   fmt::format("ledger {}: the metadata kept changing while replacing {}",
                               ledger_id, from));
}

}  // namespace magnetar::autorecovery
