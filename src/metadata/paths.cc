#include "metadata/paths.h"

#include <algorithm>
#include <limits>

#include <fmt/format.h>

#include "metadata/metadata_store.h"

namespace magnetar::metadata {

namespace {

// Ids below this use the 10-digit layout (BookKeeper's "legacy hierarchical").
constexpr int64_t kShortIdLimit = std::numeric_limits<int32_t>::max();

bool all_digits(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// The value of up to 19 decimal digits, or nullopt if it does not fit an int64.
std::optional<int64_t> parse_id(std::string_view digits) {
  if (!all_digits(digits) || digits.size() > 19) return std::nullopt;
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  int64_t id = 0;
  for (char c : digits) {
    // 19 digits fit in uint64 but may exceed int64: check before multiplying.
    if (id > (kMax - (c - '0')) / 10) return std::nullopt;
    id = id * 10 + (c - '0');
  }
  return id;
}

// Below `path`, `levels` more directories of 4 digits, then ledger nodes "L" + 4 digits;
// `digits` holds the id's digits named by the directories so far.
Task<Status> walk(MetadataStore& store, std::string path, std::string digits, int levels,
                  std::vector<int64_t>& out) {
  auto names = co_await store.children(path);
  if (!names.ok()) co_return names.status();
  for (const std::string& name : *names) {
    if (levels > 0) {
      if (name.size() != 4 || !all_digits(name)) continue;
      std::string below = path + "/" + name;
      std::string more = digits + name;
      Status st = co_await walk(store, std::move(below), std::move(more), levels - 1, out);
      if (!st.ok()) co_return st;
    } else if (name.size() == 5 && name[0] == 'L') {
      if (auto id = parse_id(digits + name.substr(1))) out.push_back(*id);
    }
  }
  co_return Status::OK();
}

}  // namespace

std::string ledger_path(int64_t ledger_id) {
  MAGNETAR_ASSERT(ledger_id >= 0, "ledger_path of a negative ledger id");
  if (ledger_id < kShortIdLimit) {
    const std::string d = fmt::format("{:010d}", ledger_id);
    return fmt::format("{}/{}/{}/L{}", kLedgersRoot, d.substr(0, 2), d.substr(2, 4),
                       d.substr(6, 4));
  }
  const std::string d = fmt::format("{:019d}", ledger_id);
  return fmt::format("{}/{}/{}/{}/{}/L{}", kLedgersRoot, d.substr(0, 3), d.substr(3, 4),
                     d.substr(7, 4), d.substr(11, 4), d.substr(15, 4));
}

std::string flat_ledger_path(int64_t ledger_id) {
  MAGNETAR_ASSERT(ledger_id >= 0, "flat_ledger_path of a negative ledger id");
  return fmt::format("{}/L{:019d}", kLedgersRoot, ledger_id);
}

std::optional<int64_t> ledger_id_from_node_name(std::string_view name) {
  if (name.size() != 20 || name[0] != 'L') return std::nullopt;
  return parse_id(name.substr(1));
}

Task<Result<std::vector<int64_t>>> list_ledger_ids(MetadataStore& store) {
  std::vector<int64_t> out;
  const std::string root(kLedgersRoot);
  auto names = co_await store.children(root);
  if (!names.ok()) co_return names.status();
  for (const std::string& name : *names) {
    if (auto id = ledger_id_from_node_name(name)) {
      out.push_back(*id);
      continue;
    }
    // 2 digits: 10-digit ids (then 4, then L + 4); 3 digits: 19-digit ids (4, 4, 4, L + 4).
    if (!all_digits(name) || (name.size() != 2 && name.size() != 3)) continue;
    const int levels = name.size() == 2 ? 1 : 3;
    std::string below = root + "/" + name;
    Status st = co_await walk(store, std::move(below), name, levels, out);
    if (!st.ok()) co_return st;
  }
  std::sort(out.begin(), out.end());
  co_return out;
}

}  // namespace magnetar::metadata
