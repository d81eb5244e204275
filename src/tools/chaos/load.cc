#include "tools/chaos/load.h"

#include <fmt/format.h>

#include <algorithm>
#include <optional>

namespace magnetar::tools::chaos {

using namespace std::chrono_literals;

// One topic's producer, consumer and record. `mu` guards everything below it: the send
// callbacks (client IO thread), the sender and the consumer's thread all write here.
struct Load::Topic {
  std::string name;
  client::Producer producer;
  client::Consumer consumer;

  std::mutex mu;
  int64_t sent = 0;
  int64_t acknowledged = 0;
  int64_t failed = 0;
  std::vector<char> acked;                            // per sequence number
  std::vector<std::optional<client::MessageId>> ids;  // the id each acknowledgement gave
  std::vector<int> received;                          // times the consumer got it
  std::vector<Clock::time_point> ack_times;           // in arrival order
  std::vector<Clock::time_point> sent_at, acked_at;   // per sequence number
};

namespace {

int64_t parse_seq(const std::string& payload) {
  const size_t colon = payload.find(':');
  if (colon == std::string::npos) return -1;
  try {
    return std::stoll(payload.substr(colon + 1));
  } catch (const std::exception&) {
    return -1;
  }
}

int64_t ns_of(Clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
}

}  // namespace

Load::Load(LoadOptions options) : options_(std::move(options)) {}

Result<std::unique_ptr<Load>> Load::start(const LoadOptions& options) {
  auto load = std::make_unique<Load>(options);
  client::ClientOptions co;
  co.operation_timeout = 30s;
  co.connection_timeout = 3s;
  co.keep_alive_interval = std::chrono::seconds(2);  // a blackholed connection is seen soon
  co.initial_backoff = 100ms;
  co.max_backoff = 1s;
  auto made = client::Client::create(options.service_url, co);
  if (!made.ok()) return made.status();
  load->client_ = std::make_unique<client::Client>(std::move(*made));
  for (int i = 0; i < options.topics; ++i) {
    auto t = std::make_unique<Topic>();
    t->name = fmt::format("{}://public/default/{}-{}", options.domain, options.topic_prefix, i);
    client::ConsumerOptions c;
    c.type = client::SubscriptionType::kShared;
    c.initial_position = client::InitialPosition::kEarliest;
    auto consumer = load->client_->subscribe(t->name, "chaos-check", c);
    if (!consumer.ok()) {
      return Status(consumer.status().code(),
                    fmt::format("subscribe to {}: {}", t->name, consumer.status().message()));
    }
    t->consumer = std::move(*consumer);
    client::ProducerOptions p;
    p.producer_name = fmt::format("{}-{}", options.topic_prefix, i);
    p.send_timeout = 0ms;        // what is pending waits for the cluster
    p.max_pending_messages = 0;  // and sending never blocks the load
    p.batching_enabled = options.batching;
    auto producer = load->client_->create_producer(t->name, p);
    if (!producer.ok()) {
      return Status(producer.status().code(),
                    fmt::format("producer on {}: {}", t->name, producer.status().message()));
    }
    t->producer = std::move(*producer);
    load->topics_.push_back(t->name);
    load->state_.push_back(std::move(t));
  }
  for (auto& t : load->state_) {
    load->consumers_.emplace_back([l = load.get(), topic = t.get()] { l->consume_loop(*topic); });
  }
  load->sender_ = std::thread([l = load.get()] { l->send_loop(); });
  return load;
}

Load::~Load() {
  stop_sending_ = true;
  stop_consuming_ = true;
  if (sender_.joinable()) sender_.join();
  for (auto& c : consumers_) {
    if (c.joinable()) c.join();
  }
  if (client_) (void)client_->close();  // no callback runs after this
}

void Load::send_loop() {
  const auto interval = std::chrono::nanoseconds(1'000'000'000LL / std::max(1, options_.rate));
  auto next = Clock::now();
  while (!stop_sending_) {
    std::this_thread::sleep_until(next);
    for (auto& t : state_) {
      int64_t seq;
      {
        std::lock_guard lock(t->mu);
        seq = t->sent++;
        t->acked.push_back(0);
        t->ids.emplace_back();
        t->received.push_back(0);
        t->sent_at.push_back(Clock::now());
        t->acked_at.emplace_back();
      }
      Topic* topic = t.get();
      t->producer.send_async(client::Message(fmt::format("{}:{}", options_.topic_prefix, seq)),
                             [topic, seq](Result<client::MessageId> r) {
                               std::lock_guard lock(topic->mu);
                               if (r.ok()) {
                                 topic->acked[static_cast<size_t>(seq)] = 1;
                                 topic->ids[static_cast<size_t>(seq)] = *r;
                                 topic->ack_times.push_back(Clock::now());
                                 topic->acked_at[static_cast<size_t>(seq)] = Clock::now();
                                 ++topic->acknowledged;
                               } else {
                                 ++topic->failed;
                               }
                             });
    }
    next += interval;
    // Behind (the machine was busy): go on at the rate from now rather than in a burst.
    if (Clock::now() - next > 200ms) next = Clock::now();
  }
}

void Load::consume_loop(Topic& t) {
  while (!stop_consuming_) {
    auto m = t.consumer.receive(100ms);
    if (!m.ok()) continue;
    const int64_t seq = parse_seq(m->payload());
    {
      std::lock_guard lock(t.mu);
      if (seq >= 0 && seq < static_cast<int64_t>(t.received.size())) {
        ++t.received[static_cast<size_t>(seq)];
      }
    }
    if (options_.acknowledge) (void)t.consumer.acknowledge(*m);
  }
}

LatencySummary Load::latency(Clock::time_point from, Clock::time_point to) const {
  std::vector<double> ms;
  for (const auto& t : state_) {
    std::lock_guard lock(t->mu);
    for (size_t s = 0; s < t->sent_at.size(); ++s) {
      if (!t->acked[s] || t->sent_at[s] < from || t->sent_at[s] >= to) continue;
      ms.push_back(std::chrono::duration<double, std::milli>(t->acked_at[s] - t->sent_at[s]).count());
    }
  }
  LatencySummary out;
  out.count = static_cast<int64_t>(ms.size());
  if (ms.empty()) return out;
  std::sort(ms.begin(), ms.end());
  auto at = [&ms](double q) {
    return ms[std::min(ms.size() - 1, static_cast<size_t>(q * static_cast<double>(ms.size())))];
  };
  out.p50_ms = at(0.50);
  out.p99_ms = at(0.99);
  out.max_ms = ms.back();
  return out;
}

void Load::mark_fault() {
  fault_at_ns_ = ns_of(Clock::now());
}

int64_t Load::acknowledged() const {
  int64_t n = 0;
  for (const auto& t : state_) {
    std::lock_guard lock(t->mu);
    n += t->acknowledged;
  }
  return n;
}

LoadReport Load::finish(std::chrono::seconds timeout) {
  LoadReport report;
  const auto end = Clock::now();
  const auto deadline = end + timeout;
  stop_sending_ = true;
  if (sender_.joinable()) sender_.join();
  // Every send answered, and every acknowledged message received by the subscription.
  auto all = [this](auto pred) {
    for (auto& t : state_) {
      std::lock_guard lock(t->mu);
      if (!pred(*t)) return false;
    }
    return true;
  };
  auto answered = [](const Topic& t) { return t.acknowledged + t.failed == t.sent; };
  auto delivered = [](const Topic& t) {
    for (size_t s = 0; s < t.acked.size(); ++s) {
      if (t.acked[s] && t.received[s] == 0) return false;
    }
    return true;
  };
  while (Clock::now() < deadline && !all(answered)) std::this_thread::sleep_for(50ms);
  report.drained = all(answered);
  while (Clock::now() < deadline && !all(delivered)) std::this_thread::sleep_for(50ms);
  stop_consuming_ = true;
  for (auto& c : consumers_) c.join();
  consumers_.clear();

  const int64_t fault_ns = fault_at_ns_;
  const Clock::time_point fault_at =
      fault_ns == 0 ? end : Clock::time_point(std::chrono::nanoseconds(fault_ns));
  int64_t held = 0;
  bool never = false;  // a topic acknowledged nothing after the fault
  report.verified = true;
  for (auto& t : state_) {
    {
      std::lock_guard lock(t->mu);
      report.sent += t->sent;
      report.acknowledged += t->acknowledged;
      report.send_errors += t->failed;
      for (size_t s = 0; s < t->acked.size(); ++s) {
        if (t->acked[s] && t->received[s] == 0) ++report.undelivered;
      }
      // The longest wait for an acknowledgement from the fault on.
      Clock::time_point prev = fault_at;
      for (Clock::time_point a : t->ack_times) {
        if (a <= fault_at) continue;
        report.recovery_s =
            std::max(report.recovery_s, std::chrono::duration<double>(a - prev).count());
        prev = a;
        if (a <= end) ++held;
      }
      if (prev == fault_at && fault_ns != 0) never = true;
    }
    if (Status st = verify(*t, deadline, report); !st.ok()) {
      report.verified = false;
      report.detail += fmt::format("{}: {}; ", t->name, st.to_string());
    }
  }
  if (never) report.recovery_s = -1;
  if (fault_ns != 0 && end > fault_at) {
    report.held_rate =
        static_cast<double>(held) / std::chrono::duration<double>(end - fault_at).count();
  }
  if (!report.drained) report.detail += "not every send was answered in time; ";
  return report;
}

Status Load::verify(Topic& t, Clock::time_point deadline, LoadReport& report) {
  client::ReaderOptions ro;
  auto reader = client_->create_reader(t.name, client::MessageId::earliest(), ro);
  if (!reader.ok()) return reader.status();
  std::vector<int> count;
  std::vector<std::optional<client::MessageId>> first_id;
  {
    std::lock_guard lock(t.mu);
    count.assign(t.acked.size(), 0);
    first_id.resize(t.acked.size());
  }
  Status result;
  int unanswered = 0;  // has_message_available() failures in a row
  while (true) {
    if (Clock::now() > deadline) {
      result = Status(Errc::kTimeout, "reading back did not reach the end in time");
      break;
    }
    auto m = reader->read_next(500ms);
    if (m.ok()) {
      const int64_t seq = parse_seq(m->payload());
      if (seq >= 0 && seq < static_cast<int64_t>(count.size())) {
        if (count[static_cast<size_t>(seq)]++ == 0) first_id[static_cast<size_t>(seq)] = m->id();
      }
      continue;
    }
    auto more = reader->has_message_available();
    if (more.ok() && !*more) break;  // the end of the topic
    if (!more.ok() && ++unanswered >= 5) {
      result = Status(more.status().code(),
                      "cannot tell the end of the topic: " + more.status().message());
      break;
    }
  }
  (void)reader->close();
  std::lock_guard lock(t.mu);
  for (size_t s = 0; s < count.size(); ++s) {
    if (count[s] > 1) report.duplicated += count[s] - 1;
    if (!t.acked[s]) continue;
    if (count[s] == 0) {
      ++report.lost;
      if (report.lost <= 5) {
        report.detail += fmt::format("{} seq {} (acknowledged as {}) not read back; ", t.name, s,
                                     t.ids[s] ? t.ids[s]->to_string() : "?");
      }
    } else if (t.ids[s] && first_id[s] && t.ids[s]->ledger_id() >= 0 &&
               (t.ids[s]->ledger_id() != first_id[s]->ledger_id() ||
                t.ids[s]->entry_id() != first_id[s]->entry_id())) {
      // (A resend the broker recognised as a duplicate is acknowledged without an id.)
      ++report.misplaced;
    }
  }
  return result;
}

}  // namespace magnetar::tools::chaos
