#include "autorecovery/autorecovery.h"

#include <fmt/format.h>

#include <boost/asio/redirect_error.hpp>
#include <future>

#include "autorecovery/auditor.h"
#include "autorecovery/replication_worker.h"
#include "common/config.h"
#include "common/gate.h"
#include "common/logging.h"
#include "ledger/bookkeeper.h"
#include "ledger/placement.h"
#include "ledger/topology_watcher.h"

namespace magnetar::autorecovery {

void bind_autorecovery_config(ConfigSchema& s, AutoRecoveryConfig* c) {
  s.bind("autoRecoveryDaemonEnabled", &c->daemon_enabled,
         "Run auto-recovery (an auditor candidate and a replication worker) inside the bookie; "
         "false (BookKeeper's default): run `magnetar autorecovery` instead");
  s.bind("lostBookieRecoveryDelay", &c->lost_bookie_recovery_delay_s,
         "Seconds the auditor waits after a bookie disappears before marking its ledgers (the "
         "node /ledgers/underreplication/lostBookieRecoveryDelay overrides it live)")
      .range(0, 86400 * 7);
  s.bind("auditorPeriodicBookieCheckInterval", &c->periodic_bookie_check_interval_s,
         "Seconds between audits of every ledger against the registered bookies (0: never)")
      .range(0, int64_t{1} << 31);
  s.bind("openLedgerRereplicationGracePeriod", &c->open_ledger_grace_ms,
         "Milliseconds a replication worker leaves the writer of an open ledger to replace a "
         "lost bookie itself before it recovers (fences and closes) the ledger")
      .range(0, 86400000);
  s.bind("rereplicationEntryBatchSize", &c->entry_batch_size,
         "Entries a replication worker copies in parallel")
      .range(1, 100000);
  s.bind("rwRereplicateBackoffMs", &c->backoff_ms,
         "Milliseconds a failed ledger stays locked before any worker retries it")
      .range(0, 3600000);
  s.bind("ensemblePlacementPolicy", &c->placement_policy,
         "Placement of replacement bookies: a class name containing RegionAware, Rackaware "
         "(default) or Default");
}

struct AutoRecoveryService::Parts {
  std::shared_ptr<metadata::MetadataStore> store;
  Gate gate;
  std::unique_ptr<ledger::BookKeeper> bk;
  std::unique_ptr<ledger::TopologyWatcher> topology;
  std::unique_ptr<Auditor> auditor;
  std::unique_ptr<ReplicationWorker> worker;
};

namespace {

std::shared_ptr<ledger::PlacementPolicy> placement_for(const std::string& policy) {
  if (policy.find("RegionAware") != std::string::npos) {
    // A replacement keeps each write set's regions as the lost bookie had them: a segment
    // with one copy per region waits for a bookie of the lost region (the write sets need
    // only span two regions, as the brokers' acknowledgements do).
    ledger::RegionAwareOptions options;
    options.acks_span_regions = true;
    options.replace_keeps_spread = true;
    return ledger::make_region_aware_placement(ledger::BookieTopology{}, options);
  }
  if (policy.find("Default") != std::string::npos) return ledger::make_default_placement(0);
  return ledger::make_rack_aware_placement(ledger::BookieTopology{});
}

}  // namespace

Result<std::unique_ptr<AutoRecoveryService>> AutoRecoveryService::start(
    const AutoRecoveryConfig& config, std::shared_ptr<metadata::MetadataStore> store,
    std::string id) {
  std::unique_ptr<AutoRecoveryService> service(new AutoRecoveryService());
  service->parts_ = std::make_unique<Parts>();
  Parts& parts = *service->parts_;
  parts.store = std::move(store);
  Executor executor = service->io_.get_executor();
  ledger::BookKeeperOptions bk_options;
  bk_options.placement = placement_for(config.placement_policy);
  parts.bk = std::make_unique<ledger::BookKeeper>(*parts.store, executor, bk_options);
  std::shared_ptr<ledger::PlacementPolicy> placement = bk_options.placement;
  auto on_topology = [placement](const ledger::BookieTopology& t) { placement->update_topology(t); };
  parts.topology = std::make_unique<ledger::TopologyWatcher>(*parts.store, executor, parts.gate,
                                                             std::move(on_topology));
  AuditorOptions auditor_options;
  auditor_options.lost_bookie_recovery_delay = std::chrono::seconds(config.lost_bookie_recovery_delay_s);
  auditor_options.periodic_bookie_check =
      std::chrono::seconds(config.periodic_bookie_check_interval_s);
  parts.auditor = std::make_unique<Auditor>(*parts.store, executor, id, auditor_options);
  WorkerOptions worker_options;
  worker_options.backoff = std::chrono::milliseconds(config.backoff_ms);
  worker_options.replicator.entry_batch_size = config.entry_batch_size;
  worker_options.replicator.open_ledger_grace = std::chrono::milliseconds(config.open_ledger_grace_ms);
  parts.worker = std::make_unique<ReplicationWorker>(*parts.bk, id, worker_options);

  service->thread_ = std::thread([io = &service->io_] {
    auto guard = asio::make_work_guard(*io);
    io->run();
  });
  std::promise<Status> started;
  auto begin = [&parts, &started, svc = service.get()]() -> Task<void> {
    Status topo = co_await parts.topology->start();
    if (!topo.ok()) {
      log::Logger("autorecovery").warn("placement without /bookies racks: {}", topo.to_string());
    }
    Status st = co_await parts.auditor->start();
    if (st.ok()) st = co_await parts.worker->start();
    svc->auditor_.store(parts.auditor->is_auditor());
    started.set_value(st);
  };
  asio::co_spawn(service->io_, begin, asio::detached);
  Status st = started.get_future().get();
  if (!st.ok()) {
    service->stop();
    return Status(st.code(), "auto-recovery did not start: " + st.message());
  }
  // is_auditor() follows the auditor on the service's loop.
  auto follow = [&parts, svc = service.get()]() -> Task<void> {
    asio::steady_timer timer(co_await asio::this_coro::executor);
    while (parts.auditor) {
      svc->auditor_.store(parts.auditor->is_auditor());
      timer.expires_after(std::chrono::milliseconds(200));
      boost::system::error_code ec;
      co_await timer.async_wait(asio::redirect_error(asio::use_awaitable, ec));
      if (ec) break;
    }
  };
  spawn_in(parts.gate, service->io_.get_executor(), follow);
  log::Logger("autorecovery").info("auto-recovery running as {}", id);
  return service;
}

AutoRecoveryService::~AutoRecoveryService() { stop(); }

void AutoRecoveryService::stop() {
  if (stopped_) return;
  stopped_ = true;
  if (parts_ && thread_.joinable()) {
    Parts& parts = *parts_;
    std::promise<void> done;
    auto end = [&parts, &done]() -> Task<void> {
      co_await parts.worker->stop();
      co_await parts.auditor->stop();
      parts.topology->stop();
      parts.auditor.reset();
      done.set_value();
    };
    asio::co_spawn(io_, end, asio::detached);
    done.get_future().wait();
    parts.gate.close();
    parts.gate.wait(std::chrono::seconds(10));
  }
  io_.stop();
  if (thread_.joinable()) thread_.join();
  auditor_.store(false);
  if (parts_) {
    parts_->worker.reset();
    parts_->topology.reset();
    parts_->bk.reset();
  }
}

}  // namespace magnetar::autorecovery
