#pragma once
// The subcommands of the `magnetar` binary, one file each.

#include <cstdint>
#include <string>
#include <vector>

namespace magnetar::tools {

// Prints every frame of a captured client<->broker byte stream (one direction).
int decode_frames(const std::string& path, bool unpack);

struct ServerArgs {
  std::string conf;               // --conf FILE (optional)
  std::vector<std::string> sets;  // --set key=value (repeatable)
  bool print_template = false;    // --print-conf-template
};

// `magnetar bookie`: runs a bookie until SIGINT/SIGTERM.
int run_bookie(const ServerArgs& args);

// `magnetar autorecovery`: an auditor candidate and a replication worker (src/autorecovery)
// until SIGINT/SIGTERM; the bookie's configuration file (bookkeeper.conf).
int run_autorecovery(const ServerArgs& args);

// `magnetar broker`: runs a broker of a cluster until SIGINT/SIGTERM.
int run_broker(const ServerArgs& args);

struct ProxyArgs {
  ServerArgs server;
  std::string metadata_store;                // --metadata-store (pulsar proxy's flag)
  std::string configuration_metadata_store;  // --configuration-metadata-store
};
// `magnetar proxy`: runs a proxy in front of a cluster's brokers until SIGINT/SIGTERM.
int run_proxy(const ProxyArgs& args);

struct ClusterArgs {
  int brokers = 2;       // --brokers (0 with --bookies 0: ZooKeeper alone, e.g. a
  int bookies = 3;       // --bookies  configuration store for several clusters)
  int proxies = 0;       // --proxies: `magnetar proxy` processes in front of the brokers
  std::string data = "cluster-data";  // --data
  std::string cluster_name = "local";  // --name, --cluster-name
  std::string metadata = "zookeeper";  // --metadata zookeeper|etcd
  // --configuration-store: the instance-wide store the brokers share with other clusters
  // (configurationMetadataStoreUrl); empty: the cluster's own ZooKeeper.
  std::string configuration_store;
  // --set key=value (repeatable): broker settings on top of the launcher's own.
  std::vector<std::string> broker_settings;
};
// `magnetar cluster up|down`: a local cluster (ZooKeeper, bookies, brokers, proxies) under one
// directory.
int run_cluster_up(const ClusterArgs& args);
int run_cluster_down(const ClusterArgs& args);

struct DrDrillArgs {
  std::string dir;  // --dir: where the clusters live (default: a temporary directory)
  int drills = 1;   // --drills
  int rate = 500;   // --rate: messages per second
  std::string subscription_type = "Shared";  // --subscription-type Shared|Failover|Exclusive
  int snapshot_frequency_ms = 1000;          // --snapshot-frequency-ms
  int failover_delay_ms = 1000;              // --failover-delay-ms
  int switch_back_delay_ms = 10000;          // --switch-back-delay-ms
  int check_interval_ms = 200;               // --check-interval-ms
  int before_kill_ms = 5000;                 // --before-kill-ms: load before the kill
  int on_secondary_ms = 5000;                // --on-secondary-ms: load on region-b
  bool keep = false;                         // --keep: leave the clusters' directories
  bool verbose = false;                      // --verbose: the client's info logs too
};
// `magnetar dr-drill`: two local clusters, one killed under load; prints the failover time,
// messages lost and redelivered.
int run_dr_drill(const DrDrillArgs& args);

struct ChaosArgs {
  bool quick = false;               // --quick: a subset, short holds (make test)
  std::vector<std::string> faults;  // --fault NAME (repeatable): only these
  bool list = false;                // --list: print the faults and exit
  std::string dir;                  // --dir: the cluster's directory (default: a temporary one)
  int rate = 0;                     // --rate: messages per second and topic (0: the mode's)
  int topics = 0;                   // --topics (0: the mode's)
  int hold_s = 0;                   // --hold: seconds each fault lasts (0: the mode's)
  int time_limit_s = 0;             // --time-limit: faults not begun by then are skipped
  // --service-url / --web-url: run against a cluster the user names (only the faults that
  // need no control of its processes).
  std::string service_url;
  std::string web_url;
  bool keep = false;     // --keep: leave the cluster's directory
  bool verbose = false;  // --verbose: the client library's info logs too
  // --non-persistent: the load on non-persistent topics, which keep nothing: every
  // acknowledged message must be reported lost (the checker's own test).
  bool non_persistent = false;
  // --stretched: a cluster stretched over three regions and its faults (stretched_faults.cc);
  // --region-rtt: the round trip between regions its region-rtt fault adds.
  bool stretched = false;
  int region_rtt_ms = 20;
  // --broker-set KEY=VALUE (repeatable): broker settings after the mode's own, so they win.
  std::vector<std::string> broker_settings;
};
// `magnetar chaos`: a local cluster under load, one fault at a time; prints what was
// acknowledged, lost and duplicated per fault. Exit code 1 when anything was lost.
int run_chaos(const ChaosArgs& args);

struct StandaloneArgs {
  ServerArgs server;
  std::string data_dir = "data";  // --data-dir
  // pulsar standalone's own options.
  bool wipe_data = false;          // --wipe-data: start from empty storage
  std::string advertised_address;  // -a, --advertised-address (advertisedAddress)
  int bookkeeper_port = -1;        // --bookkeeper-port (bookiePort); -1: the configured one
  int num_bookies = 1;             // --num-bookies: one is what standalone runs
  bool no_functions_worker = false;  // -nfw, --no-functions-worker: there is none to skip
  bool no_stream_storage = false;    // -nss, --no-stream-storage: there is none to skip
};

int run_standalone(const StandaloneArgs& args);

struct ShellArgs {
  ServerArgs server;
  std::string command;
  int ensemble = 3, write_quorum = 2, ack_quorum = 2;  // simpletest -e -w -a
  int entries = 1000;                                  // simpletest -n
  int entry_size = 1024;                               // simpletest -s
  int64_t ledger_id = -1;
  int64_t from = 0, to = -1;  // read-ledger --from --to (-fe -le)
  bool print_entries = false;  // read-ledger -m: each entry's content
  bool meta = false;           // list-ledgers -m: each ledger's metadata
  bool readwrite = false, readonly = false, all_bookies = false;  // list-bookies -rw -ro -a
  // Auto-recovery (bookkeeper_shell_recovery.cc). listunderreplicated -mr -emr -pmr -prw:
  std::string missing_replica, excluding_missing_replica;
  bool print_missing_replica = false, print_worker_id = false, only_count = false;
  std::string bookie_id;  // decommissionbookie -bookieid (default: this configuration's bookie)
  // recover <bookie[,bookie]> -q -dr -sk -d
  std::string recover_bookies;
  bool query = false, dry_run = false, skip_open_ledgers = false, delete_cookie = false;
  bool enable = false, disable = false;  // autorecovery -enable | -disable (else -status)
};

// `magnetar bookkeeper <command>`: BookKeeper's shell commands.
int run_bookkeeper_shell(const ShellArgs& args);

struct TokensArgs {
  std::string command;  // create-secret-key, create-key-pair, create, show, validate
  std::string algorithm;         // -a, --signature-algorithm
  std::string output;            // -o, --output (create-secret-key)
  bool base64 = false;           // -b, --base64
  std::string private_key_file;  // --output-private-key
  std::string public_key_file;   // --output-public-key
  std::string subject;           // -s, --subject
  std::string expiry;            // -e, --expiry-time
  std::string secret_key;        // -sk, --secret-key
  std::string private_key;       // -pk, --private-key (create), --public-key (validate)
  std::vector<std::string> headers;  // -hs, --headers k=v
  std::string token;             // positional (show, validate)
  bool stdin_token = false;      // -i, --stdin
  std::string token_file;        // -f, --token-file
};
// `magnetar tokens`: Pulsar's `pulsar tokens` (keys and JWTs).
int run_tokens(const TokensArgs& args);

}  // namespace magnetar::tools
