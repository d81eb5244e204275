#pragma once
// Helpers shared by ResourceLock and LeaderElection, which both queue contenders as
// ephemeral sequential children of one directory node:
//
//   <dir>/<prefix>NNNNNNNNNN     ephemeral, sequential; value = the contender's value
//
// The contender with the lowest sequence number is the owner (lock holder, leader); each
// other contender watches only the child just below its own. Internal to this module.
//
// Threading: plain coroutines; they resume on the executor of their caller. `store` must
// outlive the call.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/asio.h"
#include "common/logging.h"
#include "common/status.h"
#include "metadata/metadata_store.h"

namespace magnetar::metadata::internal {

struct SequentialChild {
  std::string name;      // "lock-0000000007"
  int64_t sequence = 0;  // 7
};

// Children of `dir` named `prefix` + digits, lowest sequence first; other children are
// ignored. A missing `dir` gives an empty list.
Task<Result<std::vector<SequentialChild>>> list_sequential(MetadataStore* store, std::string dir,
                                                           std::string prefix);

// Index of `name` in `children`, or nullopt.
std::optional<size_t> find_child(const std::vector<SequentialChild>& children,
                                 const std::string& name);

struct SequentialOwner {
  std::string path;   // full path of the lowest child
  std::string value;  // what its creator stored
  Stat stat;          // stat.ephemeral_owner: the owner's session
};

// The lowest child with its value, or nullopt when `dir` has no contender. Re-lists when
// the lowest child disappears between listing and reading (bounded; then kBadVersion).
Task<Result<std::optional<SequentialOwner>>> read_lowest(MetadataStore* store, std::string dir,
                                                         std::string prefix);

// True for failures after which a write may or may not have been applied (timeout,
// connection lost): the caller cannot know whether its sequential node exists.
bool outcome_unknown(const Status& status);

// Clean-up after a create whose outcome is unknown: removes the children of `dir` named
// `prefix`+digits that belong to this session, hold `value` and are not in `keep` (nodes
// this process still uses). Best effort: failures are logged, not returned; a node left
// behind disappears with the session.
Task<void> remove_orphans(MetadataStore* store, std::string dir, std::string prefix,
                          std::string value, std::vector<std::string> keep, log::Logger log);

}  // namespace magnetar::metadata::internal
