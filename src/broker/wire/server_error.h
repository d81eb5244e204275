#pragma once
// The one map from a Status to the ServerError a Pulsar client gets (in ERROR, SEND_ERROR
// and the error fields of responses). Clients decide on it whether to retry, so each code
// is chosen as Pulsar's broker would answer:
//   - the service room's refusals (service/errors.h) by name: ConsumerBusy, ProducerBusy,
//     ProducerFenced, TopicTerminatedError, ProducerBlockedQuotaExceeded{Error,Exception},
//     SubscriptionNotFound, ConsumerAssignError, NotAllowedError, IncompatibleSchema, ...;
//   - a terminated managed ledger: TopicTerminatedError;
//   - fenced or unavailable (not owned here, stopping, a store away): ServiceNotReady, which
//     clients retry after a new lookup;
//   - anything else: `otherwise` for requests that only read metadata (lookups, schemas:
//     MetadataError), else by condition (not found: TopicNotFound, invalid: MetadataError,
//     not supported or denied: NotAllowedError, the rest: PersistenceError).

#include <string>

#include "common/status.h"
#include "proto/pulsar_api.pb.h"

namespace magnetar::broker {

struct ServerFailure {
  wire::ServerError error;
  std::string message;
};

ServerFailure to_server_failure(const Status& status,
                                wire::ServerError otherwise = wire::PersistenceError);

}  // namespace magnetar::broker
