#include "cli/perf_tool.h"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <map>
#include <ostream>

#include "cli/command_line.h"
#include "cli/interrupt.h"
#include "cli/perf_run.h"
#include "common/version.h"

namespace magnetar::cli {

namespace {

// Options of every run: how long, how often a stats line, where the JSON summary goes.
void add_run_options(CLI::App* cmd, CommonOptions& o) {
  cmd->add_option("--test-duration", o.duration_s, "Seconds to run, 0 for ever (-time; 0)");
  cmd->add_option("--stats-interval-seconds", o.stats_interval_s,
                  "Seconds between stats lines (10)");
  cmd->add_option("--json", o.json, "Write the final summary to this file as JSON");
  cmd->add_option("--stall-threshold-ms", o.stall_threshold_ms,
                  "Count the gaps between receipts (acknowledgements, received messages, "
                  "completed adds) longer than this, in ms: the stalls (20)");
}

// Options every client command (produce, consume, read) takes.
void add_common_options(CLI::App* cmd, CommonOptions& o) {
  cmd->add_option("topics", o.topics, "Topic names")->required();
  cmd->add_option("-u,--service-url", o.service_url,
                  "Broker service URL: pulsar://host:port or http://host:port (default "
                  "pulsar://localhost:6650, or brokerServiceUrl from the client configuration)");
  cmd->add_option("--conf-file,--conf", o.conf,
                  "client.conf to read brokerServiceUrl from (-cf; default: "
                  "$PULSAR_CLIENT_CONF)");
  cmd->add_option("--auth-plugin", o.auth_plugin,
                  "Authentication plugin: token or "
                  "org.apache.pulsar.client.impl.auth.AuthenticationToken (authPlugin)");
  cmd->add_option("--auth-params", o.auth_params,
                  "Its parameters: token:<jwt>, file:///path or {\"token\":...} (authParams)");
  cmd->add_option("--trust-cert-file", o.trust_cert_file,
                  "CAs (PEM) the broker's certificate must chain to (tlsTrustCertsFilePath)");
  cmd->add_flag("--tls-allow-insecure", o.tls_allow_insecure,
                "Accept any broker certificate (tlsAllowInsecureConnection)");
  cmd->add_flag("--tls-enable-hostname-verification", o.tls_enable_hostname_verification,
                "The broker's certificate must name its host (tlsEnableHostnameVerification)");
  add_failover_options(*cmd, o.failover);
  cmd->add_option("-t,--num-topic,--num-topics", o.num_topics,
                  "With one topic T and N > 1: use topics T-0 ... T-(N-1) (1)");
  add_run_options(cmd, o);
}

// pulsar-perf's options of several letters after one dash, per command: ours, or "" where
// magnetar-perf has no such option (refused by name). BookKeeper's `bookkeeper-benchmark
// writes` flags for the bookie command (its -zookeeper takes host:port[/chroot], a metadata
// store URL of ours too).
const PulsarNames& perf_names() {
  static const PulsarNames names = [] {
    // Every client command's (PerformanceBaseArguments, PerformanceTopicListArguments).
    const std::map<std::string, std::string> common = {
        {"-time", "--test-duration"},
        {"-cf", "--conf-file"},
        {"-ioThreads", ""},
        {"-bw", ""},
        {"-lt", ""},
        {"-mlr", ""},
        {"-ml", ""},
    };
    PulsarNames n;
    n["produce"] = common;
    n["produce"].insert({{"-bm", "--batch-max-messages"},
                         {"-bb", "--batch-max-bytes"},
                         {"-db", "--disable-batching"},
                         {"-threads", ""},
                         {"-pn", ""},
                         {"-au", ""},
                         {"-ch", ""},
                         {"-am", ""},
                         {"-np", ""},
                         {"-dr", ""},
                         {"-set", ""},
                         {"-ef", ""},
                         {"-mk", ""},
                         {"-fp", ""},
                         {"-fc", ""},
                         {"-tto", ""},
                         {"-nmt", ""},
                         {"-txn", ""},
                         {"-abort", ""}});
    n["consume"] = common;
    n["consume"].insert({{"-ss", "--subscriptions"},
                         {"-st", "--subscription-type"},
                         {"-sp", "--subscription-position"},
                         {"-ns", ""},
                         {"-aq", ""},
                         {"-rs", ""},
                         {"-pm", ""},
                         {"-mc", ""},
                         {"-ac", ""},
                         {"-sct", ""},
                         {"-tto", ""},
                         {"-nmt", ""},
                         {"-txn", ""},
                         {"-ntxn", ""},
                         {"-abort", ""}});
    n["read"] = common;
    n["bookie"] = {{"-time", "--test-duration"},      {"-cf", "--conf-file"},
                   {"-mu", "--metadata-store-url"},   {"-zookeeper", "--metadata-store-url"},
                   {"-ensemble", "--ensemble-size"},  {"-quorum", "--write-quorum"},
                   {"-ackQuorum", "--ack-quorum"},    {"-entrysize", "--size"},
                   {"-throttle", "--max-outstanding"}};
    return n;
  }();
  return names;
}

// The command line of magnetar-perf: the options' values and the commands.
struct PerfCommandLine {
  CLI::App app{
      "Load and latency tests against a Magnetar (Apache Pulsar compatible) cluster, "
      "with pulsar-perf's commands and flags",
      "magnetar-perf"};
  CommonOptions pc, cc, rc, bc;
  ProducePerfOptions p;
  ConsumePerfOptions c;
  ReadPerfOptions r;
  BookiePerfOptions b;
  CLI::App* produce = nullptr;
  CLI::App* consume = nullptr;
  CLI::App* read = nullptr;
  CLI::App* bookie = nullptr;

  PerfCommandLine();
};

}  // namespace

Result<std::vector<std::string>> rewrite_perf_options(std::vector<std::string> args) {
  PerfCommandLine line;
  return rewrite_pulsar_names(line.app, std::move(args), perf_names(), "pulsar-perf");
}

namespace {

PerfCommandLine::PerfCommandLine() {
  app.require_subcommand(1);
  app.set_version_flag("-v,--version", std::string("magnetar-perf ") + kVersion);

  produce = app.add_subcommand("produce", "Publish at a rate, measure publish latency");
  add_common_options(produce, pc);
  produce->add_option("-r,--rate", p.rate,
                      "Messages per second over all producers, 0 no limit "
                      "(100)");
  produce->add_option("-s,--size", p.size, "Message size in bytes (1024)");
  produce->add_option("-n,--num-producers", p.num_producers, "Producers per topic (1)");
  produce->add_option("-m,--num-messages", p.num_messages, "Messages to send, 0 no limit (0)");
  produce->add_option("-b,--batch-time-window", p.batch_time_ms,
                      "Batch window in ms, 0 disables batching (1)");
  produce->add_option("--batch-max-messages", p.batch_max_messages,
                      "Most messages in a batch (-bm; 1000)");
  produce->add_option("--batch-max-bytes", p.batch_max_bytes,
                      "Most bytes in a batch (-bb; 4194304)");
  produce->add_flag("--disable-batching", p.disable_batching, "Send messages one by one (-db)");
  produce->add_option("-z,--compression", p.compression, "NONE, LZ4, ZLIB, ZSTD or SNAPPY");
  produce->add_option("-o,--max-outstanding", p.max_outstanding,
                      "Most messages in flight per producer, 0 no limit (1000)");

  consume = app.add_subcommand("consume", "Subscribe, measure end-to-end latency");
  add_common_options(consume, cc);
  consume
      ->add_option("-s,--subscriptions", c.subscriptions,
                   "Subscription names, comma-separated or repeated (-ss; sub)")
      ->allow_extra_args(false);
  consume->add_option("--subscription-type", c.type,
                      "Exclusive, Shared, Failover or Key_Shared (-st; Exclusive)");
  consume->add_option("--subscription-position", c.position, "Latest or Earliest (-sp; Latest)");
  consume->add_option("-n,--num-consumers", c.num_consumers,
                      "Consumers per topic and subscription (1)");
  consume->add_option("-m,--num-messages", c.num_messages, "Messages to receive, 0 no limit (0)");
  consume->add_option("-r,--rate", c.rate, "Messages per second to consume, 0 no limit (0)");
  consume->add_option("-q,--receiver-queue-size", c.receiver_queue_size,
                      "Receiver queue size (1000)");
  consume->add_flag("--replicated", c.replicated,
                    "Replicate the subscription's state to the other clusters (false)");

  read = app.add_subcommand("read", "Read with readers, measure end-to-end latency");
  add_common_options(read, rc);
  read->add_option("-m,--start-message-id", r.start,
                   "earliest, latest or ledgerId:entryId (earliest)");
  read->add_option("--num-readers", r.num_readers, "Readers per topic (1)");
  read->add_option("-n,--num-messages", r.num_messages, "Messages to read, 0 no limit (0)");
  read->add_option("-r,--rate", r.rate, "Messages per second to read, 0 no limit (0)");

  bookie = app.add_subcommand(
      "bookie",
      "Write ledgers through the ledger client at a rate, measure add latency (BookKeeper's "
      "bookkeeper-benchmark writes)");
  add_run_options(bookie, bc);
  bookie->add_option("--metadata-store-url", b.metadata_store_url,
                     "Metadata store of the bookies, e.g. zk:127.0.0.1:2181/magnetar (-mu, "
                     "-zookeeper)");
  bookie->add_option("--conf-file,--conf", b.conf,
                     "A bookie.conf or broker.conf to read metadataStoreUrl from (-cf)");
  bookie->add_option("-e,--ensemble-size", b.ensemble_size, "Ensemble size E (-ensemble; 1)");
  bookie->add_option("-w,--write-quorum", b.write_quorum, "Write quorum Qw (-quorum; 1)");
  bookie->add_option("-a,--ack-quorum", b.ack_quorum, "Ack quorum Qa (-ackQuorum; 1)");
  bookie->add_option("-s,--size", b.size, "Entry size in bytes (-entrysize; 1024)");
  bookie->add_option("-o,--max-outstanding", b.max_outstanding,
                     "Most adds in flight over all ledgers, 0 no limit (-throttle; 1000)");
  bookie->add_option("-r,--rate", b.rate, "Adds per second over all ledgers, 0 no limit (0)");
  bookie->add_option("-n,--num-ledgers", b.num_ledgers, "Ledgers written in parallel (1)");
  bookie->add_flag("--keep-ledgers", b.keep_ledgers,
                   "Close the ledgers at the end instead of deleting them");
  bookie->add_option("--timeout", b.timeout_s,
                     "Seconds allowed for connecting and creating the ledgers, and again for "
                     "finishing the adds in flight and closing and deleting them (30)");
}

}  // namespace

int run_perf(std::vector<std::string> args, std::ostream& out, std::ostream& err) {
  clear_stop();
  PerfCommandLine line;
  auto rewritten = rewrite_pulsar_names(line.app, std::move(args), perf_names(), "pulsar-perf");
  if (!rewritten.ok()) {
    err << rewritten.status().message() << "\n";
    return 1;
  }
  if (auto done = parse_command_line(line.app, std::move(*rewritten), out, err)) return *done;
  if (line.produce->parsed()) return run_perf_produce(line.pc, line.p, out, err);
  if (line.consume->parsed()) return run_perf_consume(line.cc, line.c, out, err);
  if (line.read->parsed()) return run_perf_read(line.rc, line.r, out, err);
  if (line.bookie->parsed()) return run_perf_bookie(line.bc, line.b, out, err);
  err << line.app.help();
  return 1;
}

}  // namespace magnetar::cli
