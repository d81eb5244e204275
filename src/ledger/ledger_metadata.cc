#include "ledger/ledger_metadata.h"

#include <openssl/evp.h>

#include <algorithm>
#include <limits>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace magnetar::ledger {
namespace {

constexpr int64_t kFormatVersion = 1;
constexpr int64_t kInt32Max = std::numeric_limits<int32_t>::max();
constexpr int64_t kInt64Max = std::numeric_limits<int64_t>::max();
constexpr int64_t kInt64Min = std::numeric_limits<int64_t>::min();

Status invalid(std::string what) {
  return Status(Errc::kInvalidArgument, "ledger metadata: " + std::move(what));
}

Status corrupt(std::string what) {
  return Status(Errc::kCorruption, "ledger metadata: " + std::move(what));
}

// True when `s` is well-formed UTF-8 (no overlong forms, surrogates or code points above
// U+10FFFF), the only strings JSON can carry unchanged.
bool is_utf8(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    size_t extra = 0;
    uint32_t cp = 0;
    if (c < 0x80) {
      ++i;
      continue;
    } else if ((c & 0xE0) == 0xC0) {
      extra = 1;
      cp = c & 0x1F;
    } else if ((c & 0xF0) == 0xE0) {
      extra = 2;
      cp = c & 0x0F;
    } else if ((c & 0xF8) == 0xF0) {
      extra = 3;
      cp = c & 0x07;
    } else {
      return false;
    }
    if (i + extra >= s.size()) return false;  // truncated sequence
    for (size_t k = 1; k <= extra; ++k) {
      const auto cc = static_cast<unsigned char>(s[i + k]);
      if ((cc & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (cc & 0x3F);
    }
    static constexpr uint32_t kMinForLength[] = {0, 0x80, 0x800, 0x10000};
    if (cp < kMinForLength[extra] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) {
      return false;
    }
    i += extra + 1;
  }
  return true;
}

std::string to_hex(std::string_view bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  out.reserve(bytes.size() * 2);
  for (char ch : bytes) {
    const auto b = static_cast<unsigned char>(ch);
    out.push_back(kDigits[b >> 4]);
    out.push_back(kDigits[b & 0x0F]);
  }
  return out;
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

std::optional<std::string> from_hex(std::string_view hex) {
  if (hex.size() % 2 != 0) return std::nullopt;
  std::string out;
  out.reserve(hex.size() / 2);
  for (size_t i = 0; i < hex.size(); i += 2) {
    const int hi = hex_value(hex[i]);
    const int lo = hex_value(hex[i + 1]);
    if (hi < 0 || lo < 0) return std::nullopt;
    out.push_back(static_cast<char>((hi << 4) | lo));
  }
  return out;
}

using Json = nlohmann::json;

// The integer member `key` of `obj`, within [min, max]; a float, a string or an absent
// member is corruption.
Result<int64_t> get_int(const Json& obj, const char* key, int64_t min = kInt64Min,
                        int64_t max = kInt64Max) {
  auto it = obj.find(key);
  if (it == obj.end()) return corrupt(fmt::format("missing field '{}'", key));
  int64_t v = 0;
  if (it->is_number_unsigned()) {
    const auto u = it->get<uint64_t>();
    if (u > static_cast<uint64_t>(kInt64Max)) {
      return corrupt(fmt::format("field '{}' is out of range", key));
    }
    v = static_cast<int64_t>(u);
  } else if (it->is_number_integer()) {
    v = it->get<int64_t>();
  } else {
    return corrupt(fmt::format("field '{}' is not an integer", key));
  }
  if (v < min || v > max) {
    return corrupt(fmt::format("field '{}' = {} is out of range [{}, {}]", key, v, min, max));
  }
  return v;
}

Result<std::string> get_string(const Json& obj, const char* key) {
  auto it = obj.find(key);
  if (it == obj.end()) return corrupt(fmt::format("missing field '{}'", key));
  if (!it->is_string()) return corrupt(fmt::format("field '{}' is not a string", key));
  return it->get<std::string>();
}

Result<LedgerState> parse_state(std::string_view s) {
  if (s == "OPEN") return LedgerState::kOpen;
  if (s == "IN_RECOVERY") return LedgerState::kInRecovery;
  if (s == "CLOSED") return LedgerState::kClosed;
  return corrupt(fmt::format("unknown state '{}'", s));
}

Result<DigestType> parse_digest(std::string_view s) {
  if (s == "CRC32C") return DigestType::kCrc32c;
  if (s == "DUMMY") return DigestType::kDummy;
  return corrupt(fmt::format("unknown digest type '{}'", s));
}

// Everything from_json reads except validation, which the caller runs afterwards.
Result<LedgerMetadata> parse_fields(const Json& j) {
  LedgerMetadata m;
  MAGNETAR_ASSIGN_OR_RETURN(m.ledger_id, get_int(j, "ledger_id", 0));
  MAGNETAR_ASSIGN_OR_RETURN(m.ensemble_size, get_int(j, "ensemble_size", 1, kInt32Max));
  MAGNETAR_ASSIGN_OR_RETURN(m.write_quorum, get_int(j, "write_quorum", 1, kInt32Max));
  MAGNETAR_ASSIGN_OR_RETURN(m.ack_quorum, get_int(j, "ack_quorum", 1, kInt32Max));
  MAGNETAR_ASSIGN_OR_RETURN(std::string state, get_string(j, "state"));
  MAGNETAR_ASSIGN_OR_RETURN(m.state, parse_state(state));

  const bool has_last = j.contains("last_entry_id");
  const bool has_length = j.contains("length");
  if (m.state == LedgerState::kClosed) {
    MAGNETAR_ASSIGN_OR_RETURN(m.last_entry_id, get_int(j, "last_entry_id", -1));
    MAGNETAR_ASSIGN_OR_RETURN(m.length, get_int(j, "length", -1));
  } else if (has_last || has_length) {
    return corrupt(fmt::format("ledger in state {} has last_entry_id or length", state));
  }

  MAGNETAR_ASSIGN_OR_RETURN(std::string digest, get_string(j, "digest"));
  MAGNETAR_ASSIGN_OR_RETURN(m.digest, parse_digest(digest));
  MAGNETAR_ASSIGN_OR_RETURN(std::string password_hex, get_string(j, "password_hex"));
  auto password = from_hex(password_hex);
  if (!password) return corrupt("field 'password_hex' is not hexadecimal");
  m.password = std::move(*password);
  MAGNETAR_ASSIGN_OR_RETURN(m.ctime_ms, get_int(j, "ctime_ms", 0));

  auto custom = j.find("custom");
  if (custom == j.end()) return corrupt("missing field 'custom'");
  if (!custom->is_object()) return corrupt("field 'custom' is not an object");
  for (const auto& [key, value] : custom->items()) {
    if (!value.is_string()) return corrupt(fmt::format("custom value '{}' is not a string", key));
    m.custom.emplace(key, value.get<std::string>());
  }

  auto segments = j.find("segments");
  if (segments == j.end()) return corrupt("missing field 'segments'");
  if (!segments->is_array()) return corrupt("field 'segments' is not an array");
  for (const auto& s : *segments) {
    if (!s.is_object()) return corrupt("a segment is not an object");
    Segment seg;
    MAGNETAR_ASSIGN_OR_RETURN(seg.first_entry_id, get_int(s, "first_entry_id", 0));
    auto ensemble = s.find("ensemble");
    if (ensemble == s.end() || !ensemble->is_array()) {
      return corrupt(fmt::format("segment at entry {} lacks an 'ensemble' array", seg.first_entry_id));
    }
    for (const auto& b : *ensemble) {
      if (!b.is_string()) {
        return corrupt(fmt::format("segment at entry {} has a non-string bookie id",
                                   seg.first_entry_id));
      }
      seg.ensemble.push_back(b.get<std::string>());
    }
    m.segments.push_back(std::move(seg));
  }
  return m;
}

}  // namespace

std::string_view to_string(LedgerState state) {
  switch (state) {
    case LedgerState::kOpen: return "OPEN";
    case LedgerState::kInRecovery: return "IN_RECOVERY";
    case LedgerState::kClosed: return "CLOSED";
  }
  return "UNKNOWN";
}

std::string_view to_string(DigestType digest) {
  switch (digest) {
    case DigestType::kCrc32c: return "CRC32C";
    case DigestType::kDummy: return "DUMMY";
  }
  return "UNKNOWN";
}

const std::vector<std::string>& LedgerMetadata::ensemble_for(int64_t entry_id) const {
  MAGNETAR_ASSERT(!segments.empty(), "ensemble_for on ledger metadata without segments");
  MAGNETAR_ASSERT(entry_id >= 0, "ensemble_for of a negative entry id");
  // First segment starting after entry_id; the one before it holds the entry.
  auto after = std::upper_bound(
      segments.begin(), segments.end(), entry_id,
      [](int64_t id, const Segment& s) { return id < s.first_entry_id; });
  MAGNETAR_ASSERT(after != segments.begin(), "first segment does not start at entry 0");
  return std::prev(after)->ensemble;
}

std::vector<int> LedgerMetadata::write_set(int64_t entry_id) const {
  MAGNETAR_ASSERT(write_quorum >= 1 && write_quorum <= ensemble_size,
                  "write_set needs 1 <= write quorum <= ensemble size");
  MAGNETAR_ASSERT(entry_id >= 0, "write_set of a negative entry id");
  std::vector<int> out;
  out.reserve(static_cast<size_t>(write_quorum));
  // Reduce first so entry_id + i cannot overflow.
  const auto first = static_cast<int>(entry_id % ensemble_size);
  for (int i = 0; i < write_quorum; ++i) out.push_back((first + i) % ensemble_size);
  return out;
}

std::string LedgerMetadata::master_key() const {
  const std::string input = "ledger" + password;
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int size = 0;
  const int ok = EVP_Digest(input.data(), input.size(), digest, &size, EVP_sha1(), nullptr);
  MAGNETAR_ASSERT(ok == 1 && size == 20, "SHA-1 of the ledger password failed");
  return std::string(reinterpret_cast<const char*>(digest), size);
}

Status LedgerMetadata::validate() const {
  if (ledger_id < 0) return invalid(fmt::format("negative ledger id {}", ledger_id));
  if (ack_quorum < 1 || write_quorum < ack_quorum || ensemble_size < write_quorum) {
    return invalid(fmt::format(
        "ledger {}: quorums must satisfy E >= Qw >= Qa >= 1, have E={} Qw={} Qa={}", ledger_id,
        ensemble_size, write_quorum, ack_quorum));
  }
  if (segments.empty()) return invalid(fmt::format("ledger {} has no segments", ledger_id));
  if (segments.front().first_entry_id != 0) {
    return invalid(fmt::format("ledger {}: first segment starts at entry {}, not 0", ledger_id,
                               segments.front().first_entry_id));
  }
  for (size_t i = 0; i < segments.size(); ++i) {
    const Segment& s = segments[i];
    if (i > 0 && s.first_entry_id <= segments[i - 1].first_entry_id) {
      return invalid(fmt::format("ledger {}: segment first entry ids not increasing ({} after {})",
                                 ledger_id, s.first_entry_id, segments[i - 1].first_entry_id));
    }
    if (s.ensemble.size() != static_cast<size_t>(ensemble_size)) {
      return invalid(fmt::format("ledger {}: segment at entry {} has {} bookies, ensemble size {}",
                                 ledger_id, s.first_entry_id, s.ensemble.size(), ensemble_size));
    }
    std::set<std::string_view> seen;
    for (const std::string& bookie : s.ensemble) {
      if (bookie.empty()) {
        return invalid(fmt::format("ledger {}: segment at entry {} has an empty bookie id",
                                   ledger_id, s.first_entry_id));
      }
      if (!seen.insert(bookie).second) {
        return invalid(fmt::format("ledger {}: segment at entry {} lists bookie {} twice",
                                   ledger_id, s.first_entry_id, bookie));
      }
    }
  }
  if (state == LedgerState::kClosed) {
    if (last_entry_id < -1 || length < -1) {
      return invalid(fmt::format("ledger {}: closed with last entry {} and length {}", ledger_id,
                                 last_entry_id, length));
    }
    if (segments.back().first_entry_id > last_entry_id + 1) {
      return invalid(fmt::format("ledger {}: closed at entry {} but a segment starts at entry {}",
                                 ledger_id, last_entry_id, segments.back().first_entry_id));
    }
  } else if (last_entry_id != -1 || length != 0) {
    return invalid(fmt::format("ledger {}: state {} with last entry {} and length {} (set only "
                               "when closed)",
                               ledger_id, to_string(state), last_entry_id, length));
  }
  if (ctime_ms < 0) return invalid(fmt::format("ledger {}: negative ctime {}", ledger_id, ctime_ms));
  for (const auto& [key, value] : custom) {
    if (!is_utf8(key) || !is_utf8(value)) {
      return invalid(fmt::format("ledger {}: custom metadata entry is not UTF-8", ledger_id));
    }
  }
  return Status::OK();
}

std::string LedgerMetadata::to_json() const {
  // ordered_json keeps the documented field order, which makes stored values readable.
  nlohmann::ordered_json j;
  j["format_version"] = kFormatVersion;
  j["ledger_id"] = ledger_id;
  j["ensemble_size"] = ensemble_size;
  j["write_quorum"] = write_quorum;
  j["ack_quorum"] = ack_quorum;
  j["state"] = to_string(state);
  if (state == LedgerState::kClosed) {
    j["last_entry_id"] = last_entry_id;
    j["length"] = length;
  }
  j["digest"] = to_string(digest);
  j["password_hex"] = to_hex(password);
  j["ctime_ms"] = ctime_ms;
  j["custom"] = nlohmann::ordered_json::object();
  for (const auto& [key, value] : custom) j["custom"][key] = value;
  j["segments"] = nlohmann::ordered_json::array();
  for (const Segment& s : segments) {
    j["segments"].push_back({{"first_entry_id", s.first_entry_id}, {"ensemble", s.ensemble}});
  }
  return j.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

Result<LedgerMetadata> LedgerMetadata::from_json(std::string_view text) {
  Json j = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return corrupt("not valid JSON");
  if (!j.is_object()) return corrupt("not a JSON object");
  MAGNETAR_ASSIGN_OR_RETURN(int64_t version, get_int(j, "format_version", 1));
  if (version > kFormatVersion) {
    return Status(Errc::kNotSupported,
                  fmt::format("ledger metadata: format version {} is newer than ours ({})", version,
                              kFormatVersion));
  }
  MAGNETAR_ASSIGN_OR_RETURN(LedgerMetadata m, parse_fields(j));
  Status valid = m.validate();
  if (!valid.ok()) return Status(Errc::kCorruption, valid.message());
  return m;
}

}  // namespace magnetar::ledger
