#include "tools/chaos/faults.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <thread>

#include "common/asio.h"
#include "http/http_client.h"
#include "ledger/bookkeeper.h"
#include "metadata/metadata_store.h"

namespace magnetar::tools::chaos {

namespace {

using namespace std::chrono_literals;

// persistent://public/default/x -> public/default/x (the REST path) and
// public/default/persistent/x (the managed ledger's name).
std::string rest_path(const std::string& topic) {
  return topic.substr(std::string("persistent://").size());
}
Status no_cluster() {
  return Status(Errc::kInvalidArgument, "needs a cluster chaos started");
}

// The bookies of one "region": bookie j belongs to region j % brokers.
std::vector<int> region_bookies(const Cluster& c, int region) {
  std::vector<int> out;
  for (int j = 0; j < c.count(Role::kBookie); ++j) {
    if (j % c.count(Role::kBroker) == region) out.push_back(j);
  }
  return out;
}

// A bookie writing the first topic's open ledger.
Result<int> bookie_of_first_topic(const FaultEnv& env) {
  MAGNETAR_ASSIGN_OR_RETURN(std::vector<int> ensemble, ensemble_of(env, env.topics.at(0)));
  if (ensemble.empty()) return Status(Errc::kNotFound, "the first topic's ledger has no ensemble");
  return ensemble.front();
}

Result<std::string> inject_broker_kill(FaultEnv& env) {
  if (!env.cluster) return no_cluster();
  MAGNETAR_ASSIGN_OR_RETURN(int owner, owner_of(env, env.topics.at(0)));
  env.victims = {{Role::kBroker, owner}};
  return kill_victims(env);
}

Result<std::string> inject_bookie_kill(FaultEnv& env) {
  if (!env.cluster) return no_cluster();
  MAGNETAR_ASSIGN_OR_RETURN(int bookie, bookie_of_first_topic(env));
  env.victims = {{Role::kBookie, bookie}};
  return kill_victims(env);
}

Result<std::string> inject_zookeeper_kill(FaultEnv& env) {
  if (!env.cluster) return no_cluster();
  MAGNETAR_ASSIGN_OR_RETURN(int leader, env.cluster->zookeeper_leader());
  env.victims = {{Role::kZooKeeper, leader}};
  MAGNETAR_ASSIGN_OR_RETURN(std::string what, kill_victims(env));
  return what + " (the leader)";
}

Result<std::string> inject_region_kill(FaultEnv& env) {
  if (!env.cluster) return no_cluster();
  MAGNETAR_ASSIGN_OR_RETURN(int owner, owner_of(env, env.topics.at(0)));
  env.victims = {{Role::kBroker, owner}};
  for (int b : region_bookies(*env.cluster, owner)) env.victims.emplace_back(Role::kBookie, b);
  MAGNETAR_ASSIGN_OR_RETURN(std::string what, kill_victims(env));
  return fmt::format("region {}: {}", owner, what);
}

Result<std::string> pause_victims(FaultEnv& env) {
  std::string what;
  for (const auto& [role, i] : env.victims) {
    MAGNETAR_TRY(env.cluster->pause(role, i));
    what += fmt::format("{}SIGSTOP {} (pid {})", what.empty() ? "" : ", ",
                        env.cluster->name(role, i), env.cluster->pid(role, i));
  }
  return what;
}

Status resume_victims(FaultEnv& env) {
  for (const auto& [role, i] : env.victims) {
    env.cluster->resume(role, i);
    env.say(fmt::format("SIGCONT {}", env.cluster->name(role, i)));
  }
  return Status::OK();
}

Result<std::string> inject_broker_pause(FaultEnv& env) {
  if (!env.cluster) return no_cluster();
  MAGNETAR_ASSIGN_OR_RETURN(int owner, owner_of(env, env.topics.at(0)));
  env.victims = {{Role::kBroker, owner}};
  return pause_victims(env);
}

Result<std::string> inject_bookie_pause(FaultEnv& env) {
  if (!env.cluster) return no_cluster();
  MAGNETAR_ASSIGN_OR_RETURN(int bookie, bookie_of_first_topic(env));
  env.victims = {{Role::kBookie, bookie}};
  return pause_victims(env);
}

Result<std::string> inject_broker_partition(FaultEnv& env) {
  if (!env.cluster) return no_cluster();
  MAGNETAR_ASSIGN_OR_RETURN(int owner, owner_of(env, env.topics.at(0)));
  env.victims = {{Role::kBroker, owner}};
  env.cluster->cut_broker(owner);
  return fmt::format("cut {} off (clients, brokers and ZooKeeper; process running)",
                     env.cluster->name(Role::kBroker, owner));
}

Status heal_broker_partition(FaultEnv& env) {
  for (const auto& [role, i] : env.victims) {
    env.cluster->heal_broker(i);
    env.say(fmt::format("healed {}", env.cluster->name(role, i)));
  }
  return Status::OK();
}

// The session owning the ephemeral node at `path`; 0 when there is none.
Result<int64_t> node_owner(const FaultEnv& env, const std::string& path) {
  return run_sync<Result<int64_t>>([&]() -> Task<Result<int64_t>> {
    metadata::StoreOptions o;
    o.operation_timeout = 5s;
    auto store = co_await metadata::open_store(env.metadata_url, o);
    if (!store.ok()) co_return store.status();
    auto got = co_await (*store)->get(path);
    (void)co_await (*store)->close();
    if (!got.ok()) co_return got.status();
    co_return got->has_value() ? (*got)->stat.ephemeral_owner : int64_t{0};
  });
}

// Polls until the ephemeral node at `path` is held by another session than `old_owner` (a
// restarted process registered itself again), or not held at all (`old_owner` < 0: until it is
// gone), for at most `timeout`.
Status wait_for_owner_change(const FaultEnv& env, const std::string& path, int64_t old_owner,
                             std::chrono::seconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (true) {
    auto owner = node_owner(env, path);
    if (owner.ok() && (old_owner < 0 ? *owner == 0 : (*owner != 0 && *owner != old_owner))) {
      return Status::OK();
    }
    if (std::chrono::steady_clock::now() > deadline) {
      return Status(Errc::kTimeout,
                    fmt::format("{} not registered again within {} s", path, timeout.count()));
    }
    std::this_thread::sleep_for(200ms);
  }
}

// The disk-full fault's bookie: bookie 0, restarted before the load with a disk-usage threshold
// just above the disk's use now; the balloon file, allocated later, takes the disk past it.
constexpr int kDiskVictim = 0;

struct DiskNumbers {
  double used = 0;  // fraction, as the bookie computes it (1 - available / total)
  uint64_t total = 0, available = 0;
};

Result<DiskNumbers> disk_numbers(const std::string& dir) {
  struct statvfs s {};
  if (::statvfs(dir.c_str(), &s) != 0) {
    return Status(Errc::kIoError, fmt::format("statvfs {}: {}", dir, std::strerror(errno)));
  }
  DiskNumbers d;
  d.total = static_cast<uint64_t>(s.f_blocks) * s.f_frsize;
  d.available = static_cast<uint64_t>(s.f_bavail) * s.f_frsize;
  d.used =
      d.total == 0 ? 1.0 : 1.0 - static_cast<double>(d.available) / static_cast<double>(d.total);
  return d;
}

// The balloon: a thousandth of the disk, at least 256 MiB, at most 2 GiB; the threshold sits
// half a balloon above today's use, so other writers on the same disk have that much room.
uint64_t balloon_bytes(const DiskNumbers& d) {
  return std::clamp<uint64_t>(d.total / 1000, 256ull << 20, 2ull << 30);
}

Status prepare_disk_full(FaultEnv& env) {
  if (!env.cluster) return no_cluster();
  const std::string dir = env.cluster->bookie_dir(kDiskVictim);
  MAGNETAR_ASSIGN_OR_RETURN(DiskNumbers d, disk_numbers(dir));
  const uint64_t balloon = balloon_bytes(d);
  if (d.available < 4 * balloon) {
    return Status(Errc::kUnavailable,
                  fmt::format("{} has {} MiB free: too little for a {} MiB balloon", dir,
                              d.available >> 20, balloon >> 20));
  }
  const double threshold = d.used + static_cast<double>(balloon / 2) / static_cast<double>(d.total);
  if (threshold >= 1.0) return Status(Errc::kUnavailable, "the disk is too full to fill");
  const std::string id = fmt::format("127.0.0.1:{}", env.cluster->port(Role::kBookie, kDiskVictim));
  MAGNETAR_ASSIGN_OR_RETURN(int64_t before, node_owner(env, "/ledgers/available/" + id));
  MAGNETAR_TRY(env.cluster->restart(Role::kBookie, kDiskVictim,
                                    {fmt::format("diskUsageThreshold={:.6f}", threshold)}));
  env.say(
      fmt::format("restarted {} with diskUsageThreshold={:.6f} (disk {:.4f} used now; a "
                  "{} MiB file takes it past)",
                  env.cluster->name(Role::kBookie, kDiskVictim), threshold, d.used, balloon >> 20));
  // Registered again (its previous session must expire first) before the load's ledgers are
  // placed, or they could not choose it.
  MAGNETAR_TRY(wait_for_owner_change(env, "/ledgers/available/" + id, before, 30s));
  MAGNETAR_TRY(wait_for_owner_change(env, "/ledgers/available/readonly/" + id, -1, 10s));
  env.say(
      fmt::format("{} is registered as writable", env.cluster->name(Role::kBookie, kDiskVictim)));
  return Status::OK();
}

Result<std::string> inject_disk_full(FaultEnv& env) {
  if (!env.cluster) return no_cluster();
  const std::string dir = env.cluster->bookie_dir(kDiskVictim);
  MAGNETAR_ASSIGN_OR_RETURN(DiskNumbers d, disk_numbers(dir));
  const uint64_t balloon = balloon_bytes(d);
  env.balloon = dir + "/ledgers/chaos-balloon";
  env.victims = {{Role::kBookie, kDiskVictim}};
  // Which of the load's ledgers it writes, before it fills (an ensemble change follows).
  std::string where = "in no ensemble of the load's topics";
  std::vector<std::string> in;
  for (const auto& t : env.topics) {
    auto e = ensemble_of(env, t);
    if (e.ok() && std::find(e->begin(), e->end(), kDiskVictim) != e->end()) in.push_back(t);
  }
  if (!in.empty()) where = fmt::format("writing {} of the {} topics", in.size(), env.topics.size());
  const std::string log = env.cluster->log_path(Role::kBookie, kDiskVictim);
  const size_t log_offset = read_text(log).size();
  const int fd = ::open(env.balloon.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) {
    return Status(Errc::kIoError, fmt::format("{}: {}", env.balloon, std::strerror(errno)));
  }
  // Blocks really allocated (not a sparse file): statvfs counts them at once.
  const int err = ::posix_fallocate(fd, 0, static_cast<off_t>(balloon));
  ::close(fd);
  if (err != 0) {
    return Status(Errc::kIoError, fmt::format("fallocate {}: {}", env.balloon, std::strerror(err)));
  }
  // The bookie's own disk check (every 500 ms) must see it: else the fault did not happen.
  const auto filled = std::chrono::steady_clock::now();
  while (read_text(log).find("bookie is now read-only", log_offset) == std::string::npos) {
    if (std::chrono::steady_clock::now() - filled > 10s) {
      return Status(Errc::kUnavailable,
                    fmt::format("{} did not turn read-only within 10 s of the disk filling",
                                env.cluster->name(Role::kBookie, kDiskVictim)));
    }
    std::this_thread::sleep_for(50ms);
  }
  const double took =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - filled).count();
  return fmt::format("filled {}'s disk with {} MiB; read-only {:.1f} s later (it was {})",
                     env.cluster->name(Role::kBookie, kDiskVictim), balloon >> 20, took, where);
}

Status heal_disk_full(FaultEnv& env) {
  std::error_code ec;
  std::filesystem::remove(env.balloon, ec);
  // Read-only mode does not end by itself here: the bookie comes back writable on restart.
  MAGNETAR_TRY(env.cluster->restart(Role::kBookie, kDiskVictim));
  env.say(fmt::format("removed the balloon, restarted {} without the threshold",
                      env.cluster->name(Role::kBookie, kDiskVictim)));
  return Status::OK();
}

}  // namespace

std::string managed_ledger_name(const std::string& topic) {
  const std::string path = rest_path(topic);
  const size_t slash = path.rfind('/');
  return path.substr(0, slash) + "/persistent" + path.substr(slash);
}

Status restart_victims(FaultEnv& env) {
  std::vector<std::pair<Role, int>> order = env.victims;
  std::stable_sort(order.begin(), order.end(), [](const auto& a, const auto& b) {
    auto rank = [](Role r) { return r == Role::kZooKeeper ? 0 : r == Role::kBookie ? 1 : 2; };
    return rank(a.first) < rank(b.first);
  });
  for (const auto& [role, i] : order) {
    MAGNETAR_TRY(env.cluster->restart(role, i));
    env.say(fmt::format("restarted {}", env.cluster->name(role, i)));
  }
  return Status::OK();
}

Result<std::string> kill_victims(FaultEnv& env) {
  std::string what;
  for (const auto& [role, i] : env.victims) {
    const pid_t pid = env.cluster->pid(role, i);
    env.cluster->kill(role, i);
    what += fmt::format("{}SIGKILL {} (pid {})", what.empty() ? "" : ", ",
                        env.cluster->name(role, i), pid);
  }
  return what;
}

Result<int> owner_of(const FaultEnv& env, const std::string& topic) {
  http::HttpClient http;
  http::HttpRequest request;
  request.url = env.web_url + "/lookup/v2/topic/persistent/" + rest_path(topic);
  request.timeout = 10s;
  MAGNETAR_ASSIGN_OR_RETURN(http::HttpResponse got, http.send_blocking(std::move(request)));
  if (got.status != 200) {
    return Status(Errc::kUnavailable,
                  fmt::format("lookup of {}: HTTP {} {}", topic, got.status, got.body));
  }
  const auto j = nlohmann::json::parse(got.body, nullptr, false);
  const std::string url = j.is_object() ? j.value("brokerUrl", "") : "";
  const int index = env.cluster ? env.cluster->broker_of(url) : -1;
  if (index < 0) {
    return Status(Errc::kNotFound,
                  fmt::format("lookup of {} named {}: not a broker of ours", topic, got.body));
  }
  return index;
}

Result<std::vector<ledger::LedgerMetadata>> ledgers_of(const FaultEnv& env, int64_t above) {
  using Out = Result<std::vector<ledger::LedgerMetadata>>;
  return run_sync<Out>([&]() -> Task<Out> {
    metadata::StoreOptions o;
    o.operation_timeout = 10s;
    auto store = co_await metadata::open_store(env.metadata_url, o);
    if (!store.ok()) co_return store.status();
    Out out = std::vector<ledger::LedgerMetadata>{};
    {
      ledger::BookKeeper bk(**store, co_await asio::this_coro::executor);
      auto ids = co_await bk.list_ledgers();
      if (!ids.ok()) out = ids.status();
      for (size_t k = 0; ids.ok() && out.ok() && k < ids->size(); ++k) {
        if ((*ids)[k].value() <= above) continue;
        auto md = co_await bk.read_metadata((*ids)[k]);
        if (md.ok()) {
          out->push_back(std::move(md).value());
        } else if (!md.status().is(Errc::kNotFound)) {  // deleted since the listing: skipped
          out = md.status();
        }
      }
    }
    (void)co_await (*store)->close();
    co_return out;
  });
}

Result<ledger::LedgerMetadata> open_ledger_of(const FaultEnv& env, const std::string& topic) {
  const std::string ml = managed_ledger_name(topic);
  MAGNETAR_ASSIGN_OR_RETURN(auto ledgers, ledgers_of(env));
  for (auto it = ledgers.rbegin(); it != ledgers.rend(); ++it) {
    if (it->state != ledger::LedgerState::kOpen || it->segments.empty()) continue;
    auto name = it->custom.find("pulsar/managed-ledger");
    if (name == it->custom.end() || name->second != ml || it->custom.count("pulsar/cursor") > 0) {
      continue;  // another topic's, or a cursor's
    }
    return *it;
  }
  return Status(Errc::kNotFound, "no open ledger of " + ml);
}

Result<std::vector<int>> ensemble_of(const FaultEnv& env, const std::string& topic) {
  if (!env.cluster) return no_cluster();
  MAGNETAR_ASSIGN_OR_RETURN(ledger::LedgerMetadata md, open_ledger_of(env, topic));
  std::vector<int> out;
  for (const auto& id : md.segments.back().ensemble) {
    for (int j = 0; j < env.cluster->count(Role::kBookie); ++j) {
      if (id == env.cluster->bookie_id(j)) out.push_back(j);
    }
  }
  return out;
}

std::vector<Fault> all_faults() {
  std::vector<Fault> f;
  f.push_back({"baseline", "no fault: the load and the checker alone", true, 1, false, 0, nullptr,
               [](FaultEnv&) -> Result<std::string> { return std::string("nothing"); }, nullptr});
  f.push_back({"broker-kill", "SIGKILL the broker owning the first topic; restarted after the hold",
               true, 1, true, 0, nullptr, inject_broker_kill, restart_victims});
  f.push_back({"bookie-kill",
               "SIGKILL a bookie of the first topic's open ledger; restarted after the hold", true,
               1, true, 0, nullptr, inject_bookie_kill, restart_victims});
  f.push_back({"zookeeper-kill",
               "SIGKILL the ZooKeeper ensemble's leader; restarted after the hold", false, 3, true,
               0, nullptr, inject_zookeeper_kill, restart_victims});
  f.push_back({"region-kill",
               "SIGKILL a region: the first topic's broker and its bookies (bookie j is in "
               "region j mod brokers); restarted after the hold",
               false, 1, true, 0, nullptr, inject_region_kill, restart_victims});
  f.push_back({"broker-pause",
               "SIGSTOP the broker owning the first topic (longer than its metadata session); "
               "SIGCONT after the hold",
               true, 1, true, 0, nullptr, inject_broker_pause, resume_victims});
  f.push_back({"bookie-pause",
               "SIGSTOP a bookie of the first topic's open ledger (longer than the 10 s add "
               "timeout); SIGCONT after the hold",
               false, 1, true, 0, nullptr, inject_bookie_pause, resume_victims});
  f.push_back({"broker-partition",
               "cut the first topic's broker off through its relays (clients, other brokers, "
               "ZooKeeper; it keeps running and reaching its bookies); healed after the hold",
               true, 1, true, 0, nullptr, inject_broker_partition, heal_broker_partition});
  f.push_back({"bookie-disk-full",
               "fill bookie-0's disk past its diskUsageThreshold (set just above today's use "
               "before the load) so that it turns read-only; the file removed and the bookie "
               "restarted after the hold",
               false, 1, true, 4, prepare_disk_full, inject_disk_full, heal_disk_full});
  return f;
}

}  // namespace magnetar::tools::chaos
