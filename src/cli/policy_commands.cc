#include "cli/policy_commands.h"

#include <fmt/format.h>

#include <memory>
#include <vector>

#include "common/units.h"

namespace magnetar::cli {

namespace {

struct PolicyArgs {
  std::string name;
  bool applied = false;  // get: the value in force (topics)
  bool global = false;   // topics: the global level
  // set-message-ttl, set-retention, set-backlog-quota, remove-backlog-quota,
  // set-compaction-threshold (size)
  std::string ttl;
  std::string size;
  std::string time;
  std::string limit;
  std::string limit_time;
  std::string policy;
  std::string type = "destination_storage";
  // set-deduplication, set-inactive-topic-policies (-e/-d)
  bool enable = false;
  bool disable = false;
  // set-deduplication-snapshot-interval, set-max-producers, set-max-consumers
  int64_t count = 0;
  // set-persistence
  int32_t ensemble = 0;
  int32_t write_quorum = 0;
  int32_t ack_quorum = 0;
  double mark_delete_rate = 0;
  // set-inactive-topic-policies
  std::string duration;
  std::string delete_mode;
  // set-delayed-delivery (relative times)
  std::string tick_time = "1s";
  std::string max_delay = "0";
  // set-*-dispatch-rate, set-publish-rate, set-subscribe-rate (-1: not set)
  int64_t msg_rate = -1;
  int64_t byte_rate = -1;
  int32_t period = 1;
  bool relative = false;
  int32_t subscribe_rate = -1;
  int32_t subscribe_period = 30;
};

using PolicyRun = std::function<int(Session&, const PolicyArgs&)>;

// The REST path of a policy route of `t`: `route` with `query`, and for a topic ?applied
// (a get's) and ?isGlobal.
std::optional<std::string> url(const PolicyTarget& t, Session& s, const PolicyArgs& a,
                               std::string_view route, bool get, std::string_view query = "") {
  std::string suffix = "/" + std::string(route);
  std::vector<std::string> params;
  if (!query.empty()) params.emplace_back(query);
  if (t.topic) {
    if (get && a.applied) params.emplace_back("applied=true");
    if (a.global) params.emplace_back("isGlobal=true");
  }
  for (size_t i = 0; i < params.size(); ++i) suffix += (i == 0 ? "?" : "&") + params[i];
  return t.url(s, a.name, suffix);
}

class Commands {
 public:
  Commands(CLI::App* group, CommandTable& table, const PolicyTarget& target)
      : group_(group), table_(table), target_(std::make_shared<PolicyTarget>(target)) {}

  void add_all();

 private:
  // set-/get-/remove- of the dispatch, publish and subscribe rates.
  void add_rate_commands();
  // A subcommand taking the namespace or topic as its one positional argument.
  CLI::App* add(const std::string& name, const std::string& description, PolicyRun run,
                const std::function<void(CLI::App*, PolicyArgs&)>& options = nullptr);
  // get-<noun>, remove-<noun> of `route`; `print` prints the answer.
  void add_get_remove(const std::string& noun, const std::string& what, std::string route,
                      std::function<void(Session&, const Json&)> print = nullptr);

  CLI::App* group_;
  CommandTable& table_;
  const std::shared_ptr<const PolicyTarget> target_;
};

CLI::App* Commands::add(const std::string& name, const std::string& description, PolicyRun run,
                        const std::function<void(CLI::App*, PolicyArgs&)>& options) {
  auto args = std::make_shared<PolicyArgs>();
  CLI::App* cmd = group_->add_subcommand(name, description);
  cmd->add_option(target_->positional, args->name, target_->positional_help)->required();
  if (target_->topic) {
    cmd->add_flag("-g,--global", args->global, "The global policy (every cluster applies it)");
  }
  if (options) options(cmd, *args);
  table_.on(cmd, [args, run = std::move(run)](Session& s) { return run(s, *args); });
  return cmd;
}


void Commands::add_get_remove(const std::string& noun, const std::string& what, std::string route,
                              std::function<void(Session&, const Json&)> print) {
  const std::string of = target_->topic ? "a topic" : "a namespace";
  add(
      "get-" + noun, fmt::format("Get the {} of {}", what, of),
      [t = target_, route, print](Session& s, const PolicyArgs& a) {
        auto path = url(*t, s, a, route, true);
        if (!path) return 1;
        if (!print) return s.print_value(*path);
        auto response = s.call("GET", *path);
        if (!response) return 1;
        print(s, Session::parse(*response));
        return 0;
      },
      [t = target_](CLI::App* c, PolicyArgs& a) {
        if (t->topic) c->add_flag("-a,--applied", a.applied, "The value in force; also -ap");
      });
  add("remove-" + noun, fmt::format("Remove the {} of {}", what, of),
      [t = target_, route](Session& s, const PolicyArgs& a) {
        auto path = url(*t, s, a, route, false);
        return path ? s.change("DELETE", *path) : 1;
      });
}

// What pulsar-admin prints for a policy object: its fields in the Java class's order.
std::function<void(Session&, const Json&)> ordered(std::initializer_list<const char*> order) {
  std::vector<const char*> keys(order);
  return [keys](Session& s, const Json& j) {
    if (!j.is_object()) {
      s.print(j);
      return;
    }
    std::string out = "{";
    const char* sep = "\n";
    auto field = [&](const std::string& key, const Json& value) {
      out += fmt::format("{}  \"{}\" : {}", sep, key, pretty_json(value));
      sep = ",\n";
    };
    for (const char* key : keys) {
      if (j.contains(key)) field(key, j[key]);
    }
    for (const auto& [key, value] : j.items()) {
      bool listed = false;
      for (const char* k : keys) listed |= key == k;
      if (!listed) field(key, value);
    }
    s.out() << out << (j.empty() ? "}" : "\n}") << "\n";
  };
}

bool valid_quota_type(const std::string& type) {
  return type == "destination_storage" || type == "message_age";
}

int set_retention(Session& s, const std::optional<std::string>& path, const PolicyArgs& a) {
  if (!path) return 1;
  auto size = parse_size(a.size);
  if (!size.ok()) return s.argument_error(size.status().message());
  auto seconds = parse_relative_seconds(a.time, /*allow_infinite=*/true);
  if (!seconds.ok()) return s.argument_error(seconds.status().message());
  const int64_t size_mb = *size == -1 ? -1 : *size / (1024 * 1024);
  const int64_t minutes = *seconds == -1 ? -1 : *seconds / 60;
  return s.change("POST", *path,
                  Json{{"retentionTimeInMinutes", minutes}, {"retentionSizeInMB", size_mb}}.dump());
}

// The backlog quota body, or the exit code of a refusal.
std::variant<Json, int> backlog_quota_body(Session& s, const PolicyArgs& a) {
  if (!valid_quota_type(a.type)) {
    return s.argument_error(
        fmt::format("Invalid backlog quota type '{}': destination_storage or message_age", a.type));
  }
  if (a.policy != "producer_request_hold" && a.policy != "producer_exception" &&
      a.policy != "consumer_backlog_eviction") {
    return s.argument_error(fmt::format(
        "Invalid retention policy type '{}'. Valid options are: [producer_request_hold, "
        "producer_exception, consumer_backlog_eviction]",
        a.policy));
  }
  int64_t limit_size = -1;
  int64_t limit_time = -1;
  if (!a.limit.empty()) {
    auto size = parse_size(a.limit);
    if (!size.ok()) return s.argument_error(size.status().message());
    limit_size = *size;
  }
  if (!a.limit_time.empty()) {
    auto seconds = parse_relative_seconds(a.limit_time, /*allow_infinite=*/true);
    if (!seconds.ok()) return s.argument_error(seconds.status().message());
    limit_time = *seconds;
  }
  if (a.type == "destination_storage" && a.limit.empty()) {
    return s.argument_error("Quota type of 'destination_storage' needs a size limit (--limit)");
  }
  if (a.type == "message_age" && a.limit_time.empty()) {
    return s.argument_error("Quota type of 'message_age' needs a time limit (--limitTime)");
  }
  return Json{{"limitSize", limit_size}, {"limitTime", limit_time}, {"policy", a.policy}};
}

// get-backlog-quotas: pulsar-admin prints the map with each BacklogQuota's toString().
void print_backlog_quotas(Session& s, const Json& map) {
  if (!map.is_object()) return;
  for (const auto& [type, q] : map.items()) {
    if (!q.is_object()) continue;
    const Json size = q.contains("limitSize") ? q["limitSize"] : q.value("limit", Json(-1));
    s.out() << fmt::format("{}    BacklogQuotaImpl(limit={}, limitSize={}, limitTime={}, policy={})\n",
                           type, size.dump(), size.dump(), q.value("limitTime", Json(-1)).dump(),
                           q.value("policy", ""));
  }
}

int need_one_of(Session& s, const PolicyArgs& a) {
  return a.enable == a.disable ? s.argument_error("Need to specify either --enable or --disable")
                               : 0;
}

void Commands::add_all() {
  const bool topic = target_->topic;
  const std::string of = topic ? "a topic" : "a namespace";

  // Message TTL: a namespace's in the body, a topic's as ?messageTTL= (as Pulsar's routes).
  add(
      "set-message-ttl", "Set the message TTL of " + of,
      [t = target_, topic](Session& s, const PolicyArgs& a) {
        auto seconds = parse_relative_seconds(a.ttl);
        if (!seconds.ok()) return s.argument_error(seconds.status().message());
        if (topic) {
          auto path = url(*t, s, a, "messageTTL", false, fmt::format("messageTTL={}", *seconds));
          return path ? s.change("POST", *path) : 1;
        }
        auto path = url(*t, s, a, "messageTTL", false);
        return path ? s.change("POST", *path, std::to_string(*seconds)) : 1;
      },
      [topic](CLI::App* c, PolicyArgs& a) {
        c->add_option(topic ? "-t,--ttl,--messageTTL" : "--messageTTL,--ttl", a.ttl,
                      "Message TTL (eg: 3600, 100m, 3h, 2d, 5w; 0 disables TTL); also -ttl")
            ->required();
      });
  add_get_remove("message-ttl", "message TTL", "messageTTL");

  add(
      "set-retention", "Set the retention policy of " + of,
      [t = target_](Session& s, const PolicyArgs& a) {
        return set_retention(s, url(*t, s, a, "retention", false), a);
      },
      [](CLI::App* c, PolicyArgs& a) {
        c->add_option("-s,--size", a.size, "Retention size limit (eg: 10M, 16G, 3T; -1: none)")
            ->required();
        c->add_option("-t,--time", a.time,
                      "Retention time (eg: 100m, 3h, 2d, 5w; no unit: seconds; -1: none)")
            ->required();
      });
  add_get_remove("retention", "retention policy", "retention",
                 ordered({"retentionTimeInMinutes", "retentionSizeInMB"}));

  add(
      "set-backlog-quota", "Set a backlog quota policy of " + of,
      [t = target_](Session& s, const PolicyArgs& a) {
        auto body = backlog_quota_body(s, a);
        if (auto* code = std::get_if<int>(&body)) return *code;
        auto path = url(*t, s, a, "backlogQuota", false, "backlogQuotaType=" + a.type);
        return path ? s.change("POST", *path, std::get<Json>(body).dump()) : 1;
      },
      [](CLI::App* c, PolicyArgs& a) {
        c->add_option("-l,--limit", a.limit, "Size limit (eg: 10M, 16G)");
        c->add_option("--limitTime", a.limit_time,
                      "Time limit (eg: 3600, 100m, 3h, 2d, 5w); also -lt");
        c->add_option("-p,--policy", a.policy,
                      "What to do at the limit: producer_request_hold, producer_exception or "
                      "consumer_backlog_eviction")
            ->required();
        c->add_option("-t,--type", a.type,
                      "Quota type: destination_storage (default) or message_age; also -bt");
      });
  add(
      "get-backlog-quotas", "Get the backlog quota policies of " + of,
      [t = target_](Session& s, const PolicyArgs& a) {
        auto path = url(*t, s, a, "backlogQuotaMap", true);
        if (!path) return 1;
        auto response = s.call("GET", *path);
        if (!response) return 1;
        print_backlog_quotas(s, Session::parse(*response));
        return 0;
      },
      [topic](CLI::App* c, PolicyArgs& a) {
        if (topic) c->add_flag("-a,--applied", a.applied, "The value in force; also -ap");
      });
  add(
      "remove-backlog-quota", "Remove a backlog quota policy of " + of,
      [t = target_](Session& s, const PolicyArgs& a) {
        if (!valid_quota_type(a.type)) {
          return s.argument_error(fmt::format(
              "Invalid backlog quota type '{}': destination_storage or message_age", a.type));
        }
        auto path = url(*t, s, a, "backlogQuota", false, "backlogQuotaType=" + a.type);
        return path ? s.change("DELETE", *path) : 1;
      },
      [](CLI::App* c, PolicyArgs& a) {
        c->add_option("-t,--type", a.type,
                      "Quota type: destination_storage (default) or message_age; also -bt");
      });

  const std::string dedup = topic ? "deduplicationEnabled" : "deduplication";
  add(
      "set-deduplication", "Enable or disable message deduplication on " + of,
      [t = target_, dedup](Session& s, const PolicyArgs& a) {
        if (int refused = need_one_of(s, a)) return refused;
        auto path = url(*t, s, a, dedup, false);
        return path ? s.change("POST", *path, a.enable ? "true" : "false") : 1;
      },
      [](CLI::App* c, PolicyArgs& a) {
        c->add_flag("-e,--enable", a.enable, "Enable deduplication");
        c->add_flag("-d,--disable", a.disable, "Disable deduplication");
      });
  add_get_remove("deduplication", "deduplication setting", dedup);

  add(
      "set-deduplication-snapshot-interval",
      "Set the deduplication snapshot interval (seconds) of " + of,
      [t = target_](Session& s, const PolicyArgs& a) {
        auto path = url(*t, s, a, "deduplicationSnapshotInterval", false);
        return path ? s.change("POST", *path, std::to_string(a.count)) : 1;
      },
      [](CLI::App* c, PolicyArgs& a) {
        c->add_option("-i,--interval", a.count, "Seconds between snapshots (0: by entries only)")
            ->required();
      });
  add_get_remove("deduplication-snapshot-interval", "deduplication snapshot interval",
                 "deduplicationSnapshotInterval");

  add(
      "set-persistence", "Set the persistence policies (quorums) of " + of,
      [t = target_](Session& s, const PolicyArgs& a) {
        auto path = url(*t, s, a, "persistence", false);
        if (!path) return 1;
        const Json body = {{"bookkeeperEnsemble", a.ensemble},
                           {"bookkeeperWriteQuorum", a.write_quorum},
                           {"bookkeeperAckQuorum", a.ack_quorum},
                           {"managedLedgerMaxMarkDeleteRate", a.mark_delete_rate}};
        return s.change("POST", *path, body.dump());
      },
      [topic](CLI::App* c, PolicyArgs& a) {
        auto* e = c->add_option("-e,--bookkeeper-ensemble", a.ensemble,
                                "Bookies a ledger is striped over");
        auto* w = c->add_option("-w,--bookkeeper-write-quorum", a.write_quorum,
                                "Copies of each entry");
        auto* q = c->add_option("-a,--bookkeeper-ack-quorum", a.ack_quorum,
                                "Acknowledgements an entry waits for");
        c->add_option("-r,--ml-mark-delete-max-rate", a.mark_delete_rate,
                      "Mark-delete operations per second of a cursor (0: no limit)");
        if (!topic) {  // pulsar-admin namespaces requires them; topics defaults them to 0
          e->required();
          w->required();
          q->required();
        }
      });
  add_get_remove("persistence", "persistence policies", "persistence",
                 ordered({"bookkeeperEnsemble", "bookkeeperWriteQuorum", "bookkeeperAckQuorum",
                          "managedLedgerMaxMarkDeleteRate"}));

  add(
      "set-inactive-topic-policies", "Set the inactive topic policies of " + of,
      [t = target_](Session& s, const PolicyArgs& a) {
        if (int refused = need_one_of(s, a)) return refused;
        auto seconds = parse_relative_seconds(a.duration);
        if (!seconds.ok()) return s.argument_error(seconds.status().message());
        if (a.delete_mode != "delete_when_no_subscriptions" &&
            a.delete_mode != "delete_when_subscriptions_caught_up") {
          return s.argument_error(fmt::format(
              "delete mode can only be set to delete_when_no_subscriptions or "
              "delete_when_subscriptions_caught_up, not {}",
              a.delete_mode));
        }
        auto path = url(*t, s, a, "inactiveTopicPolicies", false);
        if (!path) return 1;
        const Json body = {{"inactiveTopicDeleteMode", a.delete_mode},
                           {"maxInactiveDurationSeconds", *seconds},
                           {"deleteWhileInactive", a.enable}};
        return s.change("POST", *path, body.dump());
      },
      [](CLI::App* c, PolicyArgs& a) {
        c->add_flag("-e,--enable-delete-while-inactive", a.enable, "Delete inactive topics");
        c->add_flag("-d,--disable-delete-while-inactive", a.disable, "Keep them");
        c->add_option("-t,--max-inactive-duration", a.duration,
                      "Inactive time before deletion (eg: 1s, 10s, 1m, 5h, 3d)")
            ->required();
        c->add_option("-m,--delete-mode", a.delete_mode,
                      "delete_when_no_subscriptions or delete_when_subscriptions_caught_up")
            ->required();
      });
  add_get_remove("inactive-topic-policies", "inactive topic policies", "inactiveTopicPolicies",
                 ordered({"inactiveTopicDeleteMode", "maxInactiveDurationSeconds",
                          "deleteWhileInactive"}));

  if (!topic) {  // (a topic's delayedDelivery route is not served yet)
    add(
        "set-delayed-delivery", "Set the delayed delivery policy of " + of,
        [t = target_](Session& s, const PolicyArgs& a) {
          if (int refused = need_one_of(s, a)) return refused;
          auto tick = parse_relative_seconds(a.tick_time);
          if (!tick.ok()) return s.argument_error(tick.status().message());
          auto max_delay = parse_relative_seconds(a.max_delay);
          if (!max_delay.ok()) return s.argument_error(max_delay.status().message());
          auto path = url(*t, s, a, "delayedDelivery", false);
          if (!path) return 1;
          const Json body = {{"tickTime", *tick * 1000},
                             {"active", a.enable},
                             {"maxDeliveryDelayInMillis", *max_delay * 1000}};
          return s.change("POST", *path, body.dump());
        },
        [](CLI::App* c, PolicyArgs& a) {
          c->add_flag("-e,--enable", a.enable, "Enable delayed delivery messages");
          c->add_flag("-d,--disable", a.disable, "Disable delayed delivery messages");
          c->add_option("-t,--time", a.tick_time,
                        "The tick time for when retrying on delayed delivery messages, affecting "
                        "the accuracy of the delivery time compared to the scheduled time (eg: "
                        "1s, 10s, 1m, 5h, 3d)");
          c->add_option("--maxDelay", a.max_delay,
                        "The max allowed delay for delayed delivery (eg: 1s, 10s, 1m, 5h, 3d); "
                        "also -md");
        });
    add_get_remove("delayed-delivery", "delayed delivery policy", "delayedDelivery",
                   ordered({"tickTime", "active", "maxDeliveryDelayInMillis"}));
  }

  // Max producers and consumers: pulsar-admin's names differ between the two groups.
  struct Limit {
    const char* noun;
    const char* what;
    const char* route;
    const char* flags;
  };
  const Limit limits[] = {
      topic ? Limit{"max-producers", "maximum producers", "maxProducers", "-p,--max-producers"}
            : Limit{"max-producers-per-topic", "maximum producers per topic",
                    "maxProducersPerTopic", "-p,--max-producers-per-topic"},
      topic ? Limit{"max-consumers", "maximum consumers", "maxConsumers", "-c,--max-consumers"}
            : Limit{"max-consumers-per-topic", "maximum consumers per topic",
                    "maxConsumersPerTopic", "-c,--max-consumers-per-topic"},
  };
  for (const Limit& l : limits) {
    const std::string route = l.route;
    const std::string flags = l.flags;
    add(
        std::string("set-") + l.noun, fmt::format("Set the {} of {}", l.what, of),
        [t = target_, route](Session& s, const PolicyArgs& a) {
          auto path = url(*t, s, a, route, false);
          return path ? s.change("POST", *path, std::to_string(a.count)) : 1;
        },
        [flags](CLI::App* c, PolicyArgs& a) {
          c->add_option(flags, a.count, "The limit (0: none)")->required();
        });
    add_get_remove(l.noun, l.what, route);
  }

  // Compaction threshold: a namespace's is set with PUT, a topic's with POST (Pulsar's).
  add(
      "set-compaction-threshold", "Set the compaction threshold of " + of,
      [t = target_, topic](Session& s, const PolicyArgs& a) {
        auto bytes = parse_size(a.size);
        if (!bytes.ok()) return s.argument_error(bytes.status().message());
        auto path = url(*t, s, a, "compactionThreshold", false);
        return path ? s.change(topic ? "POST" : "PUT", *path, std::to_string(*bytes)) : 1;
      },
      [](CLI::App* c, PolicyArgs& a) {
        c->add_option("-t,--threshold", a.size,
                      "Backlog bytes that start a compaction (eg: 10M, 16G, 3T; 0: never)")
            ->required();
      });
  add_get_remove("compaction-threshold", "compaction threshold", "compactionThreshold");

  add_rate_commands();
}

void Commands::add_rate_commands() {
  const std::string of = target_->topic ? "a topic" : "a namespace";
  struct Dispatch {
    const char* noun;
    const char* what;
    const char* route;
    bool relative;  // takes --relative-to-publish-rate
  };
  const Dispatch dispatches[] = {
      {"dispatch-rate", "message dispatch rate", "dispatchRate", true},
      {"subscription-dispatch-rate", "dispatch rate of each subscription",
       "subscriptionDispatchRate", true},
      // pulsar-admin namespaces set-replicator-dispatch-rate has no -rp (topics' has).
      {"replicator-dispatch-rate", "dispatch rate of each replicator", "replicatorDispatchRate",
       target_->topic},
  };
  for (const Dispatch& d : dispatches) {
    const std::string route = d.route;
    const bool relative = d.relative;
    add(
        std::string("set-") + d.noun, fmt::format("Set the {} of {}", d.what, of),
        [t = target_, route](Session& s, const PolicyArgs& a) {
          auto path = url(*t, s, a, route, false);
          if (!path) return 1;
          const Json body = {{"dispatchThrottlingRateInMsg", a.msg_rate},
                             {"dispatchThrottlingRateInByte", a.byte_rate},
                             {"relativeToPublishRate", a.relative},
                             {"ratePeriodInSecond", a.period}};
          return s.change("POST", *path, body.dump());
        },
        [relative](CLI::App* c, PolicyArgs& a) {
          c->add_option("--msg-dispatch-rate", a.msg_rate,
                        "Messages per period (-1: not limited); also -md");
          c->add_option("--byte-dispatch-rate", a.byte_rate,
                        "Bytes per period (-1: not limited); also -bd");
          c->add_option("--dispatch-rate-period", a.period,
                        "The period in seconds (default 1); also -dt");
          if (relative) {
            c->add_flag("--relative-to-publish-rate", a.relative,
                        "The limit is the publish rate plus the rates given; also -rp");
          }
        });
    add_get_remove(d.noun, d.what, route,
                   ordered({"dispatchThrottlingRateInMsg", "dispatchThrottlingRateInByte",
                            "relativeToPublishRate", "ratePeriodInSecond"}));
  }

  add(
      "set-publish-rate", "Set the message publish rate of " + of,
      [t = target_](Session& s, const PolicyArgs& a) {
        auto path = url(*t, s, a, "publishRate", false);
        if (!path) return 1;
        const Json body = {{"publishThrottlingRateInMsg", a.msg_rate},
                           {"publishThrottlingRateInByte", a.byte_rate}};
        return s.change("POST", *path, body.dump());
      },
      [](CLI::App* c, PolicyArgs& a) {
        c->add_option("-m,--msg-publish-rate", a.msg_rate,
                      "Messages per second (-1: not limited)");
        c->add_option("-b,--byte-publish-rate", a.byte_rate, "Bytes per second (-1: not limited)");
      });
  add_get_remove("publish-rate", "message publish rate", "publishRate",
                 ordered({"publishThrottlingRateInMsg", "publishThrottlingRateInByte"}));

  add(
      "set-subscribe-rate", "Set the subscribe rate per consumer of " + of,
      [t = target_](Session& s, const PolicyArgs& a) {
        auto path = url(*t, s, a, "subscribeRate", false);
        if (!path) return 1;
        const Json body = {{"subscribeThrottlingRatePerConsumer", a.subscribe_rate},
                           {"ratePeriodInSecond", a.subscribe_period}};
        return s.change("POST", *path, body.dump());
      },
      [](CLI::App* c, PolicyArgs& a) {
        c->add_option("--subscribe-rate", a.subscribe_rate,
                      "Subscribes per consumer and period (-1: not limited); also -sr");
        c->add_option("--subscribe-rate-period", a.subscribe_period,
                      "The period in seconds (default 30); also -st");
      });
  add_get_remove("subscribe-rate", "subscribe rate per consumer", "subscribeRate",
                 ordered({"subscribeThrottlingRatePerConsumer", "ratePeriodInSecond"}));
}

}  // namespace

void add_policy_commands(CLI::App* group, CommandTable& table, const PolicyTarget& target) {
  Commands(group, table, target).add_all();
}

void print_ordered(Session& s, const Json& value, std::initializer_list<const char*> order) {
  ordered(order)(s, value);
}

}  // namespace magnetar::cli
