// A topic's subscriptions, /admin/v2/persistent/{tenant}/{namespace}/{topic}/subscription/{sub}:
//
//   PUT    {sub}[?replicated=true]     create it (at the latest message, or the MessageId body)
//   DELETE {sub}[?force=true]          delete it (412 with connected consumers, unless forced)
//   GET    {sub}/position/{n}          the n-th unacknowledged message (peek), n >= 1
//   POST   {sub}/skip_all | skip/{n}   acknowledge the whole backlog, or n entries
//   POST   {sub}/expireMessages/{s}    acknowledge what is older than s seconds
//   POST   {sub}/resetcursor/{time}    back to the first message published at or after time
//   POST   {sub}/resetcursor           to the MessageId body
//   POST   {sub}/replicatedSubscriptionStatus   true/false: replicate its position (PIP-33)
//   GET    {sub}/replicatedSubscriptionStatus   {"<topic>": true|false}
//
// Every route goes through topic_access.h (checks, fan-out to the partitions of a partitioned
// topic, owner), then works on the topic's loop; an unknown subscription is 404. Each needs
// consume on the topic and the subscription's roles (subscription scope), as in Pulsar.

#include <fmt/format.h>

#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "broker/admin/admin_routes.h"
#include "broker/admin/messages.h"
#include "broker/admin/topic_access.h"
#include "broker/service/entry_metadata.h"
#include "broker/service/policies.h"
#include "broker/service/subscription.h"
#include "broker/service/topic.h"
#include "mledger/managed_ledger.h"
#include "protocol/frame.h"

namespace magnetar::broker::admin {

namespace {

using http::PathParams;
using http::Permission;
using http::Request;
using http::Response;
using mledger::Position;

// A MessageId body ({"ledgerId", "entryId"}); absent -> latest.
std::optional<Position> parse_position(const std::string& body, bool* malformed) {
  *malformed = false;
  if (body.empty()) return std::nullopt;
  auto j = Json::parse(body, nullptr, false);
  if (!j.is_object() || !j.contains("ledgerId") || !j.contains("entryId") ||
      !j["ledgerId"].is_number_integer() || !j["entryId"].is_number_integer()) {
    *malformed = true;
    return std::nullopt;
  }
  return Position{LedgerId{j["ledgerId"].get<int64_t>()}, EntryId{j["entryId"].get<int64_t>()}};
}

// On the topic's loop: the n-th message (n >= 1) `sub` has not acknowledged, as an answer.
Task<Response> peek(std::shared_ptr<PersistentTopic> t, std::string sub, int64_t n) {
  auto s = t->find_subscription(sub);
  if (!s) co_return error(404, "Subscription not found");
  auto& ml = t->ledger();
  auto found = co_await nth_entry(ml, ml.next_position(s->cursor().mark_delete_position()), n);
  if (auto* answer = std::get_if<Response>(&found)) co_return std::move(*answer);
  co_return message_response(std::get<mledger::Entry>(found));
}

// What a POST .../subscription/{sub}/... does to the subscription.
enum class CursorMove { kSkipAll, kSkip, kExpire, kResetToTime, kResetToBody };

class Subscriptions {
 public:
  explicit Subscriptions(std::shared_ptr<const BrokerContext> ctx) : ctx_(std::move(ctx)) {}

  Task<Response> create(const Request& req, const PathParams& p);
  Task<Response> remove(const Request& req, const PathParams& p);
  Task<Response> position(const Request& req, const PathParams& p);
  // `arg_name`: the path parameter of kSkip, kExpire and kResetToTime, else empty.
  Task<Response> move_cursor(const Request& req, const PathParams& p, CursorMove what,
                             std::string arg_name);
  // GET and POST .../replicatedSubscriptionStatus.
  Task<Response> replication(const Request& req, const PathParams& p, bool set);
  // POST .../subscription/{sub}/{operation}/{arg} for no known operation: 400 when {arg} is
  // not a non-negative number, else 404.
  Task<Response> unknown(const Request& req, const PathParams& p);

 private:
  const BrokerServices& broker() const { return ctx_->services; }

  const std::shared_ptr<const BrokerContext> ctx_;
};

Task<Response> Subscriptions::replication(const Request& req, const PathParams& p, bool set) {
  auto owned = co_await owned_topic(broker(), req, p);
  if (auto* answer = std::get_if<Response>(&owned)) co_return std::move(*answer);
  const protocol::TopicName name = std::get<protocol::TopicName>(std::move(owned));
  std::optional<bool> on;
  if (set) {
    const Json body = Json::parse(req.body, nullptr, false);
    if (!body.is_boolean()) co_return error(400, "The body must be true or false");
    on = body.get<bool>();
  }
  TopicFn fn = [sub = p.at("subscription"), on,
                topic = name.to_string()](std::shared_ptr<PersistentTopic> t) -> Task<Response> {
    auto s = t->find_subscription(sub);
    if (!s) co_return error(404, "Subscription not found");
    if (!on) co_return ok_json(Json{{topic, s->replicated()}});
    if (*on && !t->config().enable_replicated_subscriptions) {
      co_return error(405, "Replicated Subscriptions is disabled by broker.");
    }
    Status st = co_await s->set_replicated(*on);
    if (!st.ok()) co_return error(412, st.message());
    co_return no_content();
  };
  co_return co_await with_topic(broker(), name, fn);
}

Task<Response> Subscriptions::create(const Request& req, const PathParams& p) {
  auto owned = co_await owned_topic(broker(), req, p);
  if (auto* answer = std::get_if<Response>(&owned)) co_return std::move(*answer);
  const protocol::TopicName name = std::get<protocol::TopicName>(std::move(owned));
  bool malformed = false;
  auto start = parse_position(req.body, &malformed);
  if (malformed) co_return error(400, "the body must be a MessageId");
  TopicFn fn = [sub = p.at("subscription"), start,
                replicated = query_flag(req, "replicated")](
                   std::shared_ptr<PersistentTopic> t) -> Task<Response> {
    if (t->find_subscription(sub)) {
      co_return error(409, "Subscription already exists for topic");
    }
    auto s = co_await t->subscribe(sub, wire::CommandSubscribe::Exclusive, true,
                                   wire::CommandSubscribe::Latest, std::nullopt);
    if (!s.ok()) co_return broker_error(s.status());
    if (replicated && t->config().enable_replicated_subscriptions) {
      Status st = co_await (*s)->set_replicated(true);
      if (!st.ok()) co_return broker_error(st);
    }
    if (start) {
      Status st = co_await (*s)->reset(*start);
      if (!st.ok()) co_return error(412, st.message());
    }
    co_return no_content();
  };
  // On a topic that does not exist yet, as Pulsar: created when auto-creation allows it.
  co_return co_await with_topic(broker(), name, fn, true);
}

Task<Response> Subscriptions::remove(const Request& req, const PathParams& p) {
  auto owned = co_await owned_topic(broker(), req, p);
  if (auto* answer = std::get_if<Response>(&owned)) co_return std::move(*answer);
  const protocol::TopicName name = std::get<protocol::TopicName>(std::move(owned));
  const bool force = query_flag(req, "force");
  TopicFn fn = [sub = p.at("subscription"),
                force](std::shared_ptr<PersistentTopic> t) -> Task<Response> {
    auto found = t->find_subscription(sub);
    if (!found) co_return error(404, "Subscription not found");
    if (!force && !found->consumers().empty()) {
      co_return error(412, "Subscription has active connected consumers");
    }
    Status st = co_await t->unsubscribe(sub, true);
    if (!st.ok()) co_return error(412, st.message());
    co_return no_content();
  };
  co_return co_await with_topic(broker(), name, fn);
}

Task<Response> Subscriptions::position(const Request& req, const PathParams& p) {
  auto owned = co_await owned_topic(broker(), req, p);
  if (auto* answer = std::get_if<Response>(&owned)) co_return std::move(*answer);
  const protocol::TopicName name = std::get<protocol::TopicName>(std::move(owned));
  auto n = parse_int(p.at("position"));
  if (!n || *n < 1) co_return error(412, "the position must be a number from 1");
  TopicFn fn = [sub = p.at("subscription"), n = *n](std::shared_ptr<PersistentTopic> t) {
    return peek(std::move(t), sub, n);
  };
  co_return co_await with_topic(broker(), name, fn);
}

Task<Response> Subscriptions::move_cursor(const Request& req, const PathParams& p, CursorMove what,
                                          std::string arg_name) {
  auto owned = co_await owned_topic(broker(), req, p);
  if (auto* answer = std::get_if<Response>(&owned)) co_return std::move(*answer);
  const protocol::TopicName name = std::get<protocol::TopicName>(std::move(owned));
  std::optional<int64_t> arg;
  if (!arg_name.empty()) {
    arg = parse_int(p.at(arg_name));
    if (!arg || *arg < 0) co_return error(400, "expected a non-negative number");
  }
  bool malformed = false;
  std::optional<Position> body_position;
  if (what == CursorMove::kResetToBody) {
    body_position = parse_position(req.body, &malformed);
    if (malformed || !body_position) co_return error(400, "the body must be a MessageId");
  }
  TopicFn fn = [sub = p.at("subscription"), what, arg,
                body_position](std::shared_ptr<PersistentTopic> t) -> Task<Response> {
    auto s = t->find_subscription(sub);
    if (!s) co_return error(404, "Subscription not found");
    Status st;
    if (what == CursorMove::kSkipAll) {
      st = co_await s->cursor().clear_backlog();
    } else if (what == CursorMove::kSkip) {
      st = co_await s->cursor().skip_entries(*arg);
    } else if (what == CursorMove::kExpire) {
      (void)co_await expire_messages(*t, *arg, sub);
    } else {
      std::optional<Position> target = body_position;
      const bool by_time = what == CursorMove::kResetToTime;
      if (by_time) {
        // Back to the first message published at or after the time.
        auto found = co_await t->position_for_time(static_cast<uint64_t>(*arg));
        if (!found.ok()) co_return broker_error(found.status());
        target = *found;
      }
      Status reset = co_await s->reset(*target);
      if (!reset.ok()) co_return error(412, reset.message());
      if (by_time) co_return no_content();
    }
    if (!st.ok()) co_return broker_error(st);
    s->restart_dispatch();
    co_return no_content();
  };
  co_return co_await with_topic(broker(), name, fn);
}

Task<Response> Subscriptions::unknown(const Request& req, const PathParams& p) {
  auto owned = co_await owned_topic(broker(), req, p);
  if (auto* answer = std::get_if<Response>(&owned)) co_return std::move(*answer);
  auto arg = parse_int(p.at("arg"));
  if (!arg || *arg < 0) co_return error(400, "expected a non-negative number");
  co_return not_found();
}

}  // namespace

void add_subscriptions(http::Router& router, std::shared_ptr<const BrokerContext> ctx) {
  auto self = std::make_shared<Subscriptions>(std::move(ctx));
  const std::string sub = std::string(kTopicTemplate) + "/subscription/{subscription}";
  auto permission = [](const char* operation) {
    return Permission::subscription_op("persistent", operation);
  };
  // The request and its parameters outlive each returned task (the router awaits it).
  router.add("PUT", sub, permission("SUBSCRIBE"),
             [self](const Request& req, const PathParams& p) { return self->create(req, p); });
  router.add("DELETE", sub, permission("UNSUBSCRIBE"),
             [self](const Request& req, const PathParams& p) { return self->remove(req, p); });
  router.add("GET", sub + "/position/{position}", permission("PEEK_MESSAGES"),
             [self](const Request& req, const PathParams& p) { return self->position(req, p); });
  auto move = [&](const std::string& path, const char* operation, CursorMove what,
                  const char* arg) {
    router.add("POST", sub + path, permission(operation),
               [self, what, arg](const Request& req, const PathParams& p) {
                 return self->move_cursor(req, p, what, arg);
               });
  };
  move("/skip_all", "SKIP", CursorMove::kSkipAll, "");
  move("/skip/{count}", "SKIP", CursorMove::kSkip, "count");
  move("/expireMessages/{seconds}", "EXPIRE_MESSAGES", CursorMove::kExpire, "seconds");
  move("/resetcursor/{timestamp}", "RESET_CURSOR", CursorMove::kResetToTime, "timestamp");
  move("/resetcursor", "RESET_CURSOR", CursorMove::kResetToBody, "");
  for (const bool set : {false, true}) {
    router.add(set ? "POST" : "GET", sub + "/replicatedSubscriptionStatus",
               permission(set ? "SET_REPLICATED_SUBSCRIPTION_STATUS"
                              : "GET_REPLICATED_SUBSCRIPTION_STATUS"),
               [self, set](const Request& req, const PathParams& p) {
                 return self->replication(req, p, set);
               });
  }
  router.add("POST", sub + "/{operation}/{arg}", permission(""),
             [self](const Request& req, const PathParams& p) { return self->unknown(req, p); });
}

}  // namespace magnetar::broker::admin
