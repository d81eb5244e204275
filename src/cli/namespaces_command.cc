// `magnetar-admin namespaces ...`: /admin/v2/namespaces.

#include <fmt/format.h>

#include <cctype>
#include <memory>

#include "cli/arguments.h"
#include "cli/commands.h"
#include "cli/policy_commands.h"

namespace magnetar::cli {

// Named, so that a unity build keeps these helpers apart from the other command files'.
namespace namespaces_cmd {
namespace {

struct NamespaceArgs {
  std::string name;
  // create
  int bundles = 0;
  std::vector<std::string> clusters;
  // delete, clear-backlog
  bool force = false;
  // set-auto-topic-creation, set-is-allow-auto-update-schema, set-schema-validation-enforce
  bool enable = false;
  bool disable = false;
  std::string replicator;  // --enable-for-replicator
  bool applied = false;     // get-schema-validation-enforce
  // set-clusters
  std::string cluster_list;
  // set-auto-topic-creation (with enable, disable), set-schema-compatibility-strategy
  std::string topic_type;
  int num_partitions = 0;
  std::string compatibility;
  // grant-permission, revoke-permission, grant-/revoke-subscription-permission
  std::string role;
  std::vector<std::string> actions;
  std::vector<std::string> roles;
  // unload, split-bundle, clear-backlog
  std::string bundle;
  bool unload = false;
  std::string subscription;
  // topics
  std::string mode;
};

// "/admin/v2/namespaces/<tenant>/<ns><suffix>", or nullopt after printing why the name is bad.
std::optional<std::string> ns_path(Session& s, const std::string& name,
                                   std::string_view suffix = "") {
  auto ns = namespace_path(name);
  if (!ns.ok()) {
    (void)s.argument_error(ns.status().message());
    return std::nullopt;
  }
  return "/admin/v2/namespaces/" + *ns + std::string(suffix);
}

using Run = std::function<int(Session&, const NamespaceArgs&)>;

// A subcommand taking the namespace as its one positional argument; `options` adds the rest.
CLI::App* add(CLI::App* group, CommandTable& table, const std::string& name,
              const std::string& description, Run run,
              const std::function<void(CLI::App*, NamespaceArgs&)>& options = nullptr) {
  auto args = std::make_shared<NamespaceArgs>();
  CLI::App* cmd = group->add_subcommand(name, description);
  cmd->add_option("namespace", args->name, "tenant/namespace")->required();
  if (options) options(cmd, *args);
  table.on(cmd, [args, run = std::move(run)](Session& s) { return run(s, *args); });
  return cmd;
}

// GET <suffix> and print the answer (a list one item per line when `list`).
Run getter(std::string suffix, bool list = false) {
  return [suffix = std::move(suffix), list](Session& s, const NamespaceArgs& a) {
    auto path = ns_path(s, a.name, suffix);
    if (!path) return 1;
    return list ? s.print_list(*path) : s.print_value(*path);
  };
}

// `method` on <suffix> without a body.
Run changer(std::string method, std::string suffix) {
  return
      [method = std::move(method), suffix = std::move(suffix)](Session& s, const NamespaceArgs& a) {
        auto path = ns_path(s, a.name, suffix);
        if (!path) return 1;
        return s.change(method, *path);
      };
}

int create(Session& s, const NamespaceArgs& a) {
  auto path = ns_path(s, a.name);
  if (!path) return 1;
  if (a.bundles < 0) {
    return s.argument_error(
        "Invalid number of bundles. Number of bundles has to be in the range of (0, 2^32].");
  }
  Json policies = Json::object();
  if (a.bundles > 0) policies["bundles"] = {{"numBundles", a.bundles}};
  if (!a.clusters.empty()) policies["replication_clusters"] = a.clusters;
  return s.change("PUT", *path, policies.empty() ? "" : policies.dump());
}

int set_auto_topic_creation(Session& s, const NamespaceArgs& a) {
  if (a.enable == a.disable) {
    return s.argument_error("Need to specify either --enable or --disable");
  }
  Json o = {{"allowAutoTopicCreation", a.enable}};
  if (a.enable) {
    o["topicType"] = a.topic_type.empty() ? "non-partitioned" : a.topic_type;
    if (a.num_partitions > 0) o["defaultNumPartitions"] = a.num_partitions;
  }
  auto path = ns_path(s, a.name, "/autoTopicCreation");
  if (!path) return 1;
  return s.change("POST", *path, o.dump());
}

// set-is-allow-auto-update-schema, set-schema-validation-enforce: a bare boolean; the
// replicators' own auto-update setting rides as ?allowAutoUpdateSchemaWithReplicator=.
Run boolean_setter(std::string suffix) {
  return [suffix = std::move(suffix)](Session& s, const NamespaceArgs& a) {
    if (a.enable == a.disable) {
      return s.argument_error("Need to specify either --enable or --disable");
    }
    std::string query;
    if (!a.replicator.empty()) {
      if (a.replicator != "true" && a.replicator != "false") {
        return s.argument_error("--enable-for-replicator takes true or false");
      }
      query = "?allowAutoUpdateSchemaWithReplicator=" + a.replicator;
    }
    auto path = ns_path(s, a.name, suffix + query);
    return path ? s.change("POST", *path, a.enable ? "true" : "false") : 1;
  };
}

int set_schema_compatibility(Session& s, const NamespaceArgs& a) {
  auto path = ns_path(s, a.name, "/schemaCompatibilityStrategy");
  if (!path) return 1;
  return s.change("PUT", *path, Json(a.compatibility).dump());
}

int set_clusters(Session& s, const NamespaceArgs& a) {
  auto path = ns_path(s, a.name, "/replication");
  if (!path) return 1;
  return s.change("POST", *path, Json(split_list(a.cluster_list)).dump());
}

int grant_permission(Session& s, const NamespaceArgs& a) {
  auto path = ns_path(s, a.name, "/permissions/" + encode_segment(a.role));
  if (!path) return 1;
  return s.change("POST", *path, Json(a.actions).dump());
}

int revoke_permission(Session& s, const NamespaceArgs& a) {
  auto path = ns_path(s, a.name, "/permissions/" + encode_segment(a.role));
  if (!path) return 1;
  return s.change("DELETE", *path);
}

int grant_subscription_permission(Session& s, const NamespaceArgs& a) {
  auto path = ns_path(s, a.name, "/permissions/subscription/" + encode_segment(a.subscription));
  if (!path) return 1;
  return s.change("POST", *path, Json(a.roles).dump());
}

int revoke_subscription_permission(Session& s, const NamespaceArgs& a) {
  auto path = ns_path(
      s, a.name, "/permissions/" + encode_segment(a.subscription) + "/" + encode_segment(a.role));
  if (!path) return 1;
  return s.change("DELETE", *path);
}

int unload(Session& s, const NamespaceArgs& a) {
  const std::string suffix =
      a.bundle.empty() ? "/unload" : "/" + encode_segment(a.bundle) + "/unload";
  auto path = ns_path(s, a.name, suffix);
  if (!path) return 1;
  return s.change("PUT", *path);
}

int split_bundle(Session& s, const NamespaceArgs& a) {
  auto path = ns_path(
      s, a.name,
      fmt::format("/{}/split?unload={}", encode_segment(a.bundle), a.unload ? "true" : "false"));
  if (!path) return 1;
  return s.change("PUT", *path);
}

int list_topics(Session& s, const NamespaceArgs& a) {
  std::string query;
  if (!a.mode.empty()) {
    std::string mode = a.mode;
    for (char& c : mode) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    if (mode != "PERSISTENT" && mode != "NON_PERSISTENT" && mode != "ALL") {
      return s.argument_error("Invalid mode: persistent, non_persistent or all");
    }
    query = "?mode=" + mode;
  }
  auto path = ns_path(s, a.name, "/topics" + query);
  return path ? s.print_list(*path) : 1;
}

int clear_backlog(Session& s, const NamespaceArgs& a) {
  std::string suffix = a.bundle.empty() ? "" : "/" + encode_segment(a.bundle);
  suffix += "/clearBacklog";
  if (!a.subscription.empty()) suffix += "/" + encode_segment(a.subscription);
  auto path = ns_path(s, a.name, suffix);
  if (!path) return 1;
  if (!a.force && !s.confirm("Are you sure you want to clear the backlog?")) return 0;
  return s.change("POST", *path);
}

}  // namespace
}  // namespace namespaces_cmd

void add_namespace_commands(CLI::App& app, CommandTable& table) {
  using namespace namespaces_cmd;
  CLI::App* g = add_group(app, "namespaces", "Operations about namespaces");

  auto tenant = std::make_shared<std::string>();
  CLI::App* list = g->add_subcommand("list", "Get the namespaces of a tenant");
  list->add_option("tenant", *tenant, "Tenant name")->required();
  table.on(list, [tenant](Session& s) {
    return s.print_list("/admin/v2/namespaces/" + encode_segment(*tenant));
  });

  add(g, table, "topics", "Get the list of topics of a namespace", list_topics,
      [](CLI::App* c, NamespaceArgs& a) {
        c->add_option("-m,--mode", a.mode, "Topic domains: persistent, non_persistent or all");
      });
  add(g, table, "bundles", "Get the list of bundles of a namespace", getter("/bundles"));
  add(g, table, "policies", "Get the configuration policies of a namespace", getter(""));
  add(g, table, "create", "Create a new namespace", create, [](CLI::App* c, NamespaceArgs& a) {
    c->add_option("-b,--bundles", a.bundles, "Number of bundles to activate");
    c->add_option("-c,--clusters", a.clusters, "Comma separated list of replication clusters")
        ->delimiter(',');
  });
  add(
      g, table, "delete", "Delete a namespace",
      [](Session& s, const NamespaceArgs& a) {
        auto path = ns_path(s, a.name, a.force ? "?force=true" : "?force=false");
        return path ? s.change("DELETE", *path) : 1;
      },
      [](CLI::App* c, NamespaceArgs& a) {
        c->add_flag("-f,--force", a.force, "Delete the namespace and all its topics");
      });

  add(g, table, "permissions", "Get the permissions on a namespace",
      [](Session& s, const NamespaceArgs& a) {
        auto path = ns_path(s, a.name, "/permissions");
        return path ? s.print_map(*path) : 1;
      });
  add(g, table, "grant-permission", "Grant permissions on a namespace", grant_permission,
      [](CLI::App* c, NamespaceArgs& a) {
        c->add_option("--role", a.role, "Client role to grant permissions to")->required();
        c->add_option("--actions", a.actions,
                      "Actions to grant (produce,consume,sources,sinks,functions,packages)")
            ->required()
            ->delimiter(',');
      });
  add(g, table, "revoke-permission", "Revoke permissions on a namespace", revoke_permission,
      [](CLI::App* c, NamespaceArgs& a) {
        c->add_option("--role", a.role, "Client role to revoke permissions from")->required();
      });
  add(g, table, "grant-subscription-permission",
      "Grant permissions to access a subscription's admin api", grant_subscription_permission,
      [](CLI::App* c, NamespaceArgs& a) {
        c->add_option("--subscription", a.subscription, "Subscription name")->required();
        c->add_option("--roles", a.roles, "Client roles to grant (comma separated)")
            ->required()
            ->delimiter(',');
      });
  add(g, table, "revoke-subscription-permission",
      "Revoke permissions to access a subscription's admin api", revoke_subscription_permission,
      [](CLI::App* c, NamespaceArgs& a) {
        c->add_option("--subscription", a.subscription, "Subscription name")->required();
        c->add_option("--role", a.role, "Client role to revoke")->required();
      });

  add(g, table, "set-clusters", "Set the replication clusters of a namespace", set_clusters,
      [](CLI::App* c, NamespaceArgs& a) {
        c->add_option("-c,--clusters", a.cluster_list, "Comma separated replication cluster ids")
            ->required();
      });
  add(g, table, "get-clusters", "Get the replication clusters of a namespace",
      getter("/replication", true));

  add(g, table, "set-auto-topic-creation", "Enable or disable auto topic creation on a namespace",
      set_auto_topic_creation, [](CLI::App* c, NamespaceArgs& a) {
        c->add_flag("-e,--enable", a.enable, "Allow topics to be created on first use");
        c->add_flag("-d,--disable", a.disable, "Do not allow it");
        c->add_option("-t,--type", a.topic_type, "partitioned or non-partitioned (default)");
        c->add_option("-n,--num-partitions", a.num_partitions,
                      "Partitions of an auto-created partitioned topic");
      });
  add(g, table, "get-auto-topic-creation", "Get the auto topic creation override of a namespace",
      getter("/autoTopicCreation"));
  add(g, table, "remove-auto-topic-creation",
      "Remove the auto topic creation override of a namespace",
      changer("DELETE", "/autoTopicCreation"));
  add(g, table, "set-schema-compatibility-strategy",
      "Set the schema compatibility strategy of a namespace", set_schema_compatibility,
      [](CLI::App* c, NamespaceArgs& a) {
        c->add_option("-c,--compatibility", a.compatibility,
                      "ALWAYS_INCOMPATIBLE, ALWAYS_COMPATIBLE, BACKWARD, FORWARD, FULL, "
                      "BACKWARD_TRANSITIVE, FORWARD_TRANSITIVE, FULL_TRANSITIVE or UNDEFINED")
            ->required();
      });
  add(g, table, "get-schema-compatibility-strategy",
      "Get the schema compatibility strategy of a namespace",
      getter("/schemaCompatibilityStrategy"));

  add(g, table, "set-is-allow-auto-update-schema",
      "Allow producers (or not) to add a new schema version to a namespace's topics",
      boolean_setter("/isAllowAutoUpdateSchema"), [](CLI::App* c, NamespaceArgs& a) {
        c->add_flag("-e,--enable", a.enable, "Allow it");
        c->add_flag("-d,--disable", a.disable, "Do not allow it");
        c->add_option("--enable-for-replicator", a.replicator,
                      "true or false: the same for geo-replicators' producers");
      });
  add(g, table, "get-is-allow-auto-update-schema",
      "Whether producers may add a new schema version to a namespace's topics",
      getter("/isAllowAutoUpdateSchema"));
  add(g, table, "set-schema-validation-enforce",
      "Refuse (or not) producers without a schema on a namespace's topics that have one",
      boolean_setter("/schemaValidationEnforced"), [](CLI::App* c, NamespaceArgs& a) {
        c->add_flag("-e,--enable", a.enable, "Refuse them");
        c->add_flag("-d,--disable", a.disable, "Accept them");
      });
  add(
      g, table, "get-schema-validation-enforce",
      "Whether producers without a schema are refused on a namespace's topics that have one",
      [](Session& s, const NamespaceArgs& a) {
        auto path = ns_path(s, a.name,
                            a.applied ? "/schemaValidationEnforced?applied=true"
                                      : "/schemaValidationEnforced");
        return path ? s.print_value(*path) : 1;
      },
      [](CLI::App* c, NamespaceArgs& a) {
        c->add_flag("-a,--applied", a.applied, "The value in force (the broker's when unset)");
      });

  // The policies a namespace shares with a topic (message TTL, retention, backlog quotas,
  // deduplication, persistence, inactive topic policies, producer and consumer limits).
  add_policy_commands(g, table,
                      {false, "namespace", "tenant/namespace",
                       [](Session& s, const std::string& name, std::string_view suffix) {
                         return ns_path(s, name, suffix);
                       }});

  add(g, table, "unload", "Unload a namespace, or one of its bundles, from its broker", unload,
      [](CLI::App* c, NamespaceArgs& a) {
        c->add_option("-b,--bundle", a.bundle, "Bundle range, e.g. 0x00000000_0xffffffff");
      });
  add(g, table, "split-bundle", "Split a namespace bundle in two", split_bundle,
      [](CLI::App* c, NamespaceArgs& a) {
        c->add_option("-b,--bundle", a.bundle, "Bundle range, e.g. 0x00000000_0xffffffff")
            ->required();
        c->add_flag("-u,--unload", a.unload, "Unload the new bundles after the split");
      });
  add(g, table, "clear-backlog", "Clear the backlog of every subscription of a namespace",
      clear_backlog, [](CLI::App* c, NamespaceArgs& a) {
        c->add_option("-s,--sub", a.subscription, "Only this subscription");
        c->add_option("-b,--bundle", a.bundle, "Only this bundle");
        c->add_flag("--force", a.force, "Do not ask for confirmation; also -force");
      });
}

}  // namespace magnetar::cli
