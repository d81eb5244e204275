#include "magnetar/errors.h"

#include "protocol/server_errors.h"

namespace magnetar::client {
namespace {

class ClientCategory final : public std::error_category {
 public:
  const char* name() const noexcept override { return "client"; }
  std::string message(int c) const override {
    switch (static_cast<ClientError>(c)) {
      case ClientError::kOk:
        return "ok";
      case ClientError::kTimeout:
        return "timeout";
      case ClientError::kConnectError:
        return "connect error";
      case ClientError::kDisconnected:
        return "disconnected";
      case ClientError::kAlreadyClosed:
        return "already closed";
      case ClientError::kProducerQueueFull:
        return "producer queue full";
      case ClientError::kMessageTooBig:
        return "message too big";
      case ClientError::kInvalidConfiguration:
        return "invalid configuration";
      case ClientError::kInvalidMessage:
        return "invalid message";
      case ClientError::kTooManyLookupRedirects:
        return "too many lookup redirects";
      case ClientError::kProtocolError:
        return "protocol error";
      case ClientError::kTopicTerminated:
        return "topic terminated";
      case ClientError::kCumulativeAckNotAllowed:
        return "cumulative ack not allowed";
      case ClientError::kAuthenticationError:
        return "authentication error";
    }
    return "unknown client error";
  }
  std::error_condition default_error_condition(int c) const noexcept override {
    switch (static_cast<ClientError>(c)) {
      case ClientError::kOk:
        return make_error_condition(Errc::kOk);
      case ClientError::kTimeout:
        return make_error_condition(Errc::kTimeout);
      case ClientError::kConnectError:
      case ClientError::kDisconnected:
      case ClientError::kTooManyLookupRedirects:
        return make_error_condition(Errc::kUnavailable);
      case ClientError::kAlreadyClosed:
        return make_error_condition(Errc::kCancelled);
      case ClientError::kProducerQueueFull:
      case ClientError::kMessageTooBig:
        return make_error_condition(Errc::kResourceExhausted);
      case ClientError::kInvalidConfiguration:
      case ClientError::kCumulativeAckNotAllowed:
        return make_error_condition(Errc::kInvalidArgument);
      case ClientError::kInvalidMessage:
        return make_error_condition(Errc::kCorruption);
      case ClientError::kProtocolError:
        return make_error_condition(Errc::kInternal);
      case ClientError::kTopicTerminated:
        return make_error_condition(Errc::kFenced);
      case ClientError::kAuthenticationError:
        return make_error_condition(Errc::kUnauthenticated);
    }
    return make_error_condition(Errc::kInternal);
  }
};

}  // namespace

const std::error_category& client_category() noexcept {
  static const ClientCategory category;
  return category;
}
// Pulsar's ServerError numbers: the one category every side of ours shares.
const std::error_category& server_error_category() noexcept {
  return protocol::server_error_category();
}
std::error_code make_error_code(ClientError e) noexcept {
  return {static_cast<int>(e), client_category()};
}
std::error_code make_error_code(ServerError e) noexcept {
  return {static_cast<int>(e), server_error_category()};
}

std::optional<ServerError> server_error_of(const Status& status) noexcept {
  if (status.ok() || status.code().category() != server_error_category()) return std::nullopt;
  return static_cast<ServerError>(status.code().value());
}

std::optional<ClientError> client_error_of(const Status& status) noexcept {
  if (status.ok() || status.code().category() != client_category()) return std::nullopt;
  return static_cast<ClientError>(status.code().value());
}

}  // namespace magnetar::client
