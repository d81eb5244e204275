#pragma once
// Under-replicated ledger markers and their locks, laid out in the metadata store as
// BookKeeper's ZkLedgerUnderreplicationManager lays them out (reference §8), so that a
// BookKeeper shell or auto-recovery pointed at the same store reads what we write:
//
//   /ledgers/underreplication                          (persistent, empty)
//     LAYOUT        type: "BASIC"\nversion: 1\n          (protobuf text format)
//     disable       present: auto-recovery paused (`bookkeeper shell autorecovery -disable`)
//     lostBookieRecoveryDelay   "<seconds>" in decimal: the auditor's live override
//     auditorelection/V_NNNNNNNNNN   auditor votes (auditor.h)
//     ledgers/<hhhh>/<hhhh>/<hhhh>/<hhhh>/urL<id %010d>   one marker per ledger
//     locks/urL<id %010d>          ephemeral: a worker holds the ledger
//
// The four <hhhh> levels are the 64-bit ledger id as 16-bit groups, most significant first,
// four lowercase hex digits each (ledger 0xcafebeef0000feed: cafe/beef/0000/feed).
//
// Marker value, UnderreplicatedLedgerFormat in protobuf text format, one field per line:
//   replica: "10.0.0.1:3181"     (repeated: the bookies found missing)
//   ctime: 1700000000000         (optional: when it was marked, ms since the epoch)
// Lock value (LockDataFormat) and auditor vote (AuditorVoteFormat): bookieId: "<id>".
//
// Claiming: a worker walks the marker tree in random order, skips ledgers whose lock exists,
// creates the lock (ephemeral, must not exist) and remembers the marker's version. complete()
// deletes the marker only at that version (a ledger marked again meanwhile stays marked),
// removes the emptied <hhhh> directories and releases the lock; release() only deletes the
// lock. Locks die with the worker's session.
//
// Threading: plain coroutines resuming on the caller's executor; one manager serves one
// worker or auditor, from one executor (the held-lock table is not synchronised). `store`
// outlives the manager.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/asio.h"
#include "common/status.h"
#include "metadata/metadata_store.h"

namespace magnetar::autorecovery {

inline constexpr std::string_view kUnderreplicationRoot = "/ledgers/underreplication";
inline constexpr std::string_view kMarkersRoot = "/ledgers/underreplication/ledgers";
inline constexpr std::string_view kLocksRoot = "/ledgers/underreplication/locks";
inline constexpr std::string_view kLayoutPath = "/ledgers/underreplication/LAYOUT";
inline constexpr std::string_view kDisablePath = "/ledgers/underreplication/disable";
inline constexpr std::string_view kLostBookieRecoveryDelayPath =
    "/ledgers/underreplication/lostBookieRecoveryDelay";
inline constexpr std::string_view kAuditorElectionPath =
    "/ledgers/underreplication/auditorelection";
inline constexpr std::string_view kLayoutText = "type: \"BASIC\"\nversion: 1\n";

// "urL0000000042" (at least 10 digits: %010d).
std::string marker_name(int64_t ledger_id);
// The marker's path: kMarkersRoot/<hhhh>/<hhhh>/<hhhh>/<hhhh>/urL<id>. Precondition: id >= 0.
std::string marker_path(int64_t ledger_id);
// kLocksRoot/urL<id>.
std::string lock_path(int64_t ledger_id);
// The id in a marker or lock name ("urL" + decimal digits), nullopt for any other name.
std::optional<int64_t> ledger_id_from_marker_name(std::string_view name);

struct MarkerData {
  std::vector<std::string> replicas;  // missing bookies
  int64_t ctime_ms = -1;              // -1: not recorded
};
// The marker value above (ctime omitted when negative).
std::string encode_marker(const MarkerData& data);
// Parses protobuf text format of UnderreplicatedLedgerFormat: fields in any order, one per
// line or several on a line, unknown fields skipped. kCorruption on malformed text.
Result<MarkerData> parse_marker(std::string_view text);
// `bookieId: "<id>"\n` (LockDataFormat, AuditorVoteFormat) and back (nullopt: no such field).
std::string encode_bookie_id(std::string_view bookie_id);
std::optional<std::string> parse_bookie_id(std::string_view text);

struct UnderreplicatedLedger {
  int64_t ledger_id = -1;
  MarkerData data;
  int64_t version = 0;  // the marker node's version
};

// What a worker holds after claim(): the lock exists and the marker had `version`.
struct Claim {
  int64_t ledger_id = -1;
  int64_t marker_version = 0;
  MarkerData data;
};

class UnderreplicationManager {
 public:
  // `owner_id`: written into the locks this manager takes (a bookie id or a host name).
  UnderreplicationManager(metadata::MetadataStore& store, std::string owner_id);
  UnderreplicationManager(const UnderreplicationManager&) = delete;
  UnderreplicationManager& operator=(const UnderreplicationManager&) = delete;

  // Creates the root, LAYOUT, ledgers/ and locks/ when missing. kNotSupported when LAYOUT
  // holds another type or version (an incompatible layout: refuse rather than mix).
  Task<Status> ensure_layout();

  // Marks `ledger_id` under-replicated with `missing` bookies; when already marked, adds the
  // bookies not yet listed (compare-and-set, retried). OK also when nothing was new.
  Task<Status> mark(int64_t ledger_id, std::vector<std::string> missing);
  // Every marker (ascending ledger id).
  Task<Result<std::vector<UnderreplicatedLedger>>> list();
  // The marker of one ledger, nullopt when not marked.
  Task<Result<std::optional<UnderreplicatedLedger>>> get(int64_t ledger_id);

  // One walk over the markers in random order; the first one not locked by anyone is locked
  // and returned. nullopt: none free (none at all, or every one locked).
  Task<Result<std::optional<Claim>>> claim();
  // Takes the lock of one ledger (marked or not): kBadVersion when someone holds it.
  Task<Status> lock(int64_t ledger_id);
  // Deletes the lock of a held ledger (a lock already gone is fine).
  Task<Status> release(int64_t ledger_id);
  // Done with a held ledger: deletes the marker if it still has the version seen at claim
  // (else someone marked it again: it stays), prunes empty parent directories, releases.
  Task<Status> complete(int64_t ledger_id);
  // The owner recorded in a ledger's lock, nullopt when not locked.
  Task<Result<std::optional<std::string>>> lock_owner(int64_t ledger_id);
  bool holds(int64_t ledger_id) const { return held_.count(ledger_id) != 0; }

  // The `disable` node: absent = enabled.
  Task<Result<bool>> replication_enabled();
  Task<Status> set_replication_enabled(bool enabled);

  // The live lostBookieRecoveryDelay (seconds), nullopt when the node does not exist or
  // does not hold a number.
  Task<Result<std::optional<int>>> lost_bookie_recovery_delay();
  Task<Status> set_lost_bookie_recovery_delay(int seconds);
  // Creates the node with `seconds` unless it exists (the auditor does this when elected).
  Task<Status> init_lost_bookie_recovery_delay(int seconds);

  metadata::MetadataStore& store() { return store_; }

 private:
  Task<Status> prune_marker_dirs(int64_t ledger_id);

  metadata::MetadataStore& store_;
  const std::string owner_id_;
  // Ledgers whose lock we hold -> the marker version seen at claim (nullopt: lock() only).
  std::map<int64_t, std::optional<int64_t>> held_;
};

}  // namespace magnetar::autorecovery
