// The broker end to end, set up as `magnetar standalone` runs it: one bookie in this process
// (journal fsync on), a Broker with E = Qw = Qa = 1 over a memory: metadata store holding
// /admin/policies/public/default, one topic, one producer and one Exclusive consumer, each a
// blocking PulsarTestClient (testing/pulsar_test_client.h) on its own thread, over TCP on
// 127.0.0.1. Producers batch as a Pulsar client does (uncompressed batches, at most
// kMaxBatchBytes each).
//  - BM_BrokerThroughput/size: the producer keeps kWindow batches in flight (refilled as
//    receipts arrive); the consumer, subscribed before the first send, holds kPermits flow
//    permits (refilled at half) and acks cumulatively every kAckEvery messages. msgs_per_s
//    and MB_per_s count messages fully consumed over the time between the consumer passing
//    the warm-up count (a tenth) and receiving the last message (the manual time);
//    publish_p* is post_batch -> SEND_RECEIPT per batch at that load.
//  - BM_BrokerLatency/size/rate: batches paced every kTick (as a client's 1 ms batching
//    delay would; a full batch goes out at once), sized so that `rate` msgs/s go out, for
//    MAGNETAR_BENCH_LATENCY_SECONDS (default 10) after a second of warm-up. publish_p* is
//    post_batch -> SEND_RECEIPT per batch; e2e_p* is post_batch -> the consumer holding the
//    message (the send time travels in each payload), per message; in milliseconds. The time
//    a message would wait in a client's batch before post_batch is not included. rate 0 is
//    half of what BM_BrokerThroughput measured for that size earlier in this run (a built-in
//    default when it did not run); MAGNETAR_BENCH_RATE_100 / MAGNETAR_BENCH_RATE_1024 set the
//    rate instead.
// Both fail (SkipWithError) unless every message arrived exactly once, in order, with its
// payload intact, and every SEND_RECEIPT came in send order with increasing message ids.
// cpu_* counters: CPU time of the producer, consumer, broker (threads Broker::start made),
// bookie (threads the bookie made) and other threads over the measured interval, as a
// percentage of one core (the machine has few: compare with 100 * cores).
//
// Knobs: MAGNETAR_BENCH_DIR (default /tmp), MAGNETAR_BENCH_GROUP_WAIT_MS (journal group wait,
// default the bookie's own, as in standalone), MAGNETAR_BENCH_BATCH_100 / _1024 (messages per
// batch in the throughput run), MAGNETAR_BENCH_WINDOW (batches in flight in the throughput
// run), MAGNETAR_BENCH_LATENCY_SECONDS; to tell the disk's share of the latency (not the
// issue's set-up): MAGNETAR_BENCH_FSYNC=0 (journal without fsync),
// MAGNETAR_BENCH_WRITE_CACHE_MB (the bookie's write cache, as in mledger_bench).

#include <benchmark/benchmark.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "broker/broker.h"
#include "common/logging.h"
#include "local_bookie.h"
#include "metadata/metadata_store.h"
#include "testing/event_loop.h"
#include "testing/pulsar_test_client.h"

namespace {

using namespace magnetar;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
using magnetar::testing::PulsarTestClient;

constexpr uint64_t kProducerId = 1;
constexpr uint64_t kConsumerId = 1;
constexpr int kWindow = 100;                   // batches in flight (throughput run)
constexpr size_t kMaxBatchBytes = 128 * 1024;  // a client's batchingMaxBytes
constexpr size_t kMaxBatchMessages = 1000;     // a client's batchingMaxMessages
constexpr uint32_t kPermits = 20000;           // flow permits, refilled at half
constexpr int64_t kAckEvery = 1000;            // messages between cumulative acks
constexpr auto kTick = 1ms;                    // latency run: one batch per tick
constexpr auto kReceiveTimeout = 1000ms;       // one wait of the consumer
constexpr auto kStallLimit = 30s;              // no progress for this long fails the run
constexpr size_t kHeader = 16;                 // payload: [u64 sequence][i64 send time ns]

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch())
      .count();
}

using bench::env_int;

[[noreturn]] void die(const std::string& what) {
  std::fprintf(stderr, "broker_bench: %s\n", what.c_str());
  std::abort();
}

// ---------------------------------------------------------------------------------------
// Per-thread CPU time from /proc/self/task, to tell whether the clients or the server use
// the cores up.

pid_t gettid_() {
  return static_cast<pid_t>(::syscall(SYS_gettid));
}

std::set<pid_t> thread_ids() {
  std::set<pid_t> out;
  for (const auto& e : std::filesystem::directory_iterator("/proc/self/task")) {
    out.insert(static_cast<pid_t>(std::stol(e.path().filename().string())));
  }
  return out;
}

// utime + stime of every thread of this process, in clock ticks.
std::map<pid_t, int64_t> thread_cpu_ticks() {
  std::map<pid_t, int64_t> out;
  for (pid_t tid : thread_ids()) {
    std::ifstream f("/proc/self/task/" + std::to_string(tid) + "/stat");
    std::string line;
    if (!std::getline(f, line)) continue;  // the thread ended meanwhile
    const size_t close = line.rfind(')');
    if (close == std::string::npos) continue;
    std::istringstream rest(line.substr(close + 2));
    std::string field;
    int64_t utime = 0, stime = 0;
    // Fields after the comm: state is field 3; utime and stime are fields 14 and 15.
    for (int i = 3; i <= 15 && rest >> field; ++i) {
      if (i == 14) utime = std::stoll(field);
      if (i == 15) stime = std::stoll(field);
    }
    out[tid] = utime + stime;
  }
  return out;
}

double thread_cpu_seconds() {
  timespec ts{};
  ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}

// Which role each thread has (learnt from when it appeared), and the CPU each used over the
// measured window. The producer opens the window, the consumer closes it when it has
// everything; both sample the other threads from /proc. The client threads read their own
// CPU clocks instead: they have exited (and left /proc) by the time the results are read.
struct ThreadRoles {
  std::set<pid_t> bookie, broker;  // written before the clients start
  std::atomic<pid_t> producer{0}, consumer{0};

  std::atomic<bool> window_open{false};
  Clock::time_point opened_at, closed_at;
  std::map<pid_t, int64_t> before, after;
  double producer_cpu = 0, consumer_cpu = 0;  // seconds within the window

  void open_window() {  // the producer's thread
    before = thread_cpu_ticks();
    opened_at = Clock::now();
    window_open = true;
  }
  void close_window() {  // the consumer's thread
    after = thread_cpu_ticks();
    closed_at = Clock::now();
  }

  // Accumulates a client thread's CPU time from the window's opening to its exit.
  class ClientClock {
   public:
    ClientClock(const ThreadRoles& roles, double& total) : roles_(roles), total_(total) {}
    void poll() {
      if (start_ < 0 && roles_.window_open) start_ = thread_cpu_seconds();
    }
    ~ClientClock() {
      if (start_ >= 0) total_ = thread_cpu_seconds() - start_;
    }

   private:
    const ThreadRoles& roles_;
    double& total_;
    double start_ = -1;
  };

  // CPU % (of one core) per role over the window.
  void report(benchmark::State& state) const {
    const double seconds = std::chrono::duration<double>(closed_at - opened_at).count();
    if (seconds <= 0) return;
    const double tick = static_cast<double>(::sysconf(_SC_CLK_TCK));
    std::map<std::string, double> pct = {{"cpu_producer", 100 * producer_cpu / seconds},
                                         {"cpu_consumer", 100 * consumer_cpu / seconds},
                                         {"cpu_broker", 0},
                                         {"cpu_bookie", 0},
                                         {"cpu_other", 0}};
    for (const auto& [tid, ticks] : after) {
      if (tid == producer.load() || tid == consumer.load()) continue;
      auto b = before.find(tid);
      const int64_t used = ticks - (b != before.end() ? b->second : 0);
      std::string role = "cpu_other";
      if (broker.count(tid) != 0) {
        role = "cpu_broker";
      } else if (bookie.count(tid) != 0) {
        role = "cpu_bookie";
      }
      pct[role] += 100.0 * static_cast<double>(used) / tick / seconds;
    }
    for (const auto& [name, value] : pct) state.counters[name] = value;
  }
};

// ---------------------------------------------------------------------------------------
// What `magnetar standalone` runs, in this process: a memory: store, one bookie, a broker.

class Standalone {
 public:
  explicit Standalone(ThreadRoles& roles) {
    static int instances = 0;
    const std::string name =
        "broker-bench-" + std::to_string(::getpid()) + "-" + std::to_string(++instances);
    const char* d = std::getenv("MAGNETAR_BENCH_DIR");
    dir_ = std::filesystem::path(d != nullptr ? d : "/tmp") / ("magnetar-" + name);
    std::filesystem::remove_all(dir_);
    store_ = std::shared_ptr<metadata::MetadataStore>(
        loop_.await(metadata::open_store("memory:" + name)).value());
    if (auto made = loop_.await(store_->put_recursive("/admin/policies/public/default", "{}"));
        !made.ok()) {
      die("creating public/default: " + made.status().to_string());
    }

    auto before = thread_ids();
    bookie_ = std::make_unique<bench::LocalBookie>(dir_ / "bookkeeper", store_);
    for (pid_t t : thread_ids()) {
      if (before.count(t) == 0) roles.bookie.insert(t);
    }

    before = thread_ids();
    broker::BrokerConfig c;
    c.broker_service_port = 0;
    c.bind_address = "127.0.0.1";
    c.managed_ledger.ensemble_size = 1;
    c.managed_ledger.write_quorum = 1;
    c.managed_ledger.ack_quorum = 1;
    broker_ = broker::Broker::start(c, metadata::MetadataStores{store_, store_}).value();
    for (pid_t t : thread_ids()) {
      if (before.count(t) == 0 && roles.bookie.count(t) == 0) roles.broker.insert(t);
    }
  }

  ~Standalone() {
    broker_->stop();
    broker_.reset();
    bookie_.reset();
    (void)loop_.await(store_->close());
    std::filesystem::remove_all(dir_);
  }

  std::unique_ptr<PulsarTestClient> client() const {
    PulsarTestClient::Options o;
    o.port = broker_->port();
    o.timeout = 10s;
    auto c = PulsarTestClient::connect(o);
    if (!c.ok()) die("connect: " + c.status().to_string());
    return std::move(c).value();
  }

  int group_wait_ms() const { return bookie_->config.journal_max_group_wait_msec; }
  bool fsync() const { return bookie_->config.journal_sync_data; }

 private:
  magnetar::testing::EventLoop loop_;  // first: destroyed last
  std::filesystem::path dir_;
  std::shared_ptr<metadata::MetadataStore> store_;
  std::unique_ptr<bench::LocalBookie> bookie_;
  std::unique_ptr<broker::Broker> broker_;
};

// ---------------------------------------------------------------------------------------
// The stream: what producer and consumer threads share.

// The first error of either thread; later ones are dropped. `failed` stops both.
struct Failure {
  std::mutex mu;
  std::string what;
  std::atomic<bool> failed{false};

  void set(const std::string& w) {
    std::lock_guard lock(mu);
    if (what.empty()) what = w;
    failed = true;
  }
};

void put_u64(std::string& s, size_t at, uint64_t v) {
  std::memcpy(s.data() + at, &v, sizeof v);
}
uint64_t get_u64(const uint8_t* p) {
  uint64_t v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

// A message of `size` bytes: the header, then a filler that depends on the sequence (so a
// payload from a wrong message or a shifted offset is caught).
void fill_payload(std::string& s, uint64_t seq, int64_t sent_ns) {
  put_u64(s, 0, seq);
  put_u64(s, 8, static_cast<uint64_t>(sent_ns));
  if (s.size() > kHeader) s[kHeader] = static_cast<char>(seq & 0x7f);
  if (s.size() > kHeader + 1) s.back() = static_cast<char>((seq >> 7) & 0x7f);
}

// The consumer: receives until `expected` (-1 until the producer knows) messages arrived,
// checking each; records per-message end-to-end latency (ns) when `record_latency`, and
// the time the message numbered `timed_from` arrived (the throughput window). Acks
// cumulatively every kAckEvery messages, the last one waiting for the ACK_RESPONSE.
struct ConsumerResult {
  int64_t received = 0;
  int64_t bytes = 0;
  Clock::time_point timed_start{}, end{};
  std::vector<int64_t> latencies;
};

void run_consumer(PulsarTestClient& c, size_t size, const std::atomic<int64_t>& expected,
                  int64_t timed_from, bool record_latency, Failure& failure, ThreadRoles& roles,
                  ConsumerResult& out) {
  ::pthread_setname_np(::pthread_self(), "bench-consumer");
  roles.consumer = gettid_();
  ThreadRoles::ClientClock cpu(roles, roles.consumer_cpu);
  int64_t since_ack = 0, since_flow = 0;
  wire::MessageIdData last_id;
  auto last_progress = Clock::now();
  if (out.received == timed_from) out.timed_start = Clock::now();
  while (!failure.failed) {
    cpu.poll();
    const int64_t want = expected.load();
    if (want >= 0 && out.received >= want) break;
    auto m = c.receive_message(kReceiveTimeout);
    if (!m.ok()) {
      if (m.status().is(Errc::kTimeout) && Clock::now() - last_progress < kStallLimit) continue;
      failure.set("consumer after " + std::to_string(out.received) +
                  " messages: " + m.status().to_string());
      return;
    }
    const auto arrived = Clock::now();
    const int64_t arrived_ns = now_ns();
    last_progress = arrived;
    auto messages = m->unpack();
    if (!messages.ok()) {
      failure.set("unpacking a batch: " + messages.status().to_string());
      return;
    }
    if (m->metadata.num_messages_in_batch() != static_cast<int32_t>(messages->size())) {
      failure.set("num_messages_in_batch does not match the batch");
      return;
    }
    for (const auto& single : *messages) {
      const Buffer& p = single.payload;
      const auto seq = static_cast<uint64_t>(out.received);
      if (p.size() != size || get_u64(p.data()) != seq ||
          (size > kHeader && p.data()[kHeader] != static_cast<uint8_t>(seq & 0x7f)) ||
          (size > kHeader + 1 && p.data()[size - 1] != static_cast<uint8_t>((seq >> 7) & 0x7f))) {
        failure.set("message " + std::to_string(seq) +
                    " missing, repeated, out of order or corrupt (got sequence " +
                    std::to_string(p.size() >= 8 ? get_u64(p.data()) : 0) + ", " +
                    std::to_string(p.size()) + " bytes)");
        return;
      }
      if (record_latency) {
        out.latencies.push_back(arrived_ns - static_cast<int64_t>(get_u64(p.data() + 8)));
      }
      ++out.received;
      out.bytes += static_cast<int64_t>(p.size());
      if (out.received == timed_from) out.timed_start = arrived;
    }
    const auto n = static_cast<int64_t>(messages->size());
    last_id.set_ledgerid(m->id.ledgerid());
    last_id.set_entryid(m->id.entryid());
    since_ack += n;
    since_flow += n;
    Status st;
    if (since_ack >= kAckEvery) {
      st = c.ack(kConsumerId, {last_id}, /*cumulative=*/true);
      since_ack = 0;
    }
    if (st.ok() && since_flow >= kPermits / 2) {
      st = c.flow(kConsumerId, static_cast<uint32_t>(since_flow));
      since_flow = 0;
    }
    if (!st.ok()) {
      failure.set("consumer ack/flow: " + st.to_string());
      return;
    }
  }
  out.end = Clock::now();
  if (failure.failed) return;
  roles.close_window();
  // A last cumulative ack, waiting for the broker's answer.
  if (out.received > 0) {
    Status st = c.ack(kConsumerId, {last_id}, true, c.next_request_id());
    if (!st.ok()) failure.set("final ack: " + st.to_string());
  }
}

// Receipts must come in send order (a batch's receipt names its first sequence id) with
// increasing (ledger, entry).
class ReceiptChecker {
 public:
  bool check(const wire::CommandSendReceipt& r, Failure& failure) {
    const auto& id = r.message_id();
    if (have_ &&
        (id.ledgerid() < ledger_ || (id.ledgerid() == ledger_ && id.entryid() <= entry_))) {
      failure.set("receipt ids not increasing");
      return false;
    }
    have_ = true;
    ledger_ = id.ledgerid();
    entry_ = id.entryid();
    return true;
  }

 private:
  bool have_ = false;
  uint64_t ledger_ = 0, entry_ = 0;
};

struct Clients {
  std::unique_ptr<PulsarTestClient> producer, consumer;
};

// Subscribes (Exclusive, before any message exists), grants the first permits and creates
// the producer.
Clients open_stream(const Standalone& s, const std::string& topic) {
  Clients c{s.client(), s.client()};
  if (Status st =
          c.consumer->subscribe(topic, "bench", wire::CommandSubscribe::Exclusive, kConsumerId);
      !st.ok()) {
    die("subscribe: " + st.to_string());
  }
  if (Status st = c.consumer->flow(kConsumerId, kPermits); !st.ok()) die("flow: " + st.to_string());
  if (auto p = c.producer->create_producer(topic, kProducerId); !p.ok()) {
    die("create_producer: " + p.status().to_string());
  }
  return c;
}

double percentile_ms(std::vector<int64_t>& sorted_ns, double q) {
  if (sorted_ns.empty()) return 0;
  const auto i = static_cast<size_t>(
      std::min<double>(static_cast<double>(sorted_ns.size()) - 1,
                       std::ceil(q * static_cast<double>(sorted_ns.size())) - 1));
  return static_cast<double>(sorted_ns[i]) / 1e6;
}

void report_percentiles(benchmark::State& state, const std::string& prefix,
                        std::vector<int64_t>& ns) {
  std::sort(ns.begin(), ns.end());
  state.counters[prefix + "_p50_ms"] = percentile_ms(ns, 0.50);
  state.counters[prefix + "_p99_ms"] = percentile_ms(ns, 0.99);
  state.counters[prefix + "_p999_ms"] = percentile_ms(ns, 0.999);
  state.counters[prefix + "_max_ms"] = ns.empty() ? 0 : static_cast<double>(ns.back()) / 1e6;
}

// ---------------------------------------------------------------------------------------
// Throughput

std::map<int64_t, double> g_throughput;  // size -> msgs/s measured by BM_BrokerThroughput

int64_t throughput_messages(size_t size) {
  return size <= 128 ? 10'000'000 : 1'500'000;  // about 5 s each
}

size_t throughput_batch(size_t size) {
  const int dflt = size <= 128 ? 100 : 32;
  const int n =
      env_int(size <= 128 ? "MAGNETAR_BENCH_BATCH_100" : "MAGNETAR_BENCH_BATCH_1024", dflt);
  return std::clamp<size_t>(static_cast<size_t>(std::max(n, 1)), 1,
                            std::min(kMaxBatchMessages, kMaxBatchBytes / size));
}

void BM_BrokerThroughput(benchmark::State& state) {
  log::set_level(log::Level::kWarn);
  const auto size = static_cast<size_t>(state.range(0));
  const int64_t total = throughput_messages(size);
  const int64_t warmup = total / 10;
  const size_t batch = throughput_batch(size);
  const auto window = static_cast<size_t>(std::max(env_int("MAGNETAR_BENCH_WINDOW", kWindow), 1));
  ThreadRoles roles;
  Standalone s(roles);
  for (auto _ : state) {
    Clients c = open_stream(s, "persistent://public/default/throughput-" + std::to_string(size));
    Failure failure;
    std::atomic<int64_t> expected{total};
    ConsumerResult consumed;
    std::vector<int64_t> publish_ns;  // post_batch -> receipt, per batch after the warm-up

    std::thread consumer([&] {
      run_consumer(*c.consumer, size, expected, warmup, false, failure, roles, consumed);
    });
    std::thread producer([&] {
      ::pthread_setname_np(::pthread_self(), "bench-producer");
      roles.producer = gettid_();
      ThreadRoles::ClientClock cpu(roles, roles.producer_cpu);
      ReceiptChecker checker;
      std::vector<std::string> payloads;
      std::deque<std::pair<uint64_t, int64_t>> in_flight;  // first sequence id, posted at
      uint64_t seq = 0;
      while ((seq < static_cast<uint64_t>(total) || !in_flight.empty()) && !failure.failed) {
        while (seq < static_cast<uint64_t>(total) && in_flight.size() < window) {
          const size_t n = std::min<size_t>(batch, static_cast<uint64_t>(total) - seq);
          payloads.resize(n, std::string(size, 'x'));
          const int64_t t = now_ns();
          for (size_t i = 0; i < n; ++i) fill_payload(payloads[i], seq + i, t);
          if (Status st = c.producer->post_batch(kProducerId, seq, payloads); !st.ok()) {
            failure.set("post_batch: " + st.to_string());
            return;
          }
          in_flight.emplace_back(seq, roles.window_open ? t : -1);
          seq += n;
          // The measured interval starts at the end of the warm-up: sample CPU once there.
          if (!roles.window_open && seq >= static_cast<uint64_t>(warmup)) {
            roles.open_window();
            cpu.poll();
          }
        }
        auto r = c.producer->send_receipt(kProducerId, in_flight.front().first);
        if (!r.ok()) {
          failure.set("receipt: " + r.status().to_string());
          return;
        }
        if (!checker.check(*r, failure)) return;
        if (in_flight.front().second >= 0) {
          publish_ns.push_back(now_ns() - in_flight.front().second);
        }
        in_flight.pop_front();
      }
    });
    producer.join();
    consumer.join();
    if (failure.failed) {
      state.SkipWithError(failure.what.c_str());
      break;
    }
    const double seconds =
        std::chrono::duration<double>(consumed.end - consumed.timed_start).count();
    const auto timed = static_cast<double>(total - warmup);
    state.SetIterationTime(seconds);
    state.SetItemsProcessed(total - warmup);
    state.SetBytesProcessed((total - warmup) * static_cast<int64_t>(size));
    state.counters["msgs_per_s"] = timed / seconds;
    state.counters["MB_per_s"] = timed * static_cast<double>(size) / seconds / 1e6;
    state.counters["batch"] = static_cast<double>(batch);
    state.counters["window"] = static_cast<double>(window);
    report_percentiles(state, "publish", publish_ns);
    state.counters["messages"] = static_cast<double>(total);
    state.counters["group_wait_ms"] = s.group_wait_ms();
    state.counters["fsync"] = s.fsync() ? 1 : 0;
    roles.report(state);
    g_throughput[state.range(0)] = timed / seconds;
    if (consumed.received != total) state.SkipWithError("consumed count differs from sent");
  }
}

// ---------------------------------------------------------------------------------------
// Latency at a fixed rate

double default_rate(int64_t size) {
  // About half of BM_BrokerThroughput on the development machine (2 cores shared with other
  // builds, ext4, fsync on): 2.0-2.1M msgs/s at 100 B, 355-365k msgs/s at 1 KiB.
  return size <= 128 ? 1'000'000 : 180'000;
}

double latency_rate(const benchmark::State& state) {
  if (state.range(1) > 0) return static_cast<double>(state.range(1));
  if (auto t = g_throughput.find(state.range(0)); t != g_throughput.end()) return t->second / 2;
  return default_rate(state.range(0));
}

void BM_BrokerLatency(benchmark::State& state) {
  log::set_level(log::Level::kWarn);
  const auto size = static_cast<size_t>(state.range(0));
  const double rate = latency_rate(state);
  const auto duration = std::chrono::seconds(env_int("MAGNETAR_BENCH_LATENCY_SECONDS", 10));
  const auto warmup = 1s;  // paced too, not measured
  const size_t max_batch = std::min(kMaxBatchMessages, kMaxBatchBytes / size);
  ThreadRoles roles;
  Standalone s(roles);
  for (auto _ : state) {
    Clients c = open_stream(s, "persistent://public/default/latency-" + std::to_string(size));
    Failure failure;
    std::atomic<int64_t> expected{-1};
    ConsumerResult consumed;
    std::vector<int64_t> publish_ns;
    int64_t sent = 0, measured_from = 0, batches = 0;

    std::thread consumer([&] {
      run_consumer(*c.consumer, size, expected, std::numeric_limits<int64_t>::max(), true, failure,
                   roles, consumed);
    });
    std::thread producer([&] {
      ::pthread_setname_np(::pthread_self(), "bench-producer");
      roles.producer = gettid_();
      ThreadRoles::ClientClock cpu(roles, roles.producer_cpu);
      ReceiptChecker checker;
      std::vector<std::string> payloads;
      struct InFlight {
        uint64_t seq;
        int64_t posted_ns;
        bool measured;
      };
      std::deque<InFlight> in_flight;
      const auto start = Clock::now();
      const auto measure_start = start + warmup;
      const auto end = measure_start + duration;
      auto next_tick = start;
      bool measuring = false;
      // Waits for the oldest receipt until `until` (at most; whole milliseconds) and
      // records it if it came. A timeout is fine while pacing (`pacing`), unless the oldest
      // batch waits for longer than kStallLimit.
      auto take_receipt = [&](Clock::time_point until, bool pacing) -> bool {
        auto wait = std::chrono::ceil<std::chrono::milliseconds>(
            std::max(until - Clock::now(), Clock::duration::zero()));
        auto r = c.producer->send_receipt(kProducerId, in_flight.front().seq, wait);
        if (!r.ok()) {
          const auto waited = std::chrono::nanoseconds(now_ns() - in_flight.front().posted_ns);
          if (pacing && r.status().is(Errc::kTimeout) && waited < kStallLimit) return true;
          failure.set("receipt: " + r.status().to_string());
          return false;
        }
        if (!checker.check(*r, failure)) return false;
        if (in_flight.front().measured) {
          publish_ns.push_back(now_ns() - in_flight.front().posted_ns);
        }
        in_flight.pop_front();
        return true;
      };
      while (!failure.failed) {
        const auto now = Clock::now();
        if (now >= end) break;
        if (now >= next_tick) {
          if (!measuring && now >= measure_start) {
            measuring = true;
            measured_from = sent;
            roles.open_window();
            cpu.poll();
          }
          const double elapsed = std::chrono::duration<double>(now - start).count();
          const auto target = static_cast<int64_t>(rate * elapsed);
          // What the application handed over since the last tick, in batches of at most
          // max_batch (a full batch goes out at once, as in a client).
          while (target > sent) {
            const auto n = static_cast<size_t>(
                std::min<int64_t>(target - sent, static_cast<int64_t>(max_batch)));
            payloads.resize(n, std::string(size, 'x'));
            const int64_t t = now_ns();
            for (size_t i = 0; i < n; ++i) {
              fill_payload(payloads[i], static_cast<uint64_t>(sent) + i, t);
            }
            if (Status st =
                    c.producer->post_batch(kProducerId, static_cast<uint64_t>(sent), payloads);
                !st.ok()) {
              failure.set("post_batch: " + st.to_string());
              return;
            }
            in_flight.push_back({static_cast<uint64_t>(sent), t, measuring});
            sent += static_cast<int64_t>(n);
            ++batches;
          }
          next_tick += kTick;
          if (next_tick < now) next_tick = now + kTick;  // fell behind: no burst
        } else if (!in_flight.empty()) {
          if (!take_receipt(next_tick, true)) return;
        } else {
          std::this_thread::sleep_until(next_tick);
        }
      }
      expected = sent;
      while (!in_flight.empty() && !failure.failed) {
        if (!take_receipt(Clock::now() + 10s, false)) return;
      }
    });
    producer.join();
    if (failure.failed) expected = 0;
    consumer.join();
    if (failure.failed) {
      state.SkipWithError(failure.what.c_str());
      break;
    }
    const double seconds = std::chrono::duration<double>(duration).count();
    state.SetIterationTime(seconds);
    state.SetItemsProcessed(sent - measured_from);
    state.SetBytesProcessed((sent - measured_from) * static_cast<int64_t>(size));
    std::vector<int64_t> e2e(consumed.latencies.begin() + measured_from, consumed.latencies.end());
    report_percentiles(state, "publish", publish_ns);
    report_percentiles(state, "e2e", e2e);
    state.counters["rate_target"] = rate;
    state.counters["rate_sent"] = static_cast<double>(sent - measured_from) / seconds;
    state.counters["msgs_per_batch"] = static_cast<double>(sent) / static_cast<double>(batches);
    state.counters["group_wait_ms"] = s.group_wait_ms();
    state.counters["fsync"] = s.fsync() ? 1 : 0;
    roles.report(state);
    if (consumed.received != sent) state.SkipWithError("consumed count differs from sent");
  }
}

const bool registered = [] {
  for (int64_t size : {100, 1024}) {
    benchmark::RegisterBenchmark("BM_BrokerThroughput", BM_BrokerThroughput)
        ->ArgNames({"size"})
        ->Args({size})
        ->Unit(benchmark::kMillisecond)
        ->UseManualTime()
        ->Iterations(1);
  }
  for (int64_t size : {100, 1024}) {
    const int64_t rate =
        env_int(size == 100 ? "MAGNETAR_BENCH_RATE_100" : "MAGNETAR_BENCH_RATE_1024", 0);
    benchmark::RegisterBenchmark("BM_BrokerLatency", BM_BrokerLatency)
        ->ArgNames({"size", "rate"})
        ->Args({size, rate})
        ->Unit(benchmark::kMillisecond)
        ->UseManualTime()
        ->Iterations(1);
  }
  return true;
}();

}  // namespace
