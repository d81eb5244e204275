#include "metadata/paths.h"

#include <limits>

#include <fmt/format.h>

#include "common/status.h"

namespace magnetar::metadata {

std::string ledger_path(int64_t ledger_id) {
  MAGNETAR_ASSERT(ledger_id >= 0, "ledger_path of a negative ledger id");
  return fmt::format("{}/L{:019d}", kLedgersRoot, ledger_id);
}

std::optional<int64_t> ledger_id_from_node_name(std::string_view name) {
  if (name.size() != 20 || name[0] != 'L') return std::nullopt;
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  int64_t id = 0;
  for (char c : name.substr(1)) {
    if (c < '0' || c > '9') return std::nullopt;
    // 19 digits fit in uint64 but may exceed int64: check before multiplying.
    if (id > (kMax - (c - '0')) / 10) return std::nullopt;
    id = id * 10 + (c - '0');
  }
  return id;
}

}  // namespace magnetar::metadata
