// magnetar-perf run in-process against a broker and a bookie in-process: the produce rate,
// the stats lines, the JSON summary, and consume/read counts with end-to-end latency.

#include "cli/perf_tool.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "client/tests/client_test_support.h"
#include "net/tls.h"
#include "testing/tls_certs.h"

namespace magnetar::cli {
namespace {

struct PerfOutcome {
  int code = -1;
  std::string out;
  std::string err;
};

PerfOutcome run(std::vector<std::string> args) {
  std::ostringstream out;
  std::ostringstream err;
  PerfOutcome o;
  o.code = run_perf(std::move(args), out, err);
  o.out = out.str();
  o.err = err.str();
  return o;
}

class PerfToolTest : public client::test::ClientTest {
 protected:
  PerfToolTest()
      : json_path_(std::filesystem::temp_directory_path() /
                   ("magnetar-perf-" + std::to_string(::getpid()) + "-" +
                    client::test::test_name() + ".json")) {}
  ~PerfToolTest() override { std::filesystem::remove(json_path_); }

  nlohmann::json summary() {
    std::ifstream in(json_path_);
    return nlohmann::json::parse(in, nullptr, false);
  }

  std::filesystem::path json_path_;
};

TEST(PerfOptionsTest, SingleDashLongOptionsAreRewritten) {
  EXPECT_EQ(*rewrite_perf_options(
                {"produce", "t", "-time", "5", "-bm", "10", "-bb", "100", "-db", "--", "-ss"}),
            (std::vector<std::string>{"produce", "t", "--test-duration", "5",
                                      "--batch-max-messages", "10", "--batch-max-bytes", "100",
                                      "--disable-batching", "--", "-ss"}));
  // As in pulsar-perf: -ss names the subscriptions, -st is their type; name=value too.
  EXPECT_EQ(
      *rewrite_perf_options({"consume", "t", "-ss", "mysub", "-st=Shared", "-sp", "Earliest"}),
      (std::vector<std::string>{"consume", "t", "--subscriptions", "mysub", "--subscription-type",
                                "Shared", "--subscription-position", "Earliest"}));
  // One-letter options keep their attached values; numbers stay values.
  EXPECT_EQ(*rewrite_perf_options({"consume", "t", "-q5000", "-r", "-1"}),
            (std::vector<std::string>{"consume", "t", "-q5000", "-r", "-1"}));
}

TEST(PerfOptionsTest, PulsarOptionsWeDoNotHaveAndUnknownOnesAreRefusedByName) {
  auto threads = rewrite_perf_options({"produce", "t", "-threads", "2"});
  ASSERT_FALSE(threads.ok());
  EXPECT_EQ(threads.status().message(), "pulsar-perf's option -threads is not supported here");
  auto unknown = rewrite_perf_options({"consume", "t", "-xyz"});
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.status().message(), "Unknown option: '-xyz'");
  std::ostringstream out, err;
  // -st belongs to consume; on produce it reads as -s (the size) "t", which is no number.
  EXPECT_EQ(run_perf({"produce", "t", "-st", "Shared"}, out, err), 1);
  EXPECT_EQ(run_perf({"consume", "t", "-ioThreads", "2"}, out, err), 1);
  EXPECT_NE(err.str().find("-ioThreads is not supported"), std::string::npos) << err.str();
}

TEST_F(PerfToolTest, ProduceHoldsTheRateForTheDurationAndWritesTheSummary) {
  auto r = run({"produce", topic(), "-u", url(), "-r", "200", "-s", "100", "-time", "2",
                "--stats-interval-seconds", "1", "--json", json_path_.string(),
                "--stall-threshold-ms", "2500"});
  ASSERT_EQ(r.code, 0) << r.err << r.out;
  EXPECT_NE(r.out.find("Created 1 producers\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Throughput produced: "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(" Mbit/s --- failure 0.0 msg/s --- Latency: mean: "), std::string::npos);
  EXPECT_NE(r.out.find("Aggregated throughput stats --- "), std::string::npos);
  EXPECT_NE(r.out.find(" records sent --- "), std::string::npos);
  EXPECT_NE(r.out.find("Aggregated latency stats --- Latency: mean: "), std::string::npos);
  EXPECT_NE(r.out.find(" - 99.999pct: "), std::string::npos);
  EXPECT_NE(r.out.find(" --- Gaps: longest: "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Aggregated stall stats --- Gaps: longest: "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(" - over 2500 ms: 0\n"), std::string::npos) << r.out;

  const nlohmann::json j = summary();
  ASSERT_TRUE(j.is_object()) << r.out;
  EXPECT_EQ(j["command"], "produce");
  EXPECT_EQ(j["topics"], nlohmann::json::array({topic()}));
  const int64_t messages = j["messages"].get<int64_t>();
  EXPECT_GE(messages, 330);  // 200 msg/s for 2 s (a loaded machine may lag a little)
  EXPECT_LE(messages, 440);
  EXPECT_EQ(j["failures"], 0);
  EXPECT_EQ(j["bytes"].get<int64_t>(), messages * 100);
  EXPECT_NEAR(j["duration_seconds"].get<double>(), 2.0, 0.5);
  EXPECT_NEAR(j["throughput_msg_per_sec"].get<double>(), 200.0, 30.0);
  const auto& latency = j["latency_ms"];
  for (const char* field : {"mean", "p50", "p95", "p99", "p99_9", "p99_99", "p99_999", "max"}) {
    ASSERT_TRUE(latency.contains(field)) << field;
  }
  EXPECT_GT(latency["p50"].get<double>(), 0.0);
  EXPECT_LE(latency["p50"].get<double>(), latency["p99"].get<double>());
  EXPECT_LE(latency["p99"].get<double>(), latency["max"].get<double>());
  // At 200 msg/s receipts come every ~5 ms; the run has no 2.5 s stall.
  EXPECT_DOUBLE_EQ(j["gaps"]["threshold_ms"].get<double>(), 2500.0);
  EXPECT_GT(j["gaps"]["longest_ms"].get<double>(), 0.0);
  EXPECT_EQ(j["gaps"]["over_threshold"], 0);
}

TEST_F(PerfToolTest, ConsumeAndReadCountWhatWasProduced) {
  auto produced = run({"produce", topic(), "-u", url(), "-r", "0", "-m", "150", "-s", "64", "-db",
                       "--json", json_path_.string()});
  ASSERT_EQ(produced.code, 0) << produced.err;
  EXPECT_EQ(summary()["messages"], 150);

  auto consumed = run({"consume", topic(), "-u", url(), "-s", "perf-sub", "-st", "Shared", "-sp",
                       "Earliest", "-m", "150", "-time", "20", "--json", json_path_.string()});
  ASSERT_EQ(consumed.code, 0) << consumed.err;
  EXPECT_NE(consumed.out.find("Aggregated throughput stats --- 150 records received --- "),
            std::string::npos)
      << consumed.out;
  nlohmann::json j = summary();
  EXPECT_EQ(j["command"], "consume");
  EXPECT_EQ(j["messages"], 150);
  EXPECT_EQ(j["bytes"], 150 * 64);
  EXPECT_GE(j["latency_ms"]["max"].get<double>(), 0.0);

  auto read = run({"read", topic(), "-u", url(), "-m", "earliest", "--num-messages", "100", "-time",
                   "20", "--json", json_path_.string()});
  ASSERT_EQ(read.code, 0) << read.err;
  EXPECT_NE(read.out.find("Aggregated throughput stats --- 100 records read --- "),
            std::string::npos)
      << read.out;
  EXPECT_EQ(summary()["messages"], 100);
}

TEST_F(PerfToolTest, ProduceAndConsumeThroughAnHttpServiceUrl) {
  const std::string web = serve_http();
  auto produced = run({"produce", topic(), "-u", web, "-r", "0", "-m", "50", "-s", "32", "--json",
                       json_path_.string()});
  ASSERT_EQ(produced.code, 0) << produced.err;
  EXPECT_EQ(summary()["messages"], 50);
  auto consumed =
      run({"consume", topic(), "-u", web, "-sp", "Earliest", "-m", "50", "-time", "20"});
  ASSERT_EQ(consumed.code, 0) << consumed.err;
  EXPECT_NE(consumed.out.find("Aggregated throughput stats --- 50 records received --- "),
            std::string::npos)
      << consumed.out;
}

TEST_F(PerfToolTest, FailoverFlagsReachTheClient) {
  auto wrong = run({"produce", topic(), "-u", url(), "--secondary-service-url",
                    "pulsar+ssl://127.0.0.1:6651", "-m", "1"});
  EXPECT_EQ(wrong.code, 1);
  EXPECT_NE(wrong.err.find("secondary service URL"), std::string::npos) << wrong.err;
  auto fine = run({"produce", topic(), "-u", url(), "--secondary-service-url",
                   "pulsar://127.0.0.1:1", "--check-interval-ms", "100", "-r", "0", "-m", "10",
                   "--json", json_path_.string()});
  ASSERT_EQ(fine.code, 0) << fine.err;
  EXPECT_EQ(summary()["messages"], 10);
}

TEST_F(PerfToolTest, ProducesThroughAnHttpsServiceUrlWithTrustCertFile) {
  const std::string dir =
      (std::filesystem::temp_directory_path() / ("magnetar-perf-tls-" + std::to_string(::getpid())))
          .string();
  auto certs = testing::make_test_certs(dir);
  ASSERT_TRUE(certs.ok()) << certs.status().to_string();
  broker_->stop();
  broker_.reset();
  start_broker([&](broker::BrokerConfig& c) {
    c.broker_service_port_tls = 0;
    c.tls.certificate_file_path = certs->server_cert;
    c.tls.key_file_path = certs->server_key;
  });
  net::TlsOptions t;
  t.certificate_file = certs->server_cert;
  t.private_key_file = certs->server_key;
  auto web_tls = net::TlsContext::create(net::TlsRole::kServer, t);
  ASSERT_TRUE(web_tls.ok()) << web_tls.status().to_string();
  const std::string https = serve_http(*web_tls);
  auto produced = run({"produce", topic(), "-u", https, "--trust-cert-file", certs->ca_cert,
                       "--tls-enable-hostname-verification", "-r", "0", "-m", "20", "-s", "32",
                       "--json", json_path_.string()});
  EXPECT_EQ(produced.code, 0) << produced.err;
  EXPECT_EQ(summary()["messages"], 20);
  std::filesystem::remove_all(dir);
}

TEST_F(PerfToolTest, BadValuesExitOne) {
  EXPECT_EQ(run({"produce", topic(), "-u", url(), "-z", "gzip"}).code, 1);
  EXPECT_EQ(run({"consume", topic(), "-u", url(), "-st", "Broadcast"}).code, 1);
  EXPECT_EQ(run({"read", topic(), "-u", url(), "-m", "x"}).code, 1);
  EXPECT_EQ(run({"produce"}).code, 1);
}

}  // namespace
}  // namespace magnetar::cli
