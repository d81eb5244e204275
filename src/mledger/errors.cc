#include "mledger/errors.h"

namespace magnetar::mledger {
namespace {

class ManagedLedgerCategory final : public std::error_category {
 public:
  const char* name() const noexcept override { return "mledger"; }

  std::string message(int c) const override {
    switch (static_cast<Error>(c)) {
      case Error::kOk:
        return "ok";
      case Error::kFenced:
        return "managed ledger fenced";
      case Error::kTerminated:
        return "managed ledger terminated";
      case Error::kNoMoreEntries:
        return "no more entries to read";
      case Error::kClosed:
        return "managed ledger closed";
      case Error::kWriteFailed:
        return "write failed";
      case Error::kInvalidPosition:
        return "invalid position";
      case Error::kCursorNotFound:
        return "cursor not found";
      case Error::kMetadata:
        return "metadata store failure";
      case Error::kCorruptMetadata:
        return "corrupt metadata";
      case Error::kCancelled:
        return "cancelled";
    }
    return "unknown managed ledger error";
  }

  std::error_condition default_error_condition(int c) const noexcept override {
    switch (static_cast<Error>(c)) {
      case Error::kOk:
        return make_error_condition(Errc::kOk);
      case Error::kFenced:
        return make_error_condition(Errc::kFenced);
      case Error::kTerminated:
      case Error::kNoMoreEntries:
        return make_error_condition(Errc::kNotSupported);
      case Error::kClosed:
      case Error::kCancelled:
        return make_error_condition(Errc::kCancelled);
      case Error::kWriteFailed:
      case Error::kMetadata:
        return make_error_condition(Errc::kUnavailable);
      case Error::kInvalidPosition:
        return make_error_condition(Errc::kInvalidArgument);
      case Error::kCursorNotFound:
        return make_error_condition(Errc::kNotFound);
      case Error::kCorruptMetadata:
        return make_error_condition(Errc::kCorruption);
    }
    return make_error_condition(Errc::kInternal);
  }
};

}  // namespace

const std::error_category& mledger_category() noexcept {
  static const ManagedLedgerCategory category;
  return category;
}

std::error_code make_error_code(Error e) noexcept {
  return {static_cast<int>(e), mledger_category()};
}

}  // namespace magnetar::mledger
