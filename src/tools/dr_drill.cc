// `magnetar dr-drill`: a disaster-recovery drill on this machine. Two `magnetar standalone`
// clusters (region-a, region-b) replicate a namespace both ways; one client with cluster
// failover (region-a primary, region-b secondary) produces at a fixed rate and consumes one
// replicated subscription. region-a is SIGKILLed under load; the drill measures the time from
// the kill to the first message consumed on region-b, then restarts region-a and measures the
// switch back, drains, and counts what the consumer saw: every acknowledged message must come
// (lost 0); what came more than once is reported as redelivered.
//
// Each drill runs on fresh clusters under --dir (removed at the end unless --keep). Exit code
// 0 when every drill failed over and lost nothing, 1 otherwise, 2 when the clusters could not
// be started.

#include <fmt/format.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <limits>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string_view>
#include <thread>
#include <vector>

#include "common/logging.h"
#include "common/ports.h"
#include "http/http_client.h"
#include "magnetar/client.h"
#include "tools/commands.h"
#include "tools/processes.h"

namespace magnetar::tools {

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;
using nlohmann::json;

constexpr const char* kNamespace = "public/dr";
constexpr const char* kTopic = "persistent://public/dr/drill";

double elapsed_s(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

// One cluster of the drill: a standalone on free ports over its own directory.
class Region {
 public:
  Region(std::string name, fs::path dir, std::vector<std::string> settings)
      : name_(std::move(name)), dir_(std::move(dir)), settings_(std::move(settings)) {
    picked_ = pick_ports();
  }
  ~Region() { kill(); }

  // The first start takes other ports when one of its own was taken between picking and binding,
  // over a fresh data directory: the bookie's cookie names its port. A picked port is let go
  // before the standalone binds it, so another pick (the other region's, another process's: Linux
  // hands bind(0) the odd ports of the ephemeral range, outgoing connections the even ones) can
  // land on it; CI once saw region-b fail so. A restart keeps the ports, which the other region
  // and the client know by now.
  Status start() {
    for (int attempt = 1;; ++attempt) {
      Status st = start_once();
      if (st.ok() || started_ || attempt == 3 || port_taken_.empty()) {
        started_ = started_ || st.ok();
        return st;
      }
      std::printf("%s: %s; starting again on other ports\n", name_.c_str(), port_taken_.c_str());
      std::error_code ec;
      fs::remove_all(dir_ / "data", ec);
      picked_ = pick_ports();
    }
  }
  void kill() {
    if (pid_ <= 0) return;
    ::kill(pid_, SIGKILL);
    while (alive(pid_)) std::this_thread::sleep_for(10ms);
    pid_ = -1;
  }
  const std::string& name() const { return name_; }
  std::string service_url() const { return fmt::format("pulsar://127.0.0.1:{}", port_); }
  std::string web_url() const { return fmt::format("http://127.0.0.1:{}", web_port_); }

 private:
  Status pick_ports() {
    MAGNETAR_ASSIGN_OR_RETURN(const std::vector<int> ports, pick_free_ports(3));
    port_ = ports[0];
    web_port_ = ports[1];
    bookie_port_ = ports[2];
    return Status::OK();
  }

  Status start_once() {
    port_taken_.clear();
    MAGNETAR_TRY(picked_);
    fs::create_directories(dir_);
    const std::string log = (dir_ / "standalone.log").string();
    std::error_code ec;
    const auto before = fs::exists(log) ? fs::file_size(log, ec) : 0;
    std::vector<std::string> args = {self_binary(),
                                     "standalone",
                                     "--data-dir",
                                     (dir_ / "data").string(),
                                     "--set",
                                     fmt::format("brokerServicePort={}", port_),
                                     "--set",
                                     fmt::format("webServicePort={}", web_port_),
                                     "--set",
                                     fmt::format("bookiePort={}", bookie_port_),
                                     "--set",
                                     "bindAddress=127.0.0.1",
                                     "--set",
                                     "clusterName=" + name_};
    for (const auto& s : settings_) {
      args.push_back("--set");
      args.push_back(s);
    }
    auto pid = launch(args, dir_.string(), log, ChildLifetime::kDiesWithParent);
    if (!pid.ok()) return pid.status();
    pid_ = *pid;
    const auto deadline = Clock::now() + 60s;
    while (Clock::now() < deadline) {
      const std::string text = read_text(log);
      if (text.size() > before && text.find("standalone ready", before) != std::string::npos) {
        return Status::OK();
      }
      if (!alive(pid_)) {
        pid_ = -1;
        if (before <= text.size()) {
          port_taken_ = port_taken_line(std::string_view(text).substr(before));
        }
        return Status(Errc::kIoError, fmt::format("{} exited; the end of {}:\n{}", name_, log,
                                                  last_lines(text, 15)));
      }
      std::this_thread::sleep_for(50ms);
    }
    return Status(Errc::kTimeout, fmt::format("{} not ready in 60 s (see {})", name_, log));
  }

  std::string name_;
  fs::path dir_;
  std::vector<std::string> settings_;
  int port_ = 0, web_port_ = 0, bookie_port_ = 0;
  Status picked_;  // how picking the ports went
  pid_t pid_ = -1;
  bool started_ = false;
  // What the failed start's log said when one of its ports was taken ("" otherwise).
  std::string port_taken_;
};

Status rest(const Region& at, const std::string& method, const std::string& path,
            const json& body) {
  http::HttpClient http;
  http::HttpRequest request;
  request.method = method;
  request.url = at.web_url() + path;
  request.body = body.dump();
  auto got = http.send_blocking(std::move(request));
  if (!got.ok()) return got.status();
  if (got->status != 200 && got->status != 204) {
    return Status(Errc::kIoError, fmt::format("{} {} on {}: HTTP {} {}", method, path, at.name(),
                                              got->status, got->body));
  }
  return Status::OK();
}

// Each region registers the other, and the namespace replicates between both.
Status set_up_replication(Region& a, Region& b) {
  for (auto [self, other] : {std::pair{&a, &b}, std::pair{&b, &a}}) {
    json cluster{{"serviceUrl", other->web_url()}, {"brokerServiceUrl", other->service_url()}};
    if (Status st = rest(*self, "PUT", "/admin/v2/clusters/" + other->name(), cluster); !st.ok()) {
      return st;
    }
  }
  for (Region* r : {&a, &b}) {
    json tenant{{"adminRoles", json::array()}, {"allowedClusters", {a.name(), b.name()}}};
    if (Status st = rest(*r, "POST", "/admin/v2/tenants/public", tenant); !st.ok()) return st;
    const std::string ns = fmt::format("/admin/v2/namespaces/{}", kNamespace);
    if (Status st = rest(*r, "PUT", ns, json::object()); !st.ok()) return st;
    if (Status st = rest(*r, "POST", ns + "/replication", json{a.name(), b.name()}); !st.ok()) {
      return st;
    }
  }
  return Status::OK();
}

struct DrillResult {
  bool failed_over = false;
  bool switched_back = false;
  double failover_s = 0;     // kill -> first message consumed on region-b
  double switch_back_s = 0;  // region-a serving again -> the client back on it
  int64_t sent = 0, acknowledged = 0, send_errors = 0;
  int64_t received = 0, distinct = 0, lost = 0, redelivered = 0;
  // Of `redelivered`: after the failover, and after the switch back.
  int64_t redelivered_on_secondary = 0, redelivered_back = 0;
};

// What the consumer saw, per sequence number, and when the first message after a cluster
// switch came.
class Tally {
 public:
  void grow(int64_t n) {
    std::lock_guard lock(mu_);
    if (static_cast<int64_t>(received_.size()) < n) received_.resize(static_cast<size_t>(n), 0);
  }
  void sent_ok(int64_t seq) {
    std::lock_guard lock(mu_);
    acked_.push_back(seq);
  }
  // `switches`: the client's cluster switches when the message was received.
  void received(int64_t seq, int64_t switches) {
    std::lock_guard lock(mu_);
    if (seq >= 0 && seq < static_cast<int64_t>(received_.size())) {
      if (++received_[seq] > 1) ++again_[phase_];
    }
    ++total_;
    if (switches > mark_ && !first_after_switch_) first_after_switch_ = Clock::now();
  }
  std::optional<Clock::time_point> first_after_switch() {
    std::lock_guard lock(mu_);
    return first_after_switch_;
  }
  // From now on, waits for the first message received after the client's next move;
  // redeliveries count in the next phase (before the kill, on the secondary, back).
  void reset_switch_mark(int64_t switches_now) {
    std::lock_guard lock(mu_);
    mark_ = switches_now;
    phase_ = std::min<size_t>(phase_ + 1, again_.size() - 1);
    first_after_switch_.reset();
  }
  int64_t total() {
    std::lock_guard lock(mu_);
    return total_;
  }
  int64_t acknowledged() {
    std::lock_guard lock(mu_);
    return static_cast<int64_t>(acked_.size());
  }
  // Acknowledged sends the consumer has not seen yet.
  int64_t missing() {
    std::lock_guard lock(mu_);
    int64_t n = 0;
    for (int64_t seq : acked_) n += received_[static_cast<size_t>(seq)] == 0 ? 1 : 0;
    return n;
  }
  void fill(DrillResult& r) {
    std::lock_guard lock(mu_);
    r.acknowledged = static_cast<int64_t>(acked_.size());
    r.received = total_;
    for (int c : received_) {
      r.distinct += c > 0 ? 1 : 0;
      r.redelivered += c > 1 ? c - 1 : 0;
    }
    for (int64_t seq : acked_) r.lost += received_[static_cast<size_t>(seq)] == 0 ? 1 : 0;
    r.redelivered_on_secondary = again_[1];
    r.redelivered_back = again_[2];
  }

 private:
  std::mutex mu_;
  std::vector<int> received_;
  std::vector<int64_t> acked_;
  int64_t total_ = 0;
  int64_t mark_ = std::numeric_limits<int64_t>::max();
  size_t phase_ = 0;
  std::array<int64_t, 3> again_{};
  std::optional<Clock::time_point> first_after_switch_;
};

client::SubscriptionType subscription_type(const std::string& name) {
  if (name == "Failover") return client::SubscriptionType::kFailover;
  if (name == "Exclusive") return client::SubscriptionType::kExclusive;
  return client::SubscriptionType::kShared;
}

class Drill {
 public:
  Drill(const DrDrillArgs& args, int number, fs::path dir)
      : args_(args), number_(number), dir_(std::move(dir)) {}

  // nullopt when the clusters or the client could not be set up (printed).
  std::optional<DrillResult> run() {
    const std::vector<std::string> settings = {
        fmt::format("replicatedSubscriptionsSnapshotFrequencyMillis={}",
                    args_.snapshot_frequency_ms),
        "brokerDeduplicationEnabled=false"};
    a_ = std::make_unique<Region>("region-a", dir_ / "region-a", settings);
    b_ = std::make_unique<Region>("region-b", dir_ / "region-b", settings);
    for (Region* r : {a_.get(), b_.get()}) {
      if (Status st = r->start(); !st.ok()) return fail(st);
    }
    if (Status st = set_up_replication(*a_, *b_); !st.ok()) return fail(st);
    if (Status st = connect(); !st.ok()) return fail(st);

    DrillResult result;
    const auto started = Clock::now();
    std::thread consumer([this] { consume(); });
    const auto run_for = [&](std::chrono::milliseconds d, const std::function<bool()>& done) {
      const auto until = Clock::now() + d;
      while (Clock::now() < until && !(done && done())) produce_until(Clock::now() + 100ms);
    };
    run_for(std::chrono::milliseconds(args_.before_kill_ms), nullptr);
    progress(started, "before the kill");
    a_->kill();
    const auto killed = Clock::now();
    tally_.reset_switch_mark(client_->cluster_switches());
    std::printf("drill %d: killed %s (SIGKILL) at %.1f s\n", number_, a_->name().c_str(),
                elapsed_s(started));
    run_for(60s, [&] { return tally_.first_after_switch().has_value(); });
    if (auto first = tally_.first_after_switch()) {
      result.failed_over = true;
      result.failover_s = std::chrono::duration<double>(*first - killed).count();
      std::printf("drill %d: first message consumed on %s %.2f s after the kill\n", number_,
                  b_->name().c_str(), result.failover_s);
    } else {
      std::printf("drill %d: no message consumed on %s within 60 s of the kill\n", number_,
                  b_->name().c_str());
    }
    run_for(std::chrono::milliseconds(args_.on_secondary_ms), nullptr);
    progress(started, "on the secondary");

    if (Status st = a_->start(); !st.ok()) {
      std::printf("drill %d: %s did not restart: %s\n", number_, a_->name().c_str(),
                  st.to_string().c_str());
    } else {
      const auto restarted = Clock::now();
      tally_.reset_switch_mark(client_->cluster_switches());
      const std::string primary = a_->service_url();
      run_for(std::chrono::milliseconds(args_.switch_back_delay_ms) + 60s, [&] {
        return client_->service_url() == primary && tally_.first_after_switch().has_value();
      });
      if (client_->service_url() == primary) {
        result.switched_back = true;
        result.switch_back_s = elapsed_s(restarted);
        std::printf("drill %d: back on %s %.2f s after it was serving again\n", number_,
                    a_->name().c_str(), result.switch_back_s);
        run_for(2s, nullptr);
      } else {
        std::printf("drill %d: still on %s 60 s after %s came back\n", number_,
                    b_->name().c_str(), a_->name().c_str());
      }
    }
    // Everything sent is either acknowledged or failed; then the consumer catches up.
    (void)producer_->flush();
    const auto drain_until = Clock::now() + 60s;
    while (Clock::now() < drain_until && tally_.missing() > 0) std::this_thread::sleep_for(100ms);
    std::this_thread::sleep_for(1s);  // late redeliveries count too
    stop_ = true;
    consumer.join();
    progress(started, "drained");
    result.sent = sent_;
    result.send_errors = send_errors_.load();
    tally_.fill(result);
    (void)consumer_->close();
    (void)producer_->close();
    (void)client_->close();
    a_->kill();
    b_->kill();
    return result;
  }

 private:
  std::optional<DrillResult> fail(const Status& st) {
    std::fprintf(stderr, "drill %d: %s\n", number_, st.to_string().c_str());
    return std::nullopt;
  }

  Status connect() {
    client::ClientOptions options;
    options.operation_timeout = 30s;
    options.connection_timeout = 1s;
    options.initial_backoff = 100ms;
    options.max_backoff = 1s;
    auto& f = options.cluster_failover;
    f.secondary_service_urls = {b_->service_url()};
    f.failover_delay = std::chrono::milliseconds(args_.failover_delay_ms);
    f.switch_back_delay = std::chrono::milliseconds(args_.switch_back_delay_ms);
    f.check_interval = std::chrono::milliseconds(args_.check_interval_ms);
    auto made = client::Client::create(a_->service_url(), options);
    if (!made.ok()) return made.status();
    client_ = std::make_unique<client::Client>(std::move(*made));
    client::ConsumerOptions co;
    co.type = subscription_type(args_.subscription_type);
    co.initial_position = client::InitialPosition::kEarliest;
    co.replicate_subscription_state = true;
    auto consumer = client_->subscribe(kTopic, "dr-drill", co);
    if (!consumer.ok()) return consumer.status();
    consumer_ = std::make_unique<client::Consumer>(std::move(*consumer));
    client::ProducerOptions po;
    po.producer_name = fmt::format("dr-drill-{}", ::getpid());
    po.send_timeout = 0ms;  // pending messages wait for the other cluster
    po.max_pending_messages = 0;
    auto producer = client_->create_producer(kTopic, po);
    if (!producer.ok()) return producer.status();
    producer_ = std::make_unique<client::Producer>(std::move(*producer));
    return Status::OK();
  }

  // Sends at --rate until `until`.
  void produce_until(Clock::time_point until) {
    const auto interval = std::chrono::nanoseconds(1'000'000'000LL / std::max(1, args_.rate));
    if (next_send_ == Clock::time_point()) next_send_ = Clock::now();
    while (next_send_ < until) {
      std::this_thread::sleep_until(next_send_);
      const int64_t seq = sent_++;
      tally_.grow(sent_);
      producer_->send_async(client::Message(std::to_string(seq)),
                            [this, seq](Result<client::MessageId> r) {
                              if (r.ok()) {
                                tally_.sent_ok(seq);
                              } else {
                                ++send_errors_;
                              }
                            });
      next_send_ += interval;
    }
  }

  void consume() {
    while (!stop_) {
      auto m = consumer_->receive(100ms);
      const int64_t switches = client_->cluster_switches();
      if (!m.ok()) continue;
      int64_t seq = -1;
      try {
        seq = std::stoll(m->payload());
      } catch (const std::exception&) {
      }
      // Counted as from the other cluster once the client has moved: what the old one had
      // queued before its death is handed out within a few milliseconds, long before the
      // move (failover_delay).
      tally_.received(seq, switches);
      (void)consumer_->acknowledge(*m);
    }
  }

  void progress(Clock::time_point started, const char* phase) {
    std::printf("drill %d: %5.1f s %-17s sent %lld, acknowledged %lld, received %lld, on %s\n",
                number_, elapsed_s(started), phase, static_cast<long long>(sent_),
                static_cast<long long>(tally_.acknowledged()),
                static_cast<long long>(tally_.total()), client_->service_url().c_str());
    std::fflush(stdout);
  }

  const DrDrillArgs& args_;
  const int number_;
  const fs::path dir_;
  std::unique_ptr<Region> a_, b_;
  std::unique_ptr<client::Client> client_;
  std::unique_ptr<client::Consumer> consumer_;
  std::unique_ptr<client::Producer> producer_;
  Tally tally_;
  int64_t sent_ = 0;
  std::atomic<int64_t> send_errors_{0};
  Clock::time_point next_send_{};
  std::atomic<bool> stop_{false};
};

double percentile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t i = static_cast<size_t>(q * static_cast<double>(v.size() - 1) + 0.5);
  return v[std::min(i, v.size() - 1)];
}

}  // namespace

int run_dr_drill(const DrDrillArgs& args) {
  // The client's reconnect chatter would bury the drill's lines; warnings still show.
  log::set_level(args.verbose ? log::Level::kInfo : log::Level::kWarn);
  const fs::path root = args.dir.empty()
                            ? fs::temp_directory_path() / fmt::format("magnetar-dr-{}", ::getpid())
                            : fs::path(args.dir);
  std::printf("dr-drill: %d drill(s), %d msg/s, %s subscription, snapshots every %d ms, "
              "failover delay %d ms, switch-back delay %d ms, under %s\n",
              args.drills, args.rate, args.subscription_type.c_str(), args.snapshot_frequency_ms,
              args.failover_delay_ms, args.switch_back_delay_ms, root.c_str());
  std::vector<DrillResult> results;
  bool setup_failed = false;
  for (int i = 1; i <= args.drills; ++i) {
    const fs::path dir = root / fmt::format("drill-{}", i);
    std::error_code ec;
    fs::remove_all(dir, ec);
    Drill drill(args, i, dir);
    auto r = drill.run();
    if (!r) {
      setup_failed = true;
      break;
    }
    std::printf("drill %d: sent %lld, acknowledged %lld, send errors %lld, received %lld "
                "(%lld distinct), lost %lld, redelivered %lld (%lld on region-b, %lld back on "
                "region-a)\n",
                i, static_cast<long long>(r->sent), static_cast<long long>(r->acknowledged),
                static_cast<long long>(r->send_errors), static_cast<long long>(r->received),
                static_cast<long long>(r->distinct), static_cast<long long>(r->lost),
                static_cast<long long>(r->redelivered),
                static_cast<long long>(r->redelivered_on_secondary),
                static_cast<long long>(r->redelivered_back));
    std::fflush(stdout);
    results.push_back(*r);
    if (!args.keep) fs::remove_all(dir, ec);
  }
  if (!args.keep && !setup_failed) {
    std::error_code ec;
    fs::remove(root, ec);  // only when empty (a --dir of the user's keeps its other files)
  }
  if (results.empty()) return 2;
  std::vector<double> failover, switch_back, redelivered;
  int64_t lost = 0;
  bool all_moved = true;
  for (const auto& r : results) {
    all_moved = all_moved && r.failed_over && r.switched_back;
    if (r.failed_over) failover.push_back(r.failover_s);
    if (r.switched_back) switch_back.push_back(r.switch_back_s);
    redelivered.push_back(static_cast<double>(r.redelivered));
    lost += r.lost;
  }
  std::printf("summary over %zu drill(s): failover (kill -> first message consumed on the other "
              "cluster) p50 %.2f s, max %.2f s; switch back p50 %.2f s, max %.2f s; lost %lld; "
              "redelivered p50 %.0f, max %.0f\n",
              results.size(), percentile(failover, 0.5), percentile(failover, 1.0),
              percentile(switch_back, 0.5), percentile(switch_back, 1.0),
              static_cast<long long>(lost), percentile(redelivered, 0.5),
              percentile(redelivered, 1.0));
  if (setup_failed) return 2;
  return lost == 0 && all_moved ? 0 : 1;
}

}  // namespace magnetar::tools
