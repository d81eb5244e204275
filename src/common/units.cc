#include "common/units.h"

#include <fmt/format.h>

#include <charconv>
#include <limits>
#include <optional>

namespace magnetar {

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

}  // namespace magnetar
