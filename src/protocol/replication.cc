#include "protocol/replication.h"

#include <fmt/format.h>

#include <charconv>

namespace magnetar::protocol {

namespace {

std::optional<int64_t> parse_non_negative(std::string_view text) {
  int64_t value = 0;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (ec != std::errc() || ptr != end || text.empty() || value < 0) return std::nullopt;
  return value;
}

}  // namespace

std::string replicator_producer_name(std::string_view local, std::string_view remote) {
  return fmt::format("{}{}-->{}", kReplicatorPrefix, local, remote);
}

std::optional<std::string> replicator_source(std::string_view producer_name) {
  if (!producer_name.starts_with(kReplicatorPrefix)) return std::nullopt;
  std::string_view rest = producer_name.substr(kReplicatorPrefix.size());
  if (auto arrow = rest.find("-->"); arrow != std::string_view::npos) rest = rest.substr(0, arrow);
  if (rest.empty()) return std::nullopt;
  return std::string(rest);
}

std::optional<SourcePosition> source_position(const wire::MessageMetadata& metadata) {
  for (const auto& kv : metadata.properties()) {
    if (kv.key() != kSourcePositionProperty) continue;
    std::string_view value = kv.value();
    const auto colon = value.find(':');
    if (colon == std::string_view::npos) return std::nullopt;
    auto ledger = parse_non_negative(value.substr(0, colon));
    auto entry = parse_non_negative(value.substr(colon + 1));
    if (!ledger || !entry) return std::nullopt;
    return SourcePosition{LedgerId{*ledger}, EntryId{*entry}};
  }
  return std::nullopt;
}

void set_source_position(wire::MessageMetadata* metadata, SourcePosition position) {
  const std::string value = fmt::format("{}:{}", position.ledger, position.entry);
  for (auto& kv : *metadata->mutable_properties()) {
    if (kv.key() == kSourcePositionProperty) {
      kv.set_value(value);
      return;
    }
  }
  auto* kv = metadata->add_properties();
  kv->set_key(std::string(kSourcePositionProperty));
  kv->set_value(value);
}

bool replicates_to(const wire::MessageMetadata& metadata, std::string_view remote) {
  if (metadata.has_replicated_from()) return false;
  if (metadata.replicate_to_size() == 0) return true;
  for (const auto& cluster : metadata.replicate_to()) {
    if (cluster == remote) return true;
  }
  return false;
}

}  // namespace magnetar::protocol
