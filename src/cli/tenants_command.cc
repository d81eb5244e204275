// `magnetar-admin tenants ...`: /admin/v2/tenants.

#include <memory>

#include "cli/arguments.h"
#include "cli/commands.h"

namespace magnetar::cli {

namespace {

struct TenantArgs {
  std::string name;
  std::vector<std::string> admin_roles;
  std::vector<std::string> allowed_clusters;
  bool force = false;
};

std::string tenant_path(const std::string& name) {
  return "/admin/v2/tenants/" + encode_segment(name);
}

void add_tenant_info_options(CLI::App* cmd, TenantArgs& a) {
  cmd->add_option("tenant", a.name, "Tenant name")->required();
  cmd->add_option("-r,--admin-roles", a.admin_roles, "Comma separated list of admin roles")
      ->delimiter(',');
  cmd->add_option("-c,--allowed-clusters", a.allowed_clusters,
                  "Comma separated list of allowed clusters")
      ->delimiter(',');
}

// The names in a JSON list answered by `path`; nullopt after printing the failure.
std::optional<std::vector<std::string>> get_strings(Session& s, const std::string& path,
                                                    const char* field = nullptr) {
  auto response = s.call("GET", path);
  if (!response) return std::nullopt;
  Json j = Session::parse(*response);
  if (field != nullptr) j = j.is_object() && j.contains(field) ? j[field] : Json::array();
  std::vector<std::string> out;
  if (j.is_array()) {
    for (const Json& e : j) {
      if (e.is_string()) out.push_back(e.get<std::string>());
    }
  }
  return out;
}

std::string tenant_info(const TenantArgs& a) {
  return Json{{"adminRoles", a.admin_roles}, {"allowedClusters", a.allowed_clusters}}.dump();
}

}  // namespace

void add_tenant_commands(CLI::App& app, CommandTable& table) {
  CLI::App* group = add_group(app, "tenants", "Operations about tenants");

  CLI::App* list = group->add_subcommand("list", "List the existing tenants");
  table.on(list, [](Session& s) { return s.print_list("/admin/v2/tenants"); });

  auto get = std::make_shared<TenantArgs>();
  CLI::App* get_cmd = group->add_subcommand("get", "Get the administrative data of a tenant");
  get_cmd->add_option("tenant", get->name, "Tenant name")->required();
  table.on(get_cmd, [get](Session& s) { return s.print_value(tenant_path(get->name)); });

  // Without --allowed-clusters a new tenant may use every cluster, as with pulsar-admin.
  auto create = std::make_shared<TenantArgs>();
  CLI::App* create_cmd = group->add_subcommand("create", "Create a new tenant");
  add_tenant_info_options(create_cmd, *create);
  table.on(create_cmd, [create](Session& s) {
    TenantArgs a = *create;
    if (a.allowed_clusters.empty()) {
      auto clusters = get_strings(s, "/admin/v2/clusters");
      if (!clusters) return 1;
      a.allowed_clusters = std::move(*clusters);
    }
    return s.change("PUT", tenant_path(a.name), tenant_info(a));
  });

  // What is not given keeps its current value.
  auto update = std::make_shared<TenantArgs>();
  CLI::App* update_cmd =
      group->add_subcommand("update", "Update the administrative data of a tenant");
  add_tenant_info_options(update_cmd, *update);
  table.on(update_cmd, [update](Session& s) {
    TenantArgs a = *update;
    if (a.admin_roles.empty()) {
      auto roles = get_strings(s, tenant_path(a.name), "adminRoles");
      if (!roles) return 1;
      a.admin_roles = std::move(*roles);
    }
    if (a.allowed_clusters.empty()) {
      auto clusters = get_strings(s, tenant_path(a.name), "allowedClusters");
      if (!clusters) return 1;
      a.allowed_clusters = std::move(*clusters);
    }
    return s.change("POST", tenant_path(a.name), tenant_info(a));
  });

  auto del = std::make_shared<TenantArgs>();
  CLI::App* delete_cmd = group->add_subcommand("delete", "Delete a tenant");
  delete_cmd->add_option("tenant", del->name, "Tenant name")->required();
  delete_cmd->add_flag("-f,--force", del->force, "Delete the tenant and everything in it");
  table.on(delete_cmd, [del](Session& s) {
    return s.change("DELETE",
                    tenant_path(del->name) + (del->force ? "?force=true" : "?force=false"));
  });
}

}  // namespace magnetar::cli
