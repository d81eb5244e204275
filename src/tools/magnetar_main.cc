// `magnetar`: the single server binary. Roles (standalone, broker, bookie, proxy) are
// subcommands, beside the tooling (cluster, bookkeeper shell, tokens, dr-drill, chaos).

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <string>

#include "common/crc32c.h"
#include "common/version.h"
#include "tools/commands.h"

namespace {

using magnetar::kVersion;

void add_server_options(CLI::App* cmd, magnetar::tools::ServerArgs& args) {
  cmd->add_option("-c,--conf", args.conf, "Configuration file (key=value lines)");
  cmd->add_option("--set", args.sets, "Override one key: --set key=value (repeatable)");
  cmd->add_flag("--print-conf-template", args.print_template,
                "Print every configuration key with its default and exit");
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Magnetar: a Pulsar-compatible messaging and streaming server", "magnetar"};
  app.require_subcommand(1);
  app.set_version_flag("--version", kVersion);

  auto* version = app.add_subcommand("version", "Print the version and build facts");

  std::string capture;
  bool unpack = false;
  auto* decode = app.add_subcommand(
      "decode-frames",
      "Print every Pulsar protocol frame in a captured byte stream (one direction)");
  decode->add_option("file", capture, "File holding the raw TCP payload bytes")->required();
  decode->add_flag("--unpack", unpack, "Also decompress and split batched payloads");

  magnetar::tools::ServerArgs bookie_args;
  auto* bookie = app.add_subcommand("bookie", "Run a bookie (BookKeeper-style storage server)");
  add_server_options(bookie, bookie_args);

  magnetar::tools::ServerArgs recovery_args;
  auto* recovery = app.add_subcommand(
      "autorecovery",
      "Run bookie auto-recovery (auditor candidate + replication worker; bookkeeper.conf)");
  add_server_options(recovery, recovery_args);

  magnetar::tools::ServerArgs broker_args;
  auto* broker = app.add_subcommand("broker", "Run a broker of a cluster (ZooKeeper metadata)");
  add_server_options(broker, broker_args);

  magnetar::tools::ProxyArgs proxy_args;
  auto* proxy = app.add_subcommand(
      "proxy", "Run a proxy: one address for a cluster's brokers (lookups, data, admin HTTP)");
  add_server_options(proxy, proxy_args.server);
  proxy->add_option("--config", proxy_args.server.conf, "Same as --conf (pulsar proxy's name)");
  proxy->add_option("-m,--metadata-store", proxy_args.metadata_store,
                    "The cluster's metadata store URL (metadataStoreUrl)");
  proxy->add_option("--configuration-metadata-store", proxy_args.configuration_metadata_store,
                    "The configuration store URL (configurationMetadataStoreUrl)");

  magnetar::tools::ClusterArgs cluster_args;
  auto* cluster = app.add_subcommand("cluster", "Start or stop a local cluster on 127.0.0.1");
  cluster->require_subcommand(1);
  auto* cluster_up = cluster->add_subcommand(
      "up", "Start ZooKeeper (or etcd), bookies, brokers and proxies; return once they serve");
  cluster_up->add_option("--brokers", cluster_args.brokers,
                         "Number of brokers (0, with --bookies 0: ZooKeeper alone)")
      ->check(CLI::Range(0, 16));
  cluster_up->add_option("--bookies", cluster_args.bookies, "Number of bookies")
      ->check(CLI::Range(0, 16));
  cluster_up->add_option("--proxies", cluster_args.proxies,
                         "Number of proxies (magnetar proxy) in front of the brokers")
      ->check(CLI::Range(0, 16));
  cluster_up->add_option("--data", cluster_args.data, "Directory holding all the state")
      ->required();
  cluster_up->add_option("--name,--cluster-name", cluster_args.cluster_name,
                         "The cluster's name (clusterName)");
  cluster_up->add_option("--metadata", cluster_args.metadata,
                         "The metadata store to start: zookeeper (default) or etcd")
      ->check(CLI::IsMember({"zookeeper", "etcd"}));
  cluster_up->add_option("--configuration-store", cluster_args.configuration_store,
                         "Configuration store shared with other clusters, e.g. "
                         "zk:127.0.0.1:2181/magnetar (default: the cluster's own ZooKeeper)");
  cluster_up->add_option("--set", cluster_args.broker_settings,
                         "A broker setting key=value (repeatable), e.g. "
                         "metadataStoreSessionTimeoutMillis=4000");
  auto* cluster_down =
      cluster->add_subcommand("down", "Stop the processes `cluster up` started in --data");
  cluster_down->add_option("--data", cluster_args.data, "The directory given to `cluster up`")
      ->required();

  magnetar::tools::StandaloneArgs standalone_args;
  auto* standalone = app.add_subcommand(
      "standalone", "Run a broker, a bookie and the metadata store in one process");
  add_server_options(standalone, standalone_args.server);
  standalone->add_option("--data-dir", standalone_args.data_dir,
                         "Where the standalone keeps its data (<dir>/standalone/...)");
  standalone->add_option("--config", standalone_args.server.conf,
                         "Same as --conf (pulsar standalone's name)");
  standalone->add_flag("--wipe-data", standalone_args.wipe_data,
                       "Delete the stored data (metadata, ledgers) before starting");
  standalone->add_option("-a,--advertised-address", standalone_args.advertised_address,
                         "advertisedAddress: the host name or IP clients are told");
  standalone->add_option("--bookkeeper-port", standalone_args.bookkeeper_port,
                         "bookiePort of the embedded bookie")
      ->check(CLI::Range(0, 65535));
  standalone->add_option("--num-bookies", standalone_args.num_bookies,
                         "Bookies to run (standalone runs one)")
      ->check(CLI::Range(1, 1));
  standalone->add_flag("--no-functions-worker", standalone_args.no_functions_worker,
                       "Accepted (-nfw) as pulsar standalone's: there are no functions to skip");
  standalone->add_flag("--no-stream-storage", standalone_args.no_stream_storage,
                       "Accepted (-nss) as pulsar standalone's: there is no stream storage");

  magnetar::tools::ShellArgs shell;
  auto* bk = app.add_subcommand("bookkeeper", "BookKeeper shell commands against the cluster");
  bk->add_option("-c,--conf", shell.server.conf, "Configuration file giving metadataStoreUrl");
  bk->add_option("--set", shell.server.sets, "Override one key: --set key=value (repeatable)");
  bk->require_subcommand(1);
  auto* simple = bk->add_subcommand("simpletest", "Write a new ledger, read it back, print rates");
  simple->add_option("-e,--ensemble", shell.ensemble, "Ensemble size");
  simple->add_option("-w,--writeQuorum", shell.write_quorum, "Write quorum");
  simple->add_option("-a,--ackQuorum", shell.ack_quorum, "Ack quorum");
  simple->add_option("-n,--numEntries", shell.entries, "Entries to write")
      ->check(CLI::PositiveNumber);
  simple->add_option("-s,--entrySize", shell.entry_size, "Entry size in bytes")
      ->check(CLI::PositiveNumber);
  // Our names and BookKeeper's (listbookies, listledgers, ledgermetadata, readledger,
  // deleteledger), with BookKeeper's options.
  auto* lb = bk->add_subcommand("list-bookies", "List the writable and read-only bookies");
  lb->alias("listbookies");
  lb->add_flag("--readwrite", shell.readwrite, "Only the writable bookies (-rw)");
  lb->add_flag("--readonly", shell.readonly, "Only the read-only bookies (-ro)");
  lb->add_flag("-a,--all", shell.all_bookies, "Every bookie, in one list");
  lb->set_help_flag("--help", "Print this help message and exit");
  lb->add_flag("-h,--hostnames")->description("Accepted as BookKeeper's (deprecated there)");
  auto* ll = bk->add_subcommand("list-ledgers", "List every ledger id");
  ll->alias("listledgers");
  ll->add_flag("-m,--meta", shell.meta, "Print each ledger's metadata too");
  auto* lmd = bk->add_subcommand("ledger-metadata", "Print a ledger's metadata");
  lmd->alias("ledgermetadata");
  lmd->add_option("ledger_id", shell.ledger_id, "Ledger id");
  lmd->add_option("-l,--ledgerid", shell.ledger_id, "Ledger id (BookKeeper's form)");
  auto* rl = bk->add_subcommand("read-ledger", "Print a ledger's entries, one per line");
  rl->alias("readledger");
  rl->add_option("ledger_id", shell.ledger_id, "Ledger id");
  rl->add_option("-l,--ledgerid", shell.ledger_id, "Ledger id (BookKeeper's form)");
  rl->add_option("--from,--firstentryid", shell.from, "First entry id (-fe)");
  rl->add_option("--to,--lastentryid", shell.to,
                 "Last entry id (-le; default: the last confirmed)");
  rl->add_flag("-m,--msg", shell.print_entries, "Print each entry's content too");
  auto* dl = bk->add_subcommand("delete-ledger", "Delete a ledger");
  dl->alias("deleteledger");
  dl->add_option("ledger_id", shell.ledger_id, "Ledger id");
  dl->add_option("-l,--ledgerid", shell.ledger_id, "Ledger id (BookKeeper's form)");
  dl->add_flag("-f,--force")->description("Accepted for compatibility: the shell never asks");

  // Auto-recovery (BookKeeper's names and flags; single-dash long flags rewritten below).
  auto* lur = bk->add_subcommand("listunderreplicated", "List the under-replicated ledgers");
  lur->add_option("--missingreplica", shell.missing_replica,
                  "Only ledgers missing this bookie (-mr)");
  lur->add_option("--excludingmissingreplica", shell.excluding_missing_replica,
                  "Only ledgers not missing this bookie (-emr)");
  lur->add_flag("--printmissingreplica", shell.print_missing_replica,
                "Print each ledger's missing bookies (-pmr)");
  lur->add_flag("--printreplicationworkerid", shell.print_worker_id,
                "Print the worker holding each ledger (-prw)");
  lur->add_flag("--onlydisplayledgercount", shell.only_count, "Print only how many");
  bk->add_subcommand("whoisauditor", "Print the elected auditor's bookie id");
  auto* dcb = bk->add_subcommand(
      "decommissionbookie",
      "Re-replicate a stopped bookie's ledgers through auto-recovery, wait, delete its cookie");
  dcb->add_option("--bookieid", shell.bookie_id,
                  "The bookie (host:port; default: this configuration's bookie)");
  auto* rec = bk->add_subcommand("recover", "Re-replicate a dead bookie's ledgers now");
  rec->add_option("bookies", shell.recover_bookies, "host:port[,host:port...]")->required();
  rec->add_flag("-q,--query", shell.query, "Only list the ledgers it would recover");
  rec->add_flag("--dr,--dryrun", shell.dry_run, "Say what would be done");
  rec->add_flag("--sk,--skipOpenLedgers", shell.skip_open_ledgers, "Leave open ledgers alone");
  rec->add_flag("-d,--deleteCookie", shell.delete_cookie, "Delete the bookies' cookies after");
  rec->add_flag("-f,--force")->description("Accepted for compatibility: the shell never asks");
  auto* arc = bk->add_subcommand("autorecovery", "Enable, disable or show auto-recovery");
  arc->add_flag("--enable", shell.enable, "Resume re-replication (delete the disable node)");
  arc->add_flag("--disable", shell.disable, "Pause re-replication");
  arc->add_flag("--status")->description("Print whether it is enabled (the default)");

  magnetar::tools::DrDrillArgs drill;
  auto* dr = app.add_subcommand(
      "dr-drill",
      "Disaster-recovery drill: two local clusters replicating, one killed under load; prints "
      "the failover time, messages lost and redelivered");
  dr->add_option("--dir", drill.dir, "Directory for the clusters (default: a temporary one)");
  dr->add_option("--drills", drill.drills, "Number of drills, each on fresh clusters")
      ->check(CLI::Range(1, 100));
  dr->add_option("--rate", drill.rate, "Messages per second produced")
      ->check(CLI::Range(1, 100000));
  dr->add_option("--subscription-type", drill.subscription_type, "Shared, Failover or Exclusive")
      ->check(CLI::IsMember({"Shared", "Failover", "Exclusive"}));
  dr->add_option("--snapshot-frequency-ms", drill.snapshot_frequency_ms,
                 "replicatedSubscriptionsSnapshotFrequencyMillis of both clusters")
      ->check(CLI::Range(10, 600000));
  dr->add_option("--failover-delay-ms", drill.failover_delay_ms,
                 "The client's failoverDelay")->check(CLI::Range(0, 600000));
  dr->add_option("--switch-back-delay-ms", drill.switch_back_delay_ms,
                 "The client's switchBackDelay")->check(CLI::Range(0, 600000));
  dr->add_option("--check-interval-ms", drill.check_interval_ms,
                 "The client's checkInterval (probe period)")->check(CLI::Range(10, 600000));
  dr->add_option("--before-kill-ms", drill.before_kill_ms, "Load before the kill")
      ->check(CLI::Range(0, 3600000));
  dr->add_option("--on-secondary-ms", drill.on_secondary_ms,
                 "Load on the other cluster before the killed one restarts")
      ->check(CLI::Range(0, 3600000));
  dr->add_flag("--keep", drill.keep, "Keep the clusters' directories");
  dr->add_flag("-v,--verbose", drill.verbose, "Show the client library's info logs");

  magnetar::tools::ChaosArgs chaos;
  auto* ch = app.add_subcommand(
      "chaos",
      "Chaos suite: a local cluster (or --service-url) under load, one fault at a time (kills, "
      "pauses, a partition, a full disk); prints acknowledged, lost and duplicated messages");
  ch->add_flag("--quick", chaos.quick, "A subset of the faults with short holds (a few minutes)");
  ch->add_option("--fault", chaos.faults, "Run only this fault (repeatable; see --list)");
  ch->add_flag("--list", chaos.list, "Print the faults and exit");
  ch->add_option("--dir", chaos.dir, "Directory for the cluster (default: a temporary one)");
  ch->add_option("--rate", chaos.rate, "Messages per second and topic")
      ->check(CLI::Range(1, 100000));
  ch->add_option("--topics", chaos.topics, "Topics of the load (one producer and consumer each)")
      ->check(CLI::Range(1, 64));
  ch->add_option("--hold", chaos.hold_s, "Seconds each fault lasts")->check(CLI::Range(1, 600));
  ch->add_option("--time-limit", chaos.time_limit_s,
                 "Seconds after which faults not yet begun are skipped")
      ->check(CLI::Range(10, 86400));
  ch->add_option("--service-url", chaos.service_url,
                 "Run against this cluster instead of starting one (faults that need its "
                 "processes are skipped)");
  ch->add_option("--web-url", chaos.web_url, "That cluster's admin HTTP URL");
  ch->add_flag("--keep", chaos.keep, "Keep the cluster's directory");
  ch->add_flag("-v,--verbose", chaos.verbose, "Show the client library's info logs");
  ch->add_flag("--non-persistent", chaos.non_persistent,
               "Checker self-test: load non-persistent topics, which keep nothing, so every "
               "acknowledged message must be reported lost (exit code 1)");
  ch->add_flag("--stretched", chaos.stretched,
               "One cluster stretched over three regions (two bookies and a broker each, E=3 "
               "Qw=3 Qa=2 region-aware, relays between regions) and its faults: placement, "
               "round trip between regions, region loss with auto-recovery, region partition");
  ch->add_option("--region-rtt", chaos.region_rtt_ms,
                 "With --stretched: the round trip (ms) the region-rtt fault adds between "
                 "regions")
      ->check(CLI::Range(1, 10000));
  ch->add_option("--broker-set", chaos.broker_settings,
                 "KEY=VALUE: a broker setting after the mode's own (repeatable), e.g. "
                 "managedLedgerMaxEntriesPerLedger=50000");

  magnetar::tools::TokensArgs tokens;
  auto* tk = app.add_subcommand("tokens", "Make keys and tokens for token authentication");
  tk->require_subcommand(1);
  auto* tk_secret = tk->add_subcommand("create-secret-key", "Create a secret key");
  tk_secret->add_option("-a,--signature-algorithm", tokens.algorithm,
                        "HS256 (default), HS384 or HS512");
  tk_secret->add_option("-o,--output", tokens.output, "Write the key to this file");
  tk_secret->add_flag("-b,--base64", tokens.base64, "Base64 text instead of raw bytes");
  auto* tk_pair = tk->add_subcommand("create-key-pair", "Create a private/public key pair");
  tk_pair->add_option("-a,--signature-algorithm", tokens.algorithm, "RS256 (default), ES256, ...");
  tk_pair->add_option("--output-private-key", tokens.private_key_file, "PKCS#8 DER file")
      ->required();
  tk_pair->add_option("--output-public-key", tokens.public_key_file, "X.509 DER file")
      ->required();
  auto* tk_create = tk->add_subcommand("create", "Create a token");
  tk_create->add_option("-s,--subject", tokens.subject, "The role (sub claim)")->required();
  tk_create->add_option("-e,--expiry-time", tokens.expiry,
                        "Expiry from now (e.g. 1y, 3d, 10m; no unit: seconds)");
  tk_create->add_option("--sk,--secret-key", tokens.secret_key, "Secret key (data:, file:, ...)");
  tk_create->add_option("--pk,--private-key", tokens.private_key, "Private key (data:, file:, ...)");
  tk_create->add_option("-a,--signature-algorithm", tokens.algorithm,
                        "Accepted for compatibility: the key decides (RS256 default)");
  tk_create->add_option("--hs,--headers", tokens.headers, "Extra header key=value (repeatable)");
  for (const char* name : {"show", "validate"}) {
    auto* c = tk->add_subcommand(name, std::string(name) == "show"
                                           ? "Show a token's header and claims (not verified)"
                                           : "Verify a token's signature and expiry");
    c->add_option("token", tokens.token, "The token (or -i, -f, $TOKEN)");
    c->add_flag("-i,--stdin", tokens.stdin_token, "Read the token from standard input");
    c->add_option("-f,--token-file", tokens.token_file, "Read the token from a file");
    if (std::string(name) == "validate") {
      c->add_option("--sk,--secret-key", tokens.secret_key, "Secret key (data:, file:, ...)");
      c->add_option("--pk,--public-key", tokens.private_key, "Public key (data:, file:, ...)");
      c->add_option("-a,--signature-algorithm", tokens.algorithm, "RS256 (default) or ES256");
    }
  }

  // pulsar tokens spells its short options with one dash and two letters (-sk, -pk, -hs),
  // pulsar standalone some with three (-nfw, -nss).
  std::vector<std::string> args(argv + 1, argv + argc);
  for (auto& a : args) {
    if (a == "-sk" || a == "-pk" || a == "-hs") a = "-" + a;
    if (a == "-nfw") a = "--no-functions-worker";
    if (a == "-nss") a = "--no-stream-storage";
    // bookkeeper shell's
    if (a == "-rw") a = "--readwrite";
    if (a == "-ro") a = "--readonly";
    if (a == "-fe") a = "--firstentryid";
    if (a == "-le") a = "--lastentryid";
    for (const char* f : {"-missingreplica", "-excludingmissingreplica", "-printmissingreplica",
                          "-printreplicationworkerid", "-onlydisplayledgercount", "-bookieid",
                          "-enable", "-disable", "-status", "-dryrun", "-skipOpenLedgers",
                          "-deleteCookie", "-query", "-force"}) {
      if (a == f) a = "-" + a;
    }
    if (a == "-mr") a = "--missingreplica";
    if (a == "-emr") a = "--excludingmissingreplica";
    if (a == "-pmr") a = "--printmissingreplica";
    if (a == "-prw") a = "--printreplicationworkerid";
    if (a == "-dr") a = "--dryrun";
  }
  std::reverse(args.begin(), args.end());
  try {
    app.parse(args);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }

  if (version->parsed()) {
    std::printf("magnetar %s\nprotocol: Pulsar binary protocol up to v21\ncrc32c: %s\nallocator: %s\n",
                kVersion, magnetar::crc32c::hardware_accelerated() ? "SSE4.2" : "portable",
                MAGNETAR_ALLOCATOR_NAME);
    return 0;
  }
  if (decode->parsed()) return magnetar::tools::decode_frames(capture, unpack);
  if (bookie->parsed()) return magnetar::tools::run_bookie(bookie_args);
  if (recovery->parsed()) return magnetar::tools::run_autorecovery(recovery_args);
  if (standalone->parsed()) return magnetar::tools::run_standalone(standalone_args);
  if (broker->parsed()) return magnetar::tools::run_broker(broker_args);
  if (proxy->parsed()) return magnetar::tools::run_proxy(proxy_args);
  if (cluster_up->parsed()) return magnetar::tools::run_cluster_up(cluster_args);
  if (cluster_down->parsed()) return magnetar::tools::run_cluster_down(cluster_args);
  if (dr->parsed()) return magnetar::tools::run_dr_drill(drill);
  if (ch->parsed()) return magnetar::tools::run_chaos(chaos);
  if (tk->parsed()) {
    tokens.command = tk->get_subcommands().front()->get_name();
    return magnetar::tools::run_tokens(tokens);
  }
  if (bk->parsed()) {
    shell.command = bk->get_subcommands().front()->get_name();  // our name, whichever was typed
    return magnetar::tools::run_bookkeeper_shell(shell);
  }
  return 0;
}
