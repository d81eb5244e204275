#pragma once
// What the routes under /admin/v2/persistent/{tenant}/{namespace}/{topic} (topics.cc,
// subscriptions.cc, partitioned_topics.cc) do before their operation, in this order:
//
//   1. the topic's name (412 when not valid) and its namespace (404 when unknown): checked_topic;
//   2. on a partitioned topic's own name, unload, compaction, the subscription list and every
//      subscription operation go to each partition instead (fan_out);
//   3. elsewhere than on the owner of the topic's bundle, a 307 to the owner (an unowned
//      bundle is placed first, as a lookup does): owned_topic does 1 to 3;
//   4. the operation, on the topic's event loop when it needs the loaded topic (with_topic).
//
// The partitioned-topic metadata and stats routes do step 1 only.

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "broker/admin/admin_support.h"
#include "broker/service/broker_services.h"
#include "broker/service/non_persistent_topic.h"
#include "broker/service/topic.h"
#include "http/router.h"
#include "protocol/topic_name.h"

namespace magnetar::broker::admin {

constexpr std::string_view kPersistentPrefix = "/admin/v2/persistent/";
constexpr std::string_view kNonPersistentPrefix = "/admin/v2/non-persistent/";
// The template every topic route starts with.
constexpr std::string_view kTopicTemplate = "/admin/v2/persistent/{tenant}/{namespace}/{topic}";

// Step 1 for the route's {tenant}, {namespace} and {topic}, in `domain`. `p` outlives the call.
Task<OrResponse<protocol::TopicName>> checked_topic(
    BrokerServices broker, const http::PathParams& p,
    protocol::TopicDomain domain = protocol::TopicDomain::kPersistent);

// Whether `name` exists: a partitioned topic's metadata, or a topic's managed ledger (a
// partition's own). Store failures are the answer.
Task<OrResponse<bool>> topic_exists(BrokerServices broker, protocol::TopicName name);

// Steps 1 to 3: the topic (of the domain the request's path names), when this broker owns
// it; otherwise the answer (an error, a 307, or the partitions' combined answer). `req` and
// `p` outlive the call.
Task<OrResponse<protocol::TopicName>> owned_topic(BrokerServices broker, const http::Request& req,
                                                  const http::PathParams& p);

// The decoded segments of the request's path after {topic}.
std::vector<std::string> topic_rest(const http::Request& req);

// Step 2: `req` (method, the segments after {topic}, query and body) once for each of the
// `partitions` partitions of `name`, each through this broker's own routes (and on to its
// owner by their 307s). A partition not created yet is skipped by unload and the subscription
// list; the list answers the union of the partitions' subscriptions, the others 204 or the
// first failure. `req` outlives the call.
Task<http::Response> fan_out(BrokerServices broker, protocol::TopicName name, int partitions,
                             std::vector<std::string> rest, const http::Request& req);

// The domain a request's path names (/admin/v2/persistent/... or /admin/v2/non-persistent/...).
protocol::TopicDomain domain_of(const http::Request& req);

// Runs on the topic's event loop: an operation on a loaded topic.
using TopicFn = std::function<Task<http::Response>(std::shared_ptr<PersistentTopic>)>;

// Step 4: fn(topic) on the topic's loop, for a topic this broker owns and has (a partition of
// an existing partitioned topic is created on first use; with `auto_create`, any topic that
// auto-creation allows, as a client's use would); 404 "Topic not found" otherwise.
Task<http::Response> with_topic(BrokerServices broker, protocol::TopicName name, TopicFn fn,
                                bool auto_create = false);

}  // namespace magnetar::broker::admin

namespace magnetar::broker::admin {

// The same for a non-persistent topic: fn(topic) on its loop when this broker has it loaded
// (nothing else of it exists); 404 "Topic not found" otherwise.
using NonPersistentTopicFn =
    std::function<Task<http::Response>(std::shared_ptr<NonPersistentTopic>)>;
Task<http::Response> with_non_persistent_topic(BrokerServices broker, protocol::TopicName name,
                                               NonPersistentTopicFn fn);

}  // namespace magnetar::broker::admin
