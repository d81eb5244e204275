// `magnetar-admin clusters ...`: /admin/v2/clusters.

#include <memory>

#include "cli/arguments.h"
#include "cli/commands.h"

namespace magnetar::cli {

namespace {

struct ClusterArgs {
  std::string name;
  std::string url;
  std::string url_secure;
  std::string broker_url;
  std::string broker_url_secure;
  std::string proxy_url;
  std::string proxy_protocol;
};

std::string cluster_path(const std::string& name) {
  return "/admin/v2/clusters/" + encode_segment(name);
}

void add_cluster_data_options(CLI::App* cmd, ClusterArgs& a) {
  cmd->add_option("cluster", a.name, "Cluster name")->required();
  cmd->add_option("--url", a.url, "Service URL (http://host:8080)");
  cmd->add_option("--url-secure", a.url_secure, "Service URL for TLS (https://host:8443)");
  cmd->add_option("--broker-url", a.broker_url, "Broker service URL (pulsar://host:6650)");
  cmd->add_option("--broker-url-secure", a.broker_url_secure,
                  "Broker service URL for TLS (pulsar+ssl://host:6651)");
  cmd->add_option("--proxy-url", a.proxy_url, "Proxy service URL");
  cmd->add_option("--proxy-protocol", a.proxy_protocol, "Proxy protocol (SNI)");
}

// ClusterData with the fields given on the command line.
std::string cluster_data(const ClusterArgs& a) {
  Json j = Json::object();
  const std::pair<const char*, const std::string*> fields[] = {
      {"serviceUrl", &a.url},
      {"serviceUrlTls", &a.url_secure},
      {"brokerServiceUrl", &a.broker_url},
      {"brokerServiceUrlTls", &a.broker_url_secure},
      {"proxyServiceUrl", &a.proxy_url},
      {"proxyProtocol", &a.proxy_protocol},
  };
  for (const auto& [key, value] : fields) {
    if (!value->empty()) j[key] = *value;
  }
  return j.dump();
}

}  // namespace

void add_cluster_commands(CLI::App& app, CommandTable& table) {
  CLI::App* group = add_group(app, "clusters", "Operations about clusters");

  CLI::App* list = group->add_subcommand("list", "List the existing clusters");
  auto current = std::make_shared<bool>(false);
  list->add_flag("-c,--current", *current, "Mark the broker's own cluster with (*)");
  table.on(list, [current](Session& s) {
    if (!*current) return s.print_list("/admin/v2/clusters");
    auto clusters = s.call("GET", "/admin/v2/clusters");
    if (!clusters) return 1;
    auto runtime = s.call("GET", "/admin/v2/brokers/configuration/runtime");
    if (!runtime) return 1;
    const Json config = Session::parse(*runtime);
    const std::string own = config.is_object() ? config.value("clusterName", "") : "";
    const Json names = Session::parse(*clusters);
    if (!names.is_array()) {
      s.print(names);
      return 0;
    }
    for (const Json& name : names) {
      const std::string text = name.is_string() ? name.get<std::string>() : name.dump();
      s.out() << text << (text == own ? "(*)" : "") << "\n";
    }
    return 0;
  });

  auto get = std::make_shared<ClusterArgs>();
  CLI::App* get_cmd = group->add_subcommand("get", "Get the configuration of a cluster");
  get_cmd->add_option("cluster", get->name, "Cluster name")->required();
  table.on(get_cmd, [get](Session& s) { return s.print_value(cluster_path(get->name)); });

  auto create = std::make_shared<ClusterArgs>();
  CLI::App* create_cmd = group->add_subcommand("create", "Provision a new cluster");
  add_cluster_data_options(create_cmd, *create);
  table.on(create_cmd, [create](Session& s) {
    return s.change("PUT", cluster_path(create->name), cluster_data(*create));
  });

  auto peers_name = std::make_shared<std::string>();
  auto peers = std::make_shared<std::string>();
  CLI::App* peers_cmd =
      group->add_subcommand("update-peer-clusters", "Set the peer clusters of a cluster");
  peers_cmd->add_option("cluster", *peers_name, "Cluster name")->required();
  peers_cmd->add_option("--peer-clusters", *peers, "Comma separated peer cluster names")
      ->required();
  table.on(peers_cmd, [peers_name, peers](Session& s) {
    return s.change("POST", cluster_path(*peers_name) + "/peers", Json(split_list(*peers)).dump());
  });
  auto get_peers = std::make_shared<std::string>();
  CLI::App* get_peers_cmd =
      group->add_subcommand("get-peer-clusters", "Get the peer clusters of a cluster");
  get_peers_cmd->add_option("cluster", *get_peers, "Cluster name")->required();
  table.on(get_peers_cmd, [get_peers](Session& s) {
    return s.print_list(cluster_path(*get_peers) + "/peers");
  });

  auto update = std::make_shared<ClusterArgs>();
  CLI::App* update_cmd =
      group->add_subcommand("update", "Update the configuration of a cluster (replaces it)");
  add_cluster_data_options(update_cmd, *update);
  table.on(update_cmd, [update](Session& s) {
    return s.change("POST", cluster_path(update->name), cluster_data(*update));
  });

  auto del = std::make_shared<ClusterArgs>();
  CLI::App* delete_cmd = group->add_subcommand("delete", "Delete a cluster");
  delete_cmd->add_option("cluster", del->name, "Cluster name")->required();
  table.on(delete_cmd, [del](Session& s) { return s.change("DELETE", cluster_path(del->name)); });
}

}  // namespace magnetar::cli
