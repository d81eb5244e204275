#pragma once
// The metadata of one ledger, as the ledger client keeps it in memory and stores it at
// ledger_path(id) in the metadata store (BookKeeper's LedgerMetadataFormat, as JSON).
//
// Stored form (UTF-8 JSON object; unknown keys are ignored so later versions can add some):
//
//   {
//     "format_version": 1,                      // newer versions -> Errc::kNotSupported
//     "ledger_id": 42,
//     "ensemble_size": 3, "write_quorum": 2, "ack_quorum": 2,
//     "state": "OPEN" | "IN_RECOVERY" | "CLOSED",
//     "last_entry_id": 99, "length": 12345,     // present if and only if state is CLOSED
//     "digest": "CRC32C" | "DUMMY",
//     "password_hex": "736563726574",           // the raw password bytes, lowercase hex
//     "ctime_ms": 1700000000000,
//     "custom": {"pulsar/managed-ledger": "public/default/persistent/t"},
//     "segments": [ {"first_entry_id": 0,  "ensemble": ["b1:3181", "b2:3181", "b3:3181"]},
//                   {"first_entry_id": 57, "ensemble": ["b1:3181", "b4:3181", "b3:3181"]} ]
//   }
//
// Updates follow BookKeeper's rules (reference §1.4): every write is a compare-and-set on the
// node's version; OPEN -> CLOSED, OPEN -> IN_RECOVERY -> CLOSED, segments appended or the
// last one replaced while OPEN. Those transitions are the ledger handle's business; this file
// only checks that a single metadata value is self-consistent (validate()).

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "metadata/paths.h"

namespace magnetar::ledger {

enum class LedgerState { kOpen, kInRecovery, kClosed };
enum class DigestType { kCrc32c, kDummy };

std::string_view to_string(LedgerState state);
std::string_view to_string(DigestType digest);

// One ensemble and the first entry it stores; it stores every entry up to the next
// segment's first_entry_id (exclusive), or to the end of the ledger for the last segment.
struct Segment {
  int64_t first_entry_id = 0;
  std::vector<std::string> ensemble;  // bookie ids "host:port"; position = bookie index

  friend bool operator==(const Segment&, const Segment&) = default;
};

struct LedgerMetadata {
  int64_t ledger_id = -1;
  int32_t ensemble_size = 0;  // E
  int32_t write_quorum = 0;   // Qw: copies of every entry
  int32_t ack_quorum = 0;     // Qa: acknowledgements before an add completes
  LedgerState state = LedgerState::kOpen;
  int64_t last_entry_id = -1;  // valid when closed (-1: closed empty); -1 otherwise
  int64_t length = 0;          // payload bytes of all entries, valid when closed; 0 otherwise
  DigestType digest = DigestType::kCrc32c;
  std::string password;  // raw bytes; master key = SHA-1("ledger" + password)
  int64_t ctime_ms = 0;  // creation time, ms since the epoch
  std::map<std::string, std::string> custom;  // e.g. the managed ledger name (UTF-8)
  std::vector<Segment> segments;  // first_entry_id strictly increasing, the first one is 0

  // The ensemble that stores entry_id: the segment with the largest first_entry_id <=
  // entry_id. Preconditions (asserted): segments is not empty and entry_id >= 0. The
  // reference stays valid until `segments` is modified.
  const std::vector<std::string>& ensemble_for(int64_t entry_id) const;

  // Indexes into ensemble_for(entry_id) of the bookies that store entry_id:
  // (entry_id + i) % E for i in [0, Qw), in that order (reference §2.1: the index uses the
  // absolute entry id, not the offset inside the segment). Precondition: 1 <= Qw <= E.
  std::vector<int> write_set(int64_t entry_id) const;

  // The 20-byte key sent to bookies with every add and fencing read: SHA-1("ledger" +
  // password), whatever the digest type.
  std::string master_key() const;

  // OK when the value is self-consistent: ledger_id >= 0; E >= Qw >= Qa >= 1; at least one
  // segment, the first at entry 0, first ids strictly increasing, every ensemble exactly E
  // distinct non-empty bookie ids; when CLOSED, last_entry_id >= -1, length >= 0 and no
  // segment starts after last_entry_id + 1 (an ensemble change keys the new segment at
  // LAC + 1, so a ledger closed right after one has an empty last segment); when not
  // CLOSED, last_entry_id == -1 and length == 0; ctime_ms >= 0; custom keys and values
  // valid UTF-8. Otherwise Errc::kInvalidArgument naming the first problem found.
  Status validate() const;

  // The stored form above. Precondition: validate().ok() (invalid UTF-8 in custom metadata
  // would otherwise be replaced by U+FFFD).
  std::string to_json() const;

  // Parses and validates a stored value. Errors: Errc::kCorruption naming the first
  // problem (not JSON, a missing or mistyped field, an unknown enum value, a value that
  // fails validate()); Errc::kNotSupported for a format_version newer than ours.
  static Result<LedgerMetadata> from_json(std::string_view text);

  friend bool operator==(const LedgerMetadata&, const LedgerMetadata&) = default;
};

// The path layout lives in metadata/paths.h (bookies need it too). On ZooKeeper, listing
// /ledgers fails beyond roughly 40,000 ledgers (one 1 MiB packet); get/put by path are fine.
using metadata::ledger_id_from_node_name;
using metadata::ledger_path;

}  // namespace magnetar::ledger
