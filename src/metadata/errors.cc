#include "metadata/errors.h"

namespace magnetar::metadata {
namespace {

class MetadataCategory final : public std::error_category {
 public:
  const char* name() const noexcept override { return "metadata"; }

  std::string message(int c) const override {
    switch (static_cast<Error>(c)) {
      case Error::kOk: return "ok";
      case Error::kNotFound: return "not found";
      case Error::kBadVersion: return "bad version";
      case Error::kNotEmpty: return "node has children";
      case Error::kInvalidPath: return "invalid path";
      case Error::kTooLarge: return "value too large";
      case Error::kSessionLost: return "session lost";
      case Error::kConnectionLost: return "connection lost";
      case Error::kTimeout: return "timeout";
      case Error::kClosed: return "store closed";
      case Error::kBadUrl: return "bad metadata store URL";
      case Error::kBackend: return "backend failure";
    }
    return "unknown metadata error";
  }

  std::error_condition default_error_condition(int c) const noexcept override {
    switch (static_cast<Error>(c)) {
      case Error::kOk: return make_error_condition(Errc::kOk);
      case Error::kNotFound: return make_error_condition(Errc::kNotFound);
      case Error::kBadVersion: return make_error_condition(Errc::kBadVersion);
      case Error::kNotEmpty:
      case Error::kInvalidPath:
      case Error::kBadUrl: return make_error_condition(Errc::kInvalidArgument);
      case Error::kTooLarge: return make_error_condition(Errc::kResourceExhausted);
      case Error::kSessionLost: return make_error_condition(Errc::kFenced);
      case Error::kConnectionLost: return make_error_condition(Errc::kUnavailable);
      case Error::kTimeout: return make_error_condition(Errc::kTimeout);
      case Error::kClosed: return make_error_condition(Errc::kCancelled);
      case Error::kBackend: return make_error_condition(Errc::kIoError);
    }
    return make_error_condition(Errc::kInternal);
  }
};

}  // namespace

const std::error_category& metadata_category() noexcept {
  static const MetadataCategory category;
  return category;
}

std::error_code make_error_code(Error e) noexcept {
  return {static_cast<int>(e), metadata_category()};
}

}  // namespace magnetar::metadata
