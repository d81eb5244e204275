// `magnetar chaos`: starts a local cluster (chaos_cluster.h), then runs each fault (faults.h)
// under a fresh load (load.h): warm up, inject, hold, heal, run on a little, drain, read
// everything back. Prints a line per step and, at the end, one row per fault:
//
//   fault  load held (msg/s)  acknowledged  lost  duplicated  undelivered  recovery (s)  result
//
// Exit code: 0 when every fault ran and nothing acknowledged was lost, doubled or left
// undelivered; 1 when something was (or a load never drained or could not be read back, or a
// fault's own check failed: the stretched cluster's);
// 2 when the cluster could not be started or a fault could not be injected.
//
// Bounded: every wait has a deadline, and faults not begun before --time-limit are skipped.
// Every process started dies with this one (PR_SET_PDEATHSIG); SIGINT and SIGTERM end the run
// after the current step, cleaning up.

#include <fmt/format.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <optional>
#include <thread>

#include "common/logging.h"
#include "tools/chaos/chaos_cluster.h"
#include "tools/chaos/faults.h"
#include "tools/chaos/load.h"
#include "tools/commands.h"
#include "tools/processes.h"

namespace magnetar::tools {

namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

std::atomic<bool> g_stop{false};
void on_signal(int) {
  g_stop = true;
}

// The settings of a mode; flags override them.
struct Plan {
  int zookeepers, bookies, brokers, topics, rate;
  std::chrono::seconds warmup, hold, after, drain, time_limit;
};

// The regions of --stretched, and what its brokers and bookies run with: E=3 Qw=3 Qa=2
// region-aware (acknowledgements span two regions), ledgers rolled every 500 entries and cursor
// ledgers every 10 so that auto-recovery gets to the ledgers open at a region's loss soon (it
// leaves a ledger whose writer lives until it closes), auto-recovery in every bookie with
// replacements placed region-aware.
const std::vector<std::string> kStretchedRegions = {"region-a", "region-b", "region-c"};
const std::vector<std::string> kStretchedBrokerSettings = {
    "managedLedgerDefaultAckQuorum=2", "reppMinimumRegionsForDurability=2",
    "managedLedgerMaxEntriesPerLedger=500", "managedLedgerMinLedgerRolloverTimeMinutes=0",
    "managedLedgerCursorMaxEntriesPerLedger=10"};
const std::vector<std::string> kStretchedBookieSettings = {
    "autoRecoveryDaemonEnabled=true", "lostBookieRecoveryDelay=0",
    "auditorPeriodicBookieCheckInterval=5", "rwRereplicateBackoffMs=1000",
    "openLedgerRereplicationGracePeriod=5000",
    "ensemblePlacementPolicy=org.apache.bookkeeper.client.RegionAwareEnsemblePlacementPolicy"};

Plan plan_for(const ChaosArgs& args) {
  Plan p = args.stretched ? (args.quick ? Plan{1, 2, 1, 2, 100, 4s, 12s, 3s, 60s, 600s}
                                        : Plan{1, 2, 1, 2, 200, 5s, 15s, 5s, 90s, 1500s})
           : args.quick   ? Plan{1, 3, 2, 2, 100, 2s, 12s, 3s, 45s, 420s}
                          : Plan{3, 3, 3, 2, 200, 3s, 12s, 5s, 90s, 1500s};
  if (args.topics > 0) p.topics = args.topics;
  if (args.rate > 0) p.rate = args.rate;
  if (args.hold_s > 0) p.hold = std::chrono::seconds(args.hold_s);
  if (args.time_limit_s > 0) p.time_limit = std::chrono::seconds(args.time_limit_s);
  return p;
}

struct Row {
  std::string fault;
  std::string result;  // "ok", "FAILED", "skipped: ...", "error: ..."
  std::optional<chaos::LoadReport> report;
  std::string injected;
  int offered = 0;  // msg/s over all topics
};

class Run {
 public:
  Run(const ChaosArgs& args, Plan plan) : args_(args), plan_(plan), started_(Clock::now()) {}

  void say(const std::string& line) {
    std::printf("[%6.1f s] %s\n", std::chrono::duration<double>(Clock::now() - started_).count(),
                line.c_str());
    std::fflush(stdout);
  }

  // Sleeps `d` unless a signal came; prints the acknowledged count every few seconds.
  void hold(std::chrono::seconds d, const chaos::Load* load, const char* phase) {
    const auto until = Clock::now() + d;
    auto next_report = Clock::now() + 4s;
    while (Clock::now() < until && !g_stop) {
      std::this_thread::sleep_for(100ms);
      if (load && Clock::now() >= next_report) {
        say(fmt::format("  {}: {} acknowledged so far", phase, load->acknowledged()));
        next_report += 4s;
      }
    }
  }

  bool time_left_for_one() const {
    const auto one = plan_.warmup + plan_.hold + plan_.after + 30s;
    return Clock::now() + one < started_ + plan_.time_limit;
  }

  Row run_fault(const chaos::Fault& fault, chaos::Cluster* cluster, int number) {
    Row row{fault.name, "", std::nullopt, ""};
    if (fault.needs_cluster && cluster == nullptr) {
      row.result = "skipped: needs a cluster chaos starts";
      return row;
    }
    if (cluster && cluster->count(chaos::Role::kZooKeeper) < fault.min_zookeepers) {
      row.result = fmt::format("skipped: needs {} ZooKeeper servers", fault.min_zookeepers);
      return row;
    }
    say(fmt::format("== {}: {}", fault.name, fault.what));
    chaos::FaultEnv env;
    env.cluster = cluster;
    env.web_url = cluster ? cluster->web_url(0) : args_.web_url;
    env.metadata_url = metadata_url_;
    env.say = [this](const std::string& s) { say("  " + s); };
    env.region_rtt = std::chrono::milliseconds(args_.region_rtt_ms);
    if (fault.prepare) {
      if (Status st = fault.prepare(env); !st.ok()) {
        row.result = "error: " + st.to_string();
        return row;
      }
    }
    chaos::LoadOptions lo;
    lo.service_url = service_url_;
    lo.topic_prefix = fmt::format("chaos-{}-{}-{}", ::getpid(), number, fault.name);
    lo.topics = std::max(plan_.topics, fault.min_topics);
    lo.rate = plan_.rate;
    if (args_.non_persistent) lo.domain = "non-persistent";
    lo.batching = !args_.stretched;  // publish latencies of single messages (region-rtt)
    lo.acknowledge = cluster != nullptr;  // a named cluster's retention may drop consumed data
    auto load = chaos::Load::start(lo);
    if (!load.ok()) {
      row.result = "error: load: " + load.status().to_string();
      return row;
    }
    say(fmt::format("  load: {} topic(s) x {} msg/s", lo.topics, lo.rate));
    row.offered = lo.topics * lo.rate;
    env.load = load->get();
    env.load_at = Clock::now();
    hold(plan_.warmup, load->get(), "warm-up");
    env.topics = (*load)->topics();
    (*load)->mark_fault();
    env.fault_at = Clock::now();
    auto injected = fault.inject(env);
    if (!injected.ok()) {
      row.result = "error: inject: " + injected.status().to_string();
      (void)(*load)->finish(10s);
      if (fault.heal) (void)fault.heal(env);
      return row;
    }
    row.injected = *injected;
    say("  " + *injected);
    hold(plan_.hold, load->get(), "fault");
    env.healed_at = Clock::now();
    if (fault.heal) {
      if (Status st = fault.heal(env); !st.ok()) {
        row.result = "error: heal: " + st.to_string();
      }
    }
    hold(plan_.after, load->get(), "after");
    say("  draining and reading everything back");
    chaos::LoadReport r = (*load)->finish(plan_.drain);
    say(
        fmt::format("  sent {}, acknowledged {}, send errors {}, lost {}, duplicated {}, "
                    "undelivered {}, misplaced {}, recovery {:.2f} s{}{}",
                    r.sent, r.acknowledged, r.send_errors, r.lost, r.duplicated, r.undelivered,
                    r.misplaced, r.recovery_s, r.detail.empty() ? "" : "; ", r.detail));
    const bool bad =
        r.lost > 0 || r.duplicated > 0 || r.undelivered > 0 || !r.verified || !r.drained;
    if (row.result.empty()) row.result = bad ? "FAILED" : "ok";
    if (!env.failure.empty()) {
      say("  check failed: " + env.failure);
      row.result = "FAILED";
    }
    if (fault.verify && !row.result.starts_with("error")) {
      if (Status st = fault.verify(env); !st.ok()) {
        say("  check failed: " + st.to_string());
        row.result = "FAILED";
      }
    }
    env.load = nullptr;
    load->reset();
    row.report = r;
    if (cluster) {
      if (Status st = cluster->check_running(); !st.ok()) {
        say("  " + st.to_string());
        if (row.result == "ok") row.result = "error: cluster not whole after the fault";
      }
    }
    if (bad && cluster) print_broker_logs(*cluster);
    return row;
  }

  void print_broker_logs(const chaos::Cluster& c) {
    for (int i = 0; i < c.count(chaos::Role::kBroker); ++i) {
      std::printf("--- last lines of %s ---\n%s\n", c.log_path(chaos::Role::kBroker, i).c_str(),
                  last_lines(read_text(c.log_path(chaos::Role::kBroker, i)), 20).c_str());
    }
  }

  std::string service_url_;
  std::string metadata_url_;

 private:
  const ChaosArgs& args_;
  const Plan plan_;
  const Clock::time_point started_;
};

void print_table(const std::vector<Row>& rows, const Plan& plan) {
  std::printf("\n%-18s %24s %13s %6s %11s %12s %13s  %s\n", "fault", "load held/offered (msg/s)",
              "acknowledged", "lost", "duplicated", "undelivered", "recovery (s)", "result");
  for (const auto& row : rows) {
    if (!row.report) {
      std::printf("%-18s %24s %13s %6s %11s %12s %13s  %s\n", row.fault.c_str(), "-", "-", "-", "-",
                  "-", "-", row.result.c_str());
      continue;
    }
    const auto& r = *row.report;
    const std::string recovery =
        r.recovery_s < 0 ? std::string("never") : fmt::format("{:.2f}", r.recovery_s);
    const std::string load = fmt::format("{:.0f} / {}", r.held_rate, row.offered);
    std::printf("%-18s %24s %13lld %6lld %11lld %12lld %13s  %s\n", row.fault.c_str(), load.c_str(),
                static_cast<long long>(r.acknowledged), static_cast<long long>(r.lost),
                static_cast<long long>(r.duplicated), static_cast<long long>(r.undelivered),
                recovery.c_str(), row.result.c_str());
  }
  std::printf(
      "(each fault held %lld s; load held: acknowledgements per second from the fault "
      "to the end of the load, catching up included; recovery: the longest a producer "
      "waited for an acknowledgement from the fault on)\n",
      static_cast<long long>(plan.hold.count()));
}

}  // namespace

int run_chaos(const ChaosArgs& args) {
  std::vector<chaos::Fault> faults;
  for (auto& f : args.stretched ? chaos::stretched_faults() : chaos::all_faults()) {
    const bool named =
        std::find(args.faults.begin(), args.faults.end(), f.name) != args.faults.end();
    if (args.list || named || (args.faults.empty() && (!args.quick || f.quick))) {
      faults.push_back(std::move(f));
    }
  }
  if (args.list) {
    for (const auto& f : faults) {
      std::printf("%-18s %s%s\n", f.name.c_str(), f.what.c_str(), f.quick ? " [quick]" : "");
    }
    return 0;
  }
  for (const auto& name : args.faults) {
    if (std::none_of(faults.begin(), faults.end(), [&](const auto& f) { return f.name == name; })) {
      std::fprintf(stderr, "error: no fault named %s (see `magnetar chaos --list`)\n",
                   name.c_str());
      return 2;
    }
  }
  log::set_level(args.verbose ? log::Level::kInfo : log::Level::kError);
  const Plan plan = plan_for(args);
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  ::sigaction(SIGINT, &sa, nullptr);
  ::sigaction(SIGTERM, &sa, nullptr);

  Run run(args, plan);
  const bool named = !args.service_url.empty();
  const fs::path root =
      args.dir.empty() ? fs::temp_directory_path() / fmt::format("magnetar-chaos-{}", ::getpid())
                       : fs::path(args.dir);
  std::unique_ptr<chaos::Cluster> cluster;
  if (named) {
    run.service_url_ = args.service_url;
    run.say(fmt::format("chaos against {} (faults that need its processes are skipped)",
                        args.service_url));
  } else {
    std::error_code ec;
    fs::remove_all(root / "cluster", ec);
    chaos::ClusterOptions co;
    co.dir = (root / "cluster").string();
    co.zookeepers = plan.zookeepers;
    co.bookies = plan.bookies;
    co.brokers = plan.brokers;
    if (args.stretched) {
      co.regions = kStretchedRegions;
      co.ensemble = 3;
      co.broker_settings = kStretchedBrokerSettings;
      co.bookie_settings = kStretchedBookieSettings;
    }
    co.broker_settings.insert(co.broker_settings.end(), args.broker_settings.begin(),
                              args.broker_settings.end());
    if (args.stretched) {
      run.say(fmt::format("{}: starting {} ZooKeeper server(s) and, in each of {} regions, {} "
                          "bookies and {} broker(s) under {}",
                          args.quick ? "chaos --stretched --quick" : "chaos --stretched",
                          plan.zookeepers, co.regions.size(), plan.bookies, plan.brokers,
                          co.dir));
    } else {
      run.say(fmt::format("{}: starting {} ZooKeeper server(s), {} bookies, {} brokers under {}",
                          args.quick ? "chaos --quick" : "chaos", plan.zookeepers, plan.bookies,
                          plan.brokers, co.dir));
    }
    auto say = [&run](const std::string& s) { run.say("  " + s); };
    auto started = chaos::Cluster::start(co, say);
    // A port picked for a process can be taken by another program before the process binds
    // it: start again on other ports over a fresh directory (the failed cluster is gone by
    // then: its processes die with it).
    for (int attempt = 2;
         attempt <= 3 && !started.ok() && !port_taken_line(started.status().message()).empty();
         ++attempt) {
      run.say(
          "  a picked port was taken before its process bound it; starting again on other "
          "ports");
      fs::remove_all(co.dir, ec);
      started = chaos::Cluster::start(co, say);
    }
    if (!started.ok()) {
      std::fprintf(stderr, "error: the cluster did not start: %s\n",
                   started.status().to_string().c_str());
      if (!args.keep) fs::remove_all(root, ec);
      return 2;
    }
    cluster = std::move(started).value();
    run.service_url_ = cluster->service_url();
    std::string zk;
    for (int k = 0; k < cluster->count(chaos::Role::kZooKeeper); ++k) {
      zk += fmt::format("{}127.0.0.1:{}", k ? "," : "", cluster->port(chaos::Role::kZooKeeper, k));
    }
    run.metadata_url_ = fmt::format("zk:{}/magnetar", zk);
  }

  std::vector<Row> rows;
  int number = 0;
  for (const auto& f : faults) {
    if (g_stop) {
      rows.push_back({f.name, "skipped: interrupted", std::nullopt, ""});
      continue;
    }
    if (!run.time_left_for_one()) {
      rows.push_back({f.name, "skipped: --time-limit reached", std::nullopt, ""});
      continue;
    }
    rows.push_back(run.run_fault(f, cluster.get(), ++number));
  }
  cluster.reset();  // every process killed, relays closed
  if (!args.keep && !named) {
    std::error_code ec;
    if (args.dir.empty()) {
      fs::remove_all(root, ec);
    } else {
      fs::remove_all(root / "cluster", ec);
    }
  }
  print_table(rows, plan);
  bool failed = false, error = false;
  for (const auto& r : rows) {
    failed = failed || r.result == "FAILED";
    error = error || r.result.starts_with("error");
  }
  if (g_stop) error = true;
  std::printf("chaos: %s\n", failed  ? "FAILED: acknowledged messages were lost, doubled or "
                                       "not delivered, or a fault's check failed (see above)"
                             : error ? "incomplete: a fault could not run (see above)"
                                     : "every acknowledged message was read back exactly once");
  return failed ? 1 : error ? 2 : 0;
}

}  // namespace magnetar::tools
