#include "cli/arguments.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <limits>
#include <nlohmann/json.hpp>

#include "protocol/topic_name.h"

namespace magnetar::cli {

namespace {

constexpr int64_t kMax = std::numeric_limits<int64_t>::max();

// A non-negative decimal integer filling all of `digits`.
std::optional<int64_t> parse_count(std::string_view digits) {
  int64_t v = 0;
  if (digits.empty() || digits[0] == '+' || digits[0] == '-') return std::nullopt;
  auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), v);
  if (ec != std::errc() || end != digits.data() + digits.size()) return std::nullopt;
  return v;
}

// n * unit, or nullopt on overflow.
std::optional<int64_t> times(int64_t n, int64_t unit) {
  if (n > kMax / unit) return std::nullopt;
  return n * unit;
}

bool valid_name_part(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '-' || c == '=' || c == ':' || c == '.';
  });
}

}  // namespace

Result<int64_t> parse_size(std::string_view text) {
  if (text == "-1") return int64_t{-1};
  const auto bad = [text] {
    return Status(Errc::kInvalidArgument,
                  fmt::format("Invalid size '{}': expected a number of bytes with an optional "
                              "k, m, g or t suffix (e.g. 10M, 2G), or -1",
                              text));
  };
  if (text.empty()) return bad();
  int64_t unit = 1;
  std::string_view digits = text;
  switch (text.back()) {
    case 'k':
    case 'K':
      unit = int64_t{1} << 10;
      break;
    case 'm':
    case 'M':
      unit = int64_t{1} << 20;
      break;
    case 'g':
    case 'G':
      unit = int64_t{1} << 30;
      break;
    case 't':
    case 'T':
      unit = int64_t{1} << 40;
      break;
    default:
      break;
  }
  if (unit != 1) digits.remove_suffix(1);
  auto n = parse_count(digits);
  if (!n) return bad();
  auto bytes = times(*n, unit);
  if (!bytes) return bad();
  return *bytes;
}

Result<int64_t> parse_relative_seconds(std::string_view text, bool allow_infinite) {
  if (allow_infinite && text == "-1") return int64_t{-1};
  const auto bad = [text] {
    return Status(Errc::kInvalidArgument,
                  fmt::format("Invalid time '{}': expected a number with an optional unit s, m, "
                              "h, d, w or y (e.g. 30s, 10m, 3h, 2d)",
                              text));
  };
  if (text.empty()) return bad();
  int64_t unit = 1;
  std::string_view digits = text;
  bool has_unit = true;
  switch (text.back()) {
    case 's':
      unit = 1;
      break;
    case 'm':
      unit = 60;
      break;
    case 'h':
      unit = 3600;
      break;
    case 'd':
      unit = 86400;
      break;
    case 'w':
      unit = 7 * 86400;
      break;
    case 'y':
      unit = 365 * 86400;
      break;
    default:
      has_unit = false;
      break;
  }
  if (has_unit) digits.remove_suffix(1);
  auto n = parse_count(digits);
  if (!n) return bad();
  auto seconds = times(*n, unit);
  if (!seconds) return bad();
  return *seconds;
}

std::vector<std::string> split_list(std::string_view text) {
  std::vector<std::string> out;
  while (true) {
    const size_t comma = text.find(',');
    out.emplace_back(text.substr(0, comma));
    if (comma == std::string_view::npos) return out;
    text.remove_prefix(comma + 1);
  }
}

Result<protocol::MessageId> parse_message_id(std::string_view text) {
  auto id = protocol::MessageId::parse(text);
  if (!id.ok()) {
    return Status(Errc::kInvalidArgument,
                  fmt::format("Invalid message id '{}': expected earliest, latest or "
                              "ledgerId:entryId",
                              text));
  }
  return id;
}

std::string reset_cursor_body(const protocol::MessageId& id, bool excluded) {
  nlohmann::json j = {{"ledgerId", id.ledger_id},
                      {"entryId", id.entry_id},
                      {"partitionIndex", id.partition},
                      {"isExcluded", excluded},
                      {"batchIndex", id.batch_index}};
  return j.dump();
}

Result<std::string> namespace_path(std::string_view name) {
  const size_t slash = name.find('/');
  if (slash == std::string_view::npos || !valid_name_part(name.substr(0, slash)) ||
      !valid_name_part(name.substr(slash + 1))) {
    return Status(Errc::kInvalidArgument,
                  fmt::format("Invalid namespace name '{}': expected <tenant>/<namespace>", name));
  }
  return std::string(name);
}

Result<std::string> topic_path(std::string_view name) {
  auto topic = protocol::TopicName::parse(name);
  if (!topic.ok()) {
    return Status(Errc::kInvalidArgument, fmt::format("Invalid topic name '{}'", name));
  }
  // Legacy names (with a cluster) live under Pulsar's v1 paths.
  return (topic->is_legacy() ? "/admin/" : "/admin/v2/") + topic->rest_path();
}

Result<std::string> namespace_topics_root(std::string_view name, std::string_view domain) {
  auto ns = namespace_path(name);
  if (!ns.ok()) return ns.status();
  return fmt::format("/admin/v2/{}/{}", domain, *ns);
}

std::string encode_segment(std::string_view s) {
  std::string out;
  for (unsigned char c : s) {
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
        c == '.' || c == '_' || c == '~') {
      out += static_cast<char>(c);
    } else {
      out += fmt::format("%{:02X}", c);
    }
  }
  return out;
}

}  // namespace magnetar::cli
