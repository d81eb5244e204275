#pragma once
// Positions in a managed ledger, and the set of individually acknowledged positions of a
// cursor.

#include <compare>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "common/ids.h"

namespace magnetar::mledger {

// (ledger id, entry id). Entry -1 means "before the first entry of that ledger": a cursor
// whose mark-delete position is (L, -1) has consumed nothing of L. Ordered by ledger, then
// entry.
struct Position {
  LedgerId ledger_id;
  EntryId entry_id;

  auto operator<=>(const Position&) const = default;
  std::string to_string() const;  // "ledger:entry", as Pulsar prints positions
};

// The positions acknowledged individually beyond a cursor's mark-delete position.
//
// Stored as one bitmap per ledger covering the span from the lowest to the highest set
// entry, so memory is bounded by (span of acknowledged entries) / 8 bytes however the holes
// fall: 1,000,000 acknowledgements with a hole between each take 250 KB, not 1,000,000 tree
// nodes. Ranges are exposed as closed intervals [first, last] within one ledger.
class AckSet {
 public:
  // Entry ids within one ledger are plain integers here (bitmap offsets); the ledger is typed,
  // so a ledger and an entry cannot trade places.
  struct Range {
    LedgerId ledger_id;
    int64_t first;  // entry ids, inclusive
    int64_t last;
  };

  // True when p was not in the set.
  bool insert(Position p);
  void insert_range(LedgerId ledger, int64_t first, int64_t last);
  bool contains(Position p) const;
  // Removes every position <= p.
  void remove_through(Position p);
  void clear() {
    ledgers_.clear();
    size_ = 0;
  }

  bool empty() const { return size_ == 0; }
  int64_t size() const { return size_; }  // number of positions
  // Acknowledged entries of ledger_id in [first, last].
  int64_t count(LedgerId ledger, int64_t first, int64_t last) const;
  // Smallest entry id >= entry of ledger_id that is not in the set.
  int64_t first_absent(LedgerId ledger, int64_t entry) const;
  // Calls fn for each maximal range, lowest first, until fn returns false.
  void for_each_range(const std::function<bool(const Range&)>& fn) const;
  int64_t range_count() const;
  std::vector<Range> ranges(size_t max) const;
  size_t memory_bytes() const;

 private:
  struct Bits {
    int64_t base = 0;  // entry id of bit 0 of words[0]; a multiple of 64
    std::vector<uint64_t> words;
    int64_t count = 0;
  };
  static void trim(Bits& bits);

  std::map<int64_t, Bits> ledgers_;
  int64_t size_ = 0;
};

}  // namespace magnetar::mledger
