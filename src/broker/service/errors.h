#pragma once
// Errors of the broker's service room: what a topic, a subscription or the schema registry
// refuses, by name, so that the wire room's one map (wire/server_error.h) can give each the
// Pulsar ServerError clients expect. Each maps onto a generic condition of common/status.h
// for callers that only need to know whether to retry.

#include <system_error>

#include "common/status.h"

namespace magnetar::broker {

enum class Error {
  kOk = 0,
  kConsumerBusy = 1,     // Exclusive taken, or another subscription type: ConsumerBusy
  kConsumerAssignError,  // Key_Shared sticky ranges invalid or overlapping
  kProducerBusy,         // the name is connected, or an exclusive producer holds the topic
  kProducerFenced,       // Exclusive access refused: the topic has a producer
  kTopicTerminated,      // no new producers on a terminated topic
  kQuotaExceededHold,    // backlog quota, producer_request_hold: retriable
  kQuotaExceeded,        // backlog quota, producer_exception: final
  kSubscriptionNotFound,
  kSubscriptionBusy,  // unsubscribe with other consumers connected and not forced
  kNotAllowed,        // e.g. cumulative acknowledgement on a Shared subscription
  kReservedName,      // a subscription name the broker uses itself
  kIncompatibleSchema,
  kDuplicateInFlight,  // a send with this sequence id is still being stored
};

const std::error_category& broker_category() noexcept;
std::error_code make_error_code(Error e) noexcept;

}  // namespace magnetar::broker

template <>
struct std::is_error_code_enum<magnetar::broker::Error> : std::true_type {};
