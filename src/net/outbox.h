#pragma once
// An outbox: the frames a connection has queued for its peer, and the coroutine that writes
// them out, as many queued frames per gathered write as the limits allow (take_write_batch),
// each frame released as soon as its write completed. The one write loop of the client's
// Pulsar connection, the bookie server's connections and the ledger client's bookie
// connections; it writes to a net::Stream or to a plain TCP socket, at the same cost as a
// loop written against either.
//
// Threading: an outbox lives on one executor, its owner's event loop. push(), close(),
// queued(), closed() and the coroutine run() returns all run there; nothing is thread-safe.
// An owner written to from other threads posts to its loop first.
//
// Lifecycle: frames may be pushed before run() starts (while the owner connects): they go
// out first once it does. run() writes until close() or a write error, then returns. Once
// closed (either way) the outbox stays closed: what was queued is dropped, and so is every
// frame pushed later.
//
// Ownership: the outbox is a member of its owner, which owns the transport too and keeps
// itself alive while run() runs (it spawns run() holding a shared_ptr to itself). The outbox
// never closes the transport: the owner does, in its close path, which calls close() here.
//
// Wake-ups: while the queue is empty run() waits on a timer that never expires; push()
// cancels it only when run() is waiting there, so a frame queued while a write is in
// progress costs no timer call.

#include <boost/asio/ip/tcp.hpp>
#include <boost/system/error_code.hpp>
#include <cstddef>
#include <deque>
#include <functional>
#include <utility>

#include "common/asio.h"
#include "common/buffer.h"

namespace magnetar::net {

class Stream;

// Bounds of one gathered write. A batch takes frames from the queue while it holds fewer
// than `max_pieces` buffers and fewer than `max_bytes` bytes, so its last frame may take it
// past either; its first frame always goes, whatever its size. (Asio hands the kernel at
// most 64 buffers per sendmsg: `max_pieces` bounds the work and memory of one write, not
// the system calls.)
struct OutboxOptions {
  size_t max_pieces = 1024;
  size_t max_bytes = 4 << 20;
};

class Outbox {
 public:
  // Called once, from inside run(), when a write failed: the outbox is closed by then. The
  // owner closes itself (and its transport) with its own status and log line.
  using ErrorHandler = std::function<void(const boost::system::error_code&)>;

  explicit Outbox(Executor executor, OutboxOptions options = {});
  Outbox(const Outbox&) = delete;
  Outbox& operator=(const Outbox&) = delete;

  // Queues `frame` behind every frame queued before it; frames go out in push() order.
  // Dropped once closed. Inline: one call per frame on every connection's hot path.
  void push(BufferChain frame) {
    if (closed_) return;
    queue_.push_back(std::move(frame));
    if (asleep_) {
      asleep_ = false;
      wakeup_.cancel_one();
    }
  }

  // Drops what is queued and ends run() (at once when it waits for frames, else once the
  // write in progress completed, whose outcome is then not reported: closing the transport
  // is usually what ended it). Idempotent.
  void close();

  bool closed() const { return closed_; }
  // Frames queued and not yet taken into a write.
  size_t queued() const { return queue_.size(); }

  // The write loop, over `stream` (Stream::write) or a connected `socket` (asio::async_write:
  // every byte). Started at most once (asserted). `stream` / `socket` and this outbox must
  // outlive the coroutine; `on_error` is called at most once, and never after close().
  Task<void> run(Stream& stream, ErrorHandler on_error);
  Task<void> run(asio::ip::tcp::socket& socket, ErrorHandler on_error);

 private:
  // `write(iov, ec)` returns an awaitable that writes all of `iov` or sets `ec`.
  template <typename Write>
  Task<void> write_loop(Write write, ErrorHandler on_error);
  void shut();

  const OutboxOptions options_;
  std::deque<BufferChain> queue_;
  asio::steady_timer wakeup_;  // never expires: cancelled to wake run()
  bool asleep_ = false;        // run() waits on wakeup_
  bool running_ = false;       // run() started
  bool closed_ = false;
};

}  // namespace magnetar::net
