#pragma once
// How the etcd backend lays the node tree out in etcd's flat, sorted key space (the layout is
// documented in docs/metadata.md). Pure functions, shared by the store and its tests.
//
// For a store prefix P ("" or a chroot such as "/pulsar") and a node path of depth D ("/a/b"
// has depth 2):
//
//   P/n/DDD/a/b   the node: its value behind a small header (mtime, write id), its lease
//   P/t/a/b       its creation time (etcd keeps none), written with the node, on its lease
//   P/s/a/b       the counter of the sequential children of /a/b
//
// The zero-padded depth after "n/" puts the children of a node, and nothing else, in one key
// range ("P/n/003/a/b/" up to "P/n/003/a/b0"), so listing children is one range read, never
// a scan of the subtree. Depths above kMaxDepth are refused.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "common/status.h"

namespace magnetar::metadata::etcd {

inline constexpr size_t kMaxDepth = 999;
// Bytes before the caller's value in a node's etcd value.
inline constexpr size_t kValueHeaderSize = 17;

// Number of components: "/" has 0, "/a" 1. The path must be valid (validate_path).
size_t path_depth(std::string_view path);
// kInvalidPath naming the limit when the path is deeper than kMaxDepth.
Status check_depth(std::string_view path);

class KeyLayout {
 public:
  // `prefix`: "" or a valid path other than "/".
  explicit KeyLayout(std::string prefix) : prefix_(std::move(prefix)) {}

  std::string node(std::string_view path) const;
  std::string creation_time(std::string_view path) const;
  std::string sequence(std::string_view path) const;
  // [children_begin, children_end) holds exactly the node keys of path's children.
  std::string children_begin(std::string_view path) const;
  std::string children_end(std::string_view path) const;
  // Every node key: the range the store watches.
  std::string nodes_begin() const;
  std::string nodes_end() const;
  // The path of a node key (nullopt for any other key, a malformed one, or one whose path
  // breaks the path rules: written by another tool).
  std::optional<std::string> path_of(std::string_view key) const;

  const std::string& prefix() const { return prefix_; }

 private:
  const std::string prefix_;
};

// A node's etcd value: the header (format byte, modification time, write id) and the value.
struct StoredValue {
  int64_t modification_time_ms = 0;
  uint64_t write_id = 0;
  std::string_view value;
};
std::string encode_value(std::string_view value, int64_t modification_time_ms, uint64_t write_id);
// A value without our header (written by another tool) is returned whole, with time and id 0.
StoredValue decode_value(std::string_view stored);
std::string encode_time(int64_t ms);
int64_t decode_time(std::string_view stored);  // 0 when malformed

}  // namespace magnetar::metadata::etcd
