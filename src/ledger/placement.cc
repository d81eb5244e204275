#include "ledger/placement.h"

#include <algorithm>
#include <functional>
#include <optional>
#include <random>
#include <tuple>

#include <fmt/format.h>

#include "ledger/rack_config.h"

namespace magnetar::ledger {
namespace {

using Rng = std::mt19937_64;

// Search steps a ring arrangement may take before it is declared impossible. Ensembles
// are small (E <= ~20) and random greedy choices almost always succeed at once; the budget
// only bounds the exhaustive search of infeasible requests.
constexpr int kArrangeBudget = 20000;

Status check_quorums(int ensemble_size, int write_quorum, int ack_quorum) {
  if (ack_quorum < 1 || write_quorum < ack_quorum || ensemble_size < write_quorum) {
    return Status(Errc::kInvalidArgument,
                  fmt::format("placement: quorums must satisfy E >= Qw >= Qa >= 1, have E={} "
                              "Qw={} Qa={}",
                              ensemble_size, write_quorum, ack_quorum));
  }
  return Status::OK();
}

Status not_enough(size_t need, size_t have) {
  return Status(Errc::kUnavailable, fmt::format("not enough bookies: need {}, have {}", need, have));
}

// not_enough() for a policy that passed over some bookies: says how many and why.
Status not_enough_known(size_t need, size_t have, size_t passed_over, std::string_view why) {
  if (passed_over == 0) return not_enough(need, have);
  return Status(Errc::kUnavailable,
                fmt::format("not enough bookies: need {}, have {} ({} more registered {})", need,
                            have, passed_over, why));
}

Status check_replace_args(const std::vector<std::string>& ensemble, int index, int write_quorum,
                          int ack_quorum) {
  MAGNETAR_TRY(check_quorums(static_cast<int>(ensemble.size()), write_quorum, ack_quorum));
  if (index < 0 || static_cast<size_t>(index) >= ensemble.size()) {
    return Status(Errc::kInvalidArgument,
                  fmt::format("placement: index {} outside an ensemble of {}", index,
                              ensemble.size()));
  }
  return Status::OK();
}

// `available` without duplicates, without `excluded`, without `members`, and only those
// `eligible` accepts; in the order of `available`.
std::vector<std::string> candidates_of(const std::vector<std::string>& available,
                                       const std::set<std::string>& excluded,
                                       const std::vector<std::string>& members,
                                       const std::function<bool(const std::string&)>& eligible) {
  std::set<std::string> seen(members.begin(), members.end());
  std::vector<std::string> out;
  for (const std::string& b : available) {
    if (excluded.count(b) || !seen.insert(b).second) continue;
    if (eligible && !eligible(b)) continue;
    out.push_back(b);
  }
  return out;
}

// Start positions of the write sets (cyclic windows of Qw positions) that contain `index`.
std::vector<int> windows_through(int ensemble_size, int write_quorum, int index) {
  std::vector<int> starts;
  for (int j = 0; j < write_quorum; ++j) {
    starts.push_back(((index - j) % ensemble_size + ensemble_size) % ensemble_size);
  }
  return starts;
}

// Copies held by the `n` fullest groups, given per-group copy counts.
int top_sum(std::vector<int> counts, int n) {
  if (n <= 0) return 0;
  std::sort(counts.begin(), counts.end(), std::greater<>());
  int sum = 0;
  for (int i = 0; i < n && i < static_cast<int>(counts.size()); ++i) sum += counts[i];
  return sum;
}

// Decides whether a write set's per-group copy counts are acceptable. `unassigned`
// positions of the window have no group yet: a partial window passes when some way of
// filling them might still pass, a full one (unassigned == 0) when it does pass.
using WindowCheck = std::function<bool(const std::vector<int>& counts, int unassigned)>;

// Assigns a group (rack or region) to each of E ring positions, using group g at most
// capacity[g] times, so that every write set passes `check`. Depth-first over positions
// 0..E-1 with random (capacity-weighted) group order, so that among valid arrangements the
// result is random; a window is checked each time one of its positions is assigned, and a
// full window is checked when its last position is.
class RingArranger {
 public:
  RingArranger(int ensemble_size, int write_quorum, std::vector<int> capacity, WindowCheck check,
               Rng& rng)
      : e_(ensemble_size),
        qw_(write_quorum),
        capacity_(std::move(capacity)),
        check_(std::move(check)),
        rng_(rng),
        labels_(static_cast<size_t>(ensemble_size), -1),
        counts_(capacity_.size(), 0) {}

  // Group per position, or nullopt when none was found within the search budget.
  std::optional<std::vector<int>> arrange() {
    if (place(0)) return labels_;
    return std::nullopt;
  }

 private:
  bool place(int pos) {
    if (pos == e_) return true;
    if (++steps_ > kArrangeBudget) return false;
    for (int g : weighted_order()) {
      labels_[pos] = g;
      --capacity_[g];
      if (windows_ok(pos) && place(pos + 1)) return true;
      ++capacity_[g];
      labels_[pos] = -1;
      if (steps_ > kArrangeBudget) return false;
    }
    return false;
  }

  // Groups with capacity left, in a random order where a group comes early with
  // probability proportional to its remaining capacity (as if picking random bookies).
  std::vector<int> weighted_order() {
    std::vector<int> groups;
    std::vector<double> weights;
    for (size_t g = 0; g < capacity_.size(); ++g) {
      if (capacity_[g] > 0) {
        groups.push_back(static_cast<int>(g));
        weights.push_back(capacity_[g]);
      }
    }
    std::vector<int> order;
    while (!groups.empty()) {
      std::discrete_distribution<size_t> pick(weights.begin(), weights.end());
      const size_t i = pick(rng_);
      order.push_back(groups[i]);
      groups.erase(groups.begin() + static_cast<std::ptrdiff_t>(i));
      weights.erase(weights.begin() + static_cast<std::ptrdiff_t>(i));
    }
    return order;
  }

  bool windows_ok(int pos) {
    for (int start : windows_through(e_, qw_, pos)) {
      int unassigned = 0;
      for (int i = 0; i < qw_; ++i) {
        const int g = labels_[(start + i) % e_];
        if (g < 0) {
          ++unassigned;
        } else {
          ++counts_[g];
        }
      }
      const bool ok = check_(counts_, unassigned);
      std::fill(counts_.begin(), counts_.end(), 0);
      if (!ok) return false;
    }
    return true;
  }

  const int e_;
  const int qw_;
  std::vector<int> capacity_;  // uses left per group
  const WindowCheck check_;
  Rng& rng_;
  std::vector<int> labels_;  // group per position, -1 while unassigned
  std::vector<int> counts_;  // scratch: copies per group in the window being checked
  int steps_ = 0;
};

// Bookies grouped by a label (rack or region), each group's bookies in random order.
struct Groups {
  std::vector<std::string> labels;
  std::vector<std::vector<std::string>> bookies;

  std::vector<int> capacity() const {
    std::vector<int> out;
    for (const auto& b : bookies) out.push_back(static_cast<int>(b.size()));
    return out;
  }

  std::string describe() const {
    std::string out;
    for (size_t g = 0; g < labels.size(); ++g) {
      out += fmt::format("{}{}={}", g ? ", " : "", labels[g], bookies[g].size());
    }
    return out;
  }
};

Groups group_by(const std::vector<std::string>& bookies,
                const std::function<std::string(const std::string&)>& label_of, Rng& rng) {
  std::map<std::string, std::vector<std::string>> by_label;
  for (const std::string& b : bookies) by_label[label_of(b)].push_back(b);
  Groups groups;
  for (auto& [label, members] : by_label) {
    std::shuffle(members.begin(), members.end(), rng);
    groups.labels.push_back(label);
    groups.bookies.push_back(std::move(members));
  }
  return groups;
}

// Turns a group per position into bookies: each group hands out its bookies in order.
std::vector<std::string> fill(const std::vector<int>& labels, const Groups& groups) {
  std::vector<size_t> next(groups.bookies.size(), 0);
  std::vector<std::string> out;
  for (int g : labels) out.push_back(groups.bookies[g][next[g]++]);
  return out;
}

// Splits "/a/b" into {"a", "b"}; assumes validate_location passed.
std::vector<std::string_view> components(std::string_view location) {
  std::vector<std::string_view> out;
  size_t i = 0;
  while (i < location.size()) {
    if (location[i] == '/') {
      ++i;
      continue;
    }
    const size_t end = std::min(location.find('/', i), location.size());
    out.push_back(location.substr(i, end - i));
    i = end;
  }
  return out;
}

// ---------------------------------------------------------------------------------------

class DefaultPlacement final : public PlacementPolicy {
 public:
  explicit DefaultPlacement(uint64_t seed) : rng_(seed) {}

  Result<std::vector<std::string>> new_ensemble(int ensemble_size, int write_quorum,
                                                int ack_quorum,
                                                const std::vector<std::string>& available,
                                                const std::set<std::string>& excluded) override {
    MAGNETAR_TRY(check_quorums(ensemble_size, write_quorum, ack_quorum));
    auto pool = candidates_of(available, excluded, {}, nullptr);
    if (pool.size() < static_cast<size_t>(ensemble_size)) return not_enough(ensemble_size, pool.size());
    std::shuffle(pool.begin(), pool.end(), rng_);
    pool.resize(static_cast<size_t>(ensemble_size));
    return pool;
  }

  Result<std::string> replace_bookie(const std::vector<std::string>& ensemble, int index,
                                     int write_quorum, int ack_quorum,
                                     const std::vector<std::string>& available,
                                     const std::set<std::string>& excluded) override {
    MAGNETAR_TRY(check_replace_args(ensemble, index, write_quorum, ack_quorum));
    auto pool = candidates_of(available, excluded, ensemble, nullptr);
    if (pool.empty()) return not_enough(1, 0);
    std::uniform_int_distribution<size_t> pick(0, pool.size() - 1);
    return pool[pick(rng_)];
  }

  void update_topology(BookieTopology) override {}  // locations play no part here

 private:
  Rng rng_;
};

// ---------------------------------------------------------------------------------------

class RackAwarePlacement final : public PlacementPolicy {
 public:
  RackAwarePlacement(BookieTopology topology, int min_racks, bool enforce, uint64_t seed)
      : topology_(std::move(topology)), min_racks_(min_racks), enforce_(enforce), rng_(seed) {}

  Result<std::vector<std::string>> new_ensemble(int ensemble_size, int write_quorum,
                                                int ack_quorum,
                                                const std::vector<std::string>& available,
                                                const std::set<std::string>& excluded) override {
    MAGNETAR_TRY(check_quorums(ensemble_size, write_quorum, ack_quorum));
    auto pool = candidates_of(available, excluded, {}, eligible());
    if (pool.size() < static_cast<size_t>(ensemble_size)) {
      const size_t all = candidates_of(available, excluded, {}, nullptr).size();
      return not_enough_known(ensemble_size, pool.size(), all - pool.size(),
                              "bookies have no rack in /bookies, and the policy enforces "
                              "racks per write set");
    }
    Groups racks = group_by(pool, rack_of(), rng_);
    const int k = std::min(write_quorum, min_racks_);
    // The strongest rack spread achievable: k, or with enforce nothing less.
    const int weakest = enforce_ ? k : 1;
    for (int want = k; want >= weakest; --want) {
      if (static_cast<int>(racks.labels.size()) < want) continue;
      WindowCheck check = [want](const std::vector<int>& counts, int unassigned) {
        const auto distinct = std::count_if(counts.begin(), counts.end(), [](int c) { return c > 0; });
        return distinct + unassigned >= want;
      };
      RingArranger arranger(ensemble_size, write_quorum, racks.capacity(), std::move(check), rng_);
      if (auto labels = arranger.arrange()) return fill(*labels, racks);
    }
    return Status(Errc::kUnavailable,
                  fmt::format("not enough bookies: need {} over racks so that every {} "
                              "consecutive span {} racks, have racks {}",
                              ensemble_size, write_quorum, k, racks.describe()));
  }

  Result<std::string> replace_bookie(const std::vector<std::string>& ensemble, int index,
                                     int write_quorum, int ack_quorum,
                                     const std::vector<std::string>& available,
                                     const std::set<std::string>& excluded) override {
    MAGNETAR_TRY(check_replace_args(ensemble, index, write_quorum, ack_quorum));
    auto pool = candidates_of(available, excluded, ensemble, eligible());
    if (pool.empty()) return not_enough(1, 0);
    std::shuffle(pool.begin(), pool.end(), rng_);

    const int e = static_cast<int>(ensemble.size());
    const int k = std::min(write_quorum, min_racks_);
    const auto starts = windows_through(e, write_quorum, index);
    // Score: (worst rack deficit over the write sets through index, total deficit); lower is
    // better, ties go to the earlier candidate in random order.
    std::optional<std::pair<int, int>> best_score;
    const std::string* best = nullptr;
    for (const std::string& candidate : pool) {
      int worst = 0, total = 0;
      for (int start : starts) {
        std::set<std::string> racks;
        for (int i = 0; i < write_quorum; ++i) {
          const int pos = (start + i) % e;
          racks.insert(topology_.location_of(pos == index ? candidate : ensemble[pos]));
        }
        const int deficit = std::max(0, k - static_cast<int>(racks.size()));
        worst = std::max(worst, deficit);
        total += deficit;
      }
      const std::pair<int, int> score{worst, total};
      if (!best_score || score < *best_score) {
        best_score = score;
        best = &candidate;
      }
    }
    if (enforce_ && best_score->first > 0) {
      return Status(Errc::kUnavailable,
                    fmt::format("not enough bookies: no replacement for {} keeps {} racks in "
                                "every write set through index {}",
                                ensemble[index], k, index));
    }
    return *best;
  }

  void update_topology(BookieTopology topology) override { topology_ = std::move(topology); }

 private:
  // With enforce, bookies whose rack is unknown are not candidates.
  std::function<bool(const std::string&)> eligible() const {
    if (!enforce_) return nullptr;
    return [this](const std::string& b) { return topology_.location_of(b) != kDefaultLocation; };
  }

  std::function<std::string(const std::string&)> rack_of() const {
    return [this](const std::string& b) { return topology_.location_of(b); };
  }

  BookieTopology topology_;
  const int min_racks_;
  const bool enforce_;
  Rng rng_;
};

// ---------------------------------------------------------------------------------------

class RegionAwarePlacement final : public PlacementPolicy {
 public:
  RegionAwarePlacement(BookieTopology topology, RegionAwareOptions options, uint64_t seed)
      : topology_(std::move(topology)),
        min_regions_(std::max(1, options.min_regions_for_durability)),
        enforce_(options.enforce),
        enforce_in_replace_(options.enforce_in_replace),
        acks_span_regions_(options.acks_span_regions && options.min_regions_for_durability > 1),
        replace_keeps_spread_(options.replace_keeps_spread),
        regions_to_write_(std::move(options.regions_to_write)),
        rng_(seed) {}

  Result<std::vector<std::string>> new_ensemble(int ensemble_size, int write_quorum,
                                                int ack_quorum,
                                                const std::vector<std::string>& available,
                                                const std::set<std::string>& excluded) override {
    MAGNETAR_TRY(check_quorums(ensemble_size, write_quorum, ack_quorum));
    auto pool = candidates_of(available, excluded, {}, eligible(enforce_));
    if (pool.size() < static_cast<size_t>(ensemble_size)) {
      const size_t all = candidates_of(available, excluded, {}, nullptr).size();
      return not_enough_known(
          ensemble_size, pool.size(), all - pool.size(),
          regions_to_write_.empty()
              ? "bookies have no region in /bookies (a rack /region/rack), and the policy "
                "enforces durability across regions"
              : "bookies have no region in /bookies or one outside the regions to write");
    }
    Groups regions = group_by(pool, region_of(), rng_);
    const int region_count = static_cast<int>(regions.labels.size());

    if (enforce_ && acks_span_regions_) {
      // The acknowledgements carry the goal: every write set must span R regions.
      if (region_count < min_regions_ || write_quorum < min_regions_ ||
          ack_quorum < min_regions_) {
        return Status(Errc::kUnavailable,
                      fmt::format("not enough bookies: region-aware placement needs write sets "
                                  "and ack quorums of at least {} bookies over at least {} "
                                  "regions, have Qw={} Qa={} and bookies in {} regions ({})",
                                  min_regions_, min_regions_, write_quorum, ack_quorum,
                                  region_count, regions.describe()));
      }
    } else if (enforce_) {
      // Best case for a write set: spread evenly over min(regions, Qw) regions.
      if (ack_quorum < min_ack_quorum_for_regions(write_quorum, region_count, min_regions_)) {
        return Status(Errc::kUnavailable,
                      fmt::format("not enough bookies: region-aware placement cannot make every {} "
                                  "acks of a write set of {} span {} regions with bookies in {} "
                                  "regions ({}); with exactly {} regions it needs "
                                  "Qa > Qw - floor(Qw / {})",
                                  ack_quorum, write_quorum, min_regions_, region_count,
                                  regions.describe(), min_regions_, min_regions_));
      }
    }

    // Spread E as evenly as each region's bookie count allows: each slot goes to a region
    // with the fewest slots so far (ties in random order).
    std::vector<int> order(static_cast<size_t>(region_count));
    for (int g = 0; g < region_count; ++g) order[g] = g;
    std::shuffle(order.begin(), order.end(), rng_);
    std::vector<int> quota(static_cast<size_t>(region_count), 0);
    const auto capacity = regions.capacity();
    for (int slot = 0; slot < ensemble_size; ++slot) {
      int pick = -1;
      for (int g : order) {
        if (quota[g] < capacity[g] && (pick < 0 || quota[g] < quota[pick])) pick = g;
      }
      MAGNETAR_ASSERT(pick >= 0, "region quotas exceed the candidate bookies");
      ++quota[pick];
    }

    // The copies the R-1 fullest regions of a write set may hold: Qa - 1 for durability;
    // without enforce relaxed step by step up to Qw (no constraint). With acks_span_regions
    // the acknowledgements keep durability past the strict goal, as long as every write set
    // spans R regions (required with enforce); without enforce, then anything.
    const int strictest = ack_quorum - 1;
    const int loosest = enforce_ || acks_span_regions_ ? strictest : write_quorum;
    std::vector<WindowCheck> checks;
    for (int limit = strictest; limit <= loosest; ++limit) {
      checks.push_back([limit, r = min_regions_](const std::vector<int>& counts, int) {
        return top_sum(counts, r - 1) <= limit;  // only grows as the window fills
      });
    }
    if (acks_span_regions_) {
      checks.push_back([r = min_regions_](const std::vector<int>& counts, int unassigned) {
        const auto spanned =
            std::count_if(counts.begin(), counts.end(), [](int c) { return c > 0; });
        return spanned + unassigned >= r;
      });
      if (!enforce_) checks.push_back([](const std::vector<int>&, int) { return true; });
    }
    for (auto& check : checks) {
      RingArranger arranger(ensemble_size, write_quorum, quota, std::move(check), rng_);
      if (auto labels = arranger.arrange()) return fill(*labels, spread_racks(regions));
    }
    return Status(Errc::kUnavailable,
                  fmt::format("not enough bookies: region-aware placement found no ensemble of {} "
                              "where every {} of a write set of {} span {} regions "
                              "(bookies per region: {})",
                              ensemble_size,
                              acks_span_regions_ ? std::string("copies")
                                                 : fmt::format("{} acks", ack_quorum),
                              write_quorum, min_regions_, regions.describe()));
  }

  Result<std::string> replace_bookie(const std::vector<std::string>& ensemble, int index,
                                     int write_quorum, int ack_quorum,
                                     const std::vector<std::string>& available,
                                     const std::set<std::string>& excluded) override {
    MAGNETAR_TRY(check_replace_args(ensemble, index, write_quorum, ack_quorum));
    auto pool = candidates_of(available, excluded, ensemble, eligible(enforce_in_replace_));
    if (pool.empty()) return not_enough(1, 0);
    std::shuffle(pool.begin(), pool.end(), rng_);

    const int e = static_cast<int>(ensemble.size());
    const auto starts = windows_through(e, write_quorum, index);
    const std::string failed_region = topology_.region_of(ensemble[index]);
    // Score, lower is better: (what enforcement requires: the worst shortfall of regions
    // spanned in the write sets through index with acks_span_regions, else the worst excess
    // of the R-1 fullest regions over Qa - 1, else with replace_keeps_spread how far those
    // fall behind the failed bookie's; then that excess; leaves the failed bookie's region;
    // racks repeated in those write sets); ties go to the earlier candidate in random order.
    //
    // The write sets through index with `b` at index: the worst excess of the R-1 fullest
    // regions over Qa - 1, the worst shortfall of regions spanned below R, racks repeated.
    struct Spread {
      int excess = 0, shortfall = 0, repeats = 0;
    };
    auto spread_with = [&](const std::string& b) {
      Spread out;
      for (int start : starts) {
        std::map<std::string, int> per_region;
        std::set<std::string> racks;
        for (int i = 0; i < write_quorum; ++i) {
          const int pos = (start + i) % e;
          const std::string& member = pos == index ? b : ensemble[pos];
          ++per_region[topology_.region_of(member)];
          if (!racks.insert(topology_.location_of(member)).second) ++out.repeats;
        }
        std::vector<int> counts;
        for (const auto& [region, n] : per_region) counts.push_back(n);
        out.excess = std::max(out.excess, top_sum(counts, min_regions_ - 1) - (ack_quorum - 1));
        out.shortfall =
            std::max(out.shortfall, min_regions_ - static_cast<int>(per_region.size()));
      }
      out.excess = std::max(0, out.excess);
      return out;
    };
    // With replace_keeps_spread, what the failed bookie gave is the bar (required with
    // enforce_in_replace): the first element of the score is how far a candidate falls short.
    const Spread failed = spread_with(ensemble[index]);
    std::optional<std::tuple<int, int, int, int>> best_score;
    const std::string* best = nullptr;
    for (const std::string& candidate : pool) {
      const Spread c = spread_with(candidate);
      const int required = replace_keeps_spread_
                               ? std::max(c.excess - failed.excess, 0) +
                                     std::max(c.shortfall - failed.shortfall, 0)
                           : acks_span_regions_ ? c.shortfall
                                                : c.excess;
      const std::tuple<int, int, int, int> score{
          required, c.excess, topology_.region_of(candidate) == failed_region ? 0 : 1, c.repeats};
      if (!best_score || score < *best_score) {
        best_score = score;
        best = &candidate;
      }
    }
    if (enforce_in_replace_ && std::get<0>(*best_score) > 0 && replace_keeps_spread_) {
      return Status(Errc::kUnavailable,
                    fmt::format("not enough bookies: every replacement for {} would leave the "
                                "write sets through index {} in fewer regions than it did (a "
                                "bookie of region {} is needed)",
                                ensemble[index], index, failed_region));
    }
    if (enforce_in_replace_ && std::get<0>(*best_score) > 0) {
      return Status(Errc::kUnavailable,
                    acks_span_regions_
                        ? fmt::format("not enough bookies: no replacement for {} keeps the write "
                                      "sets through index {} in {} regions",
                                      ensemble[index], index, min_regions_)
                        : fmt::format("not enough bookies: no replacement for {} keeps every {} "
                                      "acks of the write sets through index {} in {} regions",
                                      ensemble[index], ack_quorum, index, min_regions_));
    }
    return *best;
  }

  void update_topology(BookieTopology topology) override { topology_ = std::move(topology); }

  bool checks_acks() const override { return acks_span_regions_; }

  bool acks_adhere(const std::vector<std::string>& write_set,
                   const std::vector<std::string>& acked) const override {
    std::set<std::string> spanned, reachable;
    for (const auto& b : acked) spanned.insert(topology_.region_of(b));
    if (static_cast<int>(spanned.size()) >= min_regions_) return true;
    for (const auto& b : write_set) reachable.insert(topology_.region_of(b));
    return spanned.size() >= std::min<size_t>(reachable.size(), static_cast<size_t>(min_regions_));
  }

 private:
  // With `enforce`, bookies whose region is unknown are not candidates: counting them as a
  // region of their own could fake durability. With regions to write, only their bookies are.
  std::function<bool(const std::string&)> eligible(bool enforce) const {
    if (!enforce && regions_to_write_.empty()) return nullptr;
    return [this, enforce](const std::string& b) {
      const std::string region = topology_.region_of(b);
      if (enforce && region == kDefaultRegion) return false;
      return regions_to_write_.empty() || regions_to_write_.count(region) != 0;
    };
  }

  std::function<std::string(const std::string&)> region_of() const {
    return [this](const std::string& b) { return topology_.region_of(b); };
  }

  // The same groups with each region's bookies reordered to alternate racks (random rack
  // order), so the positions a region gets, taken in ring order, land on different racks.
  Groups spread_racks(Groups regions) {
    for (auto& members : regions.bookies) {
      Groups racks = group_by(members, [this](const std::string& b) { return topology_.location_of(b); },
                              rng_);
      std::shuffle(racks.bookies.begin(), racks.bookies.end(), rng_);
      members.clear();
      for (size_t round = 0;; ++round) {
        bool any = false;
        for (const auto& rack : racks.bookies) {
          if (round < rack.size()) {
            members.push_back(rack[round]);
            any = true;
          }
        }
        if (!any) break;
      }
    }
    return regions;
  }

  BookieTopology topology_;
  const int min_regions_;
  const bool enforce_;
  const bool enforce_in_replace_;
  const bool acks_span_regions_;
  const bool replace_keeps_spread_;
  const std::set<std::string> regions_to_write_;
  Rng rng_;
};

}  // namespace

// ---------------------------------------------------------------------------------------

std::string BookieTopology::location_of(const std::string& bookie_id) const {
  auto it = location.find(bookie_id);
  if (it == location.end() || it->second.empty() || it->second == "/") {
    return std::string(kDefaultLocation);
  }
  return it->second;
}

std::string BookieTopology::region_of(const std::string& bookie_id) const {
  const std::string loc = location_of(bookie_id);
  const auto parts = components(loc);
  if (parts.size() == 2) return std::string(parts[0]);
  return std::string(kDefaultRegion);
}

Status validate_location(std::string_view location) {
  if (location.empty() || location == "/") return Status::OK();
  auto bad = [&](std::string_view why) {
    return Status(Errc::kInvalidArgument,
                  fmt::format("bookie location '{}' {}; expected /region/rack or /rack", location,
                              why));
  };
  if (location.front() != '/') return bad("does not start with '/'");
  if (location.back() == '/') return bad("ends with '/'");
  if (location.find("//") != std::string_view::npos) return bad("has an empty component");
  for (char c : location) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) return bad("has a control character");
  }
  const auto parts = components(location);
  if (parts.size() > 2) return bad("has more than two components");
  return Status::OK();
}

std::unique_ptr<PlacementPolicy> make_default_placement(uint64_t seed) {
  return std::make_unique<DefaultPlacement>(seed);
}

std::unique_ptr<PlacementPolicy> make_rack_aware_placement(BookieTopology topology,
                                                           int min_racks_per_write_quorum,
                                                           bool enforce, uint64_t seed) {
  MAGNETAR_ASSERT(min_racks_per_write_quorum >= 1, "min racks per write quorum must be >= 1");
  return std::make_unique<RackAwarePlacement>(std::move(topology), min_racks_per_write_quorum,
                                              enforce, seed);
}

std::unique_ptr<PlacementPolicy> make_region_aware_placement(BookieTopology topology,
                                                             int min_regions_for_durability,
                                                             bool enforce, uint64_t seed) {
  MAGNETAR_ASSERT(min_regions_for_durability >= 1, "min regions for durability must be >= 1");
  RegionAwareOptions options;
  options.min_regions_for_durability = min_regions_for_durability;
  options.enforce = enforce;
  options.enforce_in_replace = enforce;
  return make_region_aware_placement(std::move(topology), std::move(options), seed);
}

std::unique_ptr<PlacementPolicy> make_region_aware_placement(BookieTopology topology,
                                                             RegionAwareOptions options,
                                                             uint64_t seed) {
  return std::make_unique<RegionAwarePlacement>(std::move(topology), std::move(options), seed);
}

int min_ack_quorum_for_regions(int write_quorum, int regions, int min_regions) {
  if (min_regions <= 1) return 1;
  if (regions < min_regions || write_quorum < min_regions) return write_quorum + 1;
  // The best case: the write set spread evenly over min(regions, Qw) regions. Every Qa
  // copies span min_regions regions iff the min_regions - 1 fullest hold fewer than Qa.
  const int spread = std::min(regions, write_quorum);
  std::vector<int> even(static_cast<size_t>(spread), write_quorum / spread);
  for (int i = 0; i < write_quorum % spread; ++i) ++even[static_cast<size_t>(i)];
  return top_sum(std::move(even), min_regions - 1) + 1;
}

std::unique_ptr<PlacementPolicy> make_placement(const PlacementSettings& settings,
                                                BookieTopology topology, uint64_t seed) {
  switch (settings.kind) {
    case PlacementSettings::Kind::kRackAware:
      return make_rack_aware_placement(std::move(topology),
                                       std::max(1, settings.min_racks_per_write_quorum),
                                       settings.enforce_min_racks, seed);
    case PlacementSettings::Kind::kRegionAware:
      return make_region_aware_placement(std::move(topology), settings.region, seed);
    case PlacementSettings::Kind::kDefault:
      break;
  }
  return make_default_placement(seed);
}

std::string_view to_string(PlacementSettings::Kind kind) {
  switch (kind) {
    case PlacementSettings::Kind::kRackAware:
      return "rack-aware";
    case PlacementSettings::Kind::kRegionAware:
      return "region-aware";
    case PlacementSettings::Kind::kDefault:
      break;
  }
  return "default";
}

Task<Result<BookieTopology>> load_topology(metadata::MetadataStore& store) {
  auto stored = co_await load_rack_configuration(store);
  if (!stored.ok()) co_return stored.status();
  co_return stored->config.topology();
}

Task<Status> set_bookie_location(metadata::MetadataStore& store, std::string bookie_id,
                                 std::string location, std::string group,
                                 std::optional<std::string> hostname) {
  BookieRackInfo info{std::move(location), std::move(hostname)};
  MAGNETAR_CO_TRY(validate_rack_entry(group, bookie_id, info));
  auto updated = co_await update_rack_configuration(
      store, [&](RackConfiguration& config) { return config.update(group, bookie_id, info); });
  co_return updated.status();
}

}  // namespace magnetar::ledger
