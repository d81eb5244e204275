#pragma once
// Follows the rack document /bookies (rack_config.h) so that placement policies change with
// it, without a restart: reads it when started, again after every notification that the node
// was created, changed or deleted, and after the store's session came back (watches may have
// been missed meanwhile). Each topology read is handed to the callback on the watcher's
// executor, in the order read; bursts of changes coalesce into one read.
//
// A document that does not parse, or a failed read, is logged and leaves the last topology
// in force (the next change or reconnection reads again).
//
// Threading: lives on one executor; start() and stop() are called on it. The store and the
// gate outlive the watcher; reads run inside the gate, so the owner closes and drains the
// gate (after stop()) before destroying the watcher.

#include <boost/asio/steady_timer.hpp>
#include <functional>
#include <memory>

#include "common/asio.h"
#include "common/gate.h"
#include "common/logging.h"
#include "common/status.h"
#include "ledger/placement.h"
#include "metadata/metadata_store.h"

namespace magnetar::ledger {

class TopologyWatcher {
 public:
  using Callback = std::function<void(const BookieTopology&)>;

  TopologyWatcher(metadata::MetadataStore& store, Executor executor, Gate& gate,
                  Callback on_change);
  ~TopologyWatcher();
  TopologyWatcher(const TopologyWatcher&) = delete;
  TopologyWatcher& operator=(const TopologyWatcher&) = delete;

  // Registers the listeners and reads /bookies once; returns that read's status (on success
  // the callback has run once). Later changes are followed whatever the first read gave.
  Task<Status> start();
  // No read starts after this; one in flight finishes (its topology is not handed on).
  void stop();

  // Topologies handed to the callback so far.
  uint64_t reads() const { return reads_; }

 private:
  void changed();
  Task<void> reload_loop();
  Task<Status> reload_once();

  metadata::MetadataStore& store_;
  Executor executor_;
  Gate& gate_;
  Callback on_change_;
  log::Logger log_;
  // Listeners hold a weak reference: a notification queued before the destructor removed
  // them finds it expired and does nothing.
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
  metadata::ListenerId listener_ = 0;
  metadata::ListenerId session_listener_ = 0;
  bool started_ = false;
  bool stopped_ = false;
  bool dirty_ = false;    // a change not read yet
  bool reading_ = false;  // reload_loop() or start()'s read runs
  uint64_t reads_ = 0;
  std::unique_ptr<asio::steady_timer> retry_timer_;  // reload_loop()'s wait after a store error
};

}  // namespace magnetar::ledger
