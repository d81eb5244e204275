#pragma once
// The client.conf file Pulsar's tools share (a Java properties file), and the service URL
// magnetar-client and magnetar-perf take from it; the metadata store URL of a server's
// configuration file, for magnetar-perf bookie.

#include <map>
#include <string>

#include "common/status.h"

namespace magnetar::cli {

// The key=value (or key: value) lines of a Java properties file such as client.conf; '#' and
// '!' start comment lines. kNotFound when the file cannot be read.
Result<std::map<std::string, std::string>> read_properties(const std::string& path);

// The broker service URL, later ones winning: pulsar://localhost:6650, brokerServiceUrl from
// the client.conf named by `conf` (or, when empty, by $PULSAR_CLIENT_CONF), then `flag_url`.
Result<std::string> resolve_service_url(const std::string& flag_url, const std::string& conf);

// The metadata store URL: `flag_url`, else metadataStoreUrl of the key=value file `conf`
// (a bookie.conf or broker.conf). kInvalidArgument when neither gives one.
Result<std::string> resolve_metadata_store_url(const std::string& flag_url,
                                               const std::string& conf);

}  // namespace magnetar::cli
