#pragma once
// The policies a namespace and a topic both have, each one value in one field: where each
// level keeps it (Pulsar's Policies and TopicPolicies name their fields apart), the REST
// route of each level, the check of a body, and what GET answers when it is unset. The
// namespace routes (namespace_policies.cc) and the topic routes (topic_policies.cc) are both
// made from this one table; the policies that need more (retention against backlog quotas,
// the quota map, replication) have their own routes beside them.

#include <span>

#include "broker/admin/admin_support.h"

namespace magnetar::broker {
struct BrokerConfig;
}

namespace magnetar::broker::admin {

// What GET answers for an unset policy.
// kBrokerSchemaAutoUpdate: the broker's isAllowAutoUpdateSchema.
enum class Unset { kNoContent, kEmptyObject, kEmptyList, kUndefined, kFalse, kBrokerSchemaAutoUpdate };

struct PolicyField {
  const char* namespace_route;  // .../namespaces/{t}/{ns}/<route>; nullptr: none
  const char* namespace_field;  // in Policies
  const char* topic_route;      // .../persistent/{t}/{ns}/{topic}/<route>; nullptr: none
  const char* topic_field;      // in TopicPolicies
  Unset namespace_unset;
  // The body of a POST checked: the value to store, or the 400 / 412 to answer.
  OrResponse<Json> (*parse)(const Json& body);
  // The broker's own value (GET ?applied=true of a topic when no level sets it).
  Json (*broker_default)(const BrokerConfig& config);
  // A topic's POST may give the value as this query parameter instead of a body (Pulsar's
  // topic messageTTL takes ?messageTTL=N); nullptr: a body only.
  const char* topic_query = nullptr;
  // The namespace keeps one value per cluster: `namespace_field` is a map of cluster name
  // to value (Pulsar's rate limits), and each cluster's brokers read their own.
  bool per_cluster = false;
  // A second namespace field written and removed with the first (the deprecated name Pulsar
  // still writes); nullptr: none.
  const char* namespace_also = nullptr;
  // Whether a level's value decides (?applied and the broker alike): a rate limit that
  // enables no rate leaves it to the next level (Pulsar's normalize()). nullptr: any value.
  bool (*decides)(const Json& value) = nullptr;
  // The namespace route's method for setting it (Pulsar sets most with POST, a few with PUT).
  const char* namespace_set_method = "POST";
};

std::span<const PolicyField> policy_fields();

// The namespace's value of `f` for `cluster` (null: unset).
const Json& namespace_value(const PolicyField& f, const Json& namespace_policies,
                            const std::string& cluster);

// The value a topic's GET ?applied=true answers for `f`: the topic's local level, else its
// global one, else its namespace's (for this broker's cluster), else the broker's (null
// levels: unset).
Json applied_value(const PolicyField& f, const Json& local, const Json& global,
                   const Json& namespace_policies, const BrokerConfig& config);

}  // namespace magnetar::broker::admin
