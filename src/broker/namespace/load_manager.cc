#include "broker/namespace/load_manager.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <boost/asio/redirect_error.hpp>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <thread>

#include "broker/config/store_paths.h"
#include "common/version.h"
#include "metadata/leader_election.h"

namespace magnetar::broker {

namespace {

using Json = nlohmann::json;
using Clock = std::chrono::steady_clock;

constexpr const char* kBrokersPath = "/loadbalance/brokers";
constexpr const char* kLeaderPath = "/loadbalance/leader";
constexpr const char* kHintsPath = "/loadbalance/unload-hints";
// A preallocation not confirmed by the target's report by then is forgotten.
constexpr auto kPreallocationTtl = std::chrono::seconds(30);
// An unload hint applies to every placement of its bundle for this long (the clients of an
// unloaded bundle come back at once and each lookup may place it: one placement honouring the
// hint and the next one not would race the bundle back to where it was), then it is removed.
constexpr int64_t kHintTtlMs = 10000;

std::string host_port(const std::string& url) {
  const size_t scheme = url.find("://");
  std::string rest = scheme == std::string::npos ? url : url.substr(scheme + 3);
  if (auto slash = rest.find('/'); slash != std::string::npos) rest.resize(slash);
  return rest;
}

int64_t now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// CPU seconds used by this process (user + system).
double process_cpu_seconds() {
  std::ifstream in("/proc/self/stat");
  std::string line;
  if (!std::getline(in, line)) return 0;
  // Fields after the ")" that ends the command name; utime and stime are fields 14, 15.
  const size_t close = line.rfind(')');
  if (close == std::string::npos) return 0;
  std::istringstream fields(line.substr(close + 2));
  std::string skip;
  for (int i = 3; i < 14; ++i) fields >> skip;
  double utime = 0, stime = 0;
  fields >> utime >> stime;
  return (utime + stime) / static_cast<double>(sysconf(_SC_CLK_TCK));
}

// (resident MB, total MB)
std::pair<double, double> memory_mb() {
  std::ifstream in("/proc/self/statm");
  double pages = 0, resident = 0;
  in >> pages >> resident;
  const double page_mb = static_cast<double>(sysconf(_SC_PAGESIZE)) / (1024.0 * 1024.0);
  const double total = static_cast<double>(sysconf(_SC_PHYS_PAGES)) * page_mb;
  return {resident * page_mb, total};
}

// The shortest window a CPU usage is measured over (see write_report).
constexpr double kMinCpuWindowSeconds = 1.0;

double usage_percent(const Json& report, const char* resource) {
  auto it = report.find(resource);
  if (it == report.end() || !it->is_object()) return 0;
  const double usage = it->value("usage", 0.0), limit = it->value("limit", 0.0);
  return limit > 0 ? 100.0 * usage / limit : 0;
}

}  // namespace

struct LoadManager::Report {
  double msg_rate_in = 0, msg_rate_out = 0, throughput_in = 0, throughput_out = 0;
  double cpu_usage = 0, cpu_limit = 100, memory_usage = 0, memory_limit = 0;
  int64_t topics = 0, producers = 0, consumers = 0;
  std::vector<std::string> bundles;
};

LoadManager::LoadManager(NamespaceService& namespaces, LoadManagerOptions options)
    : namespaces_(namespaces),
      options_(options),
      broker_id_(host_port(namespaces.self().http_url)),
      log_(log::Logger("loadmanager").with("broker", broker_id_)) {}

LoadManager::~LoadManager() = default;

bool LoadManager::is_leader() const {
  return election_ && election_->is_leader();
}

Task<Status> LoadManager::start() {
  wake_ = std::make_unique<asio::steady_timer>(namespaces_.executor());
  previous_.at = Clock::now();
  previous_.cpu_at = previous_.at;
  previous_.cpu_seconds = options_.cpu_seconds ? options_.cpu_seconds() : process_cpu_seconds();
  Status st = co_await write_report(true);
  if (!st.ok()) co_return st;
  election_ = std::make_unique<metadata::LeaderElection>(
      &namespaces_.store(), namespaces_.executor(), kLeaderPath, [this](bool leading) {
        if (leading) {
          preallocated_.clear();
          log_.info("this broker is now the load manager leader");
        } else {
          log_.warn("this broker is no longer the load manager leader");
        }
      });
  const Json value = {{"serviceUrl", namespaces_.self().http_url},
                      {"brokerUrl", namespaces_.self().broker_url},
                      {"brokerUrlTls", namespaces_.self().broker_url_tls},
                      {"httpUrlTls", namespaces_.self().http_url_tls},
                      {"brokerId", broker_id_}};
  st = co_await election_->start(value.dump());
  if (!st.ok()) co_return st;
  loop_running_ = true;
  asio::co_spawn(
      namespaces_.executor(), [this]() { return report_loop(); },
      [this](std::exception_ptr) { loop_running_ = false; });
  co_return Status::OK();
}

Task<void> LoadManager::stop() {
  stopping_ = true;
  if (wake_) wake_->cancel();
  // The report loop may be inside a store call: wait for it to see stopping_.
  asio::steady_timer pause(namespaces_.executor());
  while (loop_running_) {
    pause.expires_after(std::chrono::milliseconds(5));
    boost::system::error_code ec;
    co_await pause.async_wait(asio::redirect_error(asio::use_awaitable, ec));
  }
  if (election_) (void)co_await election_->stop();
  (void)co_await namespaces_.store().remove(fmt::format("{}/{}", kBrokersPath, broker_id_));
}

void LoadManager::bundles_changed() {
  changed_ = true;
  if (wake_) wake_->cancel();
}

Task<void> LoadManager::report_loop() {
  using std::chrono::milliseconds;
  while (!stopping_) {
    wake_->expires_after(milliseconds(1000));
    boost::system::error_code ec;
    co_await wake_->async_wait(asio::redirect_error(asio::use_awaitable, ec));
    if (stopping_) co_return;
    // Bundle changes go out at once, at most once a second.
    if (changed_ && Clock::now() - last_write_ < milliseconds(1000)) {
      wake_->expires_after(milliseconds(1000) - (Clock::now() - last_write_));
      co_await wake_->async_wait(asio::redirect_error(asio::use_awaitable, ec));
      if (stopping_) co_return;
    }
    Status st = co_await write_report(false);
    if (!st.ok()) log_.warn("writing the load report: {}", st.to_string());
  }
}

Task<Result<std::optional<std::string>>> LoadManager::own_report() {
  auto node = co_await namespaces_.store().get(fmt::format("{}/{}", kBrokersPath, broker_id_));
  if (!node.ok()) co_return node.status();
  std::optional<std::string> out;
  if (node->has_value()) out = std::move((*node)->value);
  co_return out;
}

std::string LoadManager::report_json(const Report& r) const {
  const auto& self = namespaces_.self();
  return Json{{"webServiceUrl", self.http_url},
              {"webServiceUrlTls", self.http_url_tls},
              {"pulsarServiceUrl", self.broker_url},
              {"pulsarServiceUrlTls", self.broker_url_tls},
              {"persistentTopicsEnabled", true},
              {"nonPersistentTopicsEnabled", false},
              {"cpu", {{"usage", r.cpu_usage}, {"limit", r.cpu_limit}}},
              {"memory", {{"usage", r.memory_usage}, {"limit", r.memory_limit}}},
              {"msgRateIn", r.msg_rate_in},
              {"msgRateOut", r.msg_rate_out},
              {"msgThroughputIn", r.throughput_in},
              {"msgThroughputOut", r.throughput_out},
              {"numTopics", r.topics},
              {"numBundles", static_cast<int64_t>(r.bundles.size())},
              {"numProducers", r.producers},
              {"numConsumers", r.consumers},
              {"bundles", r.bundles},
              {"lastUpdate", now_ms()},
              {"brokerVersionString", kVersion}}
      .dump();
}

Task<Status> LoadManager::write_report(bool force) {
  const auto now = Clock::now();
  auto loads = co_await namespaces_.topics().topic_loads();
  struct {
    double msgs_in = 0, bytes_in = 0, msgs_out = 0, bytes_out = 0;
    int64_t topics = 0, producers = 0, consumers = 0;
  } totals;
  for (const auto& t : loads) {
    totals.msgs_in += static_cast<double>(t.msgs_in);
    totals.bytes_in += static_cast<double>(t.bytes_in);
    totals.msgs_out += static_cast<double>(t.msgs_out);
    totals.bytes_out += static_cast<double>(t.bytes_out);
    totals.producers += t.producers;
    totals.consumers += t.consumers;
    ++totals.topics;
  }
  Report r;
  const double seconds = std::max(0.001, std::chrono::duration<double>(now - previous_.at).count());
  r.msg_rate_in = std::max(0.0, (totals.msgs_in - previous_.msgs_in) / seconds);
  r.msg_rate_out = std::max(0.0, (totals.msgs_out - previous_.msgs_out) / seconds);
  r.throughput_in = std::max(0.0, (totals.bytes_in - previous_.bytes_in) / seconds);
  r.throughput_out = std::max(0.0, (totals.bytes_out - previous_.bytes_out) / seconds);
  // The kernel counts CPU time in clock ticks (10 ms), so usage over a short window is noise:
  // a broker's first report, a few milliseconds after it started, could claim several cores
  // and be passed over by placement as overloaded. Usage is measured over at least a second;
  // until then the last measurement stands (none yet: 0).
  const double cpu = options_.cpu_seconds ? options_.cpu_seconds() : process_cpu_seconds();
  const double cores = std::max(1u, std::thread::hardware_concurrency());
  const double cpu_window = std::chrono::duration<double>(now - previous_.cpu_at).count();
  const bool cpu_measured = cpu_window >= kMinCpuWindowSeconds;
  r.cpu_usage = cpu_measured ? 100.0 * std::max(0.0, cpu - previous_.cpu_seconds) / cpu_window
                             : (last_ ? last_->cpu_usage : 0.0);
  r.cpu_limit = 100.0 * cores;
  std::tie(r.memory_usage, r.memory_limit) = memory_mb();
  r.topics = totals.topics;
  r.producers = totals.producers;
  r.consumers = totals.consumers;
  r.bundles = namespaces_.owned_bundles();
  bool due = force || changed_ || !last_ || now - last_write_ >= options_.report_max_interval;
  if (!due && now - last_write_ >= options_.report_min_interval) {
    // Moved by more than the threshold (relative to the last report, or absolute for
    // small values)?
    auto moved = [this](double before, double after) {
      const double base = std::max(std::abs(before), 1.0);
      return 100.0 * std::abs(after - before) / base > options_.report_threshold_percentage;
    };
    due = moved(last_->msg_rate_in + last_->msg_rate_out, r.msg_rate_in + r.msg_rate_out) ||
          moved(last_->throughput_in + last_->throughput_out, r.throughput_in + r.throughput_out) ||
          moved(last_->cpu_usage, r.cpu_usage) || r.topics != last_->topics;
  }
  if (!due) co_return Status::OK();
  if (options_.split.enabled) co_await split_hot_bundles(loads, seconds);
  previous_ = Counters{totals.msgs_in,
                       totals.bytes_in,
                       totals.msgs_out,
                       totals.bytes_out,
                       now,
                       cpu_measured ? cpu : previous_.cpu_seconds,
                       cpu_measured ? now : previous_.cpu_at};
  metadata::PutOptions options;
  options.ephemeral = true;
  changed_ = false;
  auto written = co_await namespaces_.store().put_recursive(
      fmt::format("{}/{}", kBrokersPath, broker_id_), report_json(r), options);
  if (!written.ok()) {
    changed_ = true;
    co_return written.status();
  }
  last_write_ = now;
  last_ = std::make_unique<Report>(std::move(r));
  co_return Status::OK();
}

Task<Result<std::optional<std::string>>> LoadManager::leader() {
  if (!election_) co_return std::optional<std::string>();
  co_return co_await election_->leader_value();
}

Task<Result<std::vector<std::string>>> LoadManager::brokers() {
  co_return co_await namespaces_.store().children(kBrokersPath);
}

Task<void> LoadManager::hint_unloaded(std::string bundle, std::string destination) {
  const Json hint = {{"exclude", broker_id_}, {"destination", destination}, {"at", now_ms()}};
  auto written = co_await namespaces_.store().put_recursive(
      fmt::format("{}/{}", kHintsPath, bundle), hint.dump());
  if (!written.ok())
    log_.warn("leaving the unload hint of {}: {}", bundle, written.status().to_string());
}

Task<Result<Placement>> LoadManager::place(std::string bundle) {
  if (!is_leader()) {
    auto leader = co_await election_->leader_value();
    if (leader.ok() && leader->has_value()) {
      auto j = Json::parse(**leader, nullptr, false);
      if (j.is_object() && j.value("brokerId", "") != broker_id_) {
        Placement p;
        p.via_leader = true;
        p.target.broker_url = j.value("brokerUrl", "");
        p.target.broker_url_tls = j.value("brokerUrlTls", "");
        p.target.http_url = j.value("serviceUrl", "");
        p.target.http_url_tls = j.value("httpUrlTls", "");
        if (!p.target.broker_url.empty()) co_return p;
      }
    }
    // No (usable) leader: decide here.
  }
  co_return co_await choose(bundle);
}

Task<Result<Placement>> LoadManager::choose(const std::string& bundle) {
  auto& store = namespaces_.store();
  // The hint an unload left.
  std::string exclude, destination;
  const std::string hint_path = fmt::format("{}/{}", kHintsPath, bundle);
  auto hint = co_await store.get(hint_path);
  if (hint.ok() && hint->has_value()) {
    auto j = Json::parse((*hint)->value, nullptr, false);
    if (j.is_object() && now_ms() - j.value("at", int64_t{0}) < kHintTtlMs) {
      exclude = j.value("exclude", "");
      destination = j.value("destination", "");
    } else {
      (void)co_await store.remove(hint_path);
    }
  }
  auto ids = co_await store.children(kBrokersPath);
  if (!ids.ok()) co_return ids.status();
  struct Candidate {
    std::string id;
    BrokerUrls urls;
    double rate = 0;
    int64_t bundles = 0;
    bool overloaded = false;
    std::set<std::string> reported;
  };
  std::vector<Candidate> candidates;
  const auto now = Clock::now();
  std::erase_if(preallocated_,
                [now](const auto& kv) { return now - kv.second.second > kPreallocationTtl; });
  for (const std::string& id : *ids) {
    auto node = co_await store.get(fmt::format("{}/{}", kBrokersPath, id));
    if (!node.ok() || !node->has_value()) continue;
    auto report = Json::parse((*node)->value, nullptr, false);
    if (!report.is_object()) continue;
    Candidate c;
    c.id = id;
    c.urls.broker_url = report.value("pulsarServiceUrl", "");
    c.urls.broker_url_tls = report.value("pulsarServiceUrlTls", "");
    c.urls.http_url = report.value("webServiceUrl", "");
    c.urls.http_url_tls = report.value("webServiceUrlTls", "");
    if (c.urls.broker_url.empty()) continue;
    c.rate = report.value("msgRateIn", 0.0) + report.value("msgRateOut", 0.0);
    std::set<std::string> reported;
    if (auto b = report.find("bundles"); b != report.end() && b->is_array()) {
      for (const auto& name : *b) {
        if (name.is_string()) reported.insert(name.get<std::string>());
      }
    }
    c.bundles = static_cast<int64_t>(reported.size());
    c.reported = std::move(reported);
    c.overloaded = std::max(usage_percent(report, "cpu"), usage_percent(report, "memory")) >
                   options_.overloaded_threshold_percentage;
    candidates.push_back(std::move(c));
  }
  if (candidates.empty()) {
    co_return Status(Errc::kUnavailable, "no broker is available to serve the bundle");
  }
  // Bundles placed but not in a report yet count for their broker. Counted here, with no
  // wait from now until this placement is recorded: placements running at the same moment
  // (four lookups of a fresh namespace) see each other and spread.
  for (auto& c : candidates) {
    for (auto it = preallocated_.begin(); it != preallocated_.end();) {
      if (it->second.first != c.id) {
        ++it;
      } else if (c.reported.count(it->first)) {
        it = preallocated_.erase(it);  // confirmed by the report
      } else {
        ++c.bundles;
        ++it;
      }
    }
  }
  const Candidate* chosen = nullptr;
  if (!destination.empty()) {
    for (const auto& c : candidates) {
      if (c.id == destination) chosen = &c;
    }
  }
  if (chosen == nullptr) {
    std::vector<const Candidate*> pool;
    for (const auto& c : candidates) {
      if (!c.overloaded && c.id != exclude) pool.push_back(&c);
    }
    if (pool.empty()) {
      for (const auto& c : candidates) {
        if (c.id != exclude) pool.push_back(&c);
      }
    }
    if (pool.empty()) {
      for (const auto& c : candidates) pool.push_back(&c);
    }
    double lowest = pool.front()->rate;
    for (const Candidate* c : pool) lowest = std::min(lowest, c->rate);
    for (const Candidate* c : pool) {
      if (c->rate > lowest * 1.1 + 1.0) continue;
      if (chosen == nullptr || c->bundles < chosen->bundles ||
          (c->bundles == chosen->bundles && c->id < chosen->id)) {
        chosen = c;
      }
    }
  }
  preallocated_[bundle] = {chosen->id, now};
  log_.info("placing bundle {} on {} ({} bundles, {:.1f} msg/s)", bundle, chosen->id,
            chosen->bundles, chosen->rate);
  Placement p;
  p.target = chosen->urls;
  p.self = chosen->id == broker_id_;
  co_return p;
}

Task<void> LoadManager::split_hot_bundles(const std::vector<TopicLoad>& loads, double seconds) {
  struct BundleLoad {
    std::string ns;
    BundleRange range;
    int64_t topics = 0, sessions = 0;
    double msgs = 0, bytes = 0;
  };
  std::map<std::string, NamespaceBundles> namespaces;  // read once per check
  std::map<std::string, BundleLoad> bundles;
  for (const auto& t : loads) {
    const std::string ns = t.name.namespace_name();
    auto it = namespaces.find(ns);
    if (it == namespaces.end()) {
      auto node = co_await namespaces_.configuration_store().get(namespace_policies_path(ns));
      if (!node.ok() || !node->has_value()) continue;
      auto parsed = NamespaceBundles::from_policies(
          (*node)->value, namespaces_.config().default_number_of_namespace_bundles);
      if (!parsed.ok()) continue;
      it = namespaces.emplace(ns, std::move(*parsed)).first;
    }
    const BundleRange range = it->second.bundle_of(topic_bundle_hash(t.name.to_string()));
    auto& b = bundles[bundle_full_name(ns, range)];
    b.ns = ns;
    b.range = range;
    ++b.topics;
    b.sessions += t.producers + t.consumers;
    b.msgs += static_cast<double>(t.msgs_in + t.msgs_out);
    b.bytes += static_cast<double>(t.bytes_in + t.bytes_out);
  }
  std::map<std::string, std::pair<double, double>> counters;
  for (const auto& [name, b] : bundles) {
    counters[name] = {b.msgs, b.bytes};
    auto before = bundle_counters_.find(name);
    const double msg_rate = before == bundle_counters_.end()
                                ? 0
                                : std::max(0.0, b.msgs - before->second.first) / seconds;
    const double mbytes_rate =
        before == bundle_counters_.end()
            ? 0
            : std::max(0.0, b.bytes - before->second.second) / seconds / (1024.0 * 1024.0);
    const auto& s = options_.split;
    std::string why;
    if (b.topics > s.max_topics) {
      why = fmt::format("{} topics > {}", b.topics, s.max_topics);
    } else if (b.sessions > s.max_sessions) {
      why = fmt::format("{} producers and consumers > {}", b.sessions, s.max_sessions);
    } else if (msg_rate > s.max_msg_rate) {
      why = fmt::format("{:.0f} msg/s > {:.0f}", msg_rate, s.max_msg_rate);
    } else if (mbytes_rate > s.max_bandwidth_mbytes) {
      why = fmt::format("{:.1f} MB/s > {:.0f}", mbytes_rate, s.max_bandwidth_mbytes);
    }
    if (why.empty()) continue;
    const auto& all = namespaces.at(b.ns);
    if (static_cast<int32_t>(all.ranges().size()) >= s.maximum_bundles) continue;
    if (!namespaces_.owns(b.ns, b.range)) continue;
    log_.info("splitting bundle {}: {}", name, why);
    Status st = co_await namespaces_.split_bundle(b.ns, b.range, s.unload_split_bundles);
    if (!st.ok()) log_.warn("splitting bundle {}: {}", name, st.to_string());
    // The namespace's bundles changed: the next check reads them again.
    namespaces.erase(b.ns);
    break;  // one split per check
  }
  bundle_counters_ = std::move(counters);
}

}  // namespace magnetar::broker
