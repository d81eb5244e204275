#include "protocol/server_errors.h"

#include <fmt/format.h>

namespace magnetar::protocol {

namespace {

class ServerErrorCategory final : public std::error_category {
 public:
  const char* name() const noexcept override { return "pulsar"; }

  std::string message(int c) const override {
    if (!wire::ServerError_IsValid(c)) return fmt::format("ServerError({})", c);
    return wire::ServerError_Name(static_cast<wire::ServerError>(c));
  }

  std::error_condition default_error_condition(int c) const noexcept override {
    switch (static_cast<wire::ServerError>(c)) {
      case wire::AuthenticationError:
        return make_error_condition(Errc::kUnauthenticated);
      case wire::AuthorizationError:
        return make_error_condition(Errc::kPermissionDenied);
      case wire::ConsumerBusy:
      case wire::ProducerBusy:
        return make_error_condition(Errc::kAlreadyExists);
      case wire::MetadataError:
      case wire::ServiceNotReady:
      case wire::TooManyRequests:
      case wire::PersistenceError:  // the broker's storage failed this time: send again
      case wire::ProducerBlockedQuotaExceededError:  // producer_request_hold: wait, retry
        return make_error_condition(Errc::kUnavailable);
      case wire::ProducerBlockedQuotaExceededException:
        return make_error_condition(Errc::kResourceExhausted);
      case wire::ChecksumError:
        return make_error_condition(Errc::kCorruption);
      case wire::UnsupportedVersionError:
      case wire::NotAllowedError:
        return make_error_condition(Errc::kNotSupported);
      case wire::TopicNotFound:
      case wire::SubscriptionNotFound:
      case wire::ConsumerNotFound:
      case wire::TransactionCoordinatorNotFound:
      case wire::TransactionNotFound:
        return make_error_condition(Errc::kNotFound);
      case wire::InvalidTopicName:
      case wire::IncompatibleSchema:
      case wire::ConsumerAssignError:
      case wire::InvalidTxnStatus:
        return make_error_condition(Errc::kInvalidArgument);
      case wire::TopicTerminatedError:
      case wire::ProducerFenced:
        return make_error_condition(Errc::kFenced);
      case wire::TransactionConflict:
        return make_error_condition(Errc::kBadVersion);
      default:
        return make_error_condition(Errc::kInternal);
    }
  }
};

}  // namespace

const std::error_category& server_error_category() noexcept {
  static const ServerErrorCategory category;
  return category;
}

Status server_error_status(wire::ServerError error, std::string_view text) {
  return Status(std::error_code(static_cast<int>(error), server_error_category()),
                fmt::format("{}: {}", server_error_category().message(error), text));
}

std::optional<wire::ServerError> server_error_of(const Status& status) noexcept {
  if (status.ok() || status.code().category() != server_error_category()) return std::nullopt;
  return static_cast<wire::ServerError>(status.code().value());
}

}  // namespace magnetar::protocol
