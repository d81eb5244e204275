#include "client/reconnecting.h"

#include <fmt/format.h>

#include <algorithm>

namespace magnetar::client {
namespace {

Backoff::Options backoff_options(const ClientOptions& o) {
  Backoff::Options b;
  b.initial = o.initial_backoff;
  b.max = std::max(o.max_backoff, o.initial_backoff);
  return b;
}

}  // namespace

Reconnecting::Reconnecting(const ClientOptions& options) : backoff_(backoff_options(options)) {}

void Reconnecting::close_for_good(const Status& status) {
  if (!create_status_) create_status_ = status;
  state_ = State::kClosed;
  closed_ = true;
  closed_by(status);
  state_event_.notify_all();
  wake_event_.notify_all();
}

Task<Status> Reconnecting::await_created(Deadline deadline, std::string_view what) {
  while (!create_status_) {
    if (!co_await state_event_.wait_until(deadline) && !create_status_) {
      const std::string last =
          last_error_.ok() ? std::string() : fmt::format(": last error: {}", last_error_.to_string());
      close_for_good(Status(ClientError::kTimeout,
                            fmt::format("could not {} within the operation timeout{}", what, last)));
    }
  }
  co_return *create_status_;
}

Task<void> Reconnecting::reconnect_loop(std::chrono::milliseconds operation_timeout,
                                        const log::Logger& log, std::string_view retrying) {
  while (state_ == State::kConnecting || state_ == State::kReady) {
    const Deadline deadline = deadline_after(operation_timeout);
    Status st = co_await connect_once(deadline);
    if (state_ == State::kClosing || state_ == State::kClosed) break;
    if (st.ok()) {
      backoff_.reset();
      if (!create_status_) {
        create_status_ = Status::OK();
        state_event_.notify_all();
      }
      while (cnx_ && state_ == State::kReady) {
        (void)co_await state_event_.wait_until(Deadline::max());
      }
      continue;
    }
    last_error_ = st;
    const bool created = create_status_.has_value();
    if (gives_up_on(st, created)) {
      log.error("giving up: {}", st.to_string());
      close_for_good(st);
      break;
    }
    const auto delay = backoff_.next();
    log.info("{} ({}); retrying in {} ms", retrying, st.to_string(), delay.count());
    const Deadline wake_at = Clock::now() + delay;
    co_await sleep_until(wake_event_, wake_at);
  }
}

}  // namespace magnetar::client
