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

  CLI::App* values = g->add_subcommand("get-all-dynamic-config",
                                       "Get the values of the keys updated at runtime");
  table.on(values,
           [](Session& s) { return s.print_map("/admin/v2/brokers/configuration/values"); });

  CLI::App* version = g->add_subcommand("version", "Get the version of the broker");
  table.on(version, [](Session& s) { return s.print_value("/admin/v2/brokers/version"); });
}

}  // namespace magnetar::cli
