#include "broker/wire/server_error.h"

#include <optional>

#include "broker/service/errors.h"
#include "mledger/errors.h"

namespace magnetar::broker {

namespace {

std::optional<wire::ServerError> by_name(const std::error_code& code) {
  if (code.category() == mledger::mledger_category()) {
    if (code == make_error_code(mledger::Error::kTerminated)) return wire::TopicTerminatedError;
    return std::nullopt;
  }
  if (code.category() != broker_category()) return std::nullopt;
  switch (static_cast<Error>(code.value())) {
    case Error::kOk:
      return std::nullopt;
    case Error::kConsumerBusy:
      return wire::ConsumerBusy;
    case Error::kConsumerAssignError:
      return wire::ConsumerAssignError;
    case Error::kProducerBusy:
      return wire::ProducerBusy;
    case Error::kProducerFenced:
      return wire::ProducerFenced;
    case Error::kTopicTerminated:
      return wire::TopicTerminatedError;
    case Error::kQuotaExceededHold:
      return wire::ProducerBlockedQuotaExceededError;
    case Error::kQuotaExceeded:
      return wire::ProducerBlockedQuotaExceededException;
    case Error::kSubscriptionNotFound:
      return wire::SubscriptionNotFound;
    case Error::kSubscriptionBusy:
      return wire::UnknownError;  // as Pulsar answers it
    case Error::kNotAllowed:
    case Error::kReservedName:
      return wire::NotAllowedError;
    case Error::kIncompatibleSchema:
      return wire::IncompatibleSchema;
    case Error::kDuplicateInFlight:
      return wire::PersistenceError;
  }
  return std::nullopt;
}

}  // namespace

ServerFailure to_server_failure(const Status& status, wire::ServerError otherwise) {
  if (auto named = by_name(status.code())) return {*named, status.message()};
  if (status.is(Errc::kFenced) || status.is(Errc::kUnavailable)) {
    return {wire::ServiceNotReady, status.message()};
  }
  if (otherwise != wire::PersistenceError) return {otherwise, status.message()};
  if (status.is(Errc::kNotFound)) return {wire::TopicNotFound, status.message()};
  if (status.is(Errc::kInvalidArgument)) return {wire::MetadataError, status.message()};
  if (status.is(Errc::kNotSupported) || status.is(Errc::kPermissionDenied)) {
    return {wire::NotAllowedError, status.message()};
  }
  return {wire::PersistenceError, status.message()};
}

}  // namespace magnetar::broker
