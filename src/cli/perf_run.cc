#include "cli/perf_run.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <ostream>
#include <random>
#include <thread>

#include "cli/client_conf.h"
#include "cli/client_tool.h"
#include "cli/interrupt.h"

namespace magnetar::cli {

double seconds_between(PerfClock::time_point a, PerfClock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

std::string perf_payload(int size) {
  std::string payload(static_cast<size_t>(std::max(size, 0)), '\0');
  std::mt19937 random(0x5eed);
  std::uniform_int_distribution<int> letter('a', 'z');
  for (char& c : payload) c = static_cast<char>(letter(random));
  return payload;
}

void sleep_until_or_halt(PerfClock::time_point until, const std::atomic<bool>& halt) {
  for (auto now = PerfClock::now(); now < until && !halt; now = PerfClock::now()) {
    std::this_thread::sleep_for(std::min<PerfClock::duration>(until - now, kPerfPoll));
  }
}

std::vector<std::string> PerfRun::topics() const {
  if (o_.num_topics <= 1 || o_.topics.size() != 1) return o_.topics;
  std::vector<std::string> out;
  for (int i = 0; i < o_.num_topics; ++i) out.push_back(fmt::format("{}-{}", o_.topics[0], i));
  return out;
}

bool PerfRun::check_options() {
  if (o_.stats_interval_s <= 0) {
    err_ << "--stats-interval-seconds must be positive\n";
    return false;
  }
  if (!(o_.stall_threshold_ms >= 0)) {
    err_ << "--stall-threshold-ms must not be negative\n";
    return false;
  }
  return true;
}

void PerfRun::watch_gaps(PerfCounters& c) const {
  c.gaps.set_threshold(std::chrono::microseconds(std::llround(o_.stall_threshold_ms * 1000)));
}

bool PerfRun::connect() {
  if (!check_options()) return false;
  auto url = resolve_service_url(o_.service_url, o_.conf);
  if (!url.ok()) {
    err_ << url.status().message() << "\n";
    return false;
  }
  auto authentication = resolve_authentication(o_.conf, o_.auth_plugin, o_.auth_params);
  if (!authentication.ok()) {
    err_ << authentication.status().message() << "\n";
    return false;
  }
  auto tls = resolve_tls_settings(o_.conf);
  if (!tls.ok()) {
    err_ << tls.status().message() << "\n";
    return false;
  }
  if (!o_.trust_cert_file.empty()) tls->trust_certs_file = o_.trust_cert_file;
  if (o_.tls_allow_insecure) tls->allow_insecure = true;
  if (o_.tls_enable_hostname_verification) tls->validate_hostname = true;
  client::ClientOptions options;
  apply_tls_settings(*tls, options);
  apply_failover_flags(o_.failover, options);
  options.authentication = std::move(authentication).value();
  auto made = client::Client::create(*url, options);
  if (!made.ok()) {
    err_ << "Invalid service URL " << *url << ": " << made.status().to_string() << "\n";
    return false;
  }
  client_ = std::make_unique<client::Client>(std::move(made).value());
  return true;
}

void PerfRun::print(const std::string& line) {
  std::lock_guard lock(out_mu_);
  out_ << line << "\n" << std::flush;
}

void PerfRun::report_until_done(PerfClock::time_point start, const std::function<bool()>& finished,
                                const std::function<std::string(double)>& line) {
  const auto interval = std::chrono::seconds(o_.stats_interval_s);
  const bool timed = o_.duration_s > 0;
  const auto deadline = start + std::chrono::duration_cast<PerfClock::duration>(
                                    std::chrono::duration<double>(timed ? o_.duration_s : 0));
  auto last = start;
  auto next = start + interval;
  while (!stop_requested() && !finished()) {
    const auto now = PerfClock::now();
    if (timed && now >= deadline) break;
    if (now >= next) {
      print(line(seconds_between(last, now)));
      last = now;
      next += interval;
      continue;
    }
    auto until = std::min<PerfClock::time_point>(next, now + kPerfPoll);
    if (timed) until = std::min(until, deadline);
    std::this_thread::sleep_until(until);
  }
}

int PerfRun::finish(std::string_view command, std::string_view verb, double seconds,
                    const PerfCounters& c, IntervalRecorder& latency, const PerfUnits& units,
                    const nlohmann::ordered_json& subject) {
  const int64_t messages = c.messages.load();
  const int64_t bytes = c.bytes.load();
  const Histogram total = latency.total();
  print(fmt::format("Aggregated throughput stats --- {} records {} --- {}", messages, verb,
                    throughput_text(messages, bytes, seconds, units)));
  print("Aggregated latency stats --- " + latency_text(total, true));
  const GapTracker::Gaps gaps = c.gaps.total();
  print("Aggregated stall stats --- " + gaps_text(gaps, c.gaps.threshold()));
  const std::vector<GapTracker::Stall> stalls = c.gaps.stalls();
  if (!stalls.empty()) {
    print(fmt::format("Stalls (UTC end, length){}: {}",
                      gaps.over > static_cast<int64_t>(stalls.size())
                          ? fmt::format(", the first {}", stalls.size())
                          : "",
                      stalls_text(stalls)));
  }
  if (!o_.json.empty()) {
    std::ofstream file(o_.json, std::ios::trunc);
    const nlohmann::ordered_json about =
        subject.is_null() ? nlohmann::ordered_json{{"topics", topics()}} : subject;
    file << summary_json(command, about, seconds, messages, c.failures.load(), bytes, total, gaps,
                         c.gaps.threshold(), stalls)
                .dump(2)
         << "\n";
    if (!file) {
      err_ << "Cannot write the JSON summary to " << o_.json << "\n";
      return 1;
    }
  }
  return 0;
}

void PerfRun::close() {
  if (client_) (void)client_->close();
}

}  // namespace magnetar::cli
