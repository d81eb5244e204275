#pragma once
// magnetar-perf: load generator and latency meter with pulsar-perf's commands, flags and
// output. A library function so tests run it in-process.
//
//   magnetar-perf produce <topic...> [-r 100] [-s 1024] [-time 60] [--json out.json]
//   magnetar-perf consume <topic...> [-ss sub] [-st Shared] [-time 60]
//   magnetar-perf read <topic...> [-m earliest] [-time 60]
//   magnetar-perf bookie -mu zk:host:2181/magnetar [-e 3 -w 3 -a 2] [-s 1024] [-n 1]
//                        [-o 1000] [-r 0] [-time 60] [--keep-ledgers]
//
// Every --stats-interval-seconds (10) a line goes to `out`:
//   Throughput produced: X msg/s --- Y Mbit/s --- failure Z msg/s --- Latency: mean: ...
// (consume and read: "Throughput received:" / "Throughput read:" and end-to-end latency from
// each message's publish time; bookie: "Throughput written: X adds/s --- Y MB/s --- failure
// ..." with the add latency); at the end the aggregated throughput and latency lines, and
// with --json the same summary as a JSON file (see summary_json in perf_stats.h).
//
// Runs until -time seconds passed, the message count (-m on produce and consume,
// -n on read) is reached, or request_stop() (Ctrl+C in the executable).
// Exit codes: 0 done; 1 usage error, bad value, or no producer/consumer could be created;
// bookie also 1 when the metadata store or the bookies fail it (see perf_bookie.cc).

#include <iosfwd>
#include <string>
#include <vector>

#include "common/status.h"

namespace magnetar::cli {

// `args` excludes the program name.
int run_perf(std::vector<std::string> args, std::ostream& out, std::ostream& err);

// pulsar-perf's options of several letters after one dash (-time, -bm, -ss, -st, ...) and
// bookkeeper-benchmark's (-zookeeper, -ensemble, ...) rewritten to their double-dash names;
// one of pulsar-perf's that magnetar-perf does not have, or an unknown one, is an error naming
// it. Arguments after "--" stay as they are.
Result<std::vector<std::string>> rewrite_perf_options(std::vector<std::string> args);

}  // namespace magnetar::cli
