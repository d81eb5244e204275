#include "cli/client_conf.h"

#include <fmt/format.h>

#include <cctype>
#include <cstdlib>
#include <fstream>
#include <string_view>

#include "common/config.h"

#include "magnetar/authentication.h"

namespace magnetar::cli {

namespace {

std::string trim(std::string_view s) {
  const size_t b = s.find_first_not_of(" \t\r\n");
  if (b == std::string_view::npos) return "";
  const size_t e = s.find_last_not_of(" \t\r\n");
  return std::string(s.substr(b, e - b + 1));
}

}  // namespace

Result<std::map<std::string, std::string>> read_properties(const std::string& path) {
  std::ifstream in(path);
  if (!in)
    return Status(Errc::kNotFound, fmt::format("Cannot read the configuration file {}", path));
  std::map<std::string, std::string> out;
  std::string line;
  while (std::getline(in, line)) {
    const std::string t = trim(line);
    if (t.empty() || t[0] == '#' || t[0] == '!') continue;
    size_t sep = t.find('=');
    if (sep == std::string::npos) sep = t.find(':');
    if (sep == std::string::npos) continue;
    out[trim(std::string_view(t).substr(0, sep))] = trim(std::string_view(t).substr(sep + 1));
  }
  return out;
}

std::string client_conf_path(const std::string& conf) {
  if (!conf.empty()) return conf;
  if (const char* env = std::getenv("PULSAR_CLIENT_CONF"); env != nullptr && *env != '\0') {
    return env;
  }
  return home_conf_file("client.conf");  // as Pulsar's tools read $PULSAR_HOME/conf
}

Status read_tls_settings(const std::map<std::string, std::string>& props, TlsSettings& tls) {
  auto text = [&props](const char* key, std::string& field) {
    if (auto it = props.find(key); it != props.end() && !it->second.empty()) field = it->second;
  };
  auto flag = [&props](const char* key, bool& field) -> Status {
    auto it = props.find(key);
    if (it == props.end() || it->second.empty()) return Status::OK();
    std::string v = it->second;
    for (char& ch : v) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    if (v != "true" && v != "false") {
      return Status(Errc::kInvalidArgument,
                    fmt::format("{}={} in the client configuration: expected true or false", key,
                                it->second));
    }
    field = v == "true";
    return Status::OK();
  };
  text("tlsTrustCertsFilePath", tls.trust_certs_file);
  text("tlsCertificateFilePath", tls.certificate_file);
  text("tlsKeyFilePath", tls.key_file);
  if (Status st = flag("tlsAllowInsecureConnection", tls.allow_insecure); !st.ok()) return st;
  return flag("tlsEnableHostnameVerification", tls.validate_hostname);
}

Result<TlsSettings> resolve_tls_settings(const std::string& conf) {
  TlsSettings tls;
  const std::string path = client_conf_path(conf);
  if (path.empty()) return tls;
  auto props = read_properties(path);
  if (!props.ok()) return props.status();
  if (Status st = read_tls_settings(*props, tls); !st.ok()) return st;
  return tls;
}

Result<std::shared_ptr<client::Authentication>> resolve_authentication(
    const std::map<std::string, std::string>& props, const std::string& flag_plugin,
    const std::string& flag_params) {
  std::string plugin;
  std::string params;
  if (auto it = props.find("authPlugin"); it != props.end()) plugin = it->second;
  if (auto it = props.find("authParams"); it != props.end()) params = it->second;
  if (!flag_plugin.empty()) plugin = flag_plugin;
  if (!flag_params.empty()) params = flag_params;
  if (plugin.empty() && params.empty()) return std::shared_ptr<client::Authentication>();
  if (plugin.empty()) plugin = "token";
  auto made = client::create_authentication(plugin, params);
  if (!made.ok()) {
    return Status(made.status().code(), fmt::format("Authentication: {}", made.status().message()));
  }
  return made;
}

Result<std::shared_ptr<client::Authentication>> resolve_authentication(
    const std::string& conf, const std::string& flag_plugin, const std::string& flag_params) {
  std::map<std::string, std::string> props;
  const std::string path = client_conf_path(conf);
  if (!path.empty()) {
    auto read = read_properties(path);
    if (!read.ok()) return read.status();
    props = std::move(read).value();
  }
  return resolve_authentication(props, flag_plugin, flag_params);
}

Result<std::string> resolve_service_url(const std::string& flag_url, const std::string& conf) {
  std::string url = "pulsar://localhost:6650";
  const std::string path = client_conf_path(conf);
  if (!path.empty()) {
    auto props = read_properties(path);
    if (!props.ok()) return props.status();
    if (auto it = props->find("brokerServiceUrl"); it != props->end() && !it->second.empty()) {
      url = it->second;
    }
  }
  if (!flag_url.empty()) url = flag_url;
  return url;
}

Result<std::string> resolve_metadata_store_url(const std::string& flag_url,
                                               const std::string& conf) {
  if (!flag_url.empty()) return flag_url;
  if (!conf.empty()) {
    auto props = read_properties(conf);
    if (!props.ok()) return props.status();
    if (auto it = props->find("metadataStoreUrl"); it != props->end() && !it->second.empty()) {
      return it->second;
    }
    return Status(Errc::kInvalidArgument, fmt::format("{} sets no metadataStoreUrl", conf));
  }
  return Status(Errc::kInvalidArgument,
                "No metadata store: give --metadata-store-url (-mu), e.g. "
                "zk:127.0.0.1:2181/magnetar, or --conf with a file that sets metadataStoreUrl");
}

}  // namespace magnetar::cli
