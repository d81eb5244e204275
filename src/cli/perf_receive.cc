// magnetar-perf consume and read: one thread per consumer or reader; latency is receive time
// minus the message's publish time; the gaps are those between messages received (a pause of
// the producers is one too).

#include <fmt/format.h>

#include <algorithm>
#include <thread>

#include "cli/interrupt.h"
#include "cli/message_format.h"
#include "cli/perf_run.h"
#include "common/token_bucket.h"

namespace magnetar::cli {

namespace {

// Counters and latencies of consumers and readers, with the count that ends the run.
struct ReceiveShared {
  PerfCounters counters;
  IntervalRecorder latency;
  std::atomic<bool> halt{false};
  std::atomic<int> running{0};
  int64_t limit = 0;  // 0: none

  // Counts one message; false once the limit is reached (the message is not counted).
  bool take(const client::Message& m) {
    if (limit > 0 && counters.messages.fetch_add(1) >= limit) {
      counters.messages.fetch_sub(1);
      return false;
    }
    if (limit <= 0) counters.messages.fetch_add(1);
    counters.gaps.note(PerfClock::now());
    counters.bytes.fetch_add(static_cast<int64_t>(m.payload().size()));
    if (m.publish_time() > 0) {
      const auto now_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                              std::chrono::system_clock::now().time_since_epoch())
                              .count();
      const int64_t delay_ms = now_ms - static_cast<int64_t>(m.publish_time());
      latency.record(std::max<int64_t>(0, delay_ms) * 1000);
    }
    return true;
  }
  bool done() const {
    return running.load() == 0 || (limit > 0 && counters.messages.load() >= limit);
  }
};

// The reporting loop and summary shared by consume and read.
int report_receiving(PerfRun& run, std::string_view command, std::string_view verb,
                     std::string_view label, ReceiveShared& shared,
                     std::vector<std::thread>& workers, PerfClock::time_point start) {
  IntervalLine line(std::string(label), false);
  run.report_until_done(
      start, [&] { return shared.done(); },
      [&](double seconds) { return line.next(shared.counters, shared.latency, seconds); });
  shared.halt = true;
  for (auto& w : workers) w.join();
  const double seconds = seconds_between(start, PerfClock::now());
  return run.finish(command, verb, seconds, shared.counters, shared.latency);
}

// One thread per receiver taking messages with `next` (then `after`, e.g. an ack) until
// the limit, Ctrl+C or a failure; the periodic and final reports of `command`.
template <typename Receiver, typename Next, typename After>
int receive_all(PerfRun& run, std::vector<Receiver>& receivers, int64_t limit, double rate,
                std::string_view command, std::string_view verb, std::string_view who, Next next,
                After after) {
  ReceiveShared shared;
  shared.limit = limit;
  run.watch_gaps(shared.counters);
  TokenBucket limiter(rate, std::max(1.0, rate / 100));
  std::vector<std::thread> workers;
  const auto start = PerfClock::now();
  shared.running = static_cast<int>(receivers.size());
  for (auto& receiver : receivers) {
    workers.emplace_back([&shared, &limiter, &receiver, &run, &next, &after, who] {
      while (!shared.halt && !stop_requested()) {
        auto m = next(receiver);
        if (!m.ok()) {
          if (m.status().is(Errc::kTimeout)) continue;
          run.print(fmt::format("{} stopped: {}", who, m.status().to_string()));
          break;
        }
        limiter.acquire();
        if (!shared.take(*m)) break;
        after(receiver, *m);
      }
      shared.running.fetch_sub(1);
    });
  }
  const int code = report_receiving(run, command, verb, verb, shared, workers, start);
  for (auto& r : receivers) (void)r.close();
  run.close();
  return code;
}

}  // namespace

int run_perf_consume(const CommonOptions& common, const ConsumePerfOptions& o, std::ostream& out,
                     std::ostream& err) {
  auto type = parse_subscription_type(o.type);
  auto position = parse_initial_position(o.position);
  for (const Status& st : {type.status(), position.status()}) {
    if (!st.ok()) {
      err << st.message() << "\n";
      return 1;
    }
  }
  if (o.num_consumers <= 0) {
    err << "--num-consumers must be positive\n";
    return 1;
  }
  std::vector<std::string> subscriptions = split_values(o.subscriptions, ",");
  if (subscriptions.empty()) subscriptions.push_back("sub");
  PerfRun run(common, out, err);
  if (!run.connect()) return 1;
  client::ConsumerOptions options;
  options.type = *type;
  options.initial_position = *position;
  options.receiver_queue_size = o.receiver_queue_size;
  options.replicate_subscription_state = o.replicated;
  std::vector<client::Consumer> consumers;
  for (const std::string& topic : run.topics()) {
    for (const std::string& sub : subscriptions) {
      for (int i = 0; i < o.num_consumers; ++i) {
        auto c = run.client().subscribe(topic, sub, options);
        if (!c.ok()) {
          err << "Cannot subscribe " << sub << " on " << topic << ": " << c.status().to_string()
              << "\n";
          run.close();
          return 1;
        }
        consumers.push_back(std::move(c).value());
      }
    }
  }
  run.print(fmt::format("Start receiving from {} consumers on {} topics", consumers.size(),
                        run.topics().size()));
  return receive_all(
      run, consumers, o.num_messages, o.rate, "consume", "received", "Consumer",
      [](client::Consumer& c) { return c.receive(kPerfPoll * 10); },
      [](client::Consumer& c, const client::Message& m) { (void)c.acknowledge(m); });
}

int run_perf_read(const CommonOptions& common, const ReadPerfOptions& o, std::ostream& out,
                  std::ostream& err) {
  auto start_id = parse_start_message_id(o.start);
  if (!start_id.ok()) {
    err << start_id.status().message() << "\n";
    return 1;
  }
  if (o.num_readers <= 0) {
    err << "--num-readers must be positive\n";
    return 1;
  }
  PerfRun run(common, out, err);
  if (!run.connect()) return 1;
  std::vector<client::Reader> readers;
  for (const std::string& topic : run.topics()) {
    for (int i = 0; i < o.num_readers; ++i) {
      auto r = run.client().create_reader(topic, *start_id);
      if (!r.ok()) {
        err << "Cannot create a reader on " << topic << ": " << r.status().to_string() << "\n";
        run.close();
        return 1;
      }
      readers.push_back(std::move(r).value());
    }
  }
  run.print(fmt::format("Start reading from {} readers on {} topics", readers.size(),
                        run.topics().size()));
  return receive_all(
      run, readers, o.num_messages, o.rate, "read", "read", "Reader",
      [](client::Reader& r) { return r.read_next(kPerfPoll * 10); },
      [](client::Reader&, const client::Message&) {});
}

}  // namespace magnetar::cli
