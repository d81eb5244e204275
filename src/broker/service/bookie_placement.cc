#include "broker/service/bookie_placement.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "ledger/bookie_client.h"

namespace magnetar::broker {
namespace {

constexpr size_t kMaxRegionNameLength = 256;

std::string_view trim_region(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

Status placement_refused(std::string message) {
  return Status(Errc::kInvalidArgument, std::move(message));
}

}  // namespace

Result<std::set<std::string>> regions_to_write(std::string_view value) {
  std::set<std::string> regions;
  if (trim_region(value).empty()) return regions;
  size_t start = 0;
  while (true) {
    const size_t end = std::min(value.find(';', start), value.size());
    const std::string_view name = trim_region(value.substr(start, end - start));
    if (name.empty()) {
      return placement_refused(fmt::format("reppRegionsToWrite '{}': an empty region name", value));
    }
    const bool control = std::any_of(name.begin(), name.end(), [](char c) {
      const auto u = static_cast<unsigned char>(c);
      return u < 0x20 || u == 0x7f;
    });
    if (control || name.find('/') != std::string_view::npos || name.size() > kMaxRegionNameLength) {
      return placement_refused(
          fmt::format("reppRegionsToWrite: region '{}' must be a name of at most {} bytes "
                      "without '/' or control characters",
                      name.substr(0, 64), kMaxRegionNameLength));
    }
    if (!regions.emplace(name).second) {
      return placement_refused(fmt::format("reppRegionsToWrite: region '{}' is named twice", name));
    }
    if (end == value.size()) break;
    start = end + 1;
  }
  return regions;
}

Result<ledger::PlacementSettings> placement_settings(const BrokerConfig& config) {
  using Kind = ledger::PlacementSettings::Kind;
  ledger::PlacementSettings settings;
  settings.min_racks_per_write_quorum = config.bookkeeper_client_min_num_racks_per_write_quorum;
  settings.enforce_min_racks = config.bookkeeper_client_enforce_min_num_racks_per_write_quorum;
  if (settings.min_racks_per_write_quorum < 1) {
    return placement_refused(fmt::format("bookkeeperClientMinNumRacksPerWriteQuorum={}: must be at least 1",
                           settings.min_racks_per_write_quorum));
  }
  if (!config.bookkeeper_client_regionaware_policy_enabled) {
    settings.kind =
        config.bookkeeper_client_rackaware_policy_enabled ? Kind::kRackAware : Kind::kDefault;
    return settings;
  }

  settings.kind = Kind::kRegionAware;
  auto regions = regions_to_write(config.repp_regions_to_write);
  if (!regions.ok()) return regions.status();
  ledger::RegionAwareOptions& region = settings.region;
  region.regions_to_write = std::move(regions).value();
  region.min_regions_for_durability = config.repp_minimum_regions_for_durability;
  region.enforce = config.repp_enable_validation;
  region.enforce_in_replace = config.repp_enable_durability_enforcement_in_replace;
  region.acks_span_regions = config.enforce_min_num_fault_domains_for_write;
  const int min_regions = region.min_regions_for_durability;
  const int listed = static_cast<int>(region.regions_to_write.size());
  if (listed > 0 && listed < min_regions) {
    return placement_refused(
        fmt::format("reppRegionsToWrite '{}' names {} region(s), fewer than "
                    "reppMinimumRegionsForDurability={}",
                    config.repp_regions_to_write, listed, min_regions));
  }
  const mledger::ManagedLedgerConfig& ml = config.managed_ledger;
  // The most regions a write set could be spread over: the listed ones, else one per copy.
  const int regions_at_best = listed > 0 ? listed : ml.write_quorum;
  if (region.acks_span_regions && min_regions > 1) {
    // The acknowledgements carry durability: write sets and ack quorums of R bookies at least.
    if (std::min(regions_at_best, ml.write_quorum) < min_regions) {
      return placement_refused(fmt::format(
          "managedLedgerDefaultWriteQuorum={} cannot span reppMinimumRegionsForDurability={} "
          "regions{}: raise the write quorum or lower the minimum",
          ml.write_quorum, min_regions,
          listed > 0 ? fmt::format(" over the {} regions of reppRegionsToWrite", listed) : ""));
    }
    if (ml.ack_quorum < min_regions) {
      return placement_refused(fmt::format(
          "managedLedgerDefaultAckQuorum={} is below reppMinimumRegionsForDurability={}: an "
          "acknowledged entry must be stored in {} regions, which takes an ack quorum of at "
          "least {} (bookkeeper_enforceMinNumFaultDomainsForWrite=true)",
          ml.ack_quorum, min_regions, min_regions, min_regions));
    }
    return settings;
  }
  const int needed =
      ledger::min_ack_quorum_for_regions(ml.write_quorum, regions_at_best, min_regions);
  if (ml.ack_quorum < needed) {
    if (needed > ml.write_quorum) {
      return placement_refused(fmt::format(
          "managedLedgerDefaultWriteQuorum={} cannot span reppMinimumRegionsForDurability={} "
          "regions{}: raise the write quorum or lower the minimum",
          ml.write_quorum, min_regions,
          listed > 0 ? fmt::format(" over the {} regions of reppRegionsToWrite", listed) : ""));
    }
    return placement_refused(fmt::format(
        "managedLedgerDefaultAckQuorum={} is below what reppMinimumRegionsForDurability={} "
        "needs with managedLedgerDefaultWriteQuorum={} over {} regions{}: every {} acks of a "
        "write set must span {} regions, which takes an ack quorum of at least {}",
        ml.ack_quorum, min_regions, ml.write_quorum, std::min(regions_at_best, ml.write_quorum),
        listed > 0 ? " (reppRegionsToWrite)" : "", ml.ack_quorum, min_regions, needed));
  }
  return settings;
}

bool rack_shape_fits(const BrokerConfig& config, std::string_view rack) {
  while (!rack.empty() && rack.front() == '/') rack.remove_prefix(1);
  while (!rack.empty() && rack.back() == '/') rack.remove_suffix(1);
  const auto inner = std::count(rack.begin(), rack.end(), '/');
  if (config.bookkeeper_client_regionaware_policy_enabled) return inner == 1;
  if (config.bookkeeper_client_rackaware_policy_enabled) return inner == 0;
  return true;
}

Result<std::map<std::string, std::string>> bookie_address_overrides(std::string_view value) {
  std::map<std::string, std::string> out;
  size_t start = 0;
  while (start < value.size()) {
    const size_t end = std::min(value.find(',', start), value.size());
    const std::string_view pair = trim_region(value.substr(start, end - start));
    start = end + 1;
    if (pair.empty()) continue;
    const size_t eq = pair.find('=');
    const std::string_view id = eq == std::string_view::npos ? pair : trim_region(pair.substr(0, eq));
    const std::string_view to =
        eq == std::string_view::npos ? std::string_view() : trim_region(pair.substr(eq + 1));
    if (id.empty() || to.empty()) {
      return placement_refused(fmt::format(
          "bookkeeperClientBookieAddressOverrides: '{}' is not <bookie id>=<address>:<port>",
          pair.substr(0, 128)));
    }
    for (std::string_view address : {id, to}) {
      if (!ledger::is_bookie_address(address)) {
        return placement_refused(fmt::format(
            "bookkeeperClientBookieAddressOverrides: '{}' is not <IPv4 address>:<port>",
            address.substr(0, 128)));
      }
    }
    if (!out.emplace(id, to).second) {
      return placement_refused(fmt::format(
          "bookkeeperClientBookieAddressOverrides: bookie {} is named twice", id));
    }
  }
  return out;
}

Status check_regions_known(const BrokerConfig& config, const ledger::BookieTopology& topology) {
  if (!config.bookkeeper_client_regionaware_policy_enabled || topology.location.empty()) {
    return Status::OK();
  }
  auto listed = regions_to_write(config.repp_regions_to_write);
  if (!listed.ok()) return listed.status();
  std::set<std::string> known;
  for (const auto& [bookie, location] : topology.location) {
    known.insert(topology.region_of(bookie));
  }
  for (const auto& region : *listed) {
    if (!known.count(region)) {
      return placement_refused(fmt::format(
          "reppRegionsToWrite names region '{}', which no bookie of /bookies is in (regions "
          "there: {})",
          region, fmt::join(known, ", ")));
    }
  }
  return Status::OK();
}

}  // namespace magnetar::broker
