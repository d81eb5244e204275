#pragma once
// The bookie's cookie: which directories belong to which bookie of which cluster, stamped
// in every journal and ledger directory (current/VERSION) and in the metadata store
// (/ledgers/cookies/<bookieId>). A bookie refuses to start when they disagree, so that a
// wiped or swapped disk is noticed instead of silently serving nothing:
//
//   metadata has a cookie, a directory has none      -> the disk was wiped (or replaced)
//   metadata has a cookie, a directory differs       -> wrong disk or changed config
//   metadata has none, directories have one          -> the metadata store was reset
//   neither has one                                  -> a new bookie: stamp everywhere

#include <memory>
#include <string>
#include <vector>

#include "bookie/bookie_config.h"
#include "common/env.h"
#include "metadata/metadata_store.h"

namespace magnetar::bookie {

struct Cookie {
  std::string bookie_id;
  std::vector<std::string> journal_dirs;
  std::vector<std::string> ledger_dirs;
  std::string instance_id;

  std::string to_json() const;
  static Result<Cookie> from_json(std::string_view text);
  bool operator==(const Cookie&) const = default;
};

// Validates (or, for a new bookie, stamps) the cookie of `config`'s directories against the
// metadata store. Blocking: call at startup, not on an event loop. Errors are
// Errc::kFailedPrecondition-like kInvalidArgument with a message saying which case applies.
Status check_and_stamp_cookie(const BookieConfig& config, metadata::MetadataStore& store,
                              Env& env = posix_env());

}  // namespace magnetar::bookie
