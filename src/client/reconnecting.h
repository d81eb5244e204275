#pragma once
// What a producer and a consumer share about their life on one event loop: the states
// (connecting, ready, closing, closed), the creation outcome the creator waits for, and the
// reconnect loop with jittered exponential backoff. Everything here is touched on the
// handler's loop only, except closed_.

#include <atomic>
#include <memory>
#include <optional>
#include <string_view>

#include "client/connection.h"
#include "client/sync.h"
#include "common/backoff.h"
#include "common/logging.h"
#include "magnetar/client.h"

namespace magnetar::client {

class Reconnecting {
 protected:
  enum class State { kConnecting, kReady, kClosing, kClosed };

  explicit Reconnecting(const ClientOptions& options);
  virtual ~Reconnecting() = default;

  // One lookup, connection and PRODUCER/SUBSCRIBE; on success state_ is kReady and cnx_ set.
  virtual Task<Status> connect_once(Deadline deadline) = 0;
  // Whether `status` ends the handler for good (`created`: it was created before).
  virtual bool gives_up_on(const Status& status, bool created) const = 0;
  // Closed for good by `status` (a fatal error, or no creation within the deadline).
  virtual void closed_by(const Status& status) { (void)status; }

  // Connects, stays while connected, reconnects after backoff, until closed or a fatal error.
  // `retrying` names the failed step in the log ("subscribing failed").
  Task<void> reconnect_loop(std::chrono::milliseconds operation_timeout, const log::Logger& log,
                            std::string_view retrying);
  // Waits for the first creation outcome; past `deadline` the handler closes with kTimeout,
  // "could not <what> within the operation timeout" and the last error.
  Task<Status> await_created(Deadline deadline, std::string_view what);

  std::atomic<bool> closed_{false};
  State state_ = State::kConnecting;
  std::shared_ptr<ClientConnection> cnx_;
  std::optional<Status> create_status_;
  Status last_error_;
  Event state_event_;  // created, connected, disconnected, closed
  Event wake_event_;   // wakes the backoff sleep (and the handler's timer loops) on close
  Backoff backoff_;

 private:
  void close_for_good(const Status& status);
};

}  // namespace magnetar::client
