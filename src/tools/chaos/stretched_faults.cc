// The faults of `magnetar chaos --stretched`: one cluster over three regions (chaos_cluster.h),
// E=3 Qw=3 Qa=2 region-aware with acknowledgements spanning two regions. Each checks, besides
// the load's verdict (nothing acknowledged lost or doubled), what synchronous replication
// promises:
//
//   region-placement   every write set of every ledger the load made is in three regions,
//                      read from the ledger metadata
//   region-rtt         a round trip between regions: every acknowledgement waits for it (the
//                      median publish latency is at least one round trip), reported beside 0
//   region-loss        a region's bookies and broker SIGKILLed: the load goes on (RPO 0); once
//                      a replacement bookie joins the region, auto-recovery gives every ledger
//                      segment written before the loss its three regions back (time reported);
//                      then the killed processes restart
//   region-partition   a region cut off, its processes alive: its broker stops serving, another
//                      takes its topics over and fences (closes) the ledger it was writing
//
// The loss comes before the partition: a segment written while a region was cut off holds two
// copies in one region, and losing that region next would leave one copy, which auto-recovery
// cannot fence to recover (BookKeeper's rule, Qw - Qa + 1 answers) while the ledger is open.

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <set>
#include <thread>

#include "tools/chaos/faults.h"
#include "tools/processes.h"

namespace magnetar::tools::chaos {

namespace {

using namespace std::chrono_literals;

Status no_stretched_cluster() {
  return Status(Errc::kInvalidArgument, "needs a stretched cluster (magnetar chaos --stretched)");
}

// The region of the bookie with this id; -1 when it is none of ours.
int region_of_bookie(const Cluster& c, const std::string& id) {
  for (int j = 0; j < c.count(Role::kBookie); ++j) {
    if (c.bookie_id(j) == id) return c.region_of(Role::kBookie, j);
  }
  return -1;
}

// The fewest regions any write set of `segment` (of `md`) spans.
int fewest_regions_per_write_set(const Cluster& c, const ledger::LedgerMetadata& md,
                                 const ledger::Segment& segment) {
  const int e = static_cast<int>(segment.ensemble.size());
  int fewest = e;
  for (int start = 0; start < e; ++start) {
    std::set<int> regions;
    for (int k = 0; k < md.write_quorum; ++k) {
      regions.insert(region_of_bookie(c, segment.ensemble[static_cast<size_t>((start + k) % e)]));
    }
    fewest = std::min(fewest, static_cast<int>(regions.size()));
  }
  return fewest;
}

std::string describe(const ledger::LedgerMetadata& md) {
  auto ml = md.custom.find("pulsar/managed-ledger");
  const bool cursor = md.custom.count("pulsar/cursor") > 0;
  return fmt::format("ledger {} ({}{})", md.ledger_id,
                     ml == md.custom.end() ? std::string("?") : ml->second,
                     cursor ? ", a cursor's" : "");
}

// The broker indexes in `region`.
std::vector<int> brokers_in(const Cluster& c, int region) {
  std::vector<int> out;
  for (int i = 0; i < c.count(Role::kBroker); ++i) {
    if (c.region_of(Role::kBroker, i) == region) out.push_back(i);
  }
  return out;
}

// The web URL of a broker outside `region` (lookups while the region is cut off).
std::string web_url_outside(const Cluster& c, int region) {
  for (int i = 0; i < c.count(Role::kBroker); ++i) {
    if (c.region_of(Role::kBroker, i) != region) return c.web_url(i);
  }
  return c.web_url(0);
}

// The region of the broker owning the first topic.
Result<int> owner_region(FaultEnv& env) {
  MAGNETAR_ASSIGN_OR_RETURN(int owner, owner_of(env, env.topics.at(0)));
  return env.cluster->region_of(Role::kBroker, owner);
}

std::string region_name(const FaultEnv& env, int region) {
  return env.cluster->regions().at(static_cast<size_t>(region));
}

// --- region-placement -------------------------------------------------------------------

// The newest ledger id before the load, so that the check covers the load's ledgers only.
Status prepare_placement(FaultEnv& env) {
  if (!env.cluster || env.cluster->regions().empty()) return no_stretched_cluster();
  MAGNETAR_ASSIGN_OR_RETURN(auto ledgers, ledgers_of(env));
  env.ledgers.clear();
  env.ledgers[ledgers.empty() ? -1 : ledgers.back().ledger_id] = {};
  return Status::OK();
}

Status verify_placement(FaultEnv& env) {
  const int64_t above = env.ledgers.empty() ? -1 : env.ledgers.begin()->first;
  MAGNETAR_ASSIGN_OR_RETURN(auto ledgers, ledgers_of(env, above));
  const int regions = static_cast<int>(env.cluster->regions().size());
  size_t segments = 0;
  for (const auto& md : ledgers) {
    for (const auto& segment : md.segments) {
      ++segments;
      const int fewest = fewest_regions_per_write_set(*env.cluster, md, segment);
      if (fewest < std::min(regions, md.write_quorum)) {
        return Status(Errc::kCorruption,
                      fmt::format("{}: a write set of its segment from entry {} ({}) is in {} "
                                  "region(s) only",
                                  describe(md), segment.first_entry_id,
                                  fmt::join(segment.ensemble, ","), fewest));
      }
    }
  }
  if (ledgers.empty()) return Status(Errc::kNotFound, "the load made no ledger");
  env.say(fmt::format("placement: {} ledgers ({} segments) made by the load, every write set "
                      "in {} regions (ledger metadata)",
                      ledgers.size(), segments, regions));
  return Status::OK();
}

// --- region-rtt ---------------------------------------------------------------------------

Result<std::string> inject_rtt(FaultEnv& env) {
  if (!env.cluster || env.cluster->regions().empty()) return no_stretched_cluster();
  env.cluster->set_region_rtt(env.region_rtt);
  return fmt::format("{} ms round trip added between regions (relays, both directions)",
                     env.region_rtt.count());
}

Status heal_rtt(FaultEnv& env) {
  env.cluster->set_region_rtt(0ms);
  return Status::OK();
}

Status verify_rtt(FaultEnv& env) {
  // Sends well inside each phase: a second after the load or the delay began.
  const LatencySummary before = env.load->latency(env.load_at + 1s, env.fault_at);
  const LatencySummary during = env.load->latency(env.fault_at + 1s, env.healed_at);
  env.say(fmt::format("publish latency, 0 ms between regions: p50 {:.2f} ms, p99 {:.2f} ms, max "
                      "{:.2f} ms ({} sends)",
                      before.p50_ms, before.p99_ms, before.max_ms, before.count));
  env.say(fmt::format("publish latency, {} ms between regions: p50 {:.2f} ms, p99 {:.2f} ms, "
                      "max {:.2f} ms ({} sends)",
                      env.region_rtt.count(), during.p50_ms, during.p99_ms, during.max_ms,
                      during.count));
  if (before.count == 0 || during.count == 0) {
    return Status(Errc::kUnavailable, "no acknowledged send in one of the phases");
  }
  // Every acknowledgement needs a bookie of a second region: none can come sooner than a
  // round trip to it (the relay holds every byte for half of it, each way).
  if (during.p50_ms < static_cast<double>(env.region_rtt.count())) {
    return Status(Errc::kCorruption,
                  fmt::format("the median publish took {:.2f} ms with {} ms between regions: "
                              "acknowledgements came from one region",
                              during.p50_ms, env.region_rtt.count()));
  }
  return Status::OK();
}

// --- region-loss --------------------------------------------------------------------------

Result<std::string> inject_region_loss(FaultEnv& env) {
  if (!env.cluster || env.cluster->regions().empty()) return no_stretched_cluster();
  MAGNETAR_ASSIGN_OR_RETURN(env.region, owner_region(env));
  // The segments there are now: each must be back in the regions it spanned after the
  // recovery (three, but for those written while a region was cut off earlier).
  MAGNETAR_ASSIGN_OR_RETURN(auto ledgers, ledgers_of(env));
  env.ledgers.clear();
  for (const auto& md : ledgers) {
    for (const auto& segment : md.segments) {
      env.ledgers[md.ledger_id].emplace_back(
          segment.first_entry_id, fewest_regions_per_write_set(*env.cluster, md, segment));
    }
  }
  env.victims.clear();
  for (int i : brokers_in(*env.cluster, env.region)) env.victims.emplace_back(Role::kBroker, i);
  for (int j = 0; j < env.cluster->count(Role::kBookie); ++j) {
    if (env.cluster->region_of(Role::kBookie, j) == env.region) {
      env.victims.emplace_back(Role::kBookie, j);
    }
  }
  MAGNETAR_ASSIGN_OR_RETURN(std::string what, kill_victims(env));
  return fmt::format("region {} lost ({} ledgers written so far): {}", region_name(env, env.region),
                     env.ledgers.size(), what);
}

// What still keeps a recorded segment from being whole: "" when every recorded segment
// names no killed bookie and spans the regions it did before the loss.
Result<std::string> unrecovered(FaultEnv& env, const std::set<std::string>& killed) {
  MAGNETAR_ASSIGN_OR_RETURN(auto ledgers, ledgers_of(env));
  int pending = 0;
  std::string first;
  for (const auto& md : ledgers) {
    auto recorded = env.ledgers.find(md.ledger_id);
    if (recorded == env.ledgers.end()) continue;
    for (const auto& segment : md.segments) {
      auto before = std::find_if(recorded->second.begin(), recorded->second.end(),
                                 [&](const auto& s) { return s.first == segment.first_entry_id; });
      if (before == recorded->second.end()) continue;  // written after the loss
      const bool lost = std::any_of(segment.ensemble.begin(), segment.ensemble.end(),
                                    [&](const std::string& b) { return killed.count(b) > 0; });
      if (lost || fewest_regions_per_write_set(*env.cluster, md, segment) < before->second) {
        if (pending++ == 0) {
          first = fmt::format("{} from entry {} on {}", describe(md), segment.first_entry_id,
                              fmt::join(segment.ensemble, ","));
        }
      }
    }
  }
  if (pending == 0) return std::string();
  return fmt::format("{} segment(s), e.g. {}", pending, first);
}

Status heal_region_loss(FaultEnv& env) {
  std::set<std::string> killed;
  for (const auto& [role, i] : env.victims) {
    if (role == Role::kBookie) killed.insert(env.cluster->bookie_id(i));
  }
  const auto joined_at = Clock::now();
  MAGNETAR_ASSIGN_OR_RETURN(int spare, env.cluster->add_bookie(env.region));
  env.say(fmt::format("replacement bookie {} ({}) joined region {}", env.cluster->name(Role::kBookie, spare),
                      env.cluster->bookie_id(spare), region_name(env, env.region)));
  // Auto-recovery (the elected auditor marks the killed bookies' ledgers, the replication
  // workers copy their fragments to the one bookie that restores a third region). Ledgers the
  // surviving broker still writes are done once they roll over (every 500 entries here).
  const auto deadline = Clock::now() + 150s;
  std::string left = "not checked";
  auto next_say = Clock::now() + 10s;
  while (Clock::now() < deadline) {
    auto still = unrecovered(env, killed);
    if (still.ok() && still->empty()) {
      left.clear();
      break;
    }
    left = still.ok() ? *still : still.status().to_string();
    if (Clock::now() >= next_say) {
      env.say("auto-recovery: waiting for " + left);
      next_say += 10s;
    }
    std::this_thread::sleep_for(500ms);
  }
  if (!left.empty()) {
    env.failure = "auto-recovery did not make the ledgers whole in 150 s: " + left;
  } else {
    size_t segments = 0, spread = 0;
    for (const auto& [id, recorded] : env.ledgers) {
      for (const auto& [first, regions] : recorded) {
        ++segments;
        if (regions >= static_cast<int>(env.cluster->regions().size())) ++spread;
      }
    }
    env.say(fmt::format("auto-recovery: the {} ledgers written before the loss ({} segments, {} "
                        "of them in three regions) are whole again, in the regions they were, "
                        "{:.1f} s after the replacement joined",
                        env.ledgers.size(), segments, spread,
                        std::chrono::duration<double>(Clock::now() - joined_at).count()));
  }
  return restart_victims(env);
}

// --- region-partition ---------------------------------------------------------------------

Result<std::string> inject_partition(FaultEnv& env) {
  if (!env.cluster || env.cluster->regions().empty()) return no_stretched_cluster();
  MAGNETAR_ASSIGN_OR_RETURN(env.region, owner_region(env));
  MAGNETAR_ASSIGN_OR_RETURN(ledger::LedgerMetadata open, open_ledger_of(env, env.topics.at(0)));
  env.ledgers.clear();
  env.ledgers[open.ledger_id] = {};
  const int broker = brokers_in(*env.cluster, env.region).at(0);
  std::error_code ec;
  const std::string log = env.cluster->log_path(Role::kBroker, broker);
  env.log_offset = std::filesystem::exists(log, ec) ? std::filesystem::file_size(log, ec) : 0;
  env.cluster->cut_region(env.region);
  return fmt::format("region {} cut off (its broker, bookies and their ZooKeeper sessions; "
                     "processes alive), writing ledger {} of the first topic",
                     region_name(env, env.region), open.ledger_id);
}

Status heal_partition(FaultEnv& env) {
  const int broker = brokers_in(*env.cluster, env.region).at(0);
  const int64_t ledger_id = env.ledgers.begin()->first;
  FaultEnv outside = env;
  outside.web_url = web_url_outside(*env.cluster, env.region);
  bool stopped = false, moved = false, fenced = false;
  const auto deadline = Clock::now() + 40s;
  while (Clock::now() < deadline && !(stopped && moved && fenced)) {
    const std::string log = read_text(env.cluster->log_path(Role::kBroker, broker));
    stopped = log.size() > env.log_offset &&
              log.find("stopped serving every topic", env.log_offset) != std::string::npos;
    auto owner = owner_of(outside, env.topics.at(0));
    moved = owner.ok() && env.cluster->region_of(Role::kBroker, *owner) != env.region;
    auto ledgers = ledgers_of(env, ledger_id - 1);
    fenced = ledgers.ok() && !ledgers->empty() && ledgers->front().ledger_id == ledger_id &&
             ledgers->front().state == ledger::LedgerState::kClosed;
    if (!(stopped && moved && fenced)) std::this_thread::sleep_for(500ms);
  }
  if (stopped && moved && fenced) {
    env.say(fmt::format("{} stopped serving; the first topic moved out of region {}; its ledger "
                        "{} was recovered and closed by the new owner (fenced)",
                        env.cluster->name(Role::kBroker, broker), region_name(env, env.region),
                        ledger_id));
  } else {
    env.failure = fmt::format(
        "while region {} was cut off: {} {}; the first topic {}; ledger {} {}",
        region_name(env, env.region), env.cluster->name(Role::kBroker, broker),
        stopped ? "stopped serving" : "did NOT stop serving", moved ? "moved" : "did NOT move",
        ledger_id, fenced ? "was closed" : "was NOT closed (not fenced)");
  }
  env.cluster->heal_region(env.region);
  return Status::OK();
}

}  // namespace

std::vector<Fault> stretched_faults() {
  std::vector<Fault> f;
  Fault placement{"region-placement",
                  "no fault: every write set of every ledger the load makes is in three "
                  "regions (ledger metadata)",
                  true, 1, true, 0, prepare_placement,
                  [](FaultEnv&) -> Result<std::string> { return std::string("nothing"); },
                  nullptr};
  placement.verify = verify_placement;
  f.push_back(std::move(placement));
  Fault rtt{"region-rtt",
            "add --region-rtt (20 ms) between regions; the median publish must take at least "
            "that (acknowledgements span two regions); removed after the hold",
            true, 1, true, 0, nullptr, inject_rtt, heal_rtt};
  rtt.verify = verify_rtt;
  f.push_back(std::move(rtt));
  f.push_back({"region-loss",
               "SIGKILL the first topic's region (its broker and bookies); after the hold a "
               "replacement bookie joins it and auto-recovery must restore three regions to "
               "every ledger written before; then the killed processes restart",
               true, 1, true, 0, nullptr, inject_region_loss, heal_region_loss});
  f.push_back({"region-partition",
               "cut the first topic's region off (processes alive): its broker must stop "
               "serving, the topic move and its ledger be fenced; healed after the hold",
               true, 1, true, 0, nullptr, inject_partition, heal_partition});
  return f;
}

}  // namespace magnetar::tools::chaos
