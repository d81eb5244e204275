#pragma once
// The faults of `magnetar chaos`, each a step that breaks something under load and a step that
// makes the cluster whole again. A fault picks its victim from what the load uses: the broker
// that owns the first topic (an HTTP lookup), a bookie of that topic's open ledger (its ledger
// metadata), the ZooKeeper leader.

#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include "common/status.h"
#include "tools/chaos/chaos_cluster.h"

namespace magnetar::tools::chaos {

// What a fault may touch; one per fault run.
struct FaultEnv {
  Cluster* cluster = nullptr;       // null against a cluster the user named
  std::string web_url;              // a broker's admin HTTP
  std::string metadata_url;         // the cluster's metadata store (direct)
  std::vector<std::string> topics;  // the load's
  std::function<void(const std::string&)> say;
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
};

std::vector<Fault> all_faults();

// The broker that owns `topic` (an HTTP lookup), as the cluster's broker index.
Result<int> owner_of(const FaultEnv& env, const std::string& topic);
// The bookies (indexes) of the ensemble writing `topic`'s open ledger now.
Result<std::vector<int>> ensemble_of(const FaultEnv& env, const std::string& topic);

}  // namespace magnetar::tools::chaos
