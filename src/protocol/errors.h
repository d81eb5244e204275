#pragma once
// Errors of the protocol module: decoding untrusted bytes, codecs, names and ids.

#include <system_error>

#include "common/status.h"

namespace magnetar::protocol {

enum class Error {
  kOk = 0,
  kFrameTooLarge = 1,      // a size field exceeds the configured maximum frame size
  kMalformedFrame,         // sizes that contradict each other, truncated sections
  kBadCommand,             // the BaseCommand protobuf does not parse or lacks required fields
  kUnknownCommand,         // a command type this build does not know
  kChecksumMismatch,       // CRC32C over metadata + payload does not match
  kBadMetadata,            // MessageMetadata / SingleMessageMetadata does not parse
  kBadBatch,               // batch payload inconsistent with num_messages_in_batch
  kCompression,            // a codec failed or sizes do not match
  kUnsupportedCompression, // a compression type we do not implement
  kInvalidTopicName,       // a topic name that does not parse
  kInvalidMessageId,       // message id bytes or text that do not parse
};

const std::error_category& protocol_category() noexcept;
std::error_code make_error_code(Error e) noexcept;

}  // namespace magnetar::protocol

template <>
struct std::is_error_code_enum<magnetar::protocol::Error> : std::true_type {};
