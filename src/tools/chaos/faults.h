#pragma once
// The faults of `magnetar chaos`, each a step that breaks something under load and a step that
// makes the cluster whole again. A fault picks its victim from what the load uses: the broker
// that owns the first topic (an HTTP lookup), a bookie of that topic's open ledger (its ledger
// metadata), the ZooKeeper leader.

#include <chrono>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "common/status.h"
#include "ledger/ledger_metadata.h"
#include "tools/chaos/chaos_cluster.h"
#include "tools/chaos/load.h"

namespace magnetar::tools::chaos {

// What a fault may touch; one per fault run.
struct FaultEnv {
  Cluster* cluster = nullptr;       // null against a cluster the user named
  std::string web_url;              // a broker's admin HTTP
  std::string metadata_url;         // the cluster's metadata store (direct)
  std::vector<std::string> topics;  // the load's
  std::function<void(const std::string&)> say;
  const Load* load = nullptr;  // the fault's load, while it runs
  Clock::time_point load_at;   // the load began
  Clock::time_point fault_at;  // inject() was called
  std::chrono::milliseconds region_rtt{20};  // --region-rtt (stretched clusters)
  Clock::time_point healed_at;               // heal() was called
  // What a fault found when it began: ledgers by id with their segments (first entry, the
  // fewest regions a write set of it spanned); a region; where a victim's log stood.
  std::map<int64_t, std::vector<std::pair<int64_t, int>>> ledgers;
  int region = -1;
  size_t log_offset = 0;
  // Set by heal() when a check on the way failed: the fault fails as a loss would.
  std::string failure;
  // Set by inject(), read by heal().
  std::vector<std::pair<Role, int>> victims;
  std::string balloon;  // disk-full: the file that fills the disk
};

struct Fault {
  std::string name;
  std::string what;                                      // one line: what it does and how it ends
  bool quick = false;                                    // part of --quick
  int min_zookeepers = 1;                                // needs an ensemble of this many
  bool needs_cluster = true;                             // false: runs against a named cluster too
  int min_topics = 0;                                    // the load uses at least this many topics
  std::function<Status(FaultEnv&)> prepare;              // optional, before the load
  std::function<Result<std::string>(FaultEnv&)> inject;  // returns what it did
  std::function<Status(FaultEnv&)> heal;                 // optional
  // Optional, after the load is read back: a failure fails the fault as a loss would.
  std::function<Status(FaultEnv&)> verify = nullptr;
};

std::vector<Fault> all_faults();
// The faults of a stretched cluster (`magnetar chaos --stretched`, stretched_faults.cc).
std::vector<Fault> stretched_faults();

// SIGKILLs env.victims; says what it did.
Result<std::string> kill_victims(FaultEnv& env);
// Restarts every victim not running (killed) or paused: bookies before brokers.
Status restart_victims(FaultEnv& env);
// persistent://public/default/x -> public/default/persistent/x (the managed ledger's name).
std::string managed_ledger_name(const std::string& topic);

// The broker that owns `topic` (an HTTP lookup), as the cluster's broker index.
Result<int> owner_of(const FaultEnv& env, const std::string& topic);
// The bookies (indexes) of the ensemble writing `topic`'s open ledger now.
Result<std::vector<int>> ensemble_of(const FaultEnv& env, const std::string& topic);
// The metadata of every ledger whose id is above `above`, by id.
Result<std::vector<ledger::LedgerMetadata>> ledgers_of(const FaultEnv& env, int64_t above = -1);
// `topic`'s open ledger (the newest; not a cursor's).
Result<ledger::LedgerMetadata> open_ledger_of(const FaultEnv& env, const std::string& topic);

}  // namespace magnetar::tools::chaos
