#include "ledger/topology_watcher.h"

#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <set>
#include <utility>

#include "ledger/rack_config.h"

namespace magnetar::ledger {

namespace {

// A read that failed for a store error (not a bad document) is tried again after this.
constexpr std::chrono::seconds kTopologyRetryAfterStoreError{5};

}  // namespace

TopologyWatcher::TopologyWatcher(metadata::MetadataStore& store, Executor executor, Gate& gate,
                                 Callback on_change)
    : store_(store),
      executor_(std::move(executor)),
      gate_(gate),
      on_change_(std::move(on_change)),
      log_(log::Logger("ledger.topology")) {}

TopologyWatcher::~TopologyWatcher() {
  alive_.reset();
  if (started_) {
    store_.remove_listener(listener_);
    store_.remove_listener(session_listener_);
  }
}

Task<Status> TopologyWatcher::start() {
  if (!started_) {
    started_ = true;
    std::weak_ptr<bool> alive = alive_;
    listener_ = store_.add_listener(executor_, [this, alive](const metadata::Notification& n) {
      if (alive.expired() || n.path != kBookiesRackPath) return;
      if (n.type == metadata::NotificationType::kChildrenChanged) return;
      changed();
    });
    session_listener_ =
        store_.add_session_listener(executor_, [this, alive](metadata::SessionEvent e) {
          if (alive.expired()) return;
          if (e == metadata::SessionEvent::kReconnected ||
              e == metadata::SessionEvent::kSessionReestablished) {
            changed();
          }
        });
  }
  // Changes notified during this first read only mark it dirty; a loop reads them after.
  reading_ = true;
  dirty_ = false;
  Status first = co_await reload_once();
  reading_ = false;
  if (dirty_) {
    dirty_ = false;
    changed();
  }
  co_return first;
}

void TopologyWatcher::stop() {
  stopped_ = true;
  if (retry_timer_) retry_timer_->cancel();
}

void TopologyWatcher::changed() {
  if (stopped_) return;
  dirty_ = true;
  if (reading_) return;
  reading_ = spawn_in(gate_, executor_, [this]() { return reload_loop(); });
}

Task<void> TopologyWatcher::reload_loop() {
  while (dirty_ && !stopped_) {
    dirty_ = false;
    Status st = co_await reload_once();
    if (st.ok() || st.is(Errc::kCorruption) || stopped_) continue;
    // The store failed: read again in a while unless a change or a stop comes first.
    if (!retry_timer_) retry_timer_ = std::make_unique<asio::steady_timer>(executor_);
    retry_timer_->expires_after(kTopologyRetryAfterStoreError);
    boost::system::error_code ec;
    co_await retry_timer_->async_wait(asio::redirect_error(asio::use_awaitable, ec));
    dirty_ = true;
  }
  reading_ = false;
}

Task<Status> TopologyWatcher::reload_once() {
  const std::string path(kBookiesRackPath);
  // exists() first: on ZooKeeper it also watches a node that does not exist yet.
  auto exists = co_await store_.exists(path);
  if (!exists.ok()) {
    log_.warn("cannot read {}: {} (the placement keeps the last topology)", path,
              exists.status().to_string());
    co_return exists.status();
  }
  auto stored = co_await load_rack_configuration(store_);
  if (stopped_) co_return Status(Errc::kCancelled, "topology watcher stopped");
  if (!stored.ok()) {
    log_.warn("cannot use {}: {} (the placement keeps the last topology)", path,
              stored.status().to_string());
    co_return stored.status();
  }
  BookieTopology topology = stored->config.topology();
  std::set<std::string> racks;
  std::set<std::string> regions;
  for (const auto& [bookie, location] : topology.location) {
    racks.insert(topology.location_of(bookie));
    regions.insert(topology.region_of(bookie));
  }
  log_.info("bookie topology from {}: {} bookies, {} racks, {} regions", path,
            topology.location.size(), racks.size(), regions.size());
  ++reads_;
  on_change_(topology);
  co_return Status::OK();
}

}  // namespace magnetar::ledger
