#pragma once
// magnetar-admin: the admin command-line tool, with pulsar-admin's command tree and flags so
// that existing scripts keep working. A library function so tests can run it in-process.
//
//   magnetar-admin [--admin-url URL] [--auth-plugin P --auth-params P] <group> <command> ...
//
// Settings, later ones winning: defaults (http://localhost:8080), the client.conf named by
// --conf or the PULSAR_CLIENT_CONF environment variable (webServiceUrl, authPlugin,
// authParams), then the flags.
//
// Exit codes: 0 success; 1 a failed call (the server's reason goes to `err`), a bad
// argument value, or a usage error (message and usage to `err`). --help prints to `out`, 0.

#include <iosfwd>
#include <string>
#include <vector>

namespace magnetar::cli {

// `args` excludes the program name. `in` answers confirmation prompts (clear-backlog without
// -force).
int run_admin(std::vector<std::string> args, std::ostream& out, std::ostream& err);
int run_admin(std::vector<std::string> args, std::ostream& out, std::ostream& err,
              std::istream& in);

// pulsar-admin's single-dash long options (-ttl, -lt, -bt, -force, -td), which CLI11 cannot
// declare, rewritten to their double-dash names. Arguments after "--" stay as they are.
std::vector<std::string> rewrite_single_dash_options(std::vector<std::string> args);

}  // namespace magnetar::cli
