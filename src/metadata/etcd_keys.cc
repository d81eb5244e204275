#include "metadata/etcd_keys.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>

#include "metadata/errors.h"
#include "metadata/metadata_store.h"

namespace magnetar::metadata::etcd {
namespace {

constexpr char kFormat = '\x01';

std::string depth_digits(size_t depth) {
  return fmt::format("{:03d}", depth);
}

}  // namespace

size_t path_depth(std::string_view path) {
  if (path == "/") return 0;
  return static_cast<size_t>(std::count(path.begin(), path.end(), '/'));
}

Status check_depth(std::string_view path) {
  // Children of a node at kMaxDepth would need one more digit.
  if (path_depth(path) < kMaxDepth) return Status::OK();
  return Status(Error::kInvalidPath,
                fmt::format("invalid path '{:.80}...': deeper than {} components, the etcd "
                            "backend's limit",
                            path, kMaxDepth - 1));
}

std::string KeyLayout::node(std::string_view path) const {
  if (path == "/") return prefix_ + "/n/000/";
  return fmt::format("{}/n/{}{}", prefix_, depth_digits(path_depth(path)), path);
}

std::string KeyLayout::creation_time(std::string_view path) const {
  return fmt::format("{}/t{}", prefix_, path);
}

std::string KeyLayout::sequence(std::string_view path) const {
  return fmt::format("{}/s{}", prefix_, path);
}

std::string KeyLayout::children_begin(std::string_view path) const {
  std::string base = path == "/" ? std::string("/") : fmt::format("{}/", path);
  return fmt::format("{}/n/{}{}", prefix_, depth_digits(path_depth(path) + 1), base);
}

std::string KeyLayout::children_end(std::string_view path) const {
  std::string end = children_begin(path);
  end.back() = '/' + 1;  // '0': the first key past every "<begin>..." key
  return end;
}

std::string KeyLayout::nodes_begin() const {
  return prefix_ + "/n/";
}

std::string KeyLayout::nodes_end() const {
  return prefix_ + "/n0";
}

std::optional<std::string> KeyLayout::path_of(std::string_view key) const {
  std::string begin = nodes_begin();
  if (key.size() < begin.size() + 4 || key.substr(0, begin.size()) != begin) {
    return std::nullopt;
  }
  std::string_view digits = key.substr(begin.size(), 3);
  size_t depth = 0;
  auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), depth);
  if (ec != std::errc() || end != digits.data() + digits.size()) return std::nullopt;
  std::string_view path = key.substr(begin.size() + 3);
  if (path.empty() || path.front() != '/') return std::nullopt;
  if (depth == 0) return path == "/" ? std::optional<std::string>("/") : std::nullopt;
  if (path.size() < 2 || path_depth(path) != depth || !validate_path(path).ok()) {
    return std::nullopt;
  }
  return std::string(path);
}

namespace {

void put_le64(std::string& out, uint64_t v) {
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

uint64_t get_le64(std::string_view in) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v |= static_cast<uint64_t>(static_cast<uint8_t>(in[i])) << (8 * i);
  return v;
}

}  // namespace

std::string encode_value(std::string_view value, int64_t modification_time_ms, uint64_t write_id) {
  std::string out;
  out.reserve(kValueHeaderSize + value.size());
  out.push_back(kFormat);
  put_le64(out, static_cast<uint64_t>(modification_time_ms));
  put_le64(out, write_id);
  out.append(value);
  return out;
}

StoredValue decode_value(std::string_view stored) {
  StoredValue out;
  if (stored.size() < kValueHeaderSize || stored[0] != kFormat) {
    out.value = stored;
    return out;
  }
  out.modification_time_ms = static_cast<int64_t>(get_le64(stored.substr(1, 8)));
  out.write_id = get_le64(stored.substr(9, 8));
  out.value = stored.substr(kValueHeaderSize);
  return out;
}

std::string encode_time(int64_t ms) {
  std::string out;
  put_le64(out, static_cast<uint64_t>(ms));
  return out;
}

int64_t decode_time(std::string_view stored) {
  return stored.size() == 8 ? static_cast<int64_t>(get_le64(stored)) : 0;
}

}  // namespace magnetar::metadata::etcd
