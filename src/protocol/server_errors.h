#pragma once
// Pulsar's ServerError codes as Status values, for every side that receives them (our
// client library, the protocol test client): category "pulsar", code = the wire::ServerError
// number, mapped onto the generic conditions that tell a caller what to do (ServiceNotReady,
// PersistenceError, ...: retry; TopicNotFound: not found; ProducerFenced: give up).

#include <optional>
#include <string_view>
#include <system_error>

#include "common/status.h"
#include "proto/pulsar_api.pb.h"

namespace magnetar::protocol {

const std::error_category& server_error_category() noexcept;
// Status{error, "<ServerError name>: <text>"}.
Status server_error_status(wire::ServerError error, std::string_view text);
// The ServerError carried by `status`, or nullopt when it is not a broker error.
std::optional<wire::ServerError> server_error_of(const Status& status) noexcept;

}  // namespace magnetar::protocol
