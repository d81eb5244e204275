#include "protocol/errors.h"

namespace magnetar::protocol {
namespace {

class ProtocolCategory final : public std::error_category {
 public:
  const char* name() const noexcept override { return "protocol"; }

  std::string message(int c) const override {
    switch (static_cast<Error>(c)) {
      case Error::kOk: return "ok";
      case Error::kFrameTooLarge: return "frame too large";
      case Error::kMalformedFrame: return "malformed frame";
      case Error::kBadCommand: return "bad command";
      case Error::kUnknownCommand: return "unknown command";
      case Error::kChecksumMismatch: return "checksum mismatch";
      case Error::kBadMetadata: return "bad message metadata";
      case Error::kBadBatch: return "bad batch";
      case Error::kCompression: return "compression error";
      case Error::kUnsupportedCompression: return "unsupported compression";
      case Error::kInvalidTopicName: return "invalid topic name";
      case Error::kInvalidMessageId: return "invalid message id";
    }
    return "unknown protocol error";
  }

  std::error_condition default_error_condition(int c) const noexcept override {
    switch (static_cast<Error>(c)) {
      case Error::kOk: return make_error_condition(Errc::kOk);
      case Error::kFrameTooLarge: return make_error_condition(Errc::kResourceExhausted);
      case Error::kChecksumMismatch: return make_error_condition(Errc::kCorruption);
      case Error::kUnknownCommand:
      case Error::kUnsupportedCompression: return make_error_condition(Errc::kNotSupported);
      default: return make_error_condition(Errc::kInvalidArgument);
    }
  }
};

}  // namespace

const std::error_category& protocol_category() noexcept {
  static const ProtocolCategory category;
  return category;
}

std::error_code make_error_code(Error e) noexcept {
  return {static_cast<int>(e), protocol_category()};
}

}  // namespace magnetar::protocol
