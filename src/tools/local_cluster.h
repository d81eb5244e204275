#pragma once
// The pieces of a local cluster on 127.0.0.1 that its launchers share: `cluster up`
// (processes in sessions of their own, recorded in cluster.json) and `chaos` (processes that
// die with it, killed, paused and restarted one at a time). Each builds a command line or a
// configuration; starting and waiting is processes.h.

#include <chrono>
#include <string>
#include <utility>
#include <vector>

#include "common/status.h"
#include "tools/processes.h"

namespace magnetar::tools {

// The line each server logs once it serves.
inline constexpr const char* kBookieReadyPattern = "serving the bookie protocol on";
inline constexpr const char* kBrokerReadyPattern =
    R"(service URL:\s+(pulsar://\S+)\s+web service URL: (http://\S+))";

// One ZooKeeper server (Debian's package) in `dir`: DIR/zoo.cfg, DIR/log4j.properties,
// DIR/data/ (with data/myid for an ensemble member).
struct ZooKeeperSpec {
  std::string dir;
  int client_port = 0;
  int tick_ms = 2000;  // sessions may last 2 to 20 ticks
  // An ensemble member: its 1-based id and every member's (quorum port, election port), in
  // id order. Empty: a standalone server.
  int my_id = 0;
  std::vector<std::pair<int, int>> quorum;
};
// Writes the configuration files; returns the JVM's command line.
Result<std::vector<std::string>> prepare_zookeeper(const ZooKeeperSpec& spec);

// `magnetar bookie` over DIR/journal and DIR/ledgers; `settings` (key=value) come last.
struct BookieSpec {
  std::string dir;
  int port = 0;
  std::string metadata_url;
  std::vector<std::string> settings;
};
std::vector<std::string> bookie_command(const std::string& binary, const BookieSpec& spec);

// `magnetar broker`; `settings` (key=value) come last, so they win.
struct BrokerSpec {
  std::string metadata_url;
  std::string cluster_name;
  // Where it listens, and what it tells clients: they differ when a relay in front of the
  // broker listens on the advertised address and port (chaos).
  std::string bind_address = "127.0.0.1";
  std::string advertised_address = "127.0.0.1";
  int service_port = 0;
  int web_port = 0;
  int ensemble = 2;  // managed ledgers' ensemble = write quorum = ack quorum
  std::vector<std::string> settings;
};
std::vector<std::string> broker_command(const std::string& binary, const BrokerSpec& spec);

// Polls until a session to `url` opens; fails early when `process` exits, quoting its log.
Status wait_for_metadata_store(const std::string& url, const Launched& process,
                               std::chrono::seconds timeout);

// Sends a ZooKeeper four-letter word ("srvr", "ruok") to 127.0.0.1:port: the whole answer,
// or an error when nothing answered within `timeout`.
Result<std::string> zookeeper_four_letter_word(int port, const std::string& word,
                                               std::chrono::milliseconds timeout);

}  // namespace magnetar::tools
