// `magnetar-admin brokers ...`: /admin/v2/brokers.

#include <memory>

#include "cli/arguments.h"
#include "cli/commands.h"

namespace magnetar::cli {

void add_broker_commands(CLI::App& app, CommandTable& table) {
  CLI::App* g = add_group(app, "brokers", "Operations about brokers");

  auto cluster = std::make_shared<std::string>();
  CLI::App* list = g->add_subcommand("list", "List the active brokers of a cluster");
  list->add_option("cluster", *cluster, "Cluster name (default: this broker's cluster)");
  table.on(list, [cluster](Session& s) {
    return s.print_list(cluster->empty() ? "/admin/v2/brokers"
                                         : "/admin/v2/brokers/" + encode_segment(*cluster));
  });

  CLI::App* health = g->add_subcommand("healthcheck", "Run a health check against the broker");
  table.on(health, [](Session& s) {
    if (!s.call("GET", "/admin/v2/brokers/health")) return 1;
    s.out() << "ok\n";
    return 0;
  });

  CLI::App* leader = g->add_subcommand("leader-broker", "Get the leader broker");
  table.on(leader, [](Session& s) { return s.print_value("/admin/v2/brokers/leaderBroker"); });

  CLI::App* internal =
      g->add_subcommand("get-internal-config", "Get the internal configuration of the broker");
  table.on(internal,
           [](Session& s) { return s.print_value("/admin/v2/brokers/internal-configuration"); });

  CLI::App* runtime =
      g->add_subcommand("get-runtime-config", "Get the runtime configuration of the broker");
  table.on(runtime,
           [](Session& s) { return s.print_map("/admin/v2/brokers/configuration/runtime"); });

  CLI::App* dynamic =
      g->add_subcommand("list-dynamic-config", "Get the keys that may be updated at runtime");
  table.on(dynamic, [](Session& s) { return s.print_list("/admin/v2/brokers/configuration"); });

  auto key = std::make_shared<std::string>();
  auto value = std::make_shared<std::string>();
  CLI::App* update =
      g->add_subcommand("update-dynamic-config", "Override a dynamic key on every broker of the cluster");
  update->add_option("-c,--config", *key, "The key (list-dynamic-config lists them)")->required();
  update->add_option("-v,--value", *value, "Its new value")->required();
  table.on(update, [key, value](Session& s) {
    return s.change("POST", "/admin/v2/brokers/configuration/" + encode_segment(*key) + "/" +
                                encode_segment(*value));
  });
  CLI::App* remove =
      g->add_subcommand("delete-dynamic-config", "Drop the override of a dynamic key");
  remove->add_option("-c,--config", *key, "The key")->required();
  table.on(remove, [key](Session& s) {
    return s.change("DELETE", "/admin/v2/brokers/configuration/" + encode_segment(*key));
  });

  CLI::App* values = g->add_subcommand("get-all-dynamic-config",
                                       "Get the values of the keys updated at runtime");
  table.on(values,
           [](Session& s) { return s.print_map("/admin/v2/brokers/configuration/values"); });

  CLI::App* version = g->add_subcommand("version", "Get the version of the broker");
  table.on(version, [](Session& s) { return s.print_value("/admin/v2/brokers/version"); });

  // namespaces <cluster> --url host:port: the bundles that broker owns, as pulsar-admin prints
  // its map of NamespaceOwnershipStatus.
  auto owned_cluster = std::make_shared<std::string>();
  auto owned_url = std::make_shared<std::string>();
  CLI::App* owned = g->add_subcommand("namespaces", "List the namespace bundles a broker owns");
  owned->add_option("cluster", *owned_cluster, "Cluster name")->required();
  owned->add_option("-u,--url", *owned_url, "The broker's web address, host:port")->required();
  table.on(owned, [owned_cluster, owned_url](Session& s) {
    std::string broker = *owned_url;
    if (auto scheme = broker.find("://"); scheme != std::string::npos) {
      broker = broker.substr(scheme + 3);
    }
    while (!broker.empty() && broker.back() == '/') broker.pop_back();
    auto response = s.call("GET", "/admin/v2/brokers/" + encode_segment(*owned_cluster) + "/" +
                                      encode_segment(broker) + "/ownedNamespaces");
    if (!response) return 1;
    const Json map = Session::parse(*response);
    if (!map.is_object()) return 0;
    for (const auto& [bundle, status] : map.items()) {
      s.out() << bundle << "    [broker_assignment=" << status.value("broker_assignment", "")
              << " is_controlled=" << (status.value("is_controlled", false) ? "true" : "false")
              << " is_active=" << (status.value("is_active", false) ? "true" : "false") << "]\n";
    }
    return 0;
  });
}

// `magnetar-admin broker-stats ...`: /admin/v2/broker-stats.
void add_broker_stats_commands(CLI::App& app, CommandTable& table) {
  CLI::App* g = add_group(app, "broker-stats", "Operations to collect broker statistics");
  // Printed as pulsar-admin prints them: compact JSON, or indented with -i.
  auto add = [&](const char* name, const char* description, std::string path) {
    auto indent = std::make_shared<bool>(false);
    CLI::App* cmd = g->add_subcommand(name, description);
    cmd->add_flag("-i,--indent", *indent, "Indent the JSON output");
    table.on(cmd, [indent, path = std::move(path)](Session& s) {
      auto response = s.call("GET", path);
      if (!response) return 1;
      s.out() << Session::parse(*response).dump(*indent ? 4 : -1) << "\n";
      return 0;
    });
  };
  add("topics", "The stats of every topic this broker serves, by namespace and bundle",
      "/admin/v2/broker-stats/topics");
  add("load-report", "This broker's load report", "/admin/v2/broker-stats/load-report");
  add("monitoring-metrics", "The broker's metrics in Pulsar's JSON form",
      "/admin/v2/broker-stats/metrics");
  add("mbeans", "The broker's JMX beans (none: not a JVM)", "/admin/v2/broker-stats/mbeans");
  auto allocator = std::make_shared<std::string>();
  CLI::App* alloc = g->add_subcommand("allocator-stats",
                                      "An allocator's stats (default: the broker's heap)");
  alloc->add_option("allocator", *allocator, "Allocator name")->required();
  table.on(alloc, [allocator](Session& s) {
    return s.print_value("/admin/v2/broker-stats/allocator-stats/" + encode_segment(*allocator));
  });
}

}  // namespace magnetar::cli
