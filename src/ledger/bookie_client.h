#pragma once
// The ledger client's side of the bookie protocol (proto/bookie.proto, framed by
// protocol/bookie_frame.h): one TCP connection per bookie, shared by every ledger that
// writes to or reads from that bookie.
//
// Threading: one BookieClient lives on one event loop (`executor`) and is not thread-safe;
// call it only from coroutines running on that executor. Every connection and every timer
// it creates lives on the same executor.
//
// Connections are made on first use, carry many requests at once (pipelined, answers matched
// by request id, in any order) and, once failed, are replaced on the next request to that
// bookie. Each request has a deadline (one timer per connection watches the earliest): when
// it passes, the request fails with kTimeout and a late answer is dropped. A transport failure (refused, reset, closed by the
// bookie, bad frame, connect timeout) fails every request pending on that connection at once
// with kUnavailable. An answer from the bookie, even an error status such as FENCED or
// NO_ENTRY, is a successful Result carrying that status: deciding what a status means is the
// ledger's job, not the transport's.
//
// Bookie ids are "a.b.c.d:port": an IPv4 address, never a host name (bookies advertise IP
// addresses, so the client never blocks on, or waits for, a resolver); anything else fails
// with kInvalidArgument.
//
// Metrics (default registry), per op (add, read, read_lac, info):
//   magnetar_ledger_bookie_requests_total{op}          requests issued
//   magnetar_ledger_bookie_request_failures_total{op}  requests without an answer (Status error)
//   magnetar_ledger_bookie_request_latency_ms{op}      time to the answer, answered requests only

#include <array>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>
#include <unordered_map>

#include "common/asio.h"
#include "common/buffer.h"
#include "common/logging.h"
#include "common/status.h"
#include "proto/bookie.pb.h"
#include "protocol/bookie_frame.h"
#include "protocol/local_bookie.h"

namespace magnetar::ledger {

struct BookieClientOptions {
  // Bound on establishing a TCP connection; a connect that takes longer fails with
  // kUnavailable (nothing was sent, so a retry elsewhere is safe).
  std::chrono::milliseconds connect_timeout{5000};
  // Deadline of each request, counted from the call (so it includes any connect it waits
  // for); long-poll reads get their timeout_ms on top of it.
  std::chrono::milliseconds request_timeout{10000};
  // Largest response frame accepted; a larger one is treated as garbage.
  uint32_t max_frame_size = protocol::kDefaultMaxBookieFrameSize;
  // Bookie id -> "a.b.c.d:port" to connect to instead of the id's own address (a relay, a
  // NAT): the bookie keeps its id everywhere else (ledger metadata, placement, logs). The
  // stretched local cluster routes traffic between regions through delaying relays this way.
  std::map<std::string, std::string> dial_overrides;
  // Bookie id -> a bookie in this process (`magnetar standalone`'s embedded one), reached by
  // calls instead of a socket (protocol/local_bookie.h): no framing, no loopback round trip,
  // no hop through the bookie's event loop. Deadlines, metrics and failures work as for a
  // connection; a dial override for the same id wins (its traffic goes through the relay).
  std::map<std::string, std::shared_ptr<protocol::LocalBookie>> local_bookies;
};

// Whether `id` is a bookie id the client can dial: "<IPv4 address>:<port>" (port 1-65535).
bool is_bookie_address(std::string_view id);

struct AddResult {
  bookie_wire::BookieStatus status = bookie_wire::OK;
};

struct ReadResult {
  bookie_wire::BookieStatus status = bookie_wire::OK;
  Buffer entry;      // the packaged entry (protocol/bookie_entry.h); empty unless status is OK
  int64_t lac = -1;  // the highest LAC the bookie knows for the ledger, -1 when it sent none
};

struct ReadRangeResult {
  bookie_wire::BookieStatus status = bookie_wire::OK;
  std::vector<Buffer> entries;  // packaged entries from the first requested on; empty unless OK
  int64_t lac = -1;
};

class BookieClient {
 public:
  // `executor` is the event loop every call must run on.
  explicit BookieClient(Executor executor, BookieClientOptions options = {});
  // Closes every connection; requests still pending complete with kCancelled (their
  // coroutines resume later on the executor and never touch the destroyed client).
  ~BookieClient();
  BookieClient(const BookieClient&) = delete;
  BookieClient& operator=(const BookieClient&) = delete;

  // `entry` is a packaged entry (protocol::package_entry); it is sent without a copy.
  Task<Result<AddResult>> add(std::string bookie, bookie_wire::AddRequest request,
                              BufferChain entry);
  // add() for the write path, without a coroutine per request: `done` runs later on the
  // executor (never inside this call), with the same outcomes as add().
  using AddCallback = std::function<void(Result<AddResult>)>;
  void async_add(const std::string& bookie, bookie_wire::AddRequest request,
                 const BufferChain& entry, AddCallback done);
  // Plain, fencing and long-poll reads (a long poll's deadline is request_timeout plus the
  // request's timeout_ms).
  Task<Result<ReadResult>> read(std::string bookie, bookie_wire::ReadRequest request);
  // Consecutive entries in one round trip (bookie_wire::ReadRangeRequest). The request's
  // max_bytes is capped so that the answer fits max_frame_size. kCorruption when the answer's
  // sizes do not add up to its body.
  using ReadRangeCallback = std::function<void(Result<ReadRangeResult>)>;
  void async_read_range(const std::string& bookie, bookie_wire::ReadRangeRequest request,
                        ReadRangeCallback done);
  Task<Result<bookie_wire::ReadLacResponse>> read_lac(std::string bookie, int64_t ledger_id);
  Task<Result<bookie_wire::BookieInfoResponse>> info(std::string bookie);

  // Drops the connection to `bookie`: its pending requests fail with kUnavailable, and the
  // next request to it reconnects. No-op when there is no connection.
  void disconnect(const std::string& bookie);
  // Closes every connection (pending requests fail with kCancelled); later requests fail
  // with kCancelled too.
  Task<void> close();

 private:
  class Connection;
  struct OpMetrics;
  using ResponseFrame = protocol::BookieFrame<bookie_wire::BookieResponse>;
  using Callback = std::function<void(Result<ResponseFrame>)>;
  enum class Op { kAdd = 0, kRead, kReadLac, kInfo, kReadRange };
  static constexpr size_t kOps = 5;

  // Sends `request` (+ `body`) to `bookie`; `done` gets the answer, kTimeout after `timeout`
  // or the transport's failure, later on the executor (never inside this call).
  void send(Op op, const std::string& bookie, bookie_wire::BookieRequest request,
            const BufferChain& body, std::chrono::milliseconds timeout, Callback done);
  // send() for coroutines.
  Task<Result<ResponseFrame>> call(Op op, std::string bookie, bookie_wire::BookieRequest request,
                                   BufferChain body, std::chrono::milliseconds timeout);
  // The live connection to `bookie`, made (and started) when there is none or the last one
  // failed.
  Result<std::shared_ptr<Connection>> connection_for(const std::string& bookie);
  void close_all();

  const Executor executor_;
  const BookieClientOptions options_;
  log::Logger log_;
  // Shared with the connections, which update them after the client may be gone.
  std::array<std::shared_ptr<OpMetrics>, kOps> metrics_;
  // By bookie id. A connection is shared with its own coroutines and with the requests
  // waiting on it, so one dropped from here lives on until they have all finished.
  std::unordered_map<std::string, std::shared_ptr<Connection>> connections_;
  bool closed_ = false;
};

}  // namespace magnetar::ledger
