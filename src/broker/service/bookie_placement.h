#pragma once
// The broker's ledger placement: its bookkeeperClient* and repp* keys turned into the ledger
// client's placement settings (checked, naming the key at fault; broker.cc builds each
// loop's policy from them), and the rack shape the admin API accepts for the policy in force
// (admin/bookies.cc).
//
// Pulsar's BookKeeperClientFactoryImpl: region-aware when
// bookkeeperClientRegionawarePolicyEnabled (the repp* keys apply), else rack-aware when
// bookkeeperClientRackawarePolicyEnabled (min racks, enforce), else random placement.

#include <map>
#include <set>
#include <string>
#include <string_view>

#include "broker/config/broker_config.h"
#include "common/status.h"
#include "ledger/placement.h"

namespace magnetar::broker {

// The regions of reppRegionsToWrite ("r1;r2;r3", blanks around names trimmed; empty: none).
// Errors: Errc::kInvalidArgument naming reppRegionsToWrite for an empty name between ';', a
// name with '/', a control character or longer than 256 bytes, or a name given twice.
Result<std::set<std::string>> regions_to_write(std::string_view value);

// The placement settings of `config`, checked against the quorums ledgers are created with
// (managedLedgerDefaultEnsembleSize/WriteQuorum/AckQuorum). Errors, Errc::kInvalidArgument
// with a message naming the keys:
//  - reppRegionsToWrite malformed (above), or naming fewer regions than
//    reppMinimumRegionsForDurability (BookKeeper refuses this too);
//  - region-aware with an ack quorum too small for every ack quorum to span
//    reppMinimumRegionsForDurability regions, even with the write set spread as evenly as
//    possible over the regions to write (all of them when reppRegionsToWrite is empty, up to
//    Qw): ledger::min_ack_quorum_for_regions;
//  - rack-aware with bookkeeperClientEnforceMinNumRacksPerWriteQuorum and a write quorum
//    below bookkeeperClientMinNumRacksPerWriteQuorum is allowed (BookKeeper asks for
//    min(Qw, racks)), as is everything else the schema's ranges let through.
Result<ledger::PlacementSettings> placement_settings(const BrokerConfig& config);

// Whether `rack` (as given, before normalization) has the shape the broker's policy reads, as
// Pulsar's admin API checks it: exactly one '/' inside the name when region-aware
// ("/region/rack"), none when rack-aware ("/rack"), anything with random placement. Leading
// and trailing '/' do not count. (Pulsar skips the check when the rack-aware key is off even
// if the region-aware one is on; we check the region-aware shape then too.)
bool rack_shape_fits(const BrokerConfig& config, std::string_view rack);

// bookkeeperClientBookieAddressOverrides ("id=a.b.c.d:port,...", blanks around items
// trimmed, empty items skipped) as the ledger client's dial overrides. Errors:
// Errc::kInvalidArgument naming the key for an item without '=', an id or address that is not
// <IPv4 address>:<port>, or a bookie named twice.
Result<std::map<std::string, std::string>> bookie_address_overrides(std::string_view value);

// Region-aware with reppRegionsToWrite: every region it names must be one a bookie of
// /bookies (`topology`) is in; Errc::kInvalidArgument naming the key and the regions there
// otherwise. OK for other policies and for an empty topology (nothing to check against yet).
Status check_regions_known(const BrokerConfig& config, const ledger::BookieTopology& topology);

}  // namespace magnetar::broker
