#pragma once
// Placement policies: which bookies store a new ledger's entries (new_ensemble) and which
// bookie takes over a failed one's position (replace_bookie). Pure logic over bookie ids
// and their network locations; the caller supplies the live bookies and the bookies to
// avoid (failed, quarantined, already in use).
//
// Vocabulary. An ensemble is E bookies in positions 0..E-1. Entry e is stored on the
// positions (e + i) % E, i in [0, Qw) (reference §2.1), so there are exactly E distinct
// write sets: the cyclic windows of Qw consecutive positions starting at 0..E-1. An add
// completes once any Qa bookies of its write set acknowledge it.
//
// Locations are network paths "/region/rack" (or "/rack"). Rack identity is the whole
// location string, so "/eu/r1" and "/us/r1" are different racks. The region is the first
// component of a two-component location; one-component locations, bookies missing from the
// topology, and "" or "/" belong to kDefaultLocation.
//
// Topology in the metadata store: Pulsar's rack document /bookies (rack_config.h), written by
// operators through the admin API, read by every client; TopologyWatcher
// (topology_watcher.h) follows its changes and update_topology() hands them to a policy.
//
// Threading: a policy object holds a random generator and its topology and is not
// thread-safe; use it from one event loop (the ledger client's), updates included.
// load_topology/set_bookie_location are coroutines resuming on the caller's executor.

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "common/asio.h"
#include "common/status.h"
#include "metadata/metadata_store.h"

namespace magnetar::ledger {

inline constexpr std::string_view kDefaultLocation = "/default-region/default-rack";
inline constexpr std::string_view kDefaultRegion = "default-region";

struct BookieTopology {
  std::map<std::string, std::string> location;  // bookie id -> "/region/rack"

  // The bookie's location; kDefaultLocation when missing, empty or "/".
  std::string location_of(const std::string& bookie_id) const;
  // The region part of location_of(bookie_id) (kDefaultRegion for one-component paths).
  std::string region_of(const std::string& bookie_id) const;
};

// OK for "", "/", "/rack" and "/region/rack" with non-empty components free of control
// characters; Errc::kInvalidArgument otherwise (deeper paths are not supported).
Status validate_location(std::string_view location);

class PlacementPolicy {
 public:
  virtual ~PlacementPolicy() = default;

  // E distinct bookies from `available` minus `excluded`, in ensemble order (position i
  // of the result is bookie index i). Errors: Errc::kInvalidArgument unless
  // E >= Qw >= Qa >= 1; Errc::kUnavailable ("not enough bookies: need E, have N") when
  // there are too few candidates or the policy's enforced constraints cannot be met.
  // Duplicates in `available` count once.
  virtual Result<std::vector<std::string>> new_ensemble(
      int ensemble_size, int write_quorum, int ack_quorum,
      const std::vector<std::string>& available, const std::set<std::string>& excluded) = 0;

  // A bookie to take over position `index` of `ensemble` (whose bookie failed): never a
  // member of `ensemble` or of `excluded`, chosen so that the write sets containing
  // `index` keep the policy's constraints. Errors as for new_ensemble, plus
  // kInvalidArgument when `index` is out of range or Qw > ensemble size.
  virtual Result<std::string> replace_bookie(
      const std::vector<std::string>& ensemble, int index, int write_quorum, int ack_quorum,
      const std::vector<std::string>& available, const std::set<std::string>& excluded) = 0;

  // Replaces the bookie locations later choices follow (the default policy has none and
  // ignores it). On the policy's event loop, like every other call.
  virtual void update_topology(BookieTopology topology) = 0;

  // Whether an add acknowledged by Qa or more bookies may complete only once those bookies
  // also satisfy the policy (BookKeeper's enforceMinNumFaultDomainsForWrite); false: Qa
  // acknowledgements complete it. A ledger handle asks acks_adhere() only when this is true.
  virtual bool checks_acks() const { return false; }
  // With checks_acks(): whether the bookies in `acked` (members of `write_set` that stored
  // an entry, at least Qa of them) are enough for the add to complete.
  virtual bool acks_adhere(const std::vector<std::string>& write_set,
                           const std::vector<std::string>& acked) const {
    (void)write_set;
    (void)acked;
    return true;
  }
};

// Uniformly random distinct bookies; the seed makes choices reproducible in tests.
std::unique_ptr<PlacementPolicy> make_default_placement(uint64_t seed);

// Rack-aware (BookKeeper's default policy). Every write set spans at least
// k = min(Qw, min_racks_per_write_quorum) racks; among the placements that satisfy this
// the choice is random. When k racks per write set is impossible (too few racks, or racks
// too unevenly filled):
//   enforce == false: the best achievable k' < k is used, down to plain random (k' = 1);
//   enforce == true:  Errc::kUnavailable. Bookies at kDefaultLocation are then never
//                     chosen: their rack is unknown, so they cannot vouch for diversity.
// replace_bookie picks the candidate that keeps the most racks in the write sets through
// `index` (at least k with enforce).
std::unique_ptr<PlacementPolicy> make_rack_aware_placement(BookieTopology topology,
                                                           int min_racks_per_write_quorum = 2,
                                                           bool enforce = false,
                                                           uint64_t seed = 0);

// Region-aware (synchronous geo-replication: one bookie cluster across regions). Let
// R = min_regions_for_durability. Durability goal: every entry an add reports complete is
// stored in >= R regions, i.e. *every* Qa-subset of *every* write set spans >= R regions.
// Equivalently: in each write set the R-1 regions holding the most copies hold at most
// Qa-1 of them.
//
// What that requires of Qa: spreading a write set evenly over G regions (the best case,
// G = min(regions available, Qw)) puts ceil/floor(Qw/G) copies in each, so Qa must exceed
// the copies of the R-1 fullest regions. With exactly R regions that is BookKeeper's check
//   Qa > Qw - floor(Qw / R)          (which also implies Qa >= R and Qw >= R)
// e.g. R = 2: Qw=2 -> Qa=2, Qw=3 -> Qa=3, Qw=4 -> Qa>=3, Qw=5 -> Qa>=4. More regions relax
// it (R = 2 over 3 regions: Qw=3, Qa=2 works with one copy per region).
//
// new_ensemble spreads E as evenly over the regions as their bookie counts allow, arranges
// the regions around the ring so that every write set meets the goal, and inside a region
// spreads the bookies over its racks. With enforce == true an impossible goal (too few
// regions, Qa too small for the regions at hand) is Errc::kUnavailable and bookies in
// kDefaultRegion are never chosen (their real region is unknown); with enforce == false the
// even spread is still made but the goal is best effort. replace_bookie keeps the goal for
// the write sets through `index` (required with enforce), preferring the failed bookie's
// region, then a rack not already in those write sets.
//
// With acks_span_regions (BookKeeper's enforceMinNumFaultDomainsForWrite) the goal moves from
// the placement to the acknowledgement: an add completes only once the bookies that stored it
// span R regions (acks_adhere), so the placement need only make every write set *span* R
// regions, and Qa >= R. The strict placement above is still preferred whenever the regions at
// hand allow it (then no add ever waits longer for it); once a region is gone (3 regions, E=3
// Qw=3 Qa=2, one lost) new ensembles and replacements go 2+1 over the two left and every
// acknowledged entry is still in two regions, where the strict goal would refuse them and stop
// every new ledger. A write set that spans fewer than R regions (placement not enforced) asks
// its acknowledgements to span only the regions it has, so that no add waits forever.
std::unique_ptr<PlacementPolicy> make_region_aware_placement(BookieTopology topology,
                                                             int min_regions_for_durability = 2,
                                                             bool enforce = true,
                                                             uint64_t seed = 0);

// BookKeeper's repp* settings of the region-aware policy.
struct RegionAwareOptions {
  int min_regions_for_durability = 2;  // reppMinimumRegionsForDurability (< 2: no constraint)
  bool enforce = true;                 // reppEnableValidation: new ensembles
  bool enforce_in_replace = true;      // reppEnableDurabilityEnforcementInReplace
  // BookKeeper's enforceMinNumFaultDomainsForWrite: acknowledgements must span R regions
  // (above). Off here as in BookKeeper's client; brokers turn it on by default.
  bool acks_span_regions = false;
  // Auto-recovery's replacements (with enforce_in_replace): a replacement may leave the write
  // sets through its position no worse than the failed bookie did (no more copies in their
  // fullest regions, no fewer regions): a segment that had one copy per region waits for a
  // bookie of the failed bookie's region instead of doubling up in another, while a segment
  // already placed 2+1 (written while a region was down) gets its lost copy back wherever the
  // write sets keep their regions.
  bool replace_keeps_spread = false;
  // reppRegionsToWrite: when not empty, only bookies of these regions are candidates.
  std::set<std::string> regions_to_write;
};
std::unique_ptr<PlacementPolicy> make_region_aware_placement(BookieTopology topology,
                                                             RegionAwareOptions options,
                                                             uint64_t seed = 0);

// The smallest ack quorum for which every Qa copies of a write set of `write_quorum` spread as
// evenly as possible over `regions` regions lie in at least `min_regions` regions (the check
// the region-aware policy makes before placing); write_quorum + 1 when no Qa can (fewer than
// `min_regions` regions, or a write set too small to span them). 1 when min_regions <= 1.
int min_ack_quorum_for_regions(int write_quorum, int regions, int min_regions);

// Which policy a ledger client uses and its settings (a broker's bookkeeperClient* and repp*
// keys map onto these).
struct PlacementSettings {
  enum class Kind { kDefault, kRackAware, kRegionAware };
  Kind kind = Kind::kDefault;
  int min_racks_per_write_quorum = 2;  // rack-aware
  bool enforce_min_racks = false;      // rack-aware
  RegionAwareOptions region;           // region-aware
};
std::unique_ptr<PlacementPolicy> make_placement(const PlacementSettings& settings,
                                                BookieTopology topology, uint64_t seed);
std::string_view to_string(PlacementSettings::Kind kind);

// The locations of /bookies (rack_config.h). No node: an empty topology (every bookie at
// kDefaultLocation). Errors: store errors; Errc::kCorruption saying what in the document
// is wrong.
Task<Result<BookieTopology>> load_topology(metadata::MetadataStore& store);

// Sets the bookie's rack in /bookies (read-modify-write with compare-and-set), moving it to
// `group`. Errors: Errc::kInvalidArgument for a bookie id that is empty or contains '/', a
// location failing validate_location (after normalize_rack), or a field past the limits of
// rack_config.h; store errors. Lifetime: `store` outlives the returned task.
Task<Status> set_bookie_location(metadata::MetadataStore& store, std::string bookie_id,
                                 std::string location, std::string group = "default",
                                 std::optional<std::string> hostname = std::nullopt);

}  // namespace magnetar::ledger
