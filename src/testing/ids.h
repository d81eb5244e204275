#pragma once
// Short spellings of ledger and entry ids for tests, where they are mostly literals:
// `storage.add_entry(L(1), E(0), entry, E(-1))`.

#include <cstdint>

#include "common/ids.h"

namespace magnetar::testing {

constexpr LedgerId L(int64_t id) { return LedgerId{id}; }
constexpr EntryId E(int64_t id) { return EntryId{id}; }

}  // namespace magnetar::testing
