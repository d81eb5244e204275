#pragma once
// The policy commands namespaces and topics share, as pulsar-admin names them:
// set-/get-/remove- of message-ttl, retention, backlog-quota(s), deduplication,
// deduplication-snapshot-interval, persistence, inactive-topic-policies, the max producers
// and consumers, and the dispatch, subscription-dispatch, replicator-dispatch, publish and
// subscribe rates (and a namespace's delayed-delivery); one implementation added to both groups, each with its own REST routes
// (a namespace's Policies fields, a topic's TopicPolicies ones) and flags.

#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "cli/commands.h"

namespace magnetar::cli {

struct PolicyTarget {
  bool topic = false;  // a topic's routes and flags (else a namespace's)
  std::string positional;       // the argument's name: "namespace" or "topic"
  std::string positional_help;  // "tenant/namespace", "persistent://tenant/namespace/topic"
  // The REST path of `name` plus `suffix`, or nullopt after printing why the name is bad.
  std::function<std::optional<std::string>(Session&, const std::string& name,
                                           std::string_view suffix)>
      url;
};

void add_policy_commands(CLI::App* group, CommandTable& table, const PolicyTarget& target);

// Prints a JSON object as pulsar-admin prints the Java object: its fields in `order` (the
// class's declaration order), then any others.
void print_ordered(Session& s, const Json& value, std::initializer_list<const char*> order);

}  // namespace magnetar::cli
