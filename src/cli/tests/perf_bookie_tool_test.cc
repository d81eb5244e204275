// magnetar-perf bookie run in-process against bookies in-process (registered in a memory:
// store that the tool opens by URL): the stats lines, the JSON summary, the ledgers deleted
// or kept closed, and the errors that must end the run at once with exit code 1.

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "cli/perf_tool.h"
#include "ledger/bookkeeper.h"
#include "ledger/tests/ledger_test_support.h"
#include "testing/test_name.h"

namespace magnetar::cli {
namespace {

using Clock = std::chrono::steady_clock;

struct BookieOutcome {
  int code = -1;
  std::string out;
  std::string err;
  double seconds = 0;
};

using magnetar::testing::test_name;

class PerfBookieTest : public ::testing::Test {
 protected:
  PerfBookieTest()
      : cluster_(test_name()),
        json_path_(
            std::filesystem::temp_directory_path() /
            ("magnetar-perf-bookie-" + std::to_string(::getpid()) + "-" + test_name() + ".json")) {}
  ~PerfBookieTest() override { std::filesystem::remove(json_path_); }

  BookieOutcome run(std::vector<std::string> args) {
    args.insert(args.begin(), "bookie");
    std::ostringstream out;
    std::ostringstream err;
    BookieOutcome o;
    const auto started = Clock::now();
    o.code = run_perf(std::move(args), out, err);
    o.seconds = std::chrono::duration<double>(Clock::now() - started).count();
    o.out = out.str();
    o.err = err.str();
    return o;
  }

  nlohmann::json summary() {
    std::ifstream in(json_path_);
    return nlohmann::json::parse(in, nullptr, false);
  }

  // The ledgers in the store, and the metadata of one of them.
  std::vector<LedgerId> ledgers() {
    ledger::BookKeeper bk(cluster_.store(), cluster_.executor());
    auto ids = cluster_.await(bk.list_ledgers());
    EXPECT_TRUE(ids.ok()) << ids.status().to_string();
    return ids.ok() ? *ids : std::vector<LedgerId>{};
  }
  ledger::LedgerMetadata metadata(int64_t id) {
    ledger::BookKeeper bk(cluster_.store(), cluster_.executor());
    return cluster_.await(bk.read_metadata(LedgerId{id})).value();
  }

  ledger::test::Cluster cluster_;
  std::filesystem::path json_path_;
};

TEST(PerfBookieOptionsTest, BookKeeperBenchmarkFlagsAreRewritten) {
  EXPECT_EQ(
      *rewrite_perf_options({"bookie", "-mu", "zk:h:2181", "-ensemble", "3", "-quorum", "2",
                             "-ackQuorum", "2", "-entrysize", "100", "-throttle", "10", "-time",
                             "5"}),
      (std::vector<std::string>{"bookie", "--metadata-store-url", "zk:h:2181", "--ensemble-size",
                                "3", "--write-quorum", "2", "--ack-quorum", "2", "--size", "100",
                                "--max-outstanding", "10", "--test-duration", "5"}));
  EXPECT_EQ(*rewrite_perf_options({"bookie", "-zookeeper", "zk1:2181"}),
            (std::vector<std::string>{"bookie", "--metadata-store-url", "zk1:2181"}));
}

TEST_F(PerfBookieTest, WritesForTheDurationPrintsStatsAndDeletesItsLedger) {
  cluster_.add_bookie();
  auto r = run({"-mu", cluster_.url(), "-r", "1000", "-s", "100", "-time", "1.5",
                "--stats-interval-seconds", "1", "--json", json_path_.string()});
  ASSERT_EQ(r.code, 0) << r.err << r.out;
  EXPECT_NE(r.out.find("Created 1 ledgers (E=1, Qw=1, Qa=1): "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Throughput written: "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(" adds/s --- "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(" MB/s --- failure 0.0 adds/s --- Latency: mean: "), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find(" - 99.9pct: "), std::string::npos);
  EXPECT_NE(r.out.find("Aggregated throughput stats --- "), std::string::npos);
  EXPECT_NE(r.out.find(" records written --- "), std::string::npos);
  EXPECT_NE(r.out.find("Aggregated latency stats --- Latency: mean: "), std::string::npos);
  EXPECT_NE(r.out.find("Deleted ledgers "), std::string::npos) << r.out;
  EXPECT_TRUE(r.err.empty()) << r.err;

  const nlohmann::json j = summary();
  ASSERT_TRUE(j.is_object()) << r.out;
  EXPECT_EQ(j["command"], "bookie");
  ASSERT_EQ(j["ledgers"].size(), 1u);
  EXPECT_EQ(j["ensemble_size"], 1);
  EXPECT_EQ(j["write_quorum"], 1);
  EXPECT_EQ(j["ack_quorum"], 1);
  EXPECT_EQ(j["entry_size"], 100);
  const int64_t adds = j["messages"].get<int64_t>();
  EXPECT_GE(adds, 1000);  // 1000 adds/s for 1.5 s (a loaded machine may lag)
  EXPECT_LE(adds, 1700);
  EXPECT_EQ(j["failures"], 0);
  EXPECT_EQ(j["bytes"].get<int64_t>(), adds * 100);
  EXPECT_NEAR(j["duration_seconds"].get<double>(), 1.5, 0.5);
  EXPECT_NEAR(j["throughput_mb_per_sec"].get<double>(),
              j["throughput_msg_per_sec"].get<double>() * 100 / 1e6, 1e-6);
  const auto& latency = j["latency_ms"];
  for (const char* field : {"mean", "p50", "p95", "p99", "p99_9", "max"}) {
    ASSERT_TRUE(latency.contains(field)) << field;
  }
  EXPECT_GT(latency["p50"].get<double>(), 0.0);
  EXPECT_LE(latency["p50"].get<double>(), latency["p99_9"].get<double>());
  EXPECT_LE(latency["p99_9"].get<double>(), latency["max"].get<double>());

  EXPECT_TRUE(ledgers().empty());  // deleted at the end
}

TEST_F(PerfBookieTest, ReplicatedLedgersInParallelAreKeptClosedWithEveryAdd) {
  for (int i = 0; i < 3; ++i) cluster_.add_bookie();
  auto r = run({"-mu", cluster_.url(), "-e", "3", "-w", "3", "-a", "2", "-n", "2", "-o", "16", "-s",
                "64", "-time", "1", "--keep-ledgers", "--json", json_path_.string()});
  ASSERT_EQ(r.code, 0) << r.err << r.out;
  EXPECT_NE(r.out.find("Created 2 ledgers (E=3, Qw=3, Qa=2): "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Closed ledgers "), std::string::npos) << r.out;
  const nlohmann::json j = summary();
  ASSERT_TRUE(j.is_object());
  ASSERT_EQ(j["ledgers"].size(), 2u);
  const int64_t adds = j["messages"].get<int64_t>();
  EXPECT_GT(adds, 0);
  EXPECT_EQ(j["failures"], 0);

  // Both kept, closed, and between them holding every add counted (round robin).
  EXPECT_EQ(ledgers().size(), 2u);
  int64_t entries = 0;
  for (const auto& id : j["ledgers"]) {
    const ledger::LedgerMetadata md = metadata(id.get<int64_t>());
    EXPECT_EQ(md.state, ledger::LedgerState::kClosed);
    EXPECT_EQ(md.ensemble_size, 3);
    EXPECT_EQ(md.ack_quorum, 2);
    entries += md.last_entry_id + 1;
  }
  EXPECT_EQ(entries, adds);
}

TEST_F(PerfBookieTest, TooFewBookiesFailsAtOnce) {
  cluster_.add_bookie();
  auto r = run({"-mu", cluster_.url(), "-e", "3", "-w", "2", "-a", "2", "-time", "5"});
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("Cannot create ledger 1 of 1 (E=3, Qw=2, Qa=2): "), std::string::npos)
      << r.err;
  EXPECT_LT(r.seconds, 5.0);
  EXPECT_TRUE(ledgers().empty());
}

TEST_F(PerfBookieTest, LosingTheOnlyBookieEndsTheRunWithExitCodeOne) {
  ledger::test::TestBookie& only = cluster_.add_bookie();
  std::thread killer([&only] {
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    only.stop();
  });
  auto r = run({"-mu", cluster_.url(), "-r", "1000", "-time", "30", "--timeout", "5"});
  killer.join();
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.err.find("Adds to ledger 0 failed: "), std::string::npos) << r.err;
  EXPECT_NE(r.out.find("Aggregated throughput stats --- "), std::string::npos) << r.out;
  EXPECT_LT(r.seconds, 20.0);  // not the 30 s asked for: no ledger was left to write to
}

TEST_F(PerfBookieTest, UnreachableMetadataStoreFailsWithinTheTimeout) {
  // Nothing listens on port 1.
  auto r = run({"-mu", "zk:127.0.0.1:1", "--timeout", "2", "-time", "1"});
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("Cannot reach the metadata store zk:127.0.0.1:1: "), std::string::npos)
      << r.err;
  EXPECT_LT(r.seconds, 10.0);
}

TEST_F(PerfBookieTest, MetadataStoreUrlComesFromTheConfigurationFile) {
  cluster_.add_bookie();
  const auto conf = std::filesystem::temp_directory_path() /
                    ("magnetar-perf-bookie-" + std::to_string(::getpid()) + ".conf");
  {
    std::ofstream f(conf);
    f << "# a bookie.conf\nbookiePort=3181\nmetadataStoreUrl=" << cluster_.url() << "\n";
  }
  auto r = run({"-cf", conf.string(), "-r", "100", "-time", "0.5"});
  std::filesystem::remove(conf);
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("Deleted ledgers "), std::string::npos) << r.out;
}

TEST_F(PerfBookieTest, BadOptionsExitOne) {
  auto none = run({"-time", "1"});
  EXPECT_EQ(none.code, 1);
  EXPECT_NE(none.err.find("--metadata-store-url"), std::string::npos) << none.err;
  EXPECT_EQ(run({"-mu", cluster_.url(), "-e", "1", "-w", "2"}).code, 1);
  EXPECT_EQ(run({"-mu", cluster_.url(), "-w", "1", "-a", "2"}).code, 1);
  EXPECT_EQ(run({"-mu", cluster_.url(), "-n", "0"}).code, 1);
  EXPECT_EQ(run({"-mu", cluster_.url(), "--stats-interval-seconds", "0"}).code, 1);
}

}  // namespace
}  // namespace magnetar::cli
