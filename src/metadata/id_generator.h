#pragma once
// Cluster-wide unique 64-bit ids (ledger ids), handed out from blocks reserved in one counter
// node:
//
//   <counter_path>   persistent; value = the next id nobody has reserved, in decimal ASCII
//
// A generator reserves [next, next + block_size) by writing next + block_size with the
// version it read (compare-and-set; a lost race re-reads and tries again), then serves the
// block from memory. Generators in different sessions or processes never return the same
// id; one generator's ids strictly increase; a new generator (e.g. after a restart) starts
// above every id handed out before, since the counter only grows. Ids left unused in a block
// when a process exits are skipped, never reused.
//
// Threading: belongs to the executor passed to the constructor; call next() from coroutines
// on it. Concurrent next() calls on that executor are fine (one reservation at a time).
// Lifetime: `store` outlives the generator; destroy it with no next() in flight.

#include <chrono>
#include <cstdint>
#include <string>

#include "common/asio.h"
#include "common/status.h"
#include "metadata/metadata_store.h"

namespace magnetar::metadata {

class IdGenerator {
 public:
  struct Options {
    int64_t block_size = 1000;
    int64_t first_id = 0;           // used when the counter node does not exist yet
    int max_reserve_attempts = 64;  // lost CAS races before next() fails with kBadVersion
  };

  IdGenerator(MetadataStore* store, Executor executor, std::string counter_path);
  IdGenerator(MetadataStore* store, Executor executor, std::string counter_path, Options options);
  IdGenerator(const IdGenerator&) = delete;
  IdGenerator& operator=(const IdGenerator&) = delete;

  // The next id, greater than `above` (-1: any). Ids of this generator's block at or below
  // `above` are skipped, and a new block is reserved when none is left above it: blocks are
  // handed out in increasing order, but another generator's block reserved later can hold
  // larger ids than this one's, so a caller that needs ids increasing across generators (a
  // managed ledger's ledgers, whichever broker creates them) names the largest it has.
  // Errors: store errors while reserving a block; Errc::kCorruption when the counter node
  // does not hold a non-negative decimal number; kResourceExhausted when ids would overflow
  // int64; kInvalidArgument when `above` is beyond every id ever reserved.
  Task<Result<int64_t>> next(int64_t above = -1);

  // Ids still reserved in memory (for tests and metrics).
  int64_t remaining_in_block() const { return end_ - next_; }

 private:
  Task<Status> reserve_block();

  MetadataStore* const store_;
  const std::string path_;
  const Options options_;
  int64_t next_ = 0;  // [next_, end_): reserved and not yet handed out
  int64_t end_ = 0;
  bool reserving_ = false;
  // Never expires; cancelled to wake every next() waiting for a reservation to finish.
  asio::steady_timer reserved_;
};

}  // namespace magnetar::metadata
