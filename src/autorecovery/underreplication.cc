#include "autorecovery/underreplication.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <limits>
#include <chrono>
#include <random>

namespace magnetar::autorecovery {
namespace {

int64_t urm_now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// Protobuf text-format string literal: quotes, backslashes and non-printable bytes escaped.
std::string quote_text(std::string_view s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20 || c >= 0x7f) {
      out += fmt::format("\\{:03o}", c);
    } else {
      out += static_cast<char>(c);
    }
  }
  out += '"';
  return out;
}

// A small reader of protobuf text format: `name: value` pairs, values either quoted
// strings or bare tokens (numbers, enum names). Nested messages are not needed here.
class TextFieldReader {
 public:
  explicit TextFieldReader(std::string_view text) : text_(text) {}

  // The next field, or nullopt at the end; an error on malformed input.
  Result<std::optional<std::pair<std::string, std::string>>> next() {
    skip_blank();
    if (pos_ >= text_.size()) return std::optional<std::pair<std::string, std::string>>();
    size_t start = pos_;
    while (pos_ < text_.size() && (std::isalnum(static_cast<unsigned char>(text_[pos_])) ||
                                   text_[pos_] == '_')) {
      ++pos_;
    }
    if (pos_ == start) return bad("a field name");
    std::string name(text_.substr(start, pos_ - start));
    skip_blank();
    if (pos_ >= text_.size() || text_[pos_] != ':') return bad("':' after " + name);
    ++pos_;
    skip_blank();
    if (pos_ >= text_.size()) return bad("a value for " + name);
    std::string value;
    if (text_[pos_] == '"' || text_[pos_] == '\'') {
      const char quote = text_[pos_++];
      bool closed = false;
      while (pos_ < text_.size()) {
        char c = text_[pos_++];
        if (c == quote) {
          closed = true;
          break;
        }
        if (c != '\\') {
          value += c;
          continue;
        }
        if (pos_ >= text_.size()) break;
        char e = text_[pos_++];
        if (e >= '0' && e <= '7') {
          int v = e - '0';
          for (int k = 0; k < 2 && pos_ < text_.size() && text_[pos_] >= '0' && text_[pos_] <= '7';
               ++k) {
            v = v * 8 + (text_[pos_++] - '0');
          }
          value += static_cast<char>(v);
        } else if (e == 'n') {
          value += '\n';
        } else if (e == 't') {
          value += '\t';
        } else if (e == 'r') {
          value += '\r';
        } else {
          value += e;
        }
      }
      if (!closed) return bad("a closing quote for " + name);
    } else {
      start = pos_;
      while (pos_ < text_.size() && !std::isspace(static_cast<unsigned char>(text_[pos_]))) ++pos_;
      value = std::string(text_.substr(start, pos_ - start));
    }
    return std::optional<std::pair<std::string, std::string>>(
        std::make_pair(std::move(name), std::move(value)));
  }

 private:
  void skip_blank() {
    while (pos_ < text_.size() &&
           (std::isspace(static_cast<unsigned char>(text_[pos_])) || text_[pos_] == ',' ||
            text_[pos_] == ';')) {
      ++pos_;
    }
  }
  Status bad(const std::string& wanted) const {
    return Status(Errc::kCorruption,
                  fmt::format("protobuf text: expected {} at offset {}", wanted, pos_));
  }

  std::string_view text_;
  size_t pos_ = 0;
};

bool marker_dir_name(std::string_view name) {
  return name.size() == 4 && std::all_of(name.begin(), name.end(), [](char c) {
           return std::isxdigit(static_cast<unsigned char>(c)) != 0;
         });
}

}  // namespace

std::string marker_name(int64_t ledger_id) { return fmt::format("urL{:010d}", ledger_id); }

std::string marker_path(int64_t ledger_id) {
  const auto id = static_cast<uint64_t>(ledger_id);
  return fmt::format("{}/{:04x}/{:04x}/{:04x}/{:04x}/{}", kMarkersRoot, (id >> 48) & 0xffff,
                     (id >> 32) & 0xffff, (id >> 16) & 0xffff, id & 0xffff, marker_name(ledger_id));
}

std::string lock_path(int64_t ledger_id) {
  return fmt::format("{}/{}", kLocksRoot, marker_name(ledger_id));
}

std::optional<int64_t> ledger_id_from_marker_name(std::string_view name) {
  if (!name.starts_with("urL") || name.size() == 3 || name.size() > 3 + 19) return std::nullopt;
  int64_t id = 0;
  for (char c : name.substr(3)) {
    if (c < '0' || c > '9') return std::nullopt;
    if (id > (std::numeric_limits<int64_t>::max() - (c - '0')) / 10) return std::nullopt;
    id = id * 10 + (c - '0');
  }
  return id;
}

std::string encode_marker(const MarkerData& data) {
  std::string out;
  for (const std::string& r : data.replicas) out += "replica: " + quote_text(r) + "\n";
  if (data.ctime_ms >= 0) out += fmt::format("ctime: {}\n", data.ctime_ms);
  return out;
}

Result<MarkerData> parse_marker(std::string_view text) {
  MarkerData out;
  TextFieldReader reader(text);
  while (true) {
    auto field = reader.next();
    if (!field.ok()) return field.status();
    if (!field->has_value()) break;
    auto& [name, value] = **field;
    if (name == "replica") {
      out.replicas.push_back(value);
    } else if (name == "ctime") {
      int64_t v = 0;
      auto [p, ec] = std::from_chars(value.data(), value.data() + value.size(), v);
      if (ec != std::errc() || p != value.data() + value.size()) {
        return Status(Errc::kCorruption, "under-replicated marker: bad ctime '" + value + "'");
      }
      out.ctime_ms = v;
    }
  }
  return out;
}

std::string encode_bookie_id(std::string_view bookie_id) {
  return "bookieId: " + quote_text(bookie_id) + "\n";
}

std::optional<std::string> parse_bookie_id(std::string_view text) {
  TextFieldReader reader(text);
  while (true) {
    auto field = reader.next();
    if (!field.ok() || !field->has_value()) return std::nullopt;
    if ((*field)->first == "bookieId") return (*field)->second;
  }
}

// ---------------------------------------------------------------------------------------

UnderreplicationManager::UnderreplicationManager(metadata::MetadataStore& store,
                                                 std::string owner_id)
    : store_(store), owner_id_(std::move(owner_id)) {}

Task<Status> UnderreplicationManager::ensure_layout() {
  metadata::PutOptions create;
  create.expected_version = -1;
  for (std::string_view dir : {kUnderreplicationRoot, kMarkersRoot, kLocksRoot}) {
    auto exists = co_await store_.exists(std::string(dir));
    if (!exists.ok()) co_return exists.status();
    if (*exists) continue;
    auto made = co_await store_.put_recursive(std::string(dir), "", create);
    if (!made.ok() && !made.status().is(Errc::kBadVersion)) co_return made.status();
  }
  auto layout = co_await store_.get(std::string(kLayoutPath));
  if (!layout.ok()) co_return layout.status();
  if (!layout->has_value()) {
    auto made = co_await store_.put(std::string(kLayoutPath), std::string(kLayoutText), create);
    if (made.ok() || made.status().is(Errc::kBadVersion)) co_return Status::OK();
    co_return made.status();
  }
  TextFieldReader reader((*layout)->value);
  std::string type, version;
  while (true) {
    auto field = reader.next();
    if (!field.ok()) co_return Status(Errc::kNotSupported, "unreadable " + std::string(kLayoutPath));
    if (!field->has_value()) break;
    if ((*field)->first == "type") type = (*field)->second;
    if ((*field)->first == "version") version = (*field)->second;
  }
  if (type != "BASIC" || version != "1") {
    co_return Status(Errc::kNotSupported,
                     fmt::format("incompatible under-replication layout {}:{} at {} (BASIC:1 "
                                 "expected)",
                                 type, version, kLayoutPath));
  }
  co_return Status::OK();
}

Task<Status> UnderreplicationManager::mark(int64_t ledger_id, std::vector<std::string> missing) {
  const std::string path = marker_path(ledger_id);
  for (int attempt = 0; attempt < 20; ++attempt) {
    auto got = co_await store_.get(path);
    if (!got.ok()) co_return got.status();
    if (!got->has_value()) {
      MarkerData data;
      data.replicas = missing;
      data.ctime_ms = urm_now_ms();
      metadata::PutOptions create;
      create.expected_version = -1;
      auto made = co_await store_.put_recursive(path, encode_marker(data), create);
      // kBadVersion: marked meanwhile; kNotFound: a parent pruned meanwhile. Both: again.
      if (made.ok()) co_return Status::OK();
      if (!made.status().is(Errc::kBadVersion) && !made.status().is(Errc::kNotFound)) {
        co_return made.status();
      }
      continue;
    }
    auto data = parse_marker((*got)->value);
    if (!data.ok()) co_return data.status();
    bool added = false;
    for (const std::string& b : missing) {
      if (std::find(data->replicas.begin(), data->replicas.end(), b) != data->replicas.end()) {
        continue;
      }
      data->replicas.push_back(b);
      added = true;
    }
    if (!added) co_return Status::OK();
    data->ctime_ms = urm_now_ms();
    metadata::PutOptions cas;
    cas.expected_version = (*got)->stat.version;
    auto put = co_await store_.put(path, encode_marker(*data), cas);
    if (put.ok()) co_return Status::OK();
    if (!put.status().is(Errc::kBadVersion) && !put.status().is(Errc::kNotFound)) {
      co_return put.status();
    }
  }
  co_return Status(Errc::kUnavailable,
                   fmt::format("ledger {}: the under-replication marker kept changing", ledger_id));
}

Task<Result<std::optional<UnderreplicatedLedger>>> UnderreplicationManager::get(int64_t ledger_id) {
  auto got = co_await store_.get(marker_path(ledger_id));
  if (!got.ok()) co_return got.status();
  if (!got->has_value()) co_return std::optional<UnderreplicatedLedger>();
  auto data = parse_marker((*got)->value);
  if (!data.ok()) co_return data.status();
  UnderreplicatedLedger out;
  out.ledger_id = ledger_id;
  out.data = std::move(data).value();
  out.version = (*got)->stat.version;
  co_return std::optional<UnderreplicatedLedger>(std::move(out));
}

Task<Result<std::vector<UnderreplicatedLedger>>> UnderreplicationManager::list() {
  std::vector<UnderreplicatedLedger> out;
  std::vector<std::string> dirs = {std::string(kMarkersRoot)};
  while (!dirs.empty()) {
    std::string dir = std::move(dirs.back());
    dirs.pop_back();
    auto children = co_await store_.children(dir);
    if (!children.ok()) co_return children.status();
    for (const std::string& child : *children) {
      if (auto id = ledger_id_from_marker_name(child)) {
        auto one = co_await get(*id);
        if (!one.ok()) co_return one.status();
        if (one->has_value()) out.push_back(std::move(**one));
      } else if (marker_dir_name(child)) {
        dirs.push_back(metadata::join_path(dir, child));
      }
    }
  }
  std::sort(out.begin(), out.end(),
            [](const auto& a, const auto& b) { return a.ledger_id < b.ledger_id; });
  co_return out;
}

Task<Result<std::optional<Claim>>> UnderreplicationManager::claim() {
  static thread_local std::mt19937_64 rng{std::random_device{}()};
  auto locks = co_await store_.children(std::string(kLocksRoot));
  if (!locks.ok()) co_return locks.status();
  // Depth-first over the four <hhhh> levels, each level's children shuffled.
  struct Level {
    std::string dir;
    std::vector<std::string> children;
  };
  std::vector<Level> stack;
  {
    auto top = co_await store_.children(std::string(kMarkersRoot));
    if (!top.ok()) co_return top.status();
    std::shuffle(top->begin(), top->end(), rng);
    stack.push_back(Level{std::string(kMarkersRoot), std::move(top).value()});
  }
  while (!stack.empty()) {
    Level& level = stack.back();
    if (level.children.empty()) {
      stack.pop_back();
      continue;
    }
    std::string child = std::move(level.children.back());
    level.children.pop_back();
    std::string path = metadata::join_path(level.dir, child);
    if (marker_dir_name(child)) {
      auto below = co_await store_.children(path);
      if (!below.ok()) {
        if (below.status().is(Errc::kNotFound)) continue;  // pruned meanwhile
        co_return below.status();
      }
      std::shuffle(below->begin(), below->end(), rng);
      stack.push_back(Level{std::move(path), std::move(below).value()});
      continue;
    }
    auto id = ledger_id_from_marker_name(child);
    if (!id || held_.count(*id)) continue;
    if (std::find(locks->begin(), locks->end(), child) != locks->end()) continue;
    Status locked = co_await lock(*id);
    if (locked.is(Errc::kBadVersion)) continue;  // another worker was quicker
    if (!locked.ok()) co_return locked;
    // Read the marker under the lock: its version is the one complete() deletes.
    auto marker = co_await get(*id);
    if (!marker.ok() || !marker->has_value()) {
      Status released = co_await release(*id);
      (void)released;
      if (!marker.ok()) co_return marker.status();
      continue;  // completed by someone else between the listing and our lock
    }
    held_[*id] = (*marker)->version;
    Claim out;
    out.ledger_id = *id;
    out.marker_version = (*marker)->version;
    out.data = std::move((*marker)->data);
    co_return std::optional<Claim>(std::move(out));
  }
  co_return std::optional<Claim>();
}

Task<Status> UnderreplicationManager::lock(int64_t ledger_id) {
  metadata::PutOptions create;
  create.expected_version = -1;
  create.ephemeral = true;
  auto made = co_await store_.put_recursive(lock_path(ledger_id), encode_bookie_id(owner_id_), create);
  if (!made.ok()) co_return made.status();
  held_.emplace(ledger_id, std::nullopt);
  co_return Status::OK();
}

Task<Status> UnderreplicationManager::release(int64_t ledger_id) {
  if (!held_.erase(ledger_id)) co_return Status::OK();
  Status st = co_await store_.remove(lock_path(ledger_id));
  if (st.is(Errc::kNotFound)) co_return Status::OK();
  co_return st;
}

Task<Status> UnderreplicationManager::complete(int64_t ledger_id) {
  auto held = held_.find(ledger_id);
  if (held == held_.end()) {
    co_return Status(Errc::kInvalidArgument,
                     fmt::format("ledger {}: completed without holding its lock", ledger_id));
  }
  Status result;
  if (held->second) {
    Status removed = co_await store_.remove(marker_path(ledger_id), *held->second);
    // kBadVersion: marked again since the claim (another bookie lost): leave it for the
    // next round. kNotFound: someone else finished it.
    if (removed.ok()) {
      Status pruned = co_await prune_marker_dirs(ledger_id);
      (void)pruned;  // best effort: a directory left empty costs one listing
    } else if (!removed.is(Errc::kBadVersion) && !removed.is(Errc::kNotFound)) {
      result = removed;
    }
  }
  Status released = co_await release(ledger_id);
  if (result.ok()) result = released;
  co_return result;
}

Task<Status> UnderreplicationManager::prune_marker_dirs(int64_t ledger_id) {
  std::string dir = metadata::parent_path(marker_path(ledger_id));
  for (int level = 0; level < 4; ++level) {
    auto children = co_await store_.children(dir);
    if (!children.ok()) co_return children.status();
    if (!children->empty()) co_return Status::OK();
    Status st = co_await store_.remove(dir);
    // Not empty any more (a marker arrived) or gone already: stop quietly.
    if (!st.ok()) co_return Status::OK();
    dir = metadata::parent_path(dir);
  }
  co_return Status::OK();
}

Task<Result<std::optional<std::string>>> UnderreplicationManager::lock_owner(int64_t ledger_id) {
  auto got = co_await store_.get(lock_path(ledger_id));
  if (!got.ok()) co_return got.status();
  if (!got->has_value()) co_return std::optional<std::string>();
  auto id = parse_bookie_id((*got)->value);
  co_return std::optional<std::string>(id ? *id : std::string());
}

Task<Result<bool>> UnderreplicationManager::replication_enabled() {
  auto exists = co_await store_.exists(std::string(kDisablePath));
  if (!exists.ok()) co_return exists.status();
  co_return !*exists;
}

Task<Status> UnderreplicationManager::set_replication_enabled(bool enabled) {
  if (enabled) {
    Status st = co_await store_.remove(std::string(kDisablePath));
    if (st.is(Errc::kNotFound)) co_return Status::OK();
    co_return st;
  }
  metadata::PutOptions create;
  create.expected_version = -1;
  auto made = co_await store_.put_recursive(std::string(kDisablePath), "", create);
  if (made.ok() || made.status().is(Errc::kBadVersion)) co_return Status::OK();
  co_return made.status();
}

Task<Result<std::optional<int>>> UnderreplicationManager::lost_bookie_recovery_delay() {
  auto got = co_await store_.get(std::string(kLostBookieRecoveryDelayPath));
  if (!got.ok()) co_return got.status();
  if (!got->has_value()) co_return std::optional<int>();
  const std::string& text = (*got)->value;
  int v = 0;
  auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || p != text.data() + text.size() || v < 0) co_return std::optional<int>();
  co_return std::optional<int>(v);
}

Task<Status> UnderreplicationManager::set_lost_bookie_recovery_delay(int seconds) {
  auto put = co_await store_.put_recursive(std::string(kLostBookieRecoveryDelayPath),
                                           std::to_string(seconds));
  co_return put.status();
}

Task<Status> UnderreplicationManager::init_lost_bookie_recovery_delay(int seconds) {
  metadata::PutOptions create;
  create.expected_version = -1;
  auto made = co_await store_.put_recursive(std::string(kLostBookieRecoveryDelayPath),
                                            std::to_string(seconds), create);
  if (made.ok() || made.status().is(Errc::kBadVersion)) co_return Status::OK();
  co_return made.status();
}

}  // namespace magnetar::autorecovery
