#include "include_rules.h"

#include <fstream>
#include <map>
#include <regex>
#include <set>

namespace magnetar::structure {

namespace {

// module -> the modules it may include (besides itself). Arrows only point down.
const std::map<std::string, std::set<std::string>>& rules() {
  static const std::map<std::string, std::set<std::string>> table = {
      {"common", {}},
      {"protocol", {"common", "proto"}},
      {"net", {"common"}},
      {"metadata", {"common", "proto"}},
      {"http", {"common", "net"}},
      // The web console's embedded files and the routes serving them.
      {"console", {"common", "http"}},
      {"bookie", {"common", "metadata", "net", "proto", "protocol"}},
      {"ledger", {"common", "metadata", "net", "proto", "protocol"}},
      {"mledger", {"common", "ledger", "metadata", "proto"}},
      // Bookie auto-recovery: the ledger client's requests (bookie protocol) and the markers.
      {"autorecovery", {"common", "ledger", "metadata", "net", "proto", "protocol"}},
      {"testing", {"common", "metadata", "net", "proto", "protocol"}},
      // Authentication building blocks: JWTs and the token provider.
      {"auth", {"common"}},
      // The broker's rooms: {wire, admin} -> service -> namespace -> config -> libraries.
      {"broker/config", {"auth", "common", "metadata", "mledger", "net", "protocol"}},
      {"broker/namespace", {"broker/config", "common", "metadata", "proto", "protocol"}},
      // Topic compaction: the compactor and compacted ledgers, over the storage libraries.
      {"broker/compaction", {"common", "ledger", "mledger", "proto", "protocol"}},
      {"broker/service",
       {"auth", "broker/compaction", "broker/namespace", "broker/config", "common", "ledger",
        "metadata", "mledger", "proto", "protocol"}},
      {"broker/wire",
       {"auth", "broker/service", "broker/namespace", "broker/config", "common", "metadata",
        "mledger", "net", "proto", "protocol"}},
      {"broker/admin",
       {"auth", "broker/service", "broker/namespace", "broker/config", "common", "http", "ledger",
        "metadata", "mledger", "proto", "protocol"}},
      // Geo-replication sits between {wire, admin} and service; the only room with the client.
      {"broker/replication",
       {"broker/service", "broker/namespace", "broker/config", "client", "common", "http",
        "metadata", "mledger", "proto", "protocol"}},
      {"broker",
       {"auth", "broker/wire", "broker/admin", "broker/replication", "broker/service",
        "broker/namespace", "broker/config", "common", "console", "http", "ledger", "metadata",
        "mledger", "net", "proto", "protocol"}},
      // The client library never includes broker code.
      {"client", {"common", "http", "net", "proto", "protocol"}},
      // The proxy finds brokers through the metadata store and talks to them with the client
      // library's connections; it never includes broker code.
      {"proxy",
       {"auth", "client", "common", "console", "http", "metadata", "net", "proto", "protocol"}},
      {"cli", {"client", "common", "http", "ledger", "metadata", "net", "proto", "protocol"}},
      {"tools",
       {"auth", "autorecovery", "bookie", "broker", "broker/config", "client", "common", "http",
        "ledger", "metadata", "mledger", "net", "proto", "protocol", "proxy"}},
  };
  return table;
}

const std::set<std::string> kBrokerRooms = {"config", "namespace", "compaction", "service",
                                            "wire",   "admin",     "replication"};

}  // namespace

std::string module_of(const std::string& path) {
  const auto slash = path.find('/');
  const std::string first = path.substr(0, slash);
  if (first == "magnetar") return "client";
  if (first != "broker" || slash == std::string::npos) return first;
  const auto second = path.find('/', slash + 1);
  if (second == std::string::npos) return "broker";  // broker/broker.h: the wiring
  const std::string room = path.substr(slash + 1, second - slash - 1);
  return kBrokerRooms.count(room) ? "broker/" + room : "broker";
}

std::vector<Violation> check_includes(const std::filesystem::path& root) {
  namespace fs = std::filesystem;
  static const std::regex include_line(R"(^\s*#\s*include\s*"([^"]+)\")");
  std::vector<Violation> out;
  const fs::path src = root / "src";
  for (const auto& entry : fs::recursive_directory_iterator(src)) {
    if (!entry.is_regular_file()) continue;
    const auto ext = entry.path().extension();
    if (ext != ".h" && ext != ".cc") continue;
    const std::string rel = fs::relative(entry.path(), src).generic_string();
    if (rel.find("/tests/") != std::string::npos) continue;
    const std::string module = module_of(rel);
    auto rule = rules().find(module);
    const std::string file = "src/" + rel;
    if (rule == rules().end()) {
      out.push_back({file, 0, "", "module '" + module + "' is not in the include rule table"});
      continue;
    }
    std::ifstream in(entry.path());
    std::string line;
    int number = 0;
    while (std::getline(in, line)) {
      ++number;
      std::smatch m;
      if (!std::regex_search(line, m, include_line)) continue;
      const std::string included = m[1];
      if (included.find('/') == std::string::npos) continue;  // same folder
      const std::string target = module_of(included);
      if (target == module || rule->second.count(target)) continue;
      out.push_back({file, number, included, module + " may not include " + target});
    }
  }
  return out;
}

}  // namespace magnetar::structure
