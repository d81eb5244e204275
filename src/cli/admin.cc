#include "cli/admin.h"

#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdlib>
#include <iostream>
#include <map>

#include "cli/client_conf.h"
#include "cli/command_line.h"
#include "cli/commands.h"
#include "cli/session.h"
#include "common/version.h"
#include "magnetar/authentication.h"

namespace magnetar::cli {

namespace {

struct GlobalOptions {
  std::string admin_url;
  std::string conf;
  std::string auth_plugin;
  std::string auth_params;
  int request_timeout_s = 30;
  bool tls_allow_insecure = false;
  std::string tls_trust_cert_path;
  bool tls_enable_hostname_verification = false;
  std::string tls_cert_file;
  std::string tls_key_file;
};

Result<AdminSettings> resolve_settings(const GlobalOptions& g) {
  AdminSettings settings;
  std::map<std::string, std::string> conf_props;
  const std::string conf = client_conf_path(g.conf);
  if (!conf.empty()) {
    auto props = read_properties(conf);
    if (!props.ok()) return props.status();
    if (Status st = read_tls_settings(*props, settings.tls); !st.ok()) return st;
    if (auto it = props->find("webServiceUrl"); it != props->end() && !it->second.empty()) {
      settings.admin_url = it->second;
    }
    conf_props = *props;
  }
  if (!g.admin_url.empty()) settings.admin_url = g.admin_url;
  if (g.tls_allow_insecure) settings.tls.allow_insecure = true;
  if (g.tls_enable_hostname_verification) settings.tls.validate_hostname = true;
  if (!g.tls_trust_cert_path.empty()) settings.tls.trust_certs_file = g.tls_trust_cert_path;
  if (!g.tls_cert_file.empty()) settings.tls.certificate_file = g.tls_cert_file;
  if (!g.tls_key_file.empty()) settings.tls.key_file = g.tls_key_file;
  auto authentication = resolve_authentication(conf_props, g.auth_plugin, g.auth_params);
  if (!authentication.ok()) return authentication.status();
  if (*authentication) {
    auto headers = (*authentication)->http_headers();
    if (!headers.ok()) {
      return Status(headers.status().code(),
                    fmt::format("Authentication: {}", headers.status().message()));
    }
    settings.headers = std::move(*headers);
    // Certificate authentication: the plugin's certificate is the HTTPS client certificate.
    if (auto files = (*authentication)->tls_files();
        files && settings.tls.certificate_file.empty()) {
      settings.tls.certificate_file = files->certificate_file;
      settings.tls.key_file = files->private_key_file;
    }
  }
  if (g.request_timeout_s <= 0) {
    return Status(Errc::kInvalidArgument, "--request-timeout must be a positive number of seconds");
  }
  settings.timeout = std::chrono::seconds(g.request_timeout_s);
  auto url = http::parse_url(settings.admin_url);
  if (!url.ok()) {
    return Status(Errc::kInvalidArgument, fmt::format("Invalid admin URL '{}': {}",
                                                      settings.admin_url, url.status().message()));
  }
  return settings;
}

// The deepest subcommand the command line selected.
const CLI::App* selected_leaf(const CLI::App& app) {
  const CLI::App* leaf = &app;
  while (!leaf->get_subcommands().empty()) leaf = leaf->get_subcommands().front();
  return leaf;
}

}  // namespace

CLI::App* add_group(CLI::App& app, const std::string& name, const std::string& description) {
  CLI::App* group = app.add_subcommand(name, description);
  group->require_subcommand(1);
  return group;
}

std::vector<std::string> rewrite_single_dash_options(std::vector<std::string> args) {
  static const std::map<std::string, std::string> kLongNames = {
      {"-ttl", "--messageTTL"}, {"-lt", "--limitTime"},    {"-bt", "--type"},
      {"-force", "--force"},    {"-td", "--topic-domain"},
      {"-gpb", "--get-precise-backlog"}, {"-ap", "--applied"},
      {"-md", "--msg-dispatch-rate"}, {"-bd", "--byte-dispatch-rate"},
      {"-dt", "--dispatch-rate-period"}, {"-rp", "--relative-to-publish-rate"},
      {"-sr", "--subscribe-rate"}, {"-st", "--subscribe-rate-period"},
  };
  // set-delayed-delivery's -md is its --maxDelay, not the dispatch rates' -md.
  const bool delayed_delivery =
      std::find(args.begin(), args.end(), "set-delayed-delivery") != args.end();
  for (std::string& arg : args) {
    if (arg == "--") break;
    if (delayed_delivery && arg == "-md") {
      arg = "--maxDelay";
    } else if (auto it = kLongNames.find(arg); it != kLongNames.end()) {
      arg = it->second;
    }
  }
  return args;
}

int run_admin(std::vector<std::string> args, std::ostream& out, std::ostream& err) {
  return run_admin(std::move(args), out, err, std::cin);
}

int run_admin(std::vector<std::string> args, std::ostream& out, std::ostream& err,
              std::istream& in) {
  CLI::App app{
      "Administer a Magnetar (Apache Pulsar compatible) cluster through its admin REST "
      "API, with pulsar-admin's commands and flags",
      "magnetar-admin"};
  // Global options may also come after the command, and subcommands inherit this.
  app.fallthrough();
  app.require_subcommand(1);
  app.set_version_flag("-v,--version", std::string("magnetar-admin ") + kVersion);
  GlobalOptions g;
  app.add_option("--admin-url", g.admin_url,
                 "Admin (web service) URL (default http://localhost:8080, or webServiceUrl "
                 "from the client configuration)");
  app.add_option("--conf", g.conf,
                 "client.conf to read webServiceUrl, authPlugin and authParams from (default: "
                 "$PULSAR_CLIENT_CONF)");
  app.add_option("--auth-plugin", g.auth_plugin,
                 "Authentication plugin: org.apache.pulsar.client.impl.auth.AuthenticationToken");
  app.add_option("--auth-params", g.auth_params,
                 "Authentication parameters: token:<token>, file:<path> or {\"token\":\"...\"}");
  app.add_option("--request-timeout", g.request_timeout_s, "Request timeout in seconds (30)");
  app.add_flag("--tls-allow-insecure", g.tls_allow_insecure,
               "Accept any server certificate over https:// (tlsAllowInsecureConnection)");
  app.add_option("--tls-trust-cert-path", g.tls_trust_cert_path,
                 "CAs (PEM) the server's certificate must chain to (tlsTrustCertsFilePath)");
  app.add_flag("--tls-enable-hostname-verification", g.tls_enable_hostname_verification,
               "The server's certificate must name the admin URL's host "
               "(tlsEnableHostnameVerification)");
  app.add_option("--tls-cert-file", g.tls_cert_file,
                 "Client certificate (PEM) for mutual TLS (tlsCertificateFilePath)");
  app.add_option("--tls-key-file", g.tls_key_file,
                 "Key (PEM) of the client certificate (tlsKeyFilePath)");

  CommandTable table;
  add_cluster_commands(app, table);
  add_tenant_commands(app, table);
  add_namespace_commands(app, table);
  add_topic_commands(app, table);
  add_broker_commands(app, table);
  add_broker_stats_commands(app, table);
  add_schema_commands(app, table);
  add_bookie_commands(app, table);

  if (auto done = parse_command_line(app, rewrite_single_dash_options(std::move(args)), out, err))
    return *done;

  const Action* action = table.find(selected_leaf(app));
  if (action == nullptr) {  // not reachable: every group requires a subcommand
    err << app.help();
    return 1;
  }
  auto settings = resolve_settings(g);
  if (!settings.ok()) {
    err << settings.status().message() << "\n\n";
    return 1;
  }
  Session session(*settings, out, err, in);
  try {
    return (*action)(session);
  } catch (const std::exception& e) {
    err << "Unexpected answer from " << settings->admin_url << ": " << e.what() << "\n";
    return 1;
  }
}

}  // namespace magnetar::cli
