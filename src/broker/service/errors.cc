#include "broker/service/errors.h"

namespace magnetar::broker {
namespace {

class BrokerCategory final : public std::error_category {
 public:
  const char* name() const noexcept override { return "broker"; }

  std::string message(int c) const override {
    switch (static_cast<Error>(c)) {
      case Error::kOk:
        return "ok";
      case Error::kConsumerBusy:
        return "consumer busy";
      case Error::kConsumerAssignError:
        return "consumer assign error";
      case Error::kProducerBusy:
        return "producer busy";
      case Error::kProducerFenced:
        return "producer fenced";
      case Error::kTopicTerminated:
        return "topic terminated";
      case Error::kQuotaExceededHold:
        return "backlog quota exceeded (hold)";
      case Error::kQuotaExceeded:
        return "backlog quota exceeded";
      case Error::kSubscriptionNotFound:
        return "subscription not found";
      case Error::kSubscriptionBusy:
        return "subscription busy";
      case Error::kNotAllowed:
        return "not allowed";
      case Error::kReservedName:
        return "reserved name";
      case Error::kIncompatibleSchema:
        return "incompatible schema";
      case Error::kDuplicateInFlight:
        return "duplicate in flight";
    }
    return "unknown broker error";
  }

  std::error_condition default_error_condition(int c) const noexcept override {
    switch (static_cast<Error>(c)) {
      case Error::kOk:
        return make_error_condition(Errc::kOk);
      case Error::kConsumerBusy:
      case Error::kProducerBusy:
      case Error::kSubscriptionBusy:
        return make_error_condition(Errc::kAlreadyExists);
      case Error::kProducerFenced:
        return make_error_condition(Errc::kFenced);
      case Error::kConsumerAssignError:
      case Error::kIncompatibleSchema:
        return make_error_condition(Errc::kInvalidArgument);
      case Error::kTopicTerminated:
      case Error::kNotAllowed:
        return make_error_condition(Errc::kNotSupported);
      case Error::kReservedName:
        return make_error_condition(Errc::kPermissionDenied);
      case Error::kQuotaExceededHold:
      case Error::kQuotaExceeded:
        return make_error_condition(Errc::kResourceExhausted);
      case Error::kSubscriptionNotFound:
        return make_error_condition(Errc::kNotFound);
      case Error::kDuplicateInFlight:
        return make_error_condition(Errc::kUnavailable);
    }
    return make_error_condition(Errc::kInternal);
  }
};

}  // namespace

const std::error_category& broker_category() noexcept {
  static const BrokerCategory category;
  return category;
}

std::error_code make_error_code(Error e) noexcept {
  return {static_cast<int>(e), broker_category()};
}

}  // namespace magnetar::broker
