#include "autorecovery/replication_worker.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>

namespace magnetar::autorecovery {

ReplicationWorker::ReplicationWorker(ledger::BookKeeper& bk, std::string id, WorkerOptions options)
    : bk_(bk),
      urm_(bk.store(), std::move(id)),
      replicator_(bk, options.replicator),
      options_(options),
      log_("autorecovery"),
      wake_(bk.executor()),
      done_(bk.executor()) {
  auto& registry = metrics::default_registry();
  completed_total_ = registry
                         .counter("magnetar_autorecovery_ledgers_rereplicated_total",
                                  "Under-replicated ledgers this worker re-replicated (markers "
                                  "completed)")
                         .value()
                         ->get();
  failures_total_ = registry
                        .counter("magnetar_autorecovery_rereplication_failures_total",
                                 "Re-replication attempts that failed (the ledger is retried "
                                 "after rwRereplicateBackoffMs)")
                        .value()
                        ->get();
}

ReplicationWorker::~ReplicationWorker() {
  MAGNETAR_ASSERT(tasks_ == 0, "ReplicationWorker destroyed before stop() completed");
  if (listener_) bk_.store().remove_listener(listener_);
}

Task<Status> ReplicationWorker::start() {
  if (started_) co_return Status::OK();
  Status layout = co_await urm_.ensure_layout();
  if (!layout.ok()) co_return layout;
  std::weak_ptr<bool> alive = alive_;
  auto on_change = [this, alive](const metadata::Notification& n) {
    if (alive.expired()) return;
    const std::string_view path = n.path;
    if (path.starts_with(kMarkersRoot) || path.starts_with(kLocksRoot) || path == kDisablePath) {
      wake_.notify();
    }
  };
  listener_ = bk_.store().add_listener(bk_.executor(), std::move(on_change));
  started_ = true;
  ++tasks_;
  auto finished = [this](std::exception_ptr thrown) {
    if (thrown) log_.error("the replication worker's loop threw");
    --tasks_;
    done_.notify();
  };
  asio::co_spawn(bk_.executor(), run(), std::move(finished));
  log_.info("replication worker started (entry batch {}, open ledger grace {} ms, back-off {} ms)",
            options_.replicator.entry_batch_size, options_.replicator.open_ledger_grace.count(),
            options_.backoff.count());
  co_return Status::OK();
}

Task<void> ReplicationWorker::stop() {
  if (!started_) co_return;
  stopping_ = true;
  wake_.notify();
  while (tasks_ > 0)
    co_await done_.wait_until(Wakeup::Clock::now() + std::chrono::milliseconds(50));
  started_ = false;
}

Task<void> ReplicationWorker::run() {
  while (!stopping_) {
    const auto poll_deadline = Wakeup::Clock::now() + options_.poll;
    auto enabled = co_await urm_.replication_enabled();
    if (enabled.ok() && !*enabled) {
      co_await wake_.wait_until(poll_deadline);
      continue;
    }
    auto claimed = co_await urm_.claim();
    if (stopping_) {
      if (claimed.ok() && claimed->has_value()) {
        Status released = co_await urm_.release((*claimed)->ledger_id);
        (void)released;
      }
      break;
    }
    if (!claimed.ok()) {
      log_.warn("cannot read the under-replicated ledgers: {}", claimed.status().to_string());
      co_await wake_.wait_until(Wakeup::Clock::now() + options_.backoff);
      continue;
    }
    if (!claimed->has_value()) {
      co_await wake_.wait_until(poll_deadline);
      continue;
    }
    co_await handle(std::move(**claimed));
  }
}

Task<void> ReplicationWorker::handle(Claim claim) {
  const int64_t ledger_id = claim.ledger_id;
  const log::Logger log = log_.with("ledger_id", ledger_id);
  const auto started = std::chrono::steady_clock::now();
  Result<ReplicationOutcome> outcome = Status(Errc::kInternal, "not run");
  auto md = co_await bk_.read_metadata(LedgerId{ledger_id});
  if (!md.ok() && md.status().is(Errc::kNotFound)) {
    outcome = ReplicationOutcome();  // deleted: nothing to keep
  } else if (!md.ok()) {
    outcome = md.status();
  } else {
    auto registered = co_await ledger::registered_bookies(bk_.store());
    if (!registered.ok()) {
      outcome = registered.status();
    } else {
      std::set<std::string> alive(registered->begin(), registered->end());
      std::set<std::string> lost;
      for (const auto& segment : md->segments) {
        for (const std::string& b : segment.ensemble) {
          if (!alive.count(b)) lost.insert(b);
        }
      }
      if (lost.empty()) {
        log.info("no bookie of the ledger is missing any more (marked for {})",
                 fmt::join(claim.data.replicas, ","));
        outcome = ReplicationOutcome();
      } else {
        log.info("re-replicating the copies of lost bookies {}", fmt::join(lost, ","));
        outcome = co_await replicator_.replicate(ledger_id, std::move(lost), &stopping_);
      }
    }
  }
  if (outcome.ok()) {
    Status done = co_await urm_.complete(ledger_id);
    if (!done.ok()) log.warn("cannot complete the marker: {}", done.to_string());
    failed_attempts_.erase(ledger_id);
    ++completed_;
    completed_total_->inc();
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    log.info("ledger re-replicated in {:.2f} s: {} fragments, {} entries copied{}", seconds,
             outcome->fragments, outcome->entries, outcome->recovered ? ", recovered first" : "");
    co_return;
  }
  std::chrono::milliseconds delay = options_.backoff;
  if (outcome.status().is(Errc::kCancelled)) {
    delay = std::chrono::milliseconds(0);
  } else {
    const int n = ++failed_attempts_[ledger_id];
    delay = options_.backoff * std::min(1 << std::min(n - 1, 3), 8);
    ++failures_;
    failures_total_->inc();
    log.warn("re-replication failed (attempt {}), releasing the ledger in {} ms: {}", n,
             delay.count(), outcome.status().to_string());
  }
  if (delay.count() == 0 || stopping_) {
    Status released = co_await urm_.release(ledger_id);
    (void)released;
    co_return;
  }
  ++tasks_;
  auto finished = [this](std::exception_ptr) {
    --tasks_;
    done_.notify();
  };
  asio::co_spawn(bk_.executor(), release_after(ledger_id, delay), std::move(finished));
}

Task<void> ReplicationWorker::release_after(int64_t ledger_id, std::chrono::milliseconds delay) {
  asio::steady_timer timer(bk_.executor());
  const auto until = std::chrono::steady_clock::now() + delay;
  while (!stopping_ && std::chrono::steady_clock::now() < until) {
    timer.expires_at(
        std::min(until, std::chrono::steady_clock::now() + std::chrono::milliseconds(100)));
    boost::system::error_code ignored;
    co_await timer.async_wait(asio::redirect_error(asio::use_awaitable, ignored));
  }
  Status released = co_await urm_.release(ledger_id);
  if (!released.ok()) {
    log_.with("ledger_id", ledger_id).warn("cannot release the lock: {}", released.to_string());
  }
  wake_.notify();
}

}  // namespace magnetar::autorecovery
