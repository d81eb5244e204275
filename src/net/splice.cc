#include "net/splice.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>

namespace magnetar::net {

namespace {

using boost::system::error_code;

constexpr size_t kPipeBytes = 256 * 1024;

error_code errno_code(int e) { return error_code(e, boost::system::system_category()); }

// A pipe's two ends, closed when done.
struct Pipe {
  int read = -1;
  int write = -1;
  ~Pipe() {
    if (read >= 0) ::close(read);
    if (write >= 0) ::close(write);
  }
};

}  // namespace

bool can_splice(Stream& from, Stream& to) {
#ifdef __linux__
  return !from.tls() && !to.tls();
#else
  (void)from;
  (void)to;
  return false;
#endif
}

Task<error_code> splice_relay(Stream& from, Stream& to, std::function<void(size_t)> moved) {
#ifdef __linux__
  // splice(2) into a socket whose peer is gone raises SIGPIPE (there is no MSG_NOSIGNAL for
  // it), which would end the whole process: it is ignored from the first relay on, and the
  // write fails with EPIPE instead.
  static const bool sigpipe_ignored = std::signal(SIGPIPE, SIG_IGN) != SIG_ERR;
  (void)sigpipe_ignored;
  Pipe pipe;
  int fds[2];
  if (::pipe2(fds, O_NONBLOCK | O_CLOEXEC) != 0) co_return errno_code(errno);
  pipe.read = fds[0];
  pipe.write = fds[1];
  // A larger pipe moves more per step (the default is 64 KiB); refused sizes are fine.
  (void)::fcntl(pipe.write, F_SETPIPE_SZ, static_cast<int>(kPipeBytes));
  error_code ec;
  while (true) {
    // Descriptors are taken again after every wait: close() may have happened meanwhile.
    const int in = from.splice_handle();
    if (in < 0) co_return make_error_code(boost::asio::error::operation_aborted);
    const ssize_t n = ::splice(in, nullptr, pipe.write, nullptr, kPipeBytes,
                               SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
    if (n == 0) co_return make_error_code(boost::asio::error::eof);
    if (n < 0) {
      if (errno != EAGAIN && errno != EINTR) co_return errno_code(errno);
      co_await from.wait_ready(false, ec);
      if (ec) co_return ec;
      continue;
    }
    size_t left = static_cast<size_t>(n);
    while (left > 0) {
      const int out = to.splice_handle();
      if (out < 0) co_return make_error_code(boost::asio::error::operation_aborted);
      const ssize_t m = ::splice(pipe.read, nullptr, out, nullptr, left,
                                 SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
      if (m < 0) {
        if (errno != EAGAIN && errno != EINTR) co_return errno_code(errno);
        co_await to.wait_ready(true, ec);
        if (ec) co_return ec;
        continue;
      }
      left -= static_cast<size_t>(m);
    }
    if (moved) moved(static_cast<size_t>(n));
  }
#else
  (void)from;
  (void)to;
  (void)moved;
  co_return make_error_code(boost::system::errc::operation_not_supported);
#endif
}

}  // namespace magnetar::net
