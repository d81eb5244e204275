#pragma once
// The client.conf file Pulsar's tools share (a Java properties file), and the service URL
// magnetar-client and magnetar-perf take from it; the metadata store URL of a server's
// configuration file, for magnetar-perf bookie.

#include <map>
#include <memory>
#include <string>

#include "common/status.h"

namespace magnetar::client {
class Authentication;
}

namespace magnetar::cli {

// The key=value (or key: value) lines of a Java properties file such as client.conf; '#' and
// '!' start comment lines. kNotFound when the file cannot be read.
Result<std::map<std::string, std::string>> read_properties(const std::string& path);

// TLS settings of the tools, named after client.conf's keys (Pulsar's names in comments);
// flags set them after the file.
struct TlsSettings {
  std::string trust_certs_file;    // tlsTrustCertsFilePath: CAs (PEM); empty: system CAs
  bool allow_insecure = false;     // tlsAllowInsecureConnection
  bool validate_hostname = false;  // tlsEnableHostnameVerification
  std::string certificate_file;    // tlsCertificateFilePath: client certificate (mutual TLS)
  std::string key_file;            // tlsKeyFilePath: its key
};

// The client.conf to read: `conf`, else $PULSAR_CLIENT_CONF, else "" (none).
std::string client_conf_path(const std::string& conf);

// The TLS keys of client.conf's `props` over `tls` (absent keys leave fields as they are;
// booleans are "true"/"false", any case). kInvalidArgument for another boolean value.
Status read_tls_settings(const std::map<std::string, std::string>& props, TlsSettings& tls);

// The TLS settings of the client.conf named by `conf` (or $PULSAR_CLIENT_CONF); defaults
// without one.
Result<TlsSettings> resolve_tls_settings(const std::string& conf);

// The credentials of the tools: authPlugin and authParams of client.conf's `props`, then
// --auth-plugin / --auth-params (non-empty flags win). Parameters without a plugin are a
// token's (token:<jwt>, file:///path, {"token": ...}). nullptr: no authentication. Errors
// never contain the credentials.
Result<std::shared_ptr<client::Authentication>> resolve_authentication(
    const std::map<std::string, std::string>& props, const std::string& flag_plugin,
    const std::string& flag_params);
// The same with the client.conf named by `conf` (or $PULSAR_CLIENT_CONF), if any.
Result<std::shared_ptr<client::Authentication>> resolve_authentication(
    const std::string& conf, const std::string& flag_plugin, const std::string& flag_params);

// The broker service URL, later ones winning: pulsar://localhost:6650, brokerServiceUrl from
// the client.conf named by `conf` (or, when empty, by $PULSAR_CLIENT_CONF), then `flag_url`.
Result<std::string> resolve_service_url(const std::string& flag_url, const std::string& conf);

// The metadata store URL: `flag_url`, else metadataStoreUrl of the key=value file `conf`
// (a bookie.conf or broker.conf). kInvalidArgument when neither gives one.
Result<std::string> resolve_metadata_store_url(const std::string& flag_url,
                                               const std::string& conf);

}  // namespace magnetar::cli
