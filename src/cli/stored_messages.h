#pragma once
// The stored messages the admin REST API answers (peek, examine, get by id: one entry per
// answer, its metadata in X-Pulsar-* headers, a batch's payload whole) as pulsar-admin turns
// them into messages and prints them. No I/O but the printing to the stream given.

#include <ostream>
#include <string>
#include <vector>

#include "common/status.h"
#include "http/http_client.h"

namespace magnetar::cli {

struct StoredMessage {
  std::string id;  // "L:E", or "L:E:i" for the i-th message of a batch
  bool batched = false;
  std::string publish_time_ms;
  std::string event_time_ms;       // "0" when unset
  std::string deliver_at_time_ms;  // "" when unset
  // As pulsar-admin shows them, sorted: the entry's properties and, for a batch, every
  // message's and X-Pulsar-batch-size / X-Pulsar-num-batch-message (shared by the batch).
  std::vector<std::pair<std::string, std::string>> properties;
  std::string payload;
};

// The messages of one answer: one for a plain entry, N for a batch of N. Fails on a batch
// body that does not parse (an untrusted answer: sizes and counts are checked).
Result<std::vector<StoredMessage>> stored_messages(const http::HttpResponse& response);

// Prints a message the way pulsar-admin does: the id line ("Message ID: L:E" or "Batch Message
// ID: L:E:i"), Publish time, Event time, (Redelivery count: 0 for get-message-by-id), Deliver at
// time when set, Properties when any, then the payload's hex dump.
void print_stored_message(std::ostream& out, const StoredMessage& m, bool redelivery_count);

// The hex dump pulsar-admin prints payloads in (Netty's layout).
void hex_dump(std::ostream& out, std::string_view bytes);

// Milliseconds since the epoch of an ISO-8601 UTC time as brokers send it in
// X-Pulsar-publish-time ("2026-09-15T16:51:11.802Z"), or of a plain number; else the text.
std::string epoch_millis(const std::string& text);

}  // namespace magnetar::cli
