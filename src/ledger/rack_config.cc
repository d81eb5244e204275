#include "ledger/rack_config.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>
#include <utility>

namespace magnetar::ledger {
namespace {

using RackJson = nlohmann::json;
using RackOrderedJson = nlohmann::ordered_json;

// Lost compare-and-set races update_rack_configuration tolerates before giving up.
constexpr int kMaxRackUpdateRounds = 16;

bool rack_has_control(std::string_view s) {
  for (char c : s) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7f) return true;
  }
  return false;
}

// A short, printable rendering of a value for error messages (control characters escaped).
std::string rack_shown(std::string_view s) {
  std::string out;
  for (char c : s.substr(0, 64)) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7f) {
      out += fmt::format("\\x{:02x}", u);
    } else {
      out += c;
    }
  }
  if (s.size() > 64) out += "...";
  return out;
}

Status rack_invalid(std::string message) {
  return Status(Errc::kInvalidArgument, std::move(message));
}

Status check_rack_field(std::string_view what, std::string_view value, bool may_be_empty) {
  if (!may_be_empty && value.empty()) return rack_invalid(fmt::format("{} is empty", what));
  if (value.size() > kMaxRackFieldLength) {
    return rack_invalid(
        fmt::format("{} '{}' is longer than {} bytes", what, rack_shown(value), kMaxRackFieldLength));
  }
  if (rack_has_control(value)) {
    return rack_invalid(fmt::format("{} '{}' has a control character", what, rack_shown(value)));
  }
  return Status::OK();
}

// A string member of a bookie's object: absent and null read as nullopt.
Result<std::optional<std::string>> rack_string_member(const RackJson& entry, const char* name,
                                                 std::string_view bookie) {
  auto it = entry.find(name);
  if (it == entry.end() || it->is_null()) return std::optional<std::string>();
  if (!it->is_string()) {
    return rack_invalid(fmt::format("bookie '{}': \"{}\" is not a string", rack_shown(bookie), name));
  }
  return std::optional<std::string>(it->get<std::string>());
}

}  // namespace

std::string normalize_rack(std::string_view rack) {
  if (rack.empty() || rack == "/") return std::string(rack);
  while (rack.size() > 1 && rack.back() == '/') rack.remove_suffix(1);
  if (rack == "/") return "/";
  std::string out;
  if (rack.front() != '/') out += '/';
  out += rack;
  return out;
}

Status validate_rack_entry(std::string_view group, std::string_view bookie,
                           const BookieRackInfo& info) {
  MAGNETAR_TRY(check_rack_field("bookie group", group, false));
  MAGNETAR_TRY(check_rack_field("bookie id", bookie, false));
  if (bookie.find('/') != std::string_view::npos) {
    return rack_invalid(fmt::format("bookie id '{}' has a '/'", rack_shown(bookie)));
  }
  MAGNETAR_TRY(check_rack_field(fmt::format("rack of bookie '{}'", rack_shown(bookie)), info.rack, true));
  Status location = validate_location(normalize_rack(info.rack));
  if (!location.ok()) {
    return rack_invalid(fmt::format("rack of bookie '{}': {}", rack_shown(bookie), location.message()));
  }
  if (info.hostname) {
    MAGNETAR_TRY(
        check_rack_field(fmt::format("hostname of bookie '{}'", rack_shown(bookie)), *info.hostname, true));
  }
  return Status::OK();
}

Result<RackConfiguration> RackConfiguration::parse(std::string_view json) {
  RackConfiguration out;
  if (json.find_first_not_of(" \t\r\n") == std::string_view::npos) return out;
  const RackJson doc = RackJson::parse(json, nullptr, false);
  if (doc.is_discarded()) return rack_invalid("not JSON");
  if (!doc.is_object()) return rack_invalid("not a JSON object of groups");
  size_t count = 0;
  for (const auto& [group, bookies] : doc.items()) {
    if (!bookies.is_object()) {
      return rack_invalid(fmt::format("group '{}' is not an object of bookies", rack_shown(group)));
    }
    for (const auto& [bookie, entry] : bookies.items()) {
      if (!entry.is_object()) {
        return rack_invalid(
            fmt::format("bookie '{}' of group '{}' is not an object", rack_shown(bookie), rack_shown(group)));
      }
      auto rack = rack_string_member(entry, "rack", bookie);
      if (!rack.ok()) return rack.status();
      auto hostname = rack_string_member(entry, "hostname", bookie);
      if (!hostname.ok()) return hostname.status();
      if (const BookieRackInfo* seen = out.find(bookie); seen != nullptr) {
        return rack_invalid(fmt::format("bookie '{}' is in more than one group", rack_shown(bookie)));
      }
      if (++count > kMaxRackBookies) {
        return rack_invalid(fmt::format("more than {} bookies", kMaxRackBookies));
      }
      BookieRackInfo info{rack->value_or(""), std::move(*hostname)};
      MAGNETAR_TRY(out.update(group, bookie, std::move(info)));
    }
  }
  return out;
}

std::string RackConfiguration::serialize() const {
  RackOrderedJson doc = RackOrderedJson::object();
  for (const auto& [group, bookies] : groups_) {
    RackOrderedJson members = RackOrderedJson::object();
    for (const auto& [bookie, info] : bookies) {
      RackOrderedJson entry = RackOrderedJson::object();
      entry["rack"] = info.rack;
      if (info.hostname) entry["hostname"] = *info.hostname;
      members[bookie] = std::move(entry);
    }
    doc[group] = std::move(members);
  }
  return doc.dump(-1, ' ', false, RackOrderedJson::error_handler_t::replace);
}

size_t RackConfiguration::bookie_count() const {
  size_t n = 0;
  for (const auto& [group, bookies] : groups_) n += bookies.size();
  return n;
}

const BookieRackInfo* RackConfiguration::find(std::string_view bookie) const {
  for (const auto& [group, bookies] : groups_) {
    auto it = bookies.find(std::string(bookie));
    if (it != bookies.end()) return &it->second;
  }
  return nullptr;
}

bool RackConfiguration::remove(std::string_view bookie) {
  for (auto g = groups_.begin(); g != groups_.end(); ++g) {
    if (g->second.erase(std::string(bookie)) == 0) continue;
    if (g->second.empty()) groups_.erase(g);
    return true;
  }
  return false;
}

Status RackConfiguration::update(std::string group, std::string bookie, BookieRackInfo info) {
  MAGNETAR_TRY(validate_rack_entry(group, bookie, info));
  if (find(bookie) == nullptr && bookie_count() >= kMaxRackBookies) {
    return rack_invalid(fmt::format("more than {} bookies", kMaxRackBookies));
  }
  info.rack = normalize_rack(info.rack);
  remove(bookie);
  groups_[std::move(group)][std::move(bookie)] = std::move(info);
  return Status::OK();
}

BookieTopology RackConfiguration::topology() const {
  BookieTopology topology;
  for (const auto& [group, bookies] : groups_) {
    for (const auto& [bookie, info] : bookies) topology.location.emplace(bookie, info.rack);
  }
  return topology;
}

Task<Result<StoredRackConfiguration>> load_rack_configuration(metadata::MetadataStore& store) {
  auto got = co_await store.get(std::string(kBookiesRackPath));
  if (!got.ok()) co_return got.status();
  StoredRackConfiguration out;
  if (!got->has_value()) co_return out;
  auto parsed = RackConfiguration::parse((*got)->value);
  if (!parsed.ok()) {
    co_return Status(Errc::kCorruption,
                     fmt::format("{}: {}", kBookiesRackPath, parsed.status().message()));
  }
  out.config = std::move(parsed).value();
  out.version = (*got)->stat.version;
  co_return out;
}

Task<Result<RackConfiguration>> update_rack_configuration(
    metadata::MetadataStore& store, std::function<Status(RackConfiguration&)> mutate) {
  for (int round = 0; round < kMaxRackUpdateRounds; ++round) {
    auto stored = co_await load_rack_configuration(store);
    if (!stored.ok()) co_return stored.status();
    RackConfiguration config = std::move(stored->config);
    MAGNETAR_CO_TRY(mutate(config));
    metadata::PutOptions at;
    at.expected_version = stored->version.value_or(-1);
    auto put = co_await store.put(std::string(kBookiesRackPath), config.serialize(), at);
    if (put.ok()) co_return config;
    // Another writer created or changed the node since the read: read it again.
    if (!put.status().is(Errc::kBadVersion) && !put.status().is(Errc::kNotFound) &&
        !put.status().is(Errc::kAlreadyExists)) {
      co_return put.status();
    }
  }
  co_return Status(Errc::kUnavailable, fmt::format("{}: gave up after {} concurrent updates",
                                                   kBookiesRackPath, kMaxRackUpdateRounds));
}

}  // namespace magnetar::ledger
