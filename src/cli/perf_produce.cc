// magnetar-perf produce: one thread sends to every producer in turn, paced by a token bucket
// and bounded by --max-outstanding per producer; latency is send to receipt, and the gaps
// between receipts are counted while any send is outstanding.

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "cli/message_format.h"
#include "cli/perf_run.h"
#include "common/token_bucket.h"

namespace magnetar::cli {

namespace {

using namespace std::chrono_literals;

// State the send callbacks share with the sending thread; held by shared_ptr because a
// callback may run on an IO thread after the run gave up waiting for it.
struct ProduceShared {
  PerfCounters counters;
  IntervalRecorder latency;
  std::mutex mu;
  std::condition_variable cv;
  std::vector<int> outstanding;  // guarded by mu, per producer
  int all_outstanding = 0;       // guarded by mu, the sum of `outstanding`
};

}  // namespace

int run_perf_produce(const CommonOptions& common, const ProducePerfOptions& o, std::ostream& out,
                     std::ostream& err) {
  if (o.size < 0 || o.num_producers <= 0 || o.max_outstanding < 0 || o.batch_max_messages < 0 ||
      o.batch_max_bytes < 0) {
    err << "--size, --num-producers, --max-outstanding and the batch limits must not be "
           "negative (--num-producers positive)\n";
    return 1;
  }
  auto compression = parse_compression(o.compression);
  if (!compression.ok()) {
    err << compression.status().message() << "\n";
    return 1;
  }
  PerfRun run(common, out, err);
  if (!run.connect()) return 1;

  client::ProducerOptions options;
  options.compression = *compression;
  options.batching_enabled = !o.disable_batching && o.batch_time_ms > 0;
  options.batching_max_delay =
      std::chrono::milliseconds(std::max<int64_t>(1, std::llround(o.batch_time_ms)));
  if (o.batch_max_messages > 0) options.batching_max_messages = o.batch_max_messages;
  if (o.batch_max_bytes > 0) options.batching_max_bytes = static_cast<size_t>(o.batch_max_bytes);
  options.max_pending_messages = o.max_outstanding;
  options.block_if_queue_full = true;

  std::vector<client::Producer> producers;
  for (const std::string& topic : run.topics()) {
    for (int i = 0; i < o.num_producers; ++i) {
      auto p = run.client().create_producer(topic, options);
      if (!p.ok()) {
        err << "Cannot create a producer on " << topic << ": " << p.status().to_string() << "\n";
        run.close();
        return 1;
      }
      producers.push_back(std::move(p).value());
    }
  }
  run.print(fmt::format("Created {} producers", producers.size()));

  const std::string payload = perf_payload(o.size);

  auto shared = std::make_shared<ProduceShared>();
  shared->outstanding.assign(producers.size(), 0);
  run.watch_gaps(shared->counters);
  std::atomic<bool> halt{false};
  std::atomic<bool> sender_done{false};
  const auto start = PerfClock::now();
  std::thread sender([&] {
    TokenBucket limiter(o.rate, std::max(1.0, o.rate / 100));
    int64_t queued = 0;
    size_t next = 0;
    while (!halt && (o.num_messages <= 0 || queued < o.num_messages)) {
      const auto wait = limiter.take(PerfClock::now());
      if (wait > PerfClock::duration::zero()) {
        sleep_until_or_halt(PerfClock::now() + wait, halt);
        if (halt) break;
      }
      const size_t i = next++ % producers.size();
      {
        std::unique_lock lock(shared->mu);
        shared->cv.wait(lock, [&] {
          return o.max_outstanding == 0 || shared->outstanding[i] < o.max_outstanding || halt;
        });
        if (halt) break;
        ++shared->outstanding[i];
        // Nothing was awaited since the last receipt: the wait for the next starts now.
        if (shared->all_outstanding++ == 0) shared->counters.gaps.resume(PerfClock::now());
      }
      const auto sent_at = PerfClock::now();
      const auto bytes = static_cast<int64_t>(payload.size());
      producers[i].send_async(
          client::Message(payload), [shared, i, sent_at, bytes](Result<client::MessageId> id) {
            if (id.ok()) {
              const auto now = PerfClock::now();
              const auto us = std::chrono::duration_cast<std::chrono::microseconds>(now - sent_at);
              shared->latency.record(us.count());
              shared->counters.gaps.note(now);
              shared->counters.messages.fetch_add(1);
              shared->counters.bytes.fetch_add(bytes);
            } else {
              shared->counters.failures.fetch_add(1);
            }
            std::lock_guard lock(shared->mu);
            --shared->outstanding[i];
            --shared->all_outstanding;
            shared->cv.notify_all();
          });
      ++queued;
    }
    for (auto& p : producers) (void)p.flush();
    std::unique_lock lock(shared->mu);
    shared->cv.wait_for(lock, 30s, [&] {
      return std::all_of(shared->outstanding.begin(), shared->outstanding.end(),
                         [](int n) { return n == 0; });
    });
    sender_done = true;
  });

  IntervalLine line("produced", true);
  run.report_until_done(
      start, [&] { return sender_done.load(); },
      [&](double seconds) { return line.next(shared->counters, shared->latency, seconds); });
  {
    std::lock_guard lock(shared->mu);
    halt = true;
    shared->cv.notify_all();
  }
  sender.join();
  const double seconds = seconds_between(start, PerfClock::now());
  for (auto& p : producers) (void)p.close();
  const int code = run.finish("produce", "sent", seconds, shared->counters, shared->latency);
  run.close();
  return code;
}

}  // namespace magnetar::cli
