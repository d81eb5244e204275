#include "common/units.h"

#include <fmt/format.h>

#include <charconv>
#include <ctime>
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

std::string format_iso_time(int64_t epoch_ms, bool trim) {
  const int64_t ms = ((epoch_ms % 1000) + 1000) % 1000;
  const std::time_t secs = static_cast<std::time_t>((epoch_ms - ms) / 1000);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  std::string out = fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}", tm.tm_year + 1900,
                                tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec);
  std::string fraction = fmt::format(".{:03}", ms);
  if (trim) {
    while (fraction.back() == '0') fraction.pop_back();
    if (fraction == ".") fraction.clear();
  }
  return out + fraction + "Z";
}

Result<int64_t> parse_iso_time(std::string_view text) {
  auto bad = [&text] {
    return Status(Errc::kInvalidArgument,
                  fmt::format("'{}' is not an ISO-8601 date-time with an offset (e.g. "
                              "2021-06-28T19:01:17Z or 2021-06-28T21:01:17+02:00)",
                              text));
  };
  std::string_view rest = text;
  // A fixed-width decimal field followed by `sep` (0: none).
  auto field = [&rest](size_t width, char sep) -> std::optional<int64_t> {
    if (rest.size() < width + (sep ? 1 : 0)) return std::nullopt;
    auto v = parse_count(rest.substr(0, width));
    if (!v || (sep && rest[width] != sep)) return std::nullopt;
    rest.remove_prefix(width + (sep ? 1 : 0));
    return v;
  };
  auto year = field(4, '-');
  auto month = year ? field(2, '-') : std::nullopt;
  auto day = month ? field(2, 'T') : std::nullopt;
  auto hour = day ? field(2, ':') : std::nullopt;
  auto minute = hour ? field(2, 0) : std::nullopt;
  if (!minute) return bad();
  int64_t second = 0;
  int64_t millis = 0;
  if (!rest.empty() && rest[0] == ':') {
    rest.remove_prefix(1);
    auto s = field(2, 0);
    if (!s) return bad();
    second = *s;
    if (!rest.empty() && rest[0] == '.') {
      rest.remove_prefix(1);
      size_t digits = 0;
      int64_t scale = 100;
      while (digits < rest.size() && rest[digits] >= '0' && rest[digits] <= '9') {
        millis += (rest[digits] - '0') * scale;
        scale /= 10;
        ++digits;
      }
      if (digits == 0 || digits > 9) return bad();
      rest.remove_prefix(digits);
    }
  }
  int64_t offset_minutes = 0;
  if (rest == "Z") {
    rest.remove_prefix(1);
  } else if (rest.size() == 6 && (rest[0] == '+' || rest[0] == '-')) {
    const int sign = rest[0] == '+' ? 1 : -1;
    rest.remove_prefix(1);
    auto oh = field(2, ':');
    auto om = oh ? field(2, 0) : std::nullopt;
    if (!om || *oh > 18 || *om > 59) return bad();
    offset_minutes = sign * (*oh * 60 + *om);
  } else {
    return bad();
  }
  if (!rest.empty() || *month < 1 || *month > 12 || *day < 1 || *day > 31 || *hour > 23 ||
      *minute > 59 || second > 60) {
    return bad();
  }
  // Days since the epoch of the civil date (proleptic Gregorian).
  const int64_t y = *year - (*month <= 2 ? 1 : 0);
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const int64_t yoe = y - era * 400;
  const int64_t mp = (*month + 9) % 12;
  const int64_t doy = (153 * mp + 2) / 5 + *day - 1;
  const int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  const int64_t days = era * 146097 + doe - 719468;
  const int64_t seconds = days * 86400 + *hour * 3600 + *minute * 60 + second - offset_minutes * 60;
  return seconds * 1000 + millis;
}

}  // namespace magnetar
