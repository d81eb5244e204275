#pragma once
// Internals of magnetar-perf shared by its commands (perf_tool.cc parses; perf_produce.cc,
// perf_receive.cc and perf_bookie.cc run): the option values and PerfRun, which owns the
// client, the output, the reporting loop and the summary of one run.

#include <atomic>
#include <chrono>
#include <functional>
#include <iosfwd>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "cli/client_tool.h"
#include "cli/perf_stats.h"
#include "magnetar/client.h"

namespace magnetar::cli {

using PerfClock = std::chrono::steady_clock;

// How often the reporting loop checks for the end of the run, and workers for a stop.
inline constexpr std::chrono::milliseconds kPerfPoll{20};

// The options of every command; the bookie command uses only the last four (duration, stats
// interval, JSON, stall threshold).
struct CommonOptions {
  std::vector<std::string> topics;
  std::string service_url;
  std::string conf;
  std::string auth_plugin;
  std::string auth_params;
  // pulsar-perf's --trust-cert-file, --tls-allow-insecure, --tls-enable-hostname-verification
  // (over client.conf's keys).
  std::string trust_cert_file;
  bool tls_allow_insecure = false;
  bool tls_enable_hostname_verification = false;
  FailoverFlags failover;  // client_tool.h
  int num_topics = 1;
  double duration_s = 0;
  int stats_interval_s = 10;
  std::string json;
  // --stall-threshold-ms: a gap between receipts longer than this counts as a stall.
  double stall_threshold_ms = 20;
};

struct ProducePerfOptions {
  double rate = 100;
  int size = 1024;
  int num_producers = 1;
  int64_t num_messages = 0;
  double batch_time_ms = 1;
  int batch_max_messages = 1000;
  int64_t batch_max_bytes = 4 * 1024 * 1024;
  bool disable_batching = false;
  std::string compression = "NONE";
  int max_outstanding = 1000;
};

struct ConsumePerfOptions {
  std::vector<std::string> subscriptions;
  std::string type = "Exclusive";
  std::string position = "Latest";
  int num_consumers = 1;
  int64_t num_messages = 0;
  double rate = 0;
  int receiver_queue_size = 1000;
  bool replicated = false;  // --replicated: replicate_subscription_state
};

struct ReadPerfOptions {
  std::string start = "earliest";
  int num_readers = 1;
  int64_t num_messages = 0;
  double rate = 0;
};

// `magnetar-perf bookie`: ledgers written through the ledger client (perf_bookie.cc).
struct BookiePerfOptions {
  std::string metadata_store_url;  // -mu; else metadataStoreUrl from `conf`
  std::string conf;                // a bookie.conf / broker.conf (key=value)
  int ensemble_size = 1;
  int write_quorum = 1;
  int ack_quorum = 1;
  int size = 1024;
  int max_outstanding = 1000;  // adds in flight over all ledgers, 0 no limit
  double rate = 0;             // adds per second over all ledgers, 0 no limit
  int num_ledgers = 1;
  bool keep_ledgers = false;
  double timeout_s = 30;  // bound of the set-up and of the tear-down
};

double seconds_between(PerfClock::time_point a, PerfClock::time_point b);
// `size` pseudo-random lower-case letters (the same every run), the payload of every message
// or entry a run writes.
std::string perf_payload(int size);
// Sleeps until `until` in short steps, giving up early when `halt` is set.
void sleep_until_or_halt(PerfClock::time_point until, const std::atomic<bool>& halt);

// One magnetar-perf run. Worker threads do the producing or consuming; the calling thread
// reports. `o`, `out` and `err` must outlive the run; print() may be called from any thread.
class PerfRun {
 public:
  PerfRun(const CommonOptions& o, std::ostream& out, std::ostream& err)
      : o_(o), out_(out), err_(err) {}

  // The topics to use: with --num-topic N > 1 and one topic T, T-0 ... T-(N-1).
  std::vector<std::string> topics() const;
  // Validates the common options; prints why not and returns false.
  bool check_options();
  // Sets the stall threshold of `c.gaps` from the options; before the run's first receipt.
  void watch_gaps(PerfCounters& c) const;
  // check_options(), then creates the client; prints why not and returns false.
  bool connect();
  // Precondition: connect() succeeded.
  client::Client& client() { return *client_; }

  // One line to the output, whole.
  void print(const std::string& line);

  // Prints `line(seconds since the previous line)` every stats interval until `finished()`,
  // the test duration, or a stop request.
  void report_until_done(PerfClock::time_point start, const std::function<bool()>& finished,
                         const std::function<std::string(double)>& line);

  // The aggregated lines (throughput, latency, stalls) and the JSON file (summary_json with
  // `subject`, by default
  // {"topics": topics()}); returns the exit code.
  int finish(std::string_view command, std::string_view verb, double seconds, const PerfCounters& c,
             IntervalRecorder& latency, const PerfUnits& units = kMessageUnits,
             const nlohmann::ordered_json& subject = nullptr);

  void close();

 private:
  const CommonOptions& o_;
  std::ostream& out_;
  std::ostream& err_;
  std::mutex out_mu_;
  std::unique_ptr<client::Client> client_;
};

int run_perf_produce(const CommonOptions& common, const ProducePerfOptions& o, std::ostream& out,
                     std::ostream& err);
int run_perf_consume(const CommonOptions& common, const ConsumePerfOptions& o, std::ostream& out,
                     std::ostream& err);
int run_perf_read(const CommonOptions& common, const ReadPerfOptions& o, std::ostream& out,
                  std::ostream& err);
int run_perf_bookie(const CommonOptions& common, const BookiePerfOptions& o, std::ostream& out,
                    std::ostream& err);

}  // namespace magnetar::cli
