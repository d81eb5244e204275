#include "cli/message_format.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <charconv>

namespace magnetar::cli {

namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

bool parse_int(std::string_view s, int64_t& v) {
  if (s.empty()) return false;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  return ec == std::errc() && end == s.data() + s.size();
}

}  // namespace

std::vector<std::string> split_values(const std::vector<std::string>& values,
                                      std::string_view separator) {
  std::vector<std::string> out;
  for (const std::string& v : values) {
    if (separator.empty()) {
      out.push_back(v);
      continue;
    }
    size_t start = 0;
    while (true) {
      const size_t at = v.find(separator, start);
      out.push_back(v.substr(start, at == std::string::npos ? std::string::npos : at - start));
      if (at == std::string::npos) break;
      start = at + separator.size();
    }
  }
  return out;
}

Result<std::map<std::string, std::string>> parse_properties(const std::vector<std::string>& args) {
  std::map<std::string, std::string> out;
  for (const std::string& pair : split_values(args, ",")) {
    const size_t eq = pair.find('=');
    if (eq == std::string::npos || eq == 0) {
      return Status(Errc::kInvalidArgument,
                    fmt::format("Invalid property '{}': expected key=value", pair));
    }
    out[pair.substr(0, eq)] = pair.substr(eq + 1);
  }
  return out;
}

Result<client::SubscriptionType> parse_subscription_type(std::string_view name) {
  const std::string n = lower(name);
  if (n == "exclusive") return client::SubscriptionType::kExclusive;
  if (n == "shared") return client::SubscriptionType::kShared;
  if (n == "failover") return client::SubscriptionType::kFailover;
  if (n == "key_shared" || n == "keyshared") return client::SubscriptionType::kKeyShared;
  return Status(Errc::kInvalidArgument,
                fmt::format("Invalid subscription type '{}': expected Exclusive, Shared, "
                            "Failover or Key_Shared",
                            name));
}

Result<client::InitialPosition> parse_initial_position(std::string_view name) {
  const std::string n = lower(name);
  if (n == "latest") return client::InitialPosition::kLatest;
  if (n == "earliest") return client::InitialPosition::kEarliest;
  return Status(
      Errc::kInvalidArgument,
      fmt::format("Invalid subscription position '{}': expected Latest or Earliest", name));
}

Result<client::CompressionType> parse_compression(std::string_view name) {
  const std::string n = lower(name);
  if (n == "none") return client::CompressionType::kNone;
  if (n == "lz4") return client::CompressionType::kLz4;
  if (n == "zlib") return client::CompressionType::kZlib;
  if (n == "zstd") return client::CompressionType::kZstd;
  if (n == "snappy") return client::CompressionType::kSnappy;
  return Status(
      Errc::kInvalidArgument,
      fmt::format("Invalid compression '{}': expected NONE, LZ4, ZLIB, ZSTD or SNAPPY", name));
}

Result<client::MessageId> parse_start_message_id(std::string_view text) {
  const std::string n = lower(text);
  if (n == "earliest") return client::MessageId::earliest();
  if (n == "latest") return client::MessageId::latest();
  int64_t parts[4] = {0, 0, -1, -1};
  size_t count = 0;
  size_t start = 0;
  while (count < 4) {
    const size_t colon = text.find(':', start);
    const std::string_view part = text.substr(
        start, colon == std::string_view::npos ? std::string_view::npos : colon - start);
    if (!parse_int(part, parts[count])) break;
    ++count;
    if (colon == std::string_view::npos) {
      start = std::string_view::npos;
      break;
    }
    start = colon + 1;
  }
  if (count < 2 || start != std::string_view::npos) {
    return Status(Errc::kInvalidArgument,
                  fmt::format("Invalid message id '{}': expected earliest, latest or "
                              "ledgerId:entryId",
                              text));
  }
  return client::MessageId(parts[0], parts[1], static_cast<int32_t>(parts[2]),
                           static_cast<int32_t>(parts[3]));
}

std::string hex_dump(std::string_view bytes) {
  std::string out;
  for (size_t line = 0; line < bytes.size(); line += 16) {
    out += fmt::format("{:08x} ", line);
    for (size_t i = line; i < line + 16; ++i) {
      if (i < bytes.size()) {
        out += fmt::format(" {:02x}", static_cast<unsigned char>(bytes[i]));
      } else {
        out += "   ";
      }
    }
    out += "  ";
    for (size_t i = line; i < std::min(bytes.size(), line + 16); ++i) {
      const auto c = static_cast<unsigned char>(bytes[i]);
      out += (c >= 0x20 && c < 0x7f) ? static_cast<char>(c) : '.';
    }
    out += '\n';
  }
  return out;
}

std::string describe_message(const client::Message& message, bool hex, bool hide_content) {
  std::string out = "key:[";
  out += message.has_key() ? message.key() : "null";
  out += "], properties:[";
  bool first = true;
  for (const auto& [k, v] : message.properties()) {
    if (!first) out += ", ";
    first = false;
    out += k + "=" + v;
  }
  out += "]";
  if (hide_content) return out;
  out += ", content:";
  if (hex) {
    out += '\n';
    out += hex_dump(message.payload());
    if (!out.empty() && out.back() == '\n') out.pop_back();
  } else {
    out += message.payload();
  }
  return out;
}

}  // namespace magnetar::cli
