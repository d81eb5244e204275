#include "metadata/sequential_nodes.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>

namespace magnetar::metadata::internal {
namespace {

// How often read_lowest re-lists when the lowest child keeps vanishing under it.
constexpr int kMaxLowestAttempts = 16;

std::optional<int64_t> parse_sequence(std::string_view name, std::string_view prefix) {
  if (name.size() <= prefix.size() || name.substr(0, prefix.size()) != prefix) {
    return std::nullopt;
  }
  std::string_view digits = name.substr(prefix.size());
  int64_t sequence = 0;
  auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), sequence);
  if (ec != std::errc() || end != digits.data() + digits.size() || sequence < 0) {
    return std::nullopt;
  }
  return sequence;
}

}  // namespace

Task<Result<std::vector<SequentialChild>>> list_sequential(MetadataStore* store, std::string dir,
                                                           std::string prefix) {
  auto names = co_await store->children(dir);
  if (!names.ok()) co_return names.status();
  std::vector<SequentialChild> out;
  out.reserve(names->size());
  for (std::string& name : *names) {
    std::optional<int64_t> sequence = parse_sequence(name, prefix);
    if (sequence) out.push_back(SequentialChild{std::move(name), *sequence});
  }
  std::sort(out.begin(), out.end(), [](const SequentialChild& a, const SequentialChild& b) {
    return a.sequence < b.sequence;
  });
  co_return out;
}

std::optional<size_t> find_child(const std::vector<SequentialChild>& children,
                                 const std::string& name) {
  for (size_t i = 0; i < children.size(); ++i) {
    if (children[i].name == name) return i;
  }
  return std::nullopt;
}

Task<Result<std::optional<SequentialOwner>>> read_lowest(MetadataStore* store, std::string dir,
                                                         std::string prefix) {
  for (int attempt = 0; attempt < kMaxLowestAttempts; ++attempt) {
    auto listed = co_await list_sequential(store, dir, prefix);
    if (!listed.ok()) co_return listed.status();
    if (listed->empty()) co_return std::optional<SequentialOwner>();
    std::string path = join_path(dir, listed->front().name);
    auto got = co_await store->get(path);
    if (!got.ok()) co_return got.status();
    if (!got->has_value()) continue;  // released meanwhile: look again
    co_return std::optional<SequentialOwner>(
        SequentialOwner{std::move(path), std::move((*got)->value), (*got)->stat});
  }
  co_return Status(Error::kBadVersion,
                   fmt::format("owner of '{}' kept changing while being read ({} attempts)", dir,
                               kMaxLowestAttempts));
}

bool outcome_unknown(const Status& status) {
  return status.code() == Error::kTimeout || status.code() == Error::kConnectionLost;
}

Task<void> remove_orphans(MetadataStore* store, std::string dir, std::string prefix,
                          std::string value, std::vector<std::string> keep, log::Logger log) {
  auto listed = co_await list_sequential(store, dir, prefix);
  if (!listed.ok()) {
    log.warn("cannot look for a node left by a failed create under {}: {}", dir,
             listed.status().to_string());
    co_return;
  }
  const int64_t session = store->session_id();
  for (const SequentialChild& child : *listed) {
    std::string path = join_path(dir, child.name);
    if (std::find(keep.begin(), keep.end(), path) != keep.end()) continue;
    auto got = co_await store->get(path);
    if (!got.ok() || !got->has_value()) continue;
    const GetResult& node = **got;
    if (!node.stat.ephemeral || node.stat.ephemeral_owner != session || node.value != value) {
      continue;
    }
    Status st = co_await store->remove(path);
    if (st.ok() || st.is(Errc::kNotFound)) {
      log.info("removed {} left by a create whose outcome was unknown", path);
    } else {
      log.warn("cannot remove {} left by a failed create: {}", path, st.to_string());
    }
  }
}

}  // namespace magnetar::metadata::internal
