#include "autorecovery/auditor.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <charconv>

#include "ledger/bookkeeper.h"
#include "ledger/ledger_metadata.h"
#include "metadata/paths.h"

namespace magnetar::autorecovery {
namespace {

constexpr std::string_view kVotePrefix = "V_";
constexpr std::string_view kAvailablePath = "/ledgers/available";

std::optional<int64_t> vote_sequence(std::string_view name) {
  if (!name.starts_with(kVotePrefix)) return std::nullopt;
  int64_t v = 0;
  auto digits = name.substr(kVotePrefix.size());
  auto [p, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), v);
  if (ec != std::errc() || p != digits.data() + digits.size()) return std::nullopt;
  return v;
}

}  // namespace

Task<Result<std::map<int64_t, std::set<std::string>>>> scan_ledger_bookies(
    metadata::MetadataStore& store) {
  auto ids = co_await metadata::list_ledger_ids(store);
  if (!ids.ok()) co_return ids.status();
  std::map<int64_t, std::set<std::string>> out;
  for (int64_t id : *ids) {
    const std::array<std::string, 2> paths = {metadata::ledger_path(id),
                                              metadata::flat_ledger_path(id)};
    for (const std::string& path : paths) {
      auto got = co_await store.get(path);
      if (!got.ok()) co_return got.status();
      if (!got->has_value()) continue;  // deleted since the listing, or the other layout
      auto md = ledger::LedgerMetadata::from_json((*got)->value);
      if (!md.ok()) {
        log::Logger("autorecovery")
            .with("ledger_id", id)
            .warn("unreadable ledger metadata skipped by the audit: {}", md.status().to_string());
        break;
      }
      auto& named = out[id];
      for (const auto& segment : md->segments)
        named.insert(segment.ensemble.begin(), segment.ensemble.end());
      break;
    }
  }
  co_return out;
}

Task<Result<std::map<int64_t, std::vector<std::string>>>> mark_ledgers_of_lost_bookies(
    metadata::MetadataStore& store, UnderreplicationManager& urm, std::set<std::string> alive,
    std::set<std::string> also_lost) {
  auto scanned = co_await scan_ledger_bookies(store);
  if (!scanned.ok()) co_return scanned.status();
  std::map<int64_t, std::vector<std::string>> marked;
  for (const auto& [ledger_id, bookies] : *scanned) {
    std::vector<std::string> missing;
    for (const std::string& b : bookies) {
      if (!alive.count(b) || also_lost.count(b)) missing.push_back(b);
    }
    if (missing.empty()) continue;
    Status st = co_await urm.mark(ledger_id, missing);
    if (!st.ok()) co_return st;
    marked.emplace(ledger_id, std::move(missing));
  }
  co_return marked;
}

Task<Result<std::optional<std::string>>> current_auditor(metadata::MetadataStore& store) {
  // A vote may vanish between the listing and the read: then the next one is the auditor.
  for (int attempt = 0; attempt < 5; ++attempt) {
    auto votes = co_await store.children(std::string(kAuditorElectionPath));
    if (!votes.ok()) co_return votes.status();
    std::optional<std::pair<int64_t, std::string>> lowest;
    for (const std::string& v : *votes) {
      auto seq = vote_sequence(v);
      if (seq && (!lowest || *seq < lowest->first)) lowest.emplace(*seq, v);
    }
    if (!lowest) co_return std::optional<std::string>();
    auto got = co_await store.get(metadata::join_path(kAuditorElectionPath, lowest->second));
    if (!got.ok()) co_return got.status();
    if (!got->has_value()) continue;
    auto id = parse_bookie_id((*got)->value);
    co_return std::optional<std::string>(id ? *id : (*got)->value);
  }
  co_return Status(Errc::kUnavailable, "the auditor election keeps changing");
}

// ---------------------------------------------------------------------------------------

Auditor::Auditor(metadata::MetadataStore& store, Executor executor, std::string id,
                 AuditorOptions options)
    : store_(store),
      executor_(executor),
      id_(std::move(id)),
      options_(options),
      log_(log::Logger("autorecovery").with("auditor", id_)),
      urm_(store, id_),
      wake_(executor),
      done_(executor) {
  auto& registry = metrics::default_registry();
  marked_total_ = registry
                      .counter("magnetar_autorecovery_ledgers_marked_total",
                               "Ledgers the auditor marked under-replicated (a lost bookie in "
                               "their metadata)")
                      .value()
                      ->get();
  under_replicated_ = registry
                          .gauge("magnetar_autorecovery_under_replicated_ledgers",
                                 "Under-replicated ledger markers after the last audit (on the "
                                 "auditor's instance)")
                          .value()
                          ->get();
  auditor_gauge_ =
      registry
          .gauge("magnetar_autorecovery_auditor", "1 while this instance is the elected auditor")
          .value()
          ->get();
}

Auditor::~Auditor() {
  MAGNETAR_ASSERT(leads_ == 0 && !election_, "Auditor destroyed before stop() completed");
  if (listener_) store_.remove_listener(listener_);
}

Task<Status> Auditor::start() {
  if (election_) co_return Status::OK();
  Status layout = co_await urm_.ensure_layout();
  if (!layout.ok()) co_return layout;
  stopping_ = false;
  std::weak_ptr<bool> alive = alive_;
  auto on_change = [this, alive](const metadata::Notification& n) {
    if (alive.expired()) return;
    const std::string_view path = n.path;
    if (path.starts_with(kAvailablePath) || path == kLostBookieRecoveryDelayPath) wake_.notify();
  };
  listener_ = store_.add_listener(executor_, std::move(on_change));
  metadata::LeaderElection::Options election_options;
  election_options.prefix = std::string(kVotePrefix);
  auto leadership_changed = [this, alive](bool leading) {
    if (!alive.expired()) on_leadership(leading);
  };
  election_ = std::make_unique<metadata::LeaderElection>(
      &store_, executor_, std::string(kAuditorElectionPath), std::move(leadership_changed),
      election_options);
  Status st = co_await election_->start(encode_bookie_id(id_));
  if (!st.ok()) {
    Status stopped = co_await election_->stop();
    (void)stopped;
    election_.reset();
    co_return st;
  }
  co_return Status::OK();
}

Task<void> Auditor::stop() {
  if (!election_) co_return;
  stopping_ = true;
  ++term_;
  wake_.notify();
  Status left = co_await election_->stop();
  if (!left.ok()) log_.warn("leaving the auditor election: {}", left.to_string());
  while (leads_ > 0)
    co_await done_.wait_until(Wakeup::Clock::now() + std::chrono::milliseconds(50));
  election_.reset();
  auditor_gauge_->set(0);
}

void Auditor::on_leadership(bool leading) {
  ++term_;
  wake_.notify();
  if (!leading || stopping_) {
    log_.info("no longer the auditor");
    return;
  }
  log_.info("elected auditor");
  const uint64_t term = term_;
  ++leads_;
  auto finished = [this](std::exception_ptr thrown) {
    if (thrown) log_.error("the auditor's loop threw");
    --leads_;
    done_.notify();
  };
  asio::co_spawn(executor_, lead(term), std::move(finished));
}

Task<void> Auditor::lead(uint64_t term) {
  // One loop per term; a previous term's loop may still be finishing.
  while (term_running_)
    co_await done_.wait_until(Wakeup::Clock::now() + std::chrono::milliseconds(20));
  if (term != term_) co_return;
  term_running_ = true;
  auditor_gauge_->set(1);
  // BookKeeper records the auditor in the election node's value too (for operators).
  auto recorded = co_await store_.put(std::string(kAuditorElectionPath), encode_bookie_id(id_));
  (void)recorded;
  Status init = co_await urm_.init_lost_bookie_recovery_delay(
      static_cast<int>(options_.lost_bookie_recovery_delay.count()));
  if (!init.ok()) log_.warn("cannot create {}: {}", kLostBookieRecoveryDelayPath, init.to_string());

  using Clock = Wakeup::Clock;
  std::set<std::string> known;
  {
    auto registered = co_await ledger::registered_bookies(store_);
    if (registered.ok()) known.insert(registered->begin(), registered->end());
  }
  // The audit at election runs after the delay too: a bookie restarting along with the
  // previous auditor gets the same chance as any other.
  std::optional<Clock::time_point> loss_seen = Clock::now();
  auto next_periodic = options_.periodic_bookie_check.count() > 0
                           ? Clock::now() + options_.periodic_bookie_check
                           : Clock::time_point::max();
  while (term == term_ && !stopping_) {
    std::chrono::seconds delay = options_.lost_bookie_recovery_delay;
    auto live = co_await urm_.lost_bookie_recovery_delay();
    if (live.ok() && live->has_value()) delay = std::chrono::seconds(**live);
    const auto now = Clock::now();
    if (loss_seen && now >= *loss_seen + delay) {
      loss_seen.reset();
      co_await audit("lost bookies");
    } else if (now >= next_periodic) {
      next_periodic = now + options_.periodic_bookie_check;
      co_await audit("periodic bookie check");
    }
    if (term != term_ || stopping_) break;
    // Sleep until a change, the end of the delay, the periodic check, or 1 s (the delay node
    // is re-read then; stores that notify only what they watched still get it quickly).
    auto until = std::min(next_periodic, Clock::now() + std::chrono::seconds(1));
    if (loss_seen) until = std::min(until, *loss_seen + delay);
    co_await wake_.wait_until(until);
    if (term != term_ || stopping_) break;
    auto registered = co_await ledger::registered_bookies(store_);
    if (!registered.ok()) {
      log_.warn("cannot list the bookies: {}", registered.status().to_string());
      continue;
    }
    std::set<std::string> now_alive(registered->begin(), registered->end());
    std::vector<std::string> gone;
    std::set_difference(known.begin(), known.end(), now_alive.begin(), now_alive.end(),
                        std::back_inserter(gone));
    if (!gone.empty()) {
      if (!loss_seen) loss_seen = Clock::now();
      log_.warn("bookies lost: {}; auditing their ledgers in {} s", fmt::join(gone, ","),
                std::chrono::duration_cast<std::chrono::seconds>(*loss_seen + delay - Clock::now())
                    .count());
    }
    known = std::move(now_alive);
  }
  term_running_ = false;
  auditor_gauge_->set(0);
}

Task<void> Auditor::audit(const char* why) {
  const auto started = std::chrono::steady_clock::now();
  auto registered = co_await ledger::registered_bookies(store_);
  if (!registered.ok()) {
    log_.warn("audit ({}) skipped: cannot list the bookies: {}", why,
              registered.status().to_string());
    co_return;
  }
  std::set<std::string> alive(registered->begin(), registered->end());
  std::set<std::string> no_others;
  auto marked = co_await mark_ledgers_of_lost_bookies(store_, urm_, alive, no_others);
  if (!marked.ok()) {
    log_.warn("audit ({}) failed: {}", why, marked.status().to_string());
    co_return;
  }
  ++audits_;
  marked_total_->inc(marked->size());
  for (const auto& [ledger_id, missing] : *marked) {
    log_.with("ledger_id", ledger_id)
        .info("marked under-replicated: missing {}", fmt::join(missing, ","));
  }
  auto markers = co_await urm_.list();
  if (markers.ok()) under_replicated_->set(static_cast<double>(markers->size()));
  log_.info("audit ({}) done in {:.3f} s: {} bookies alive, {} ledgers marked", why,
            std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count(),
            alive.size(), marked->size());
}

}  // namespace magnetar::autorecovery
