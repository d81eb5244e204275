#pragma once
// The bookie's network side: accepts connections on bookiePort and serves the bookie
// protocol (protocol/bookie_frame.h) on a fixed set of event loops, one thread each. A
// connection lives on one loop; requests are pipelined and answered as they complete
// (responses carry request ids). A malformed frame closes that connection only.
//
// It also registers the bookie in the metadata store (ephemeral
// /ledgers/available/<bookieId>, plus /ledgers/available/readonly/<bookieId> once read-only)
// and guards the directories with a cookie (see cookie.h).

#include <memory>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

#include "bookie/bookie.h"
#include "common/asio.h"
#include "metadata/metadata_store.h"
#include "protocol/local_bookie.h"

#include <boost/asio/ip/tcp.hpp>

namespace magnetar::bookie {

class BookieServer {
 public:
  // Starts serving `bookie`. `store` (may be null: no registration, for tests) is the cluster
  // metadata store. The server does not own the bookie; both must outlive... the server
  // stops before the bookie is destroyed (see stop()).
  static Result<std::unique_ptr<BookieServer>> start(const BookieConfig& config, Bookie& bookie,
                                                     std::shared_ptr<metadata::MetadataStore> store);
  ~BookieServer();

  // One garbage-collection pass now (also run every gcWaitTime when there is a store).
  Status garbage_collect() { return run_gc(); }

  // This bookie for callers in the same process (`magnetar standalone`'s broker): requests
  // served by calls, without the loopback socket (protocol/local_bookie.h). It refuses
  // requests once the server has stopped.
  std::shared_ptr<protocol::LocalBookie> in_process();

  // The port actually bound (bookiePort 0 picks a free one).
  int port() const { return port_; }
  // The id it registers and serves as: advertisedAddress:port, with the port actually bound.
  std::string bookie_id() const { return config_.bookie_id(); }
  // Stops accepting, closes every connection (their pending requests are dropped), lets the
  // loops drain and joins them.
  void stop();

 private:
  class Connection;
  class AddsInProgress;
  class InProcess;
  BookieServer(const BookieConfig& config, Bookie& bookie,
               std::shared_ptr<metadata::MetadataStore> store);
  Status listen();
  Task<void> accept_loop();
  Status register_bookie();
  void on_read_only();
  // The server's background thread (only with a metadata store): garbage collection every
  // gcWaitTime, the read-only registration when the bookie turns read-only, and registering
  // again when the metadata session was lost and a new one opened (its ephemeral
  // registration went with the old session) — so no journal or request thread waits on the
  // metadata store.
  void gc_loop();
  void register_read_only();
  Status run_gc();

  BookieConfig config_;
  Bookie& bookie_;
  std::shared_ptr<metadata::MetadataStore> store_;
  log::Logger log_;
  std::shared_ptr<AddsInProgress> adds_in_progress_;  // maxAddsInProgressLimit
  // Shared: bookie callbacks of in-flight requests hold their loop, so a completion that
  // arrives after the server is gone is queued on a live (stopped) context and dropped.
  std::vector<std::shared_ptr<asio::io_context>> loops_;
  std::vector<std::thread> threads_;
  std::vector<asio::executor_work_guard<asio::io_context::executor_type>> guards_;
  std::unique_ptr<asio::ip::tcp::acceptor> acceptor_;
  size_t next_loop_ = 0;
  std::mutex connections_mu_;
  std::vector<std::weak_ptr<Connection>> connections_;
  std::shared_ptr<InProcess> in_process_;  // made on first use; guarded by connections_mu_
  int port_ = 0;
  bool stopped_ = false;
  std::mutex gc_mu_;
  std::condition_variable gc_cv_;
  bool gc_stopping_ = false;
  bool read_only_pending_ = false;  // guarded by gc_mu_
  bool reregister_pending_ = false;  // guarded by gc_mu_
  metadata::ListenerId session_listener_ = 0;
  std::thread gc_thread_;
};

}  // namespace magnetar::bookie
