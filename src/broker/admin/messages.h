#pragma once
// Stored messages as the admin REST API answers them (peek, examine, get by id): one entry per
// answer, its payload as the body (decompressed; a batch whole, for the caller to split as
// Pulsar's clients do) and its metadata in Pulsar's X-Pulsar-* headers.

#include <cstdint>
#include <variant>

#include "common/asio.h"
#include "http/http_server.h"
#include "mledger/managed_ledger.h"

namespace magnetar::broker::admin {

// The answer for one stored entry; 500 when it does not parse or decompress.
http::Response message_response(const mledger::Entry& entry);

// On the ledger's loop: the n-th entry (n >= 1) from `start` (inclusive) on, or 404 "Message
// not found" when there are fewer; a read failure is its answer.
Task<std::variant<mledger::Entry, http::Response>> nth_entry(mledger::ManagedLedger& ml,
                                                             mledger::Position start, int64_t n);

}  // namespace magnetar::broker::admin
