#include "net/outbox.h"

#include <boost/asio/redirect_error.hpp>
#include <boost/asio/write.hpp>
#include <utility>
#include <vector>

#include "common/status.h"
#include "common/write_batch.h"
#include "net/stream.h"

namespace magnetar::net {

Outbox::Outbox(Executor executor, OutboxOptions options)
    : options_(options), wakeup_(std::move(executor)) {
  wakeup_.expires_at(asio::steady_timer::time_point::max());
}

void Outbox::close() {
  if (!closed_) shut();
}

void Outbox::shut() {
  closed_ = true;
  queue_.clear();
  asleep_ = false;
  wakeup_.cancel();
}

template <typename Write>
Task<void> Outbox::write_loop(Write write, ErrorHandler on_error) {
  MAGNETAR_ASSERT(!running_, "Outbox::run() started twice");
  running_ = true;
  std::vector<BufferChain> batch;  // the frames being written: alive until the write ends
  std::vector<asio::const_buffer> iov;
  while (!closed_) {
    if (queue_.empty()) {
      asleep_ = true;
      boost::system::error_code ignored;  // cancelled by push() or close()
      co_await wakeup_.async_wait(asio::redirect_error(asio::use_awaitable, ignored));
      asleep_ = false;
      continue;
    }
    take_write_batch(queue_, batch, iov, options_.max_pieces, options_.max_bytes);
    boost::system::error_code ec;
    co_await write(iov, ec);
    batch.clear();  // written (or failed): release the frames now
    if (closed_) co_return;
    if (ec) {
      shut();
      on_error(ec);
      co_return;
    }
  }
}

Task<void> Outbox::run(Stream& stream, ErrorHandler on_error) {
  auto write = [&stream](const std::vector<asio::const_buffer>& iov,
                         boost::system::error_code& ec) { return stream.write(iov, ec); };
  return write_loop(write, std::move(on_error));
}

Task<void> Outbox::run(asio::ip::tcp::socket& socket, ErrorHandler on_error) {
  auto write = [&socket](const std::vector<asio::const_buffer>& iov,
                         boost::system::error_code& ec) {
    return asio::async_write(socket, iov, asio::redirect_error(asio::use_awaitable, ec));
  };
  return write_loop(write, std::move(on_error));
}

}  // namespace magnetar::net
