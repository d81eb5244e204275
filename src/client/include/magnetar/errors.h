#pragma once
// Errors of the client library, as Status values (common/status.h).
//
// Two categories:
//   "client": failures decided by the library itself (ClientError below);
//   "pulsar": errors the broker returned (ERROR, SEND_ERROR, a Failed lookup); the code is
//             Pulsar's ServerError number and the message starts with its name.
// Both map onto the generic conditions, so callers can ask `status.is(Errc::kTimeout)` or
// `status.retriable()` without knowing either enum.

#include <optional>
#include <string_view>
#include <system_error>

#include "common/status.h"

namespace magnetar::client {

enum class ClientError {
  kOk = 0,
  kTimeout = 1,              // no answer within the operation (or send) timeout
  kConnectError,             // could not connect to any broker
  kDisconnected,             // the connection broke while waiting
  kAlreadyClosed,            // the client, producer or consumer is closed
  kProducerQueueFull,        // max pending messages reached and block_if_queue_full off
  kMessageTooBig,            // larger than the broker's max message size (chunking off)
  kInvalidConfiguration,     // bad options or service URL
  kInvalidMessage,           // a received message that does not decode
  kTooManyLookupRedirects,   // LOOKUP redirected more often than allowed
  kProtocolError,            // the broker sent something out of sequence
  kTopicTerminated,          // the topic was terminated (REACHED_END_OF_TOPIC)
  kCumulativeAckNotAllowed,  // cumulative ack on a Shared / Key_Shared subscription
  kAuthenticationError,      // the client's own credentials could not be had (a token file)
};

// Pulsar's ServerError values (pulsar_api.proto), mirrored so users need no protobuf.
enum class ServerError {
  kUnknownError = 0,
  kMetadataError = 1,
  kPersistenceError = 2,
  kAuthenticationError = 3,
  kAuthorizationError = 4,
  kConsumerBusy = 5,
  kServiceNotReady = 6,
  kProducerBlockedQuotaExceededError = 7,
  kProducerBlockedQuotaExceededException = 8,
  kChecksumError = 9,
  kUnsupportedVersionError = 10,
  kTopicNotFound = 11,
  kSubscriptionNotFound = 12,
  kConsumerNotFound = 13,
  kTooManyRequests = 14,
  kTopicTerminatedError = 15,
  kProducerBusy = 16,
  kInvalidTopicName = 17,
  kIncompatibleSchema = 18,
  kConsumerAssignError = 19,
  kTransactionCoordinatorNotFound = 20,
  kInvalidTxnStatus = 21,
  kNotAllowedError = 22,
  kTransactionConflict = 23,
  kTransactionNotFound = 24,
  kProducerFenced = 25,
};

const std::error_category& client_category() noexcept;
const std::error_category& server_error_category() noexcept;
std::error_code make_error_code(ClientError e) noexcept;
std::error_code make_error_code(ServerError e) noexcept;

// The broker's error carried by `status`, if it is one.
std::optional<ServerError> server_error_of(const Status& status) noexcept;
// The client error carried by `status`, if it is one.
std::optional<ClientError> client_error_of(const Status& status) noexcept;

}  // namespace magnetar::client

template <>
struct std::is_error_code_enum<magnetar::client::ClientError> : std::true_type {};
template <>
struct std::is_error_code_enum<magnetar::client::ServerError> : std::true_type {};
