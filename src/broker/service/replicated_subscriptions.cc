#include "broker/service/replicated_subscriptions.h"

#include <fmt/format.h>

#include <random>
#include <vector>

#include "broker/service/subscription.h"
#include "broker/service/topic.h"
#include "protocol/markers.h"

namespace magnetar::broker {

using mledger::Position;
using SteadyClock = std::chrono::steady_clock;

namespace {

std::string snapshot_id() {
  std::random_device rd;
  const uint64_t a = (uint64_t{rd()} << 32) | rd();
  const uint64_t b = (uint64_t{rd()} << 32) | rd();
  return fmt::format("{:08x}-{:04x}-{:04x}-{:04x}-{:012x}", a >> 32, (a >> 16) & 0xffff,
                     a & 0xffff, b >> 48, b & 0xffffffffffffULL);
}

uint64_t now_ms() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                   std::chrono::system_clock::now().time_since_epoch())
                                   .count());
}

void set_id(wire::MarkersMessageIdData* out, Position p) {
  out->set_ledger_id(static_cast<uint64_t>(p.ledger_id.value()));
  out->set_entry_id(static_cast<uint64_t>(p.entry_id.value()));
}

Position position_of(const wire::MarkersMessageIdData& id) {
  return Position{LedgerId{static_cast<int64_t>(id.ledger_id())},
                  EntryId{static_cast<int64_t>(id.entry_id())}};
}

}  // namespace

ReplicatedSubscriptions::ReplicatedSubscriptions(PersistentTopic& topic)
    : topic_(topic),
      log_(log::Logger("replicated-subscriptions").with("topic", topic.name().to_string())) {}

void ReplicatedSubscriptions::tick(SteadyClock::time_point now) {
  const auto& config = topic_.config();
  if (!config.enable_replicated_subscriptions || now < next_tick_) return;
  next_tick_ =
      now + std::chrono::milliseconds(config.replicated_subscriptions_snapshot_frequency_ms);
  if (pending_ &&
      now - pending_->started >
          std::chrono::seconds(config.replicated_subscriptions_snapshot_timeout_seconds)) {
    log_.warn("snapshot {} abandoned: {} of the peers answered", pending_->id,
              pending_->responses.size());
    pending_.reset();
  }
  if (pending_ || !data_since_snapshot_) return;
  const auto& replicators = topic_.replicators();
  if (!replicators || !replicators->all_connected()) return;
  bool any = false;
  for (const auto& [name, sub] : topic_.subscriptions()) any = any || sub->replicated();
  if (any) request_snapshot(now);
}

void ReplicatedSubscriptions::request_snapshot(SteadyClock::time_point now) {
  wire::ReplicatedSubscriptionsSnapshotRequest request;
  request.set_snapshot_id(snapshot_id());
  request.set_source_cluster(topic_.config().cluster_name);
  pending_ = Pending{request.snapshot_id(), now, {}};
  data_since_snapshot_ = false;
  topic_.write_marker(protocol::encode_marker(wire::REPLICATED_SUBSCRIPTION_SNAPSHOT_REQUEST,
                                              request, {}, now_ms()));
}

void ReplicatedSubscriptions::remote_marker(int32_t type, const std::string& source,
                                            const Buffer& payload, Position stored_at) {
  const std::string& local = topic_.config().cluster_name;
  switch (type) {
    case wire::REPLICATED_SUBSCRIPTION_SNAPSHOT_REQUEST: {
      auto request =
          protocol::parse_marker<wire::ReplicatedSubscriptionsSnapshotRequest>(payload);
      if (!request.ok()) break;
      // Answered with where this topic is now, to the requester only.
      wire::ReplicatedSubscriptionsSnapshotResponse response;
      response.set_snapshot_id(request->snapshot_id());
      response.mutable_cluster()->set_cluster(local);
      set_id(response.mutable_cluster()->mutable_message_id(), topic_.ledger().last_confirmed());
      const std::string to = request->has_source_cluster() ? request->source_cluster() : source;
      topic_.write_marker(protocol::encode_marker(wire::REPLICATED_SUBSCRIPTION_SNAPSHOT_RESPONSE,
                                                  response, {to}, now_ms()));
      return;
    }
    case wire::REPLICATED_SUBSCRIPTION_SNAPSHOT_RESPONSE: {
      auto response =
          protocol::parse_marker<wire::ReplicatedSubscriptionsSnapshotResponse>(payload);
      if (!response.ok() || !pending_ || response->snapshot_id() != pending_->id ||
          !response->has_cluster()) {
        return;  // late, or not ours
      }
      pending_->responses.emplace(response->cluster().cluster(),
                                  position_of(response->cluster().message_id()));
      const auto& replicators = topic_.replicators();
      if (!replicators) return;
      for (const auto& peer : replicators->remotes()) {
        if (!pending_->responses.count(peer)) return;
      }
      wire::ReplicatedSubscriptionsSnapshot snapshot;
      snapshot.set_snapshot_id(pending_->id);
      set_id(snapshot.mutable_local_message_id(), stored_at);
      for (const auto& [cluster, p] : pending_->responses) {
        auto* c = snapshot.add_clusters();
        c->set_cluster(cluster);
        set_id(c->mutable_message_id(), p);
      }
      Subscription::Snapshot cached;
      for (const auto& [cluster, p] : pending_->responses) cached.clusters.emplace_back(cluster, p);
      pending_.reset();
      ++snapshots_completed_;
      // The replicated subscriptions learn it as it is stored (their dispatchers never read
      // it: it is acknowledged on every subscription at once).
      auto topic = topic_.shared_from_this();
      auto stored = [topic, cached = std::move(cached)](Position at) mutable {
        cached.local = at;
        for (const auto& [name, sub] : topic->subscriptions()) sub->cache_snapshot(cached);
      };
      topic_.write_marker(protocol::encode_marker(wire::REPLICATED_SUBSCRIPTION_SNAPSHOT,
                                                  snapshot, {local}, now_ms()),
                          std::move(stored));
      return;
    }
    case wire::REPLICATED_SUBSCRIPTION_UPDATE: {
      auto update = protocol::parse_marker<wire::ReplicatedSubscriptionsUpdate>(payload);
      if (!update.ok()) break;
      std::optional<Position> here;
      for (const auto& c : update->clusters()) {
        if (c.cluster() == local) here = position_of(c.message_id());
      }
      if (!here) return;
      auto topic = topic_.shared_from_this();
      auto apply = [topic, name = update->subscription_name(), p = *here]() -> Task<void> {
        auto sub = topic->find_subscription(name);
        if (!sub) {
          const std::optional<Position> no_start;
          auto made = co_await topic->subscribe(name, wire::CommandSubscribe::Exclusive, true,
                                                wire::CommandSubscribe::Earliest, no_start);
          if (!made.ok()) co_return;
          sub = *made;
        }
        if (!sub->replicated()) (void)co_await sub->set_replicated(true);
        (void)co_await sub->apply_remote_position(p);
        co_await topic->pass_markers_behind(sub);
      };
      (void)spawn_in(topic_.gate(), topic_.executor(), std::move(apply));
      return;
    }
    default:
      return;
  }
  log_.with("source", source).warn("a marker of type {} that does not parse, at {}", type,
                                   stored_at.to_string());
}

void ReplicatedSubscriptions::position_moved(Subscription& sub) {
  if (!sub.replicated() || !topic_.config().enable_replicated_subscriptions) return;
  auto snapshot = sub.take_passed_snapshot();
  if (!snapshot) return;
  wire::ReplicatedSubscriptionsUpdate update;
  update.set_subscription_name(sub.name());
  for (const auto& [cluster, p] : snapshot->clusters) {
    auto* c = update.add_clusters();
    c->set_cluster(cluster);
    set_id(c->mutable_message_id(), p);
  }
  topic_.write_marker(
      protocol::encode_marker(wire::REPLICATED_SUBSCRIPTION_UPDATE, update, {}, now_ms()));
}

}  // namespace magnetar::broker
