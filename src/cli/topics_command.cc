// `magnetar-admin topics ...`: /admin/v2/{persistent|non-persistent}/{tenant}/{ns}/{topic}.

#include <fmt/format.h>

#include <cctype>
#include <chrono>
#include <cstdio>
#include <map>
#include <memory>
#include <ostream>
#include <thread>

#include "cli/arguments.h"
#include "cli/commands.h"
#include "cli/policy_commands.h"
#include "cli/stored_messages.h"
#include "common/units.h"
#include "protocol/topic_name.h"

namespace magnetar::cli {

// Named, so that a unity build keeps these helpers apart from the other command files'.
namespace topics_cmd {
namespace {

struct TopicArgs {
  std::string name;
  int partitions = 0;
  bool force = false;
  bool per_partition = false;
  bool update_local_only = false;
  std::string subscription;
  std::string message_id;
  std::string time;
  bool exclude = false;
  bool replicated = false;
  int64_t count = 1;
  // examine-messages, get-message-by-id
  std::string initial_position = "latest";
  int64_t message_position = 1;
  int64_t ledger_id = -1;
  int64_t entry_id = -1;
  // set-replication-clusters, get-replication-clusters, remove-replication-clusters
  std::string cluster_list;
  bool applied = false;
  bool global = false;
  std::string domain;
  // partitioned-lookup --sort-by-broker, stats --get-precise-backlog (ours is always precise)
  bool sort_by_broker = false;
  bool precise_backlog = false;
  bool wait = false;  // compaction-status -w
  bool enable = false, disable = false;  // set-replicated-subscription-status
  // grant-permission, revoke-permission
  std::string role;
  std::vector<std::string> actions;
};

// The topic's REST path plus `suffix`, or nullopt after printing why the name is bad.
std::optional<std::string> topic_url(Session& s, const std::string& name,
                                     std::string_view suffix = "") {
  auto path = topic_path(name);
  if (!path.ok()) {
    (void)s.argument_error(path.status().message());
    return std::nullopt;
  }
  return *path + std::string(suffix);
}

// The topic's full name as Pulsar prints it (persistent://tenant/namespace/topic).
std::string full_topic_name(const std::string& name) {
  auto topic = protocol::TopicName::parse(name);
  return topic.ok() ? topic->to_string() : name;
}

std::string subscription_suffix(const TopicArgs& a, std::string_view rest = "") {
  return "/subscription/" + encode_segment(a.subscription) + std::string(rest);
}

const char* flag(bool b) {
  return b ? "true" : "false";
}

using Run = std::function<int(Session&, const TopicArgs&)>;

// A subcommand taking the topic as its one positional argument; `options` adds the rest.
CLI::App* add(CLI::App* group, CommandTable& table, const std::string& name,
              const std::string& description, Run run,
              const std::function<void(CLI::App*, TopicArgs&)>& options = nullptr) {
  auto args = std::make_shared<TopicArgs>();
  CLI::App* cmd = group->add_subcommand(name, description);
  cmd->add_option("topic", args->name, "persistent://tenant/namespace/topic")->required();
  if (options) options(cmd, *args);
  table.on(cmd, [args, run = std::move(run)](Session& s) { return run(s, *args); });
  return cmd;
}

Run getter(std::string suffix, bool list = false) {
  return [suffix = std::move(suffix), list](Session& s, const TopicArgs& a) {
    auto path = topic_url(s, a.name, suffix);
    if (!path) return 1;
    return list ? s.print_list(*path) : s.print_value(*path);
  };
}

void add_subscription_option(CLI::App* c, TopicArgs& a, const char* what = "Subscription name") {
  c->add_option("-s,--subscription", a.subscription, what)->required();
}

int list_topics(Session& s, const std::string& ns, const std::string& domain) {
  if (!domain.empty() && domain != "persistent" && domain != "non_persistent" &&
      domain != "non-persistent") {
    return s.argument_error("Invalid topic domain: persistent or non_persistent");
  }
  const bool persistent = domain.empty() || domain == "persistent";
  const bool non_persistent = domain.empty() || domain != "persistent";
  std::vector<std::string> roots;
  for (const char* d : {"persistent", "non-persistent"}) {
    if ((d[0] == 'p' && !persistent) || (d[0] == 'n' && !non_persistent)) continue;
    auto root = namespace_topics_root(ns, d);
    if (!root.ok()) return s.argument_error(root.status().message());
    roots.push_back(*root);
  }
  Json all = Json::array();
  for (size_t i = 0; i < roots.size(); ++i) {
    // Without -td both domains are listed; a server that has no non-persistent topics may
    // not know that path, which is not an error then.
    const bool optional = domain.empty() && i == 1;
    std::optional<http::HttpResponse> response;
    if (optional) {
      auto raw = s.send("GET", roots[i]);
      if (!raw.ok() || raw->status / 100 != 2) continue;
      response = std::move(raw).value();
    } else {
      response = s.call("GET", roots[i]);
      if (!response) return 1;
    }
    Json j = Session::parse(*response);
    if (j.is_array()) {
      for (Json& e : j) all.push_back(std::move(e));
    }
  }
  for (const Json& e : all) s.print(e);
  return 0;
}

int reset_cursor(Session& s, const TopicArgs& a) {
  if (a.time.empty() == a.message_id.empty()) {
    return s.argument_error(
        "Either Timestamp (--time) or Position (--messageId) has to be provided to reset cursor");
  }
  if (!a.time.empty()) {
    auto seconds = parse_relative_seconds(a.time);
    if (!seconds.ok()) return s.argument_error(seconds.status().message());
    const int64_t now_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                               std::chrono::system_clock::now().time_since_epoch())
                               .count();
    auto path =
        topic_url(s, a.name,
                  subscription_suffix(a, fmt::format("/resetcursor/{}", now_ms - *seconds * 1000)));
    return path ? s.change("POST", *path) : 1;
  }
  auto id = parse_message_id(a.message_id);
  if (!id.ok()) return s.argument_error(id.status().message());
  auto path = topic_url(s, a.name, subscription_suffix(a, "/resetcursor"));
  return path ? s.change("POST", *path, reset_cursor_body(*id, a.exclude)) : 1;
}

int expire_messages(Session& s, const TopicArgs& a) {
  if (a.time.empty() == a.message_id.empty()) {
    return s.argument_error(
        "Either time (--expireTime) or message id (--messageId) has to be provided");
  }
  if (!a.time.empty()) {
    auto seconds = parse_relative_seconds(a.time);
    if (!seconds.ok()) return s.argument_error(seconds.status().message());
    auto path =
        topic_url(s, a.name, subscription_suffix(a, fmt::format("/expireMessages/{}", *seconds)));
    return path ? s.change("POST", *path) : 1;
  }
  auto id = parse_message_id(a.message_id);
  if (!id.ok()) return s.argument_error(id.status().message());
  auto path = topic_url(s, a.name, subscription_suffix(a, "/expireMessages"));
  return path ? s.change("POST", *path, reset_cursor_body(*id, a.exclude)) : 1;
}

// GET .../subscription/{sub}/position/{n} answers the n-th entry: pulsar-admin splits a batch
// into its messages and counts messages, not entries; running out (404) ends the list.
int peek_messages(Session& s, const TopicArgs& a) {
  if (a.count < 1) return s.argument_error("--count must be at least 1");
  int64_t printed = 0;
  for (int64_t n = 1; printed < a.count; ++n) {
    auto path = topic_url(s, a.name, subscription_suffix(a, fmt::format("/position/{}", n)));
    if (!path) return 1;
    auto response = s.send("GET", *path);
    if (response.ok() && response->status == 404 && n > 1) break;
    if (!response.ok() || response->status / 100 != 2) {
      if (!s.call("GET", *path)) return 1;  // prints the failure as every command does
    }
    auto messages = stored_messages(*response);
    if (!messages.ok()) {
      s.err() << messages.status().message() << "\n";
      return 1;
    }
    for (const StoredMessage& m : *messages) {
      if (printed == a.count) break;
      if (printed++ > 0) s.out() << std::string(73, '-') << "\n\n";
      print_stored_message(s.out(), m, false);
    }
  }
  return 0;
}

// One message as examine-messages and get-message-by-id print it: the first of a batch.
int print_first_message(Session& s, const std::string& path, bool redelivery_count) {
  auto response = s.call("GET", path);
  if (!response) return 1;
  auto messages = stored_messages(*response);
  if (!messages.ok()) {
    s.err() << messages.status().message() << "\n";
    return 1;
  }
  if (messages->empty()) return 0;
  print_stored_message(s.out(), messages->front(), redelivery_count);
  return 0;
}

// The lookup path of a topic: /lookup/v2/topic/persistent/t/ns/x.
std::optional<std::string> lookup_url(Session& s, const std::string& name) {
  auto path = topic_url(s, name);
  if (!path) return std::nullopt;
  constexpr std::string_view kAdmin = "/admin/v2/";
  return "/lookup/v2/topic/" + path->substr(kAdmin.size());
}

// The brokerUrl a lookup answers (pulsar-admin prints just that).
std::optional<std::string> lookup_broker(Session& s, const std::string& url) {
  auto response = s.call("GET", url);
  if (!response) return std::nullopt;
  const Json j = Session::parse(*response);
  return j.is_object() ? j.value("brokerUrl", "") : std::string();
}

// The names of a partitioned topic's partitions (none when it is not partitioned), or nullopt
// after printing why not.
std::optional<std::vector<std::string>> partition_names(Session& s, const std::string& name) {
  auto meta_path = topic_url(s, name, "/partitions");
  if (!meta_path) return std::nullopt;
  auto meta = s.call("GET", *meta_path);
  if (!meta) return std::nullopt;
  const Json m = Session::parse(*meta);
  const int n = m.is_object() ? m.value("partitions", 0) : 0;
  const std::string base = *topic_path(name);  // valid: topic_url checked it
  const std::string topic =
      "persistent://" + base.substr(std::string_view("/admin/v2/persistent/").size());
  std::vector<std::string> names;
  for (int i = 0; i < n; ++i) names.push_back(fmt::format("{}-partition-{}", topic, i));
  return names;
}

// Each partition and its broker, as pulsar-admin prints a map; --sort-by-broker: each
// broker and its partitions.
int partitioned_lookup(Session& s, const TopicArgs& a) {
  auto partitions = partition_names(s, a.name);
  if (!partitions) return 1;
  std::map<std::string, std::vector<std::string>> by_broker;
  for (const std::string& partition : *partitions) {
    auto url = lookup_url(s, partition);
    if (!url) return 1;
    auto broker = lookup_broker(s, *url);
    if (!broker) return 1;
    if (a.sort_by_broker) {
      by_broker[*broker].push_back(partition);
    } else {
      s.out() << partition << "    " << *broker << "\n";
    }
  }
  for (const auto& [broker, names] : by_broker) {
    std::string list;
    for (const auto& p : names) list += (list.empty() ? "" : ", ") + p;
    s.out() << broker << "    [" << list << "]\n";
  }
  return 0;
}

// Each partition's internal stats, in Pulsar's PartitionedManagedLedgerInfo shape.
int partitioned_stats_internal(Session& s, const TopicArgs& a) {
  auto partitions = partition_names(s, a.name);
  if (!partitions) return 1;
  Json out = {{"metadata", {{"partitions", partitions->size()}}}, {"partitions", Json::object()}};
  for (const std::string& partition : *partitions) {
    auto path = topic_url(s, partition, "/internalStats");
    if (!path) return 1;
    auto raw = s.send("GET", *path);
    if (raw.ok() && raw->status == 404) continue;  // not created yet
    if (raw.ok() && raw->status / 100 == 2) {
      out["partitions"][partition] = Session::parse(*raw);
      continue;
    }
    if (!s.call("GET", *path)) return 1;  // prints the failure
  }
  s.print(out);
  return 0;
}

}  // namespace
}  // namespace topics_cmd

void add_topic_commands(CLI::App& app, CommandTable& table) {
  using namespace topics_cmd;
  CLI::App* g = add_group(app, "topics", "Operations on persistent and non-persistent topics");

  auto list = std::make_shared<TopicArgs>();
  CLI::App* list_cmd = g->add_subcommand("list", "Get the list of topics of a namespace");
  list_cmd->add_option("namespace", list->name, "tenant/namespace")->required();
  list_cmd->add_option("--topic-domain", list->domain,
                       "Only this domain: persistent or non_persistent; also -td");
  table.on(list_cmd, [list](Session& s) { return list_topics(s, list->name, list->domain); });

  auto partitioned = std::make_shared<TopicArgs>();
  CLI::App* partitioned_cmd = g->add_subcommand(
      "list-partitioned-topics", "Get the list of partitioned topics of a namespace");
  partitioned_cmd->add_option("namespace", partitioned->name, "tenant/namespace")->required();
  table.on(partitioned_cmd, [partitioned](Session& s) {
    auto root = namespace_topics_root(partitioned->name, "persistent");
    if (!root.ok()) return s.argument_error(root.status().message());
    return s.print_list(*root + "/partitioned");
  });

  add(g, table, "lookup", "Look up the broker serving a topic", [](Session& s, const TopicArgs& a) {
    auto url = lookup_url(s, a.name);
    if (!url) return 1;
    auto broker = lookup_broker(s, *url);
    if (!broker) return 1;
    s.out() << *broker << "\n";
    return 0;
  });
  add(g, table, "partitioned-lookup", "Look up the brokers serving a partitioned topic's partitions",
      partitioned_lookup, [](CLI::App* c, TopicArgs& a) {
        c->add_flag("-s,--sort-by-broker", a.sort_by_broker, "Group the partitions by broker");
      });
  add(g, table, "bundle-range", "Get the namespace bundle a topic belongs to",
      [](Session& s, const TopicArgs& a) {
        auto url = lookup_url(s, a.name);
        return url ? s.print_value(*url + "/bundle") : 1;
      });
  add(g, table, "partitioned-stats-internal", "Get the internal stats of each partition",
      partitioned_stats_internal);

  add(g, table, "create", "Create a non-partitioned topic", [](Session& s, const TopicArgs& a) {
    auto path = topic_url(s, a.name);
    return path ? s.change("PUT", *path) : 1;
  });
  add(
      g, table, "create-partitioned-topic", "Create a partitioned topic",
      [](Session& s, const TopicArgs& a) {
        auto path = topic_url(s, a.name, "/partitions");
        return path ? s.change("PUT", *path, std::to_string(a.partitions)) : 1;
      },
      [](CLI::App* c, TopicArgs& a) {
        c->add_option("-p,--partitions", a.partitions, "Number of partitions")->required();
      });
  add(
      g, table, "update-partitioned-topic", "Increase the partitions of a partitioned topic",
      [](Session& s, const TopicArgs& a) {
        auto path = topic_url(s, a.name,
                              fmt::format("/partitions?updateLocalTopicOnly={}&force={}",
                                          flag(a.update_local_only), flag(a.force)));
        return path ? s.change("POST", *path, std::to_string(a.partitions)) : 1;
      },
      [](CLI::App* c, TopicArgs& a) {
        c->add_option("-p,--partitions", a.partitions, "Number of partitions")->required();
        c->add_flag("-f,--force", a.force, "Update even when some partitions exist already");
        c->add_flag("--update-local-only", a.update_local_only, "Only this cluster");
      });
  add(
      g, table, "delete-partitioned-topic", "Delete a partitioned topic",
      [](Session& s, const TopicArgs& a) {
        auto path = topic_url(s, a.name, fmt::format("/partitions?force={}", flag(a.force)));
        return path ? s.change("DELETE", *path) : 1;
      },
      [](CLI::App* c, TopicArgs& a) {
        c->add_flag("-f,--force", a.force, "Close producers and consumers and delete anyway");
      });
  add(g, table, "get-partitioned-topic-metadata", "Get the partitioned topic metadata",
      getter("/partitions"));
  add(
      g, table, "delete", "Delete a topic",
      [](Session& s, const TopicArgs& a) {
        auto path = topic_url(s, a.name, fmt::format("?force={}", flag(a.force)));
        return path ? s.change("DELETE", *path) : 1;
      },
      [](CLI::App* c, TopicArgs& a) {
        c->add_flag("-f,--force", a.force, "Close producers and consumers and delete anyway");
      });

  add(
      g, table, "set-replication-clusters", "Set the replication clusters of a topic",
      [](Session& s, const TopicArgs& a) {
        auto path = topic_url(s, a.name, fmt::format("/replication?isGlobal={}", flag(a.global)));
        return path ? s.change("POST", *path, Json(split_list(a.cluster_list)).dump()) : 1;
      },
      [](CLI::App* c, TopicArgs& a) {
        c->add_option("-c,--clusters", a.cluster_list, "Comma separated replication cluster ids")
            ->required();
        c->add_flag("-g,--global", a.global, "The global policy (every cluster applies it)");
      });
  add(
      g, table, "get-replication-clusters", "Get the replication clusters of a topic",
      [](Session& s, const TopicArgs& a) {
        auto path = topic_url(
            s, a.name,
            fmt::format("/replication?applied={}&isGlobal={}", flag(a.applied), flag(a.global)));
        return path ? s.print_value(*path) : 1;
      },
      [](CLI::App* c, TopicArgs& a) {
        c->add_flag("-a,--applied", a.applied,
                    "What applies: the topic's, else the namespace's (default: the topic's)");
        c->add_flag("-g,--global", a.global, "The global policy");
      });
  add(
      g, table, "remove-replication-clusters", "Remove the replication clusters of a topic",
      [](Session& s, const TopicArgs& a) {
        auto path = topic_url(s, a.name, fmt::format("/replication?isGlobal={}", flag(a.global)));
        return path ? s.change("DELETE", *path) : 1;
      },
      [](CLI::App* c, TopicArgs& a) { c->add_flag("-g,--global", a.global, "The global policy"); });

  add(g, table, "permissions", "Get the permissions on a topic",
      [](Session& s, const TopicArgs& a) {
        auto path = topic_url(s, a.name, "/permissions");
        return path ? s.print_map(*path) : 1;
      });
  add(
      g, table, "grant-permission", "Grant a new permission to a client role on a single topic",
      [](Session& s, const TopicArgs& a) {
        auto path = topic_url(s, a.name, "/permissions/" + encode_segment(a.role));
        return path ? s.change("POST", *path, Json(a.actions).dump()) : 1;
      },
      [](CLI::App* c, TopicArgs& a) {
        c->add_option("-r,--role", a.role, "Client role to which grant permissions")->required();
        c->add_option("-a,--actions", a.actions, "Actions to be granted (produce,consume)")
            ->required()
            ->delimiter(',');
      });
  add(
      g, table, "revoke-permission", "Revoke permissions on a topic",
      [](Session& s, const TopicArgs& a) {
        auto path = topic_url(s, a.name, "/permissions/" + encode_segment(a.role));
        return path ? s.change("DELETE", *path) : 1;
      },
      [](CLI::App* c, TopicArgs& a) {
        c->add_option("-r,--role", a.role, "Client role to which revoke permissions")->required();
      });

  add(g, table, "stats", "Get the stats of a topic", getter("/stats"), [](CLI::App* c, TopicArgs& a) {
    c->add_flag("--get-precise-backlog", a.precise_backlog,
                "Accepted as pulsar-admin's: the backlog is always exact here");
  });
  add(
      g, table, "partitioned-stats", "Get the stats of a partitioned topic",
      [](Session& s, const TopicArgs& a) {
        auto path = topic_url(
            s, a.name, fmt::format("/partitioned-stats?perPartition={}", flag(a.per_partition)));
        return path ? s.print_value(*path) : 1;
      },
      [](CLI::App* c, TopicArgs& a) {
        c->add_flag("--per-partition", a.per_partition, "Include the stats of every partition");
      });
  add(g, table, "stats-internal", "Get the internal stats of a topic", getter("/internalStats"));
  add(g, table, "info-internal", "Get the stored metadata of a topic's managed ledger",
      getter("/internal-info"));
  add(
      g, table, "get-backlog-size", "Get the estimated backlog size (bytes) after a message id",
      [](Session& s, const TopicArgs& a) {
        auto id = parse_message_id(a.message_id);
        if (!id.ok()) return s.argument_error(id.status().message());
        auto path = topic_url(s, a.name, "/backlogSize");
        if (!path) return 1;
        const Json body = {{"ledgerId", id->ledger_id},
                           {"entryId", id->entry_id},
                           {"partitionIndex", id->partition}};
        auto response = s.call("PUT", *path, body.dump());
        if (!response) return 1;
        s.print(Session::parse(*response));
        return 0;
      },
      [](CLI::App* c, TopicArgs& a) {
        a.message_id = "-1:-1";
        c->add_option("-m,--messageId", a.message_id,
                      "ledgerId:entryId (default -1:-1: the whole topic)");
      });
  add(
      g, table, "get-message-id", "Get the id of the first message published at or after a time",
      [](Session& s, const TopicArgs& a) {
        auto ms = parse_iso_time(a.time);
        if (!ms.ok()) return s.argument_error(ms.status().message());
        if (*ms < 0) return s.argument_error("The time must be after 1970-01-01T00:00:00Z");
        auto path = topic_url(s, a.name, fmt::format("/messageid/{}", *ms));
        return path ? s.print_value(*path) : 1;
      },
      [](CLI::App* c, TopicArgs& a) {
        c->add_option("-d,--datetime", a.time,
                      "ISO-8601 date-time with an offset, e.g. 2021-06-28T19:01:17Z")
            ->required();
      });
  add(g, table, "create-missed-partitions",
      "Create the partitions of a partitioned topic that were never used",
      [](Session& s, const TopicArgs& a) {
        auto path = topic_url(s, a.name, "/createMissedPartitions");
        return path ? s.change("POST", *path) : 1;
      });
  add(g, table, "subscriptions", "Get the subscriptions of a topic",
      getter("/subscriptions", true));
  add(g, table, "last-message-id", "Get the id of the last message of a topic",
      getter("/lastMessageId"));

  add(
      g, table, "create-subscription", "Create a subscription on a topic",
      [](Session& s, const TopicArgs& a) {
        auto id = parse_message_id(a.message_id.empty() ? "latest" : a.message_id);
        if (!id.ok()) return s.argument_error(id.status().message());
        auto path = topic_url(
            s, a.name, subscription_suffix(a, fmt::format("?replicated={}", flag(a.replicated))));
        return path ? s.change("PUT", *path, reset_cursor_body(*id, false)) : 1;
      },
      [](CLI::App* c, TopicArgs& a) {
        add_subscription_option(c, a, "Subscription to create");
        c->add_option("-m,--messageId", a.message_id,
                      "Where the subscription starts: latest (default), earliest or "
                      "ledgerId:entryId");
        c->add_flag("-r,--replicated", a.replicated, "Replicated subscription");
      });
  add(
      g, table, "unsubscribe", "Delete a subscription of a topic",
      [](Session& s, const TopicArgs& a) {
        auto path =
            topic_url(s, a.name, subscription_suffix(a, fmt::format("?force={}", flag(a.force))));
        return path ? s.change("DELETE", *path) : 1;
      },
      [](CLI::App* c, TopicArgs& a) {
        add_subscription_option(c, a, "Subscription to delete");
        c->add_flag("-f,--force", a.force, "Disconnect its consumers and delete anyway");
      });
  add(
      g, table, "skip", "Skip messages of a subscription",
      [](Session& s, const TopicArgs& a) {
        auto path = topic_url(s, a.name, subscription_suffix(a, fmt::format("/skip/{}", a.count)));
        return path ? s.change("POST", *path) : 1;
      },
      [](CLI::App* c, TopicArgs& a) {
        add_subscription_option(c, a);
        c->add_option("-n,--count", a.count, "Number of messages to skip")->required();
      });
  add(
      g, table, "set-replicated-subscription-status",
      "Replicate a subscription's position to the topic's other clusters, or stop",
      [](Session& s, const TopicArgs& a) {
        if (a.enable == a.disable) {
          return s.argument_error("Need to specify either --enable or --disable");
        }
        auto path = topic_url(s, a.name, subscription_suffix(a, "/replicatedSubscriptionStatus"));
        return path ? s.change("POST", *path, a.enable ? "true" : "false") : 1;
      },
      [](CLI::App* c, TopicArgs& a) {
        add_subscription_option(c, a);
        c->add_flag("-e,--enable", a.enable, "Replicate it");
        c->add_flag("-d,--disable", a.disable, "Stop replicating it");
      });
  add(
      g, table, "get-replicated-subscription-status",
      "Whether a subscription's position is replicated",
      [](Session& s, const TopicArgs& a) {
        auto path = topic_url(s, a.name, subscription_suffix(a, "/replicatedSubscriptionStatus"));
        return path ? s.print_value(*path) : 1;
      },
      [](CLI::App* c, TopicArgs& a) { add_subscription_option(c, a); });
  add(
      g, table, "clear-backlog", "Skip every message of a subscription",
      [](Session& s, const TopicArgs& a) {
        auto path = topic_url(s, a.name, subscription_suffix(a, "/skip_all"));
        return path ? s.change("POST", *path) : 1;
      },
      [](CLI::App* c, TopicArgs& a) { add_subscription_option(c, a); });
  add(g, table, "reset-cursor", "Move a subscription to a time or message id", reset_cursor,
      [](CLI::App* c, TopicArgs& a) {
        add_subscription_option(c, a, "Subscription to reset");
        c->add_option("-t,--time", a.time, "How far back (eg: 100m, 3h, 2d, 5w; no unit: seconds)");
        c->add_option("-m,--messageId", a.message_id,
                      "Message id to reset to: earliest, latest or ledgerId:entryId");
        c->add_flag("-e,--exclude-message", a.exclude, "Start after the message id");
      });
  add(g, table, "expire-messages", "Expire the messages of a subscription older than a time",
      expire_messages, [](CLI::App* c, TopicArgs& a) {
        add_subscription_option(c, a);
        c->add_option("-t,--expireTime", a.time,
                      "Expire messages older than this (eg: 100, 100m, 3h, 2d, 5w)");
        c->add_option("-m,--messageId", a.message_id,
                      "Expire messages up to this id: ledgerId:entryId");
        c->add_flag("-e,--exclude-message", a.exclude, "Keep the message id itself");
      });
  add(
      g, table, "expire-messages-all-subscriptions",
      "Expire the messages of every subscription older than a time",
      [](Session& s, const TopicArgs& a) {
        auto seconds = parse_relative_seconds(a.time);
        if (!seconds.ok()) return s.argument_error(seconds.status().message());
        auto path =
            topic_url(s, a.name, fmt::format("/all_subscription/expireMessages/{}", *seconds));
        return path ? s.change("POST", *path) : 1;
      },
      [](CLI::App* c, TopicArgs& a) {
        c->add_option("-t,--expireTime", a.time,
                      "Expire messages older than this (eg: 100, 100m, 3h, 2d, 5w)")
            ->required();
      });
  add(g, table, "peek-messages", "Show messages of a subscription without consuming them",
      peek_messages, [](CLI::App* c, TopicArgs& a) {
        add_subscription_option(c, a);
        c->add_option("-n,--count", a.count, "Number of messages (default 1)");
      });
  add(
      g, table, "examine-messages", "Show the n-th message from the first or the last",
      [](Session& s, const TopicArgs& a) {
        if (a.initial_position != "latest" && a.initial_position != "earliest") {
          return s.argument_error("--initialPosition must be latest or earliest");
        }
        auto path = topic_url(s, a.name,
                              fmt::format("/examinemessage?initialPosition={}&messagePosition={}",
                                          a.initial_position, a.message_position));
        return path ? print_first_message(s, *path, false) : 1;
      },
      [](CLI::App* c, TopicArgs& a) {
        c->add_option("-i,--initialPosition", a.initial_position, "latest (default) or earliest");
        c->add_option("-m,--messagePosition", a.message_position,
                      "The position from the initial one, from 1 (default 1)");
      });
  add(
      g, table, "get-message-by-id", "Show the message with this ledger and entry id",
      [](Session& s, const TopicArgs& a) {
        auto path =
            topic_url(s, a.name, fmt::format("/ledger/{}/entry/{}", a.ledger_id, a.entry_id));
        return path ? print_first_message(s, *path, true) : 1;
      },
      [](CLI::App* c, TopicArgs& a) {
        c->add_option("-l,--ledgerId", a.ledger_id, "The ledger id")->required();
        c->add_option("-e,--entryId", a.entry_id, "The entry id")->required();
      });

  add(g, table, "unload", "Unload a topic from its broker", [](Session& s, const TopicArgs& a) {
    auto path = topic_url(s, a.name, "/unload");
    return path ? s.change("PUT", *path) : 1;
  });
  add(g, table, "compact", "Compact a topic: keep the latest message of each key",
      [](Session& s, const TopicArgs& a) {
        auto path = topic_url(s, a.name, "/compaction");
        if (!path) return 1;
        if (!s.call("PUT", *path)) return 1;
        s.out() << "Topic compaction requested for " << full_topic_name(a.name) << "\n";
        return 0;
      });
  add(
      g, table, "compaction-status", "The status of a topic's last compaction",
      [](Session& s, const TopicArgs& a) {
        auto path = topic_url(s, a.name, "/compaction");
        if (!path) return 1;
        Json status;
        while (true) {
          auto response = s.call("GET", *path);
          if (!response) return 1;
          status = Session::parse(*response);
          if (!a.wait || status.value("status", "") != "RUNNING") break;
          std::this_thread::sleep_for(std::chrono::seconds(1));
        }
        const std::string state = status.value("status", "");
        if (state == "RUNNING") {
          s.out() << "Compaction is currently running\n";
        } else if (state == "SUCCESS") {
          s.out() << "Compaction was a success\n";
        } else if (state == "ERROR") {
          s.out() << "Error in compaction\n";
          s.err() << "Error compacting: " << status.value("lastError", "") << "\n";
          return 1;
        } else {
          s.out() << "Compaction has not been run for " << full_topic_name(a.name)
                  << " since broker startup\n";
        }
        return 0;
      },
      [](CLI::App* c, TopicArgs& a) {
        c->add_flag("-w,--wait-complete", a.wait, "Wait for the compaction to end");
      });
  add(g, table, "terminate", "Terminate a topic: no more messages may be published",
      [](Session& s, const TopicArgs& a) {
        auto path = topic_url(s, a.name, "/terminate");
        if (!path) return 1;
        auto response = s.call("POST", *path);
        if (!response) return 1;
        const Json id = Session::parse(*response);
        auto field = [&id](const char* key) -> std::string {
          if (!id.is_object() || !id.contains(key)) return "-1";
          return id[key].dump();
        };
        s.out() << "Topic successfully terminated at " << field("ledgerId") << ":"
                << field("entryId") << ":" << field("partitionIndex") << "\n";
        return 0;
      });

  // Topic-level policies (message TTL, retention, backlog quotas, deduplication, persistence,
  // inactive topic policies, producer and consumer limits), each with -g and get's -ap.
  add_policy_commands(g, table,
                      {true, "topic", "persistent://tenant/namespace/topic",
                       [](Session& s, const std::string& name, std::string_view suffix) {
                         return topic_url(s, name, suffix);
                       }});
}

}  // namespace magnetar::cli
