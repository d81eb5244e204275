// Stored messages of a topic, /admin/v2/persistent/{tenant}/{namespace}/{topic}/...:
//
//   GET examinemessage?initialPosition=earliest|latest&messagePosition=n   the n-th entry from
//       the first (earliest) or the last (latest, the default); n < 1 counts as 1
//   GET ledger/{ledgerId}/entry/{entryId}                                the entry at that id
//
// (the subscription's peek, .../subscription/{sub}/position/{n}, is in subscriptions.cc) and
// the answer all three give (messages.h). Each needs PEEK_MESSAGES on the topic (consume), as
// in Pulsar; a partitioned topic's own name is refused with Pulsar's 405.

#include "broker/admin/messages.h"

#include <fmt/format.h>

#include <memory>
#include <string>
#include <utility>

#include "auth/base64.h"
#include "broker/admin/admin_routes.h"
#include "broker/admin/admin_support.h"
#include "broker/admin/topic_access.h"
#include "broker/service/topic.h"
#include "broker/service/topic_registry.h"
#include "common/units.h"
#include "protocol/compression.h"
#include "protocol/frame.h"

namespace magnetar::broker::admin {

namespace {

using http::PathParams;
using http::Permission;
using http::Request;
using http::Response;
using mledger::Position;

// Whether a client's string may go into a header as it is (no CR, LF or other control
// characters: producers choose keys, names and properties, and must not write headers).
bool header_safe(std::string_view s) {
  for (unsigned char c : s) {
    if (c < 0x20 || c == 0x7f) return false;
  }
  return true;
}

}  // namespace

// A stored entry as Pulsar's peek answers it: the payload (decompressed: for a batch, the
// whole batch, which the caller splits), the metadata in X-Pulsar-* headers. Properties are
// sent both ways Pulsar's brokers have: one X-Pulsar-PROPERTY-<key> header each (what Pulsar
// 3.x clients read) and all of them as the JSON object of X-Pulsar-PROPERTY (newer ones).
Response message_response(const mledger::Entry& entry) {
  auto view = protocol::parse_entry(entry.data);
  wire::MessageMetadata md;
  if (!view.ok() || !md.ParseFromArray(view->metadata_bytes.data(),
                                       static_cast<int>(view->metadata_bytes.size()))) {
    return error(500, "the stored entry does not parse");
  }
  Buffer payload = view->payload;
  const auto codec = static_cast<protocol::CompressionType>(md.compression());
  if (codec != protocol::CompressionType::kNone) {
    // Bounded as a client bounds what it receives (the broker's maxMessageSize and a margin).
    constexpr uint32_t kMaxUncompressed = 64u * 1024 * 1024;
    auto plain =
        protocol::decompress(codec, payload.span(), md.uncompressed_size(), kMaxUncompressed);
    if (!plain.ok()) {
      return error(
          500, fmt::format("the stored entry does not decompress: {}", plain.status().message()));
    }
    payload = std::move(*plain);
  }
  Response r;
  r.status = 200;
  r.content_type = "application/octet-stream";
  r.body = payload.to_string();
  r.headers["X-Pulsar-Message-ID"] =
      fmt::format("{}:{}", entry.position.ledger_id, entry.position.entry_id);
  r.headers["X-Pulsar-publish-time"] = format_iso_time(static_cast<int64_t>(md.publish_time()));
  if (md.has_event_time() && md.event_time() > 0) {
    r.headers["X-Pulsar-event-time"] = format_iso_time(static_cast<int64_t>(md.event_time()));
  }
  if (md.has_deliver_at_time() && md.deliver_at_time() > 0) {
    r.headers["X-Pulsar-deliver-at-time"] = format_iso_time(md.deliver_at_time());
  }
  if (md.has_num_messages_in_batch()) {
    r.headers["X-Pulsar-num-batch-message"] = std::to_string(md.num_messages_in_batch());
    // As Pulsar computes it: the stored entry without its metadata.
    r.headers["X-Pulsar-batch-size"] =
        std::to_string(entry.data.size() - view->metadata_bytes.size());
  }
  if (md.has_partition_key() && header_safe(md.partition_key())) {
    r.headers["X-Pulsar-partition-key"] = md.partition_key();
  }
  if (md.has_ordering_key()) {
    r.headers["X-Pulsar-Base64-ordering-key"] = auth::base64_encode(md.ordering_key());
  }
  r.headers["X-Pulsar-sequence-id"] = std::to_string(md.sequence_id());
  if (header_safe(md.producer_name())) r.headers["X-Pulsar-producer-name"] = md.producer_name();
  if (md.has_replicated_from() && header_safe(md.replicated_from())) {
    r.headers["X-Pulsar-replicated-from"] = md.replicated_from();
  }
  r.headers["X-Pulsar-Is-Encrypted"] = md.encryption_keys_size() > 0 ? "true" : "false";
  if (md.properties_size() > 0) {
    Json props = Json::object();
    for (const auto& kv : md.properties()) {
      props[kv.key()] = kv.value();  // (the JSON text escapes control characters)
      const bool token = !kv.key().empty() && kv.key().find(':') == std::string::npos &&
                         kv.key().find(' ') == std::string::npos;
      if (token && header_safe(kv.key()) && header_safe(kv.value())) {
        r.headers["X-Pulsar-PROPERTY-" + kv.key()] = kv.value();
      }
    }
    r.headers["X-Pulsar-PROPERTY"] = props.dump();
  }
  return r;
}

Task<std::variant<mledger::Entry, Response>> nth_entry(mledger::ManagedLedger& ml, Position start,
                                                       int64_t n) {
  Position at = start;
  int64_t left = n;
  while (left > 0 && !(ml.last_confirmed() < at)) {
    auto entries = co_await ml.read(at, static_cast<int>(std::min<int64_t>(left, 100)));
    if (!entries.ok()) co_return broker_error(entries.status());
    if (entries->empty()) break;
    for (auto& e : *entries) {
      at = ml.next_position(e.position);
      if (--left == 0) co_return std::move(e);
    }
  }
  co_return error(404, "Message not found");
}

namespace {

class Messages {
 public:
  explicit Messages(std::shared_ptr<const BrokerContext> ctx) : ctx_(std::move(ctx)) {}

  Task<Response> examine(const Request& req, const PathParams& p);
  Task<Response> by_id(const Request& req, const PathParams& p);

 private:
  const BrokerServices& broker() const { return ctx_->services; }
  // The topic this broker owns, or the answer; a partitioned topic's own name is 405.
  Task<OrResponse<protocol::TopicName>> partition_or_topic(const Request& req, const PathParams& p,
                                                           std::string_view what);

  const std::shared_ptr<const BrokerContext> ctx_;
};

Task<OrResponse<protocol::TopicName>> Messages::partition_or_topic(const Request& req,
                                                                   const PathParams& p,
                                                                   std::string_view what) {
  auto checked = co_await checked_topic(broker(), p);
  if (auto* answer = std::get_if<Response>(&checked)) co_return std::move(*answer);
  const protocol::TopicName name = std::get<protocol::TopicName>(std::move(checked));
  auto partitions = co_await broker().topics.partitions(name, false);
  if (!partitions.ok()) co_return broker_error(partitions.status());
  if (*partitions > 0) {
    co_return error(405, fmt::format("{} on a partitioned topic is not allowed", what));
  }
  co_return co_await owned_topic(broker(), req, p);
}

Task<Response> Messages::examine(const Request& req, const PathParams& p) {
  auto owned = co_await partition_or_topic(req, p, "Examine messages");
  if (auto* answer = std::get_if<Response>(&owned)) co_return std::move(*answer);
  const protocol::TopicName name = std::get<protocol::TopicName>(std::move(owned));
  auto query = [&req](const char* key) {
    auto it = req.query.find(key);
    return it == req.query.end() ? std::string() : it->second;
  };
  std::string initial = query("initialPosition");
  if (initial.empty()) initial = "latest";
  if (initial != "latest" && initial != "earliest") {
    co_return error(412, fmt::format("Invalid initialPosition '{}': latest or earliest", initial));
  }
  int64_t n = 1;
  if (const std::string position = query("messagePosition"); !position.empty()) {
    auto parsed = parse_int(position);
    if (!parsed) co_return error(412, "messagePosition must be a number");
    n = std::max<int64_t>(1, *parsed);
  }
  TopicFn fn = [latest = initial == "latest",
                n](std::shared_ptr<PersistentTopic> t) -> Task<Response> {
    auto& ml = t->ledger();
    const int64_t total = ml.number_of_entries();
    const int64_t from_first = latest ? total - n + 1 : n;
    if (from_first < 1 || from_first > total) co_return error(404, "Message not found");
    auto found = co_await nth_entry(ml, ml.first_position(), from_first);
    if (auto* answer = std::get_if<Response>(&found)) co_return std::move(*answer);
    co_return message_response(std::get<mledger::Entry>(found));
  };
  co_return co_await with_topic(broker(), name, fn);
}

Task<Response> Messages::by_id(const Request& req, const PathParams& p) {
  auto owned = co_await partition_or_topic(req, p, "Get message by id");
  if (auto* answer = std::get_if<Response>(&owned)) co_return std::move(*answer);
  const protocol::TopicName name = std::get<protocol::TopicName>(std::move(owned));
  auto ledger = parse_int(p.at("ledgerId"));
  auto entry = parse_int(p.at("entryId"));
  if (!ledger || !entry || *ledger < 0 || *entry < 0) {
    co_return error(412, "ledgerId and entryId must be non-negative numbers");
  }
  const Position wanted{LedgerId{*ledger}, EntryId{*entry}};
  TopicFn fn = [wanted](std::shared_ptr<PersistentTopic> t) -> Task<Response> {
    auto& ml = t->ledger();
    if (!ml.ledgers().contains(wanted.ledger_id) || ml.last_confirmed() < wanted) {
      co_return error(404, "Message not found");
    }
    auto entries = co_await ml.read(wanted, 1);
    if (!entries.ok()) co_return broker_error(entries.status());
    if (entries->empty() || entries->front().position != wanted) {
      co_return error(404, "Message not found");
    }
    co_return message_response(entries->front());
  };
  co_return co_await with_topic(broker(), name, fn);
}

}  // namespace

void add_messages(http::Router& router, std::shared_ptr<const BrokerContext> ctx) {
  auto self = std::make_shared<Messages>(std::move(ctx));
  const std::string topic(kTopicTemplate);
  const Permission peek =
      Permission::topic_op("persistent", http::Action::kConsume, "PEEK_MESSAGES");
  router.add("GET", topic + "/examinemessage", peek,
             [self](const Request& req, const PathParams& p) { return self->examine(req, p); });
  router.add("GET", topic + "/ledger/{ledgerId}/entry/{entryId}", peek,
             [self](const Request& req, const PathParams& p) { return self->by_id(req, p); });
}

}  // namespace magnetar::broker::admin
