#pragma once
// A compacted ledger: the latest message of every key of a topic up to its compaction
// horizon, in the topic's order, each entry keeping the position it had in the topic.
//
// Entry format (ours; the ledger never leaves the cluster):
//
//   [idSize u32 BE][MessageIdData {ledgerId, entryId}][the stored entry, as in the topic]
//
// Reads find their start by a binary search over the ledger (one entry read per probe, the
// probed positions remembered), so nothing of the ledger is kept in memory but a bounded
// index of probes.
//
// Threading: on the topic's loop (the BookKeeper client's loop).

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/asio.h"
#include "common/buffer.h"
#include "common/ids.h"
#include "common/status.h"
#include "mledger/managed_ledger.h"

namespace magnetar::ledger {
class BookKeeper;
class LedgerHandle;
}  // namespace magnetar::ledger

namespace magnetar::broker::compaction {

// The cursor kept on a compacted topic by its compactor, as Pulsar names it; its mark-delete
// position is the compaction horizon and its property kLedgerProperty the compacted ledger.
inline constexpr const char* kCursor = "__compaction";
inline constexpr const char* kLedgerProperty = "CompactedTopicLedger";

BufferChain encode_compacted_entry(mledger::Position original, const Buffer& entry);
// The topic's entry stored in a compacted ledger's entry; kCorruption when it does not parse.
Result<mledger::Entry> decode_compacted_entry(const Buffer& data);

class CompactedLedger {
 public:
  // Opens ledger `id` (closed, written by a compactor) for reading.
  static Task<Result<std::shared_ptr<CompactedLedger>>> open(ledger::BookKeeper& bk, LedgerId id,
                                                             mledger::Position horizon,
                                                             std::string password);
  CompactedLedger(std::shared_ptr<ledger::LedgerHandle> handle, mledger::Position horizon);

  LedgerId id() const;
  mledger::Position horizon() const { return horizon_; }
  int64_t entries() const;
  int64_t size_bytes() const;

  // Up to `max` entries, in order, whose original positions are >= `from`. `hint`: where the
  // previous read of the same reader ended (an index into the ledger), to skip the search
  // when reading on; updated.
  Task<Result<std::vector<mledger::Entry>>> read_from(mledger::Position from, int max,
                                                      int64_t& hint);
  // Every entry in order (a compactor reading the previous compaction).
  Task<Result<std::vector<mledger::Entry>>> read_range(int64_t first, int64_t last);
  // The entry kept for original position `p`; nullopt when compaction dropped it.
  Task<Result<std::optional<mledger::Entry>>> find(mledger::Position p);

 private:
  // The index of the first entry whose original position is >= p (entries() when none).
  Task<Result<int64_t>> lower_bound(mledger::Position p);
  Task<Result<mledger::Position>> position_at(int64_t index);

  std::shared_ptr<ledger::LedgerHandle> handle_;
  const mledger::Position horizon_;
  std::map<int64_t, mledger::Position> probes_;  // index -> original position (bounded)
};

}  // namespace magnetar::broker::compaction
