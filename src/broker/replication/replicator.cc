#include "broker/replication/replicator.h"

#include <fmt/format.h>

#include <algorithm>
#include <boost/asio/redirect_error.hpp>
#include <nlohmann/json.hpp>

#include "broker/replication/remote_clusters.h"
#include "broker/replication/remote_topics.h"
#include "broker/service/entry_metadata.h"
#include "broker/service/producer.h"
#include "client/raw_producer.h"
#include "mledger/errors.h"
#include "protocol/frame.h"
#include "protocol/markers.h"
#include "protocol/replication.h"
#include "protocol/topic_name.h"

namespace magnetar::broker {

using mledger::Position;
using Clock = std::chrono::steady_clock;

namespace {

constexpr int kReadBatch = 100;                  // dispatcherMaxReadBatchSize
constexpr int64_t kReadBytes = 5 * 1024 * 1024;  // dispatcherMaxReadSizeBytes
constexpr auto kRetry = std::chrono::seconds(1);
constexpr int64_t kStalledSeconds = 60;

}  // namespace

std::string Replicator::cursor_name(const std::string& remote) {
  return std::string(protocol::kReplicatorPrefix) + remote;
}

Replicator::Replicator(Executor executor, std::shared_ptr<mledger::ManagedLedger> ml,
                       std::shared_ptr<mledger::ManagedCursor> cursor, RemoteClusters& remotes,
                       RemoteTopics& remote_topics, Gate& gate, Options options)
    : executor_(std::move(executor)),
      ml_(std::move(ml)),
      cursor_(std::move(cursor)),
      remotes_(remotes),
      remote_topics_(remote_topics),
      gate_(gate),
      options_(std::move(options)),
      producer_name_(
          protocol::replicator_producer_name(options_.local_cluster, options_.remote_cluster)),
      log_(log::Logger("replication")
               .with("cluster", options_.local_cluster)
               .with("topic", options_.topic)
               .with("remote_cluster", options_.remote_cluster)),
      wake_(executor_),
      finished_(executor_),
      sampled_at_(Clock::now()) {
  auto name = protocol::TopicName::parse(options_.topic);
  namespace_ = name.ok() ? name->namespace_name() : std::string();
  metrics_ = replication_metrics(options_.local_cluster, namespace_, options_.topic,
                                 options_.remote_cluster);
  wake_.expires_at(Clock::time_point::max());
  finished_.expires_at(Clock::time_point::max());
}

Replicator::~Replicator() = default;

void Replicator::start() {
  auto self = shared_from_this();
  running_ = true;
  spawn_in(gate_, executor_, [self]() { return self->run(); });
}

Task<void> Replicator::stop() {
  auto self = shared_from_this();
  stopping_ = true;
  cursor_->cancel_wait();
  wake();
  if (producer_) producer_->close_async();
  while (running_) {
    boost::system::error_code ec;
    co_await finished_.async_wait(asio::redirect_error(asio::use_awaitable, ec));
  }
  asio::steady_timer pause(executor_);
  while (expiring_) {  // an expiry in flight ends before the cursor may go
    pause.expires_after(std::chrono::milliseconds(10));
    boost::system::error_code ec;
    co_await pause.async_wait(asio::redirect_error(asio::use_awaitable, ec));
  }
  producer_.reset();
  remove_replication_metrics(options_.local_cluster, namespace_, options_.topic,
                             options_.remote_cluster);
}

bool Replicator::connected() const {
  return producer_ && producer_->connected();
}

void Replicator::sample() {
  // Connection changes, as the stats and logs show them.
  const bool up = connected();
  if (up != was_connected_) {
    was_connected_ = up;
    if (up) {
      connected_since_ms_ = wall_clock_ms();
      backoff_.reset();
      log_.info("connected to {} ({} entries to replicate)", options_.remote_cluster,
                cursor_->backlog_entries());
    } else {
      log_.warn("disconnected from {}; {} entries wait", options_.remote_cluster,
                cursor_->backlog_entries());
    }
  }
  // Connected, yet the remote has not answered a send for a minute: say so, once a minute.
  const int64_t waited = oldest_wait_seconds();
  if (!up || waited < kStalledSeconds) {
    stalled_logged_at_s_ = 0;
  } else if (stalled_logged_at_s_ == 0 || waited - stalled_logged_at_s_ >= kStalledSeconds) {
    stalled_logged_at_s_ = waited;
    log_.warn("stalled: {} has not answered a send for {} s; {} entries wait",
              options_.remote_cluster, waited, cursor_->backlog_entries());
  }
  sample_rates();
  // Pulsar checks TTLs every few minutes; every 5 s here, and only while nothing is sent
  // (a connected replicator skips expired entries as it reads them).
  if (options_.message_ttl_seconds > 0 && !up && !expiring_ && ++ticks_ % 5 == 0 &&
      cursor_->backlog_entries() > 0) {
    expiring_ = true;
    auto self = shared_from_this();
    spawn_in(gate_, executor_, [self]() { return self->expire(); });
  }
  metrics_.backlog->set(static_cast<double>(cursor_->backlog_entries()));
  metrics_.rate_out->set(msg_rate_out_);
  metrics_.throughput_out->set(throughput_out_);
  metrics_.delay_seconds->set(static_cast<double>(oldest_wait_seconds()));
  metrics_.connected->set(up ? 1 : 0);
  metrics_.disconnected->set(up ? 0 : 1);
}

int64_t Replicator::oldest_wait_seconds() const {
  if (inflight_.empty()) return 0;
  return std::chrono::duration_cast<std::chrono::seconds>(Clock::now() - inflight_.front().second)
      .count();
}

void Replicator::wake() {
  wake_.cancel();
  wake_.expires_at(Clock::time_point::max());
}

Task<void> Replicator::nap(std::chrono::milliseconds d) {
  wake_.expires_after(d);
  boost::system::error_code ec;
  co_await wake_.async_wait(asio::redirect_error(asio::use_awaitable, ec));
}

Task<bool> Replicator::connect() {
  int attempts = 0;
  while (!stopping_) {
    Status error;
    auto topic = protocol::TopicName::parse(options_.topic);
    Status shaped = topic.status();
    if (topic.ok()) shaped = co_await remote_topics_.ensure(options_.remote_cluster, *topic, true);
    Result<std::shared_ptr<client::Client>> client = shaped;
    if (shaped.ok()) client = co_await remotes_.client_for(options_.remote_cluster);
    if (client.ok()) {
      // The producer connects (and reconnects) by itself; sends queue until it is up.
      auto producer = client::RawProducer::start(
          **client, options_.topic,
          client::RawProducer::Options{producer_name_, options_.queue_size});
      if (producer.ok()) {
        producer_ = std::move(*producer);
        if (stopping_) {
          producer_->close_async();
          co_return false;
        }
        log_.info("replicator started towards {} ({} entries to replicate)",
                  options_.remote_cluster, cursor_->backlog_entries());
        last_error_.clear();
        co_return true;
      }
      error = producer.status();
    } else {
      error = client.status();
    }
    const auto delay = backoff_.next();
    last_error_ = error.to_string();
    // The first failure, then every tenth: a remote away for hours is not a log flood.
    if (attempts++ % 10 == 0) {
      log_.warn("cannot reach the remote cluster ({}); {} entries wait; retrying in {} ms",
                error.to_string(), cursor_->backlog_entries(), delay.count());
    }
    co_await nap(delay);
  }
  co_return false;
}

Task<void> Replicator::run() {
  auto self = shared_from_this();
  while (!stopping_) {
    if (!producer_) {
      if (!co_await connect()) break;
      // Whatever the remote has not acknowledged goes again, from the mark-delete on: the
      // remote drops what it applied already.
      cursor_->seek(ml_->next_position(cursor_->mark_delete_position()));
    }
    if (failed_) {
      while (!inflight_.empty() && !stopping_) co_await nap(kRetry);
      if (producer_) producer_->close_async();
      producer_.reset();
      failed_ = false;
      co_await nap(backoff_.next());  // a producer refused for good is not retried in a spin
      continue;
    }
    const int room = options_.queue_size - static_cast<int>(inflight_.size());
    if (room <= 0) {
      co_await nap(kRetry);  // woken by the next completion
      continue;
    }
    int wanted = std::min(room, kReadBatch);
    if (const auto& limit = options_.rate_limit; limit && limit->enabled()) {
      const auto now = RateLimiter::Clock::now();
      wanted = static_cast<int>(limit->allowed(wanted, now));
      if (wanted <= 0) {  // over the replicator dispatch rate
        co_await nap(std::max(std::chrono::duration_cast<std::chrono::milliseconds>(limit->wait(now)),
                              std::chrono::milliseconds(1)));
        continue;
      }
    }
    auto entries = co_await cursor_->read_or_wait(wanted, kReadBytes);
    if (stopping_) break;
    if (!entries.ok()) {
      const auto code = entries.status().code();
      if (code == make_error_code(mledger::Error::kCancelled)) continue;  // failed_ or stop
      if (code == make_error_code(mledger::Error::kClosed)) break;        // the topic closed
      if (code != make_error_code(mledger::Error::kNoMoreEntries)) {
        log_.warn("read failed: {}", entries.status().to_string());
      }
      co_await nap(kRetry);
      continue;
    }
    if (!producer_) continue;  // dropped while reading: re-read after reconnecting
    forward(std::move(*entries));
  }
  // Acknowledgements still queued go to the cursor before the loop counts as ended.
  while (acking_) co_await nap(std::chrono::milliseconds(10));
  if (!acks_.empty()) {
    std::vector<Position> last;
    last.swap(acks_);
    (void)co_await cursor_->delete_positions(std::move(last));
  }
  running_ = false;
  finished_.cancel();
}

void Replicator::forward(std::vector<mledger::Entry> entries) {
  for (auto& entry : entries) {
    const Position position = entry.position;
    auto parts = protocol::parse_entry(entry.data);
    wire::MessageMetadata md;
    if (!parts.ok() || !md.ParseFromArray(parts->metadata_bytes.data(),
                                          static_cast<int>(parts->metadata_bytes.size()))) {
      log_.with("position", position.to_string())
          .warn("skipping an entry that does not parse: it cannot be replicated");
      ++skipped_;
      acknowledge(position);
      continue;
    }
    // Replicated-subscription markers travel as messages do (replicate_to names where);
    // other markers stay here.
    const bool stays = md.has_marker_type() &&
                       !protocol::is_replicated_subscription_marker(md.marker_type());
    if (stays || !protocol::replicates_to(md, options_.remote_cluster)) {
      acknowledge(position);
      continue;
    }
    if (expired(md)) {
      ++expired_;
      acknowledge(position);
      continue;
    }
    md.set_replicated_from(options_.local_cluster);
    protocol::set_source_position(&md, {position.ledger_id, position.entry_id});
    const auto bytes = static_cast<int64_t>(parts->payload.size());
    if (options_.rate_limit) {
      options_.rate_limit->charge(std::max(1, md.num_messages_in_batch()), bytes, Clock::now());
    }
    inflight_.emplace_back(position, Clock::now());
    std::weak_ptr<Replicator> weak = weak_from_this();
    auto done = [weak, executor = executor_, generation = generation_, position,
                 bytes](Result<client::MessageId> r) {
      const bool ok = r.ok();
      std::string error = ok ? std::string() : r.status().to_string();
      asio::post(executor, [weak, generation, position, bytes, ok, error = std::move(error)] {
        if (auto self = weak.lock()) self->sent(generation, position, bytes, ok, error);
      });
    };
    producer_->send(std::move(md), parts->payload, std::move(done));
  }
}

void Replicator::drop_producer() {
  ++generation_;
  inflight_.clear();
  if (producer_) producer_->close_async();
  producer_.reset();
  failed_ = false;
  cursor_->cancel_wait();
  wake();
}

bool Replicator::expired(const wire::MessageMetadata& md) const {
  const int64_t ttl = options_.message_ttl_seconds;
  if (ttl <= 0) return false;
  return static_cast<int64_t>(md.publish_time()) + ttl * 1000 < wall_clock_ms();
}

Task<void> Replicator::expire() {
  auto self = shared_from_this();
  const int64_t now = wall_clock_ms();
  const int64_t ttl = options_.message_ttl_seconds;
  const auto cutoff = static_cast<uint64_t>(ttl >= now / 1000 ? 0 : now - ttl * 1000);
  auto older = [cutoff](const mledger::Entry& e) { return published_before(e, cutoff); };
  const Position from = ml_->next_position(cursor_->mark_delete_position());
  const int64_t before = cursor_->backlog_entries();
  if (!stopping_ && from <= ml_->last_confirmed()) {
    auto found = co_await ml_->find_newest_matching(from, older);
    if (found.ok() && found->has_value() && !stopping_) {
      Status st = co_await cursor_->mark_delete(**found);
      if (st.ok()) {
        const int64_t gone = std::max<int64_t>(0, before - cursor_->backlog_entries());
        expired_ += gone;
        log_.info("expired {} entries older than the TTL ({} s) up to {}", gone, ttl,
                  (*found)->to_string());
        // What the producer holds for the remote may be expired now: it is not sent.
        if (gone > 0 && !connected() && !stopping_) drop_producer();
      }
    }
  }
  expiring_ = false;
}

void Replicator::sent(uint64_t generation, Position position, int64_t bytes, bool ok,
                      const std::string& error) {
  if (generation != generation_) return;  // a dropped producer's
  auto it = std::find_if(inflight_.begin(), inflight_.end(),
                         [&](const auto& p) { return p.first == position; });
  if (it != inflight_.end()) inflight_.erase(it);
  if (ok) {
    ++msgs_out_;
    bytes_out_ += bytes;
    acknowledge(position);
  } else if (!stopping_ && !failed_) {
    failed_ = true;
    log_.warn("send of {} failed ({}); reconnecting and re-sending from {}", position.to_string(),
              error, cursor_->mark_delete_position().to_string());
    cursor_->cancel_wait();
  }
  wake();
}

void Replicator::acknowledge(Position position) {
  acks_.push_back(position);
  if (acking_) return;
  acking_ = true;
  auto self = shared_from_this();
  spawn_in(gate_, executor_, [self]() { return self->ack_loop(); });
}

Task<void> Replicator::ack_loop() {
  auto self = shared_from_this();
  while (!acks_.empty()) {
    std::vector<Position> batch;
    batch.swap(acks_);
    Status st = co_await cursor_->delete_positions(std::move(batch));
    if (!st.ok() && !stopping_) log_.warn("acknowledging failed: {}", st.to_string());
  }
  acking_ = false;
}

void Replicator::sample_rates() {
  const auto now = Clock::now();
  const double seconds = std::chrono::duration<double>(now - sampled_at_).count();
  if (seconds <= 0) return;
  msg_rate_out_ = static_cast<double>(msgs_out_ - sampled_msgs_) / seconds;
  throughput_out_ = static_cast<double>(bytes_out_ - sampled_bytes_) / seconds;
  msg_rate_expired_ = static_cast<double>(expired_ - sampled_expired_) / seconds;
  sampled_msgs_ = msgs_out_;
  sampled_bytes_ = bytes_out_;
  sampled_expired_ = expired_;
  sampled_at_ = now;
}

nlohmann::json Replicator::stats() const {
  const bool up = connected();
  const int64_t delay_s = oldest_wait_seconds();
  nlohmann::json j = {{"msgRateIn", 0.0},
                      {"msgThroughputIn", 0.0},
                      {"msgRateOut", msg_rate_out_},
                      {"msgThroughputOut", throughput_out_},
                      {"msgRateExpired", msg_rate_expired_},
                      {"replicationBacklog", cursor_->backlog_entries()},
                      {"connected", up},
                      {"replicationDelayInSeconds", delay_s},
                      {"inboundConnection", nullptr},
                      {"inboundConnectedSince", nullptr},
                      {"outboundConnection", up ? nlohmann::json(producer_name_) : nullptr},
                      {"outboundConnectedSince",
                       up ? nlohmann::json(fmt::format("{}", connected_since_ms_)) : nullptr},
                      {"msgOutCounter", msgs_out_},
                      {"bytesOutCounter", bytes_out_},
                      {"msgSkippedCounter", skipped_},
                      {"msgExpiredCounter", expired_}};
  if (!last_error_.empty()) j["lastError"] = last_error_;
  return j;
}

}  // namespace magnetar::broker
