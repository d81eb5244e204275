// magnetar-client run in-process against a broker and a bookie in-process: produce, consume
// and read with pulsar-client's flags, checking the printed lines and counts.

#include "cli/client_tool.h"

#include <fmt/format.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "client/tests/client_test_support.h"
#include "testing/tls_certs.h"

namespace magnetar::cli {
namespace {

using namespace std::chrono_literals;

struct Outcome {
  int code = -1;
  std::string out;
  std::string err;
};

// How often `needle` occurs in `text`.
int occurrences(const std::string& text, const std::string& needle) {
  int n = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) {
    ++n;
  }
  return n;
}

class ClientToolTest : public client::test::ClientTest {
 protected:
  Outcome run(std::vector<std::string> args) {
    args.insert(args.begin(), {"--url", url()});
    return run_bare(std::move(args));
  }
  static Outcome run_bare(std::vector<std::string> args) {
    std::ostringstream out;
    std::ostringstream err;
    Outcome o;
    o.code = run_client(std::move(args), out, err);
    o.out = out.str();
    o.err = err.str();
    return o;
  }
};

TEST_F(ClientToolTest, ProducedMessagesAreConsumedWithKeyPropertiesAndContent) {
  auto produced = run(
      {"produce", topic(), "-m", "a,b", "-m", "c", "-n", "2", "-k", "k1", "-p", "x=1,y=2", "-db"});
  ASSERT_EQ(produced.code, 0) << produced.err;
  EXPECT_EQ(produced.out, "6 messages successfully produced\n");

  auto consumed = run({"consume", topic(), "-s", "sub", "-p", "Earliest", "-n", "6"});
  ASSERT_EQ(consumed.code, 0) << consumed.err;
  EXPECT_EQ(occurrences(consumed.out, "----- got message -----\n"), 6);
  std::string expected;
  for (int round = 0; round < 2; ++round) {
    for (const char* body : {"a", "b", "c"}) {
      expected += "----- got message -----\nkey:[k1], properties:[x=1, y=2], content:";
      expected += body;
      expected += "\n";
    }
  }
  expected += "6 messages successfully consumed\n";
  EXPECT_EQ(consumed.out, expected);

  // Everything was acknowledged: the subscription has nothing left.
  auto c = consumer(topic(), "sub");
  EXPECT_FALSE(c.receive(300ms).ok());
}

TEST_F(ClientToolTest, AnHttpServiceUrlLooksUpOverHttp) {
  const std::string web = serve_http();
  auto produced = run_bare({"--url", web, "produce", topic(), "-m", "a,b,c"});
  ASSERT_EQ(produced.code, 0) << produced.err;
  EXPECT_EQ(produced.out, "3 messages successfully produced\n");
  auto consumed =
      run_bare({"--url", web, "consume", topic(), "-s", "sub", "-p", "Earliest", "-n", "3"});
  ASSERT_EQ(consumed.code, 0) << consumed.err;
  EXPECT_EQ(occurrences(consumed.out, "----- got message -----\n"), 3);
  EXPECT_NE(consumed.out.find("3 messages successfully consumed\n"), std::string::npos);
}

TEST_F(ClientToolTest, ReadFromEarliestPrintsEveryMessageInOrder) {
  ASSERT_EQ(run({"produce", topic(), "-m", "one,two,three"}).code, 0);
  auto read = run({"read", topic(), "-m", "earliest", "-n", "3"});
  ASSERT_EQ(read.code, 0) << read.err;
  EXPECT_EQ(read.out,
            "----- got message -----\nkey:[null], properties:[], content:one\n"
            "----- got message -----\nkey:[null], properties:[], content:two\n"
            "----- got message -----\nkey:[null], properties:[], content:three\n"
            "3 messages successfully read\n");
}

TEST_F(ClientToolTest, ReadFromAMessageIdInclusiveStartsThere) {
  client::ProducerOptions unbatched;
  unbatched.batching_enabled = false;
  auto p = producer(topic(), unbatched);
  auto ids = send_n(p, 3);
  ASSERT_EQ(ids.size(), 3u);
  const std::string id = fmt::format("{}:{}", ids[1].ledger_id(), ids[1].entry_id());
  auto inclusive = run({"read", topic(), "-m", id, "-i", "-n", "1", "--hide-content"});
  ASSERT_EQ(inclusive.code, 0) << inclusive.err;
  EXPECT_EQ(inclusive.out,
            "----- got message -----\nkey:[null], properties:[]\n1 messages successfully read\n");
  auto exclusive = run({"read", topic(), "-m", id, "-n", "1"});
  ASSERT_EQ(exclusive.code, 0) << exclusive.err;
  EXPECT_NE(exclusive.out.find("content:msg-2\n"), std::string::npos) << exclusive.out;
  auto hex = run({"read", topic(), "-m", id, "-i", "-n", "1", "--hex"});
  ASSERT_EQ(hex.code, 0) << hex.err;
  EXPECT_NE(hex.out.find("content:\n00000000  6d 73 67 2d 31"), std::string::npos) << hex.out;
}

TEST_F(ClientToolTest, ServiceUrlComesFromClientConf) {
  const auto path = std::filesystem::temp_directory_path() /
                    ("magnetar-client-conf-" + std::to_string(::getpid()) + ".conf");
  {
    std::ofstream conf(path);
    conf << "# test\nwebServiceUrl=http://localhost:1\nbrokerServiceUrl=" << url() << "\n";
  }
  auto produced = run_bare({"--conf", path.string(), "produce", topic(), "-m", "x", "-r", "50"});
  std::filesystem::remove(path);
  ASSERT_EQ(produced.code, 0) << produced.err;
  EXPECT_EQ(produced.out, "1 messages successfully produced\n");
}

TEST_F(ClientToolTest, TlsSettingsComeFromClientConf) {
  const std::string dir = (std::filesystem::temp_directory_path() /
                           ("magnetar-client-tool-tls-" + std::to_string(::getpid())))
                              .string();
  auto certs = testing::make_test_certs(dir);
  ASSERT_TRUE(certs.ok()) << certs.status().to_string();
  broker_->stop();
  broker_.reset();
  start_broker([&](broker::BrokerConfig& c) {
    c.broker_service_port_tls = 0;
    c.tls_certificate_file_path = certs->server_cert;
    c.tls_key_file_path = certs->server_key;
  });
  const std::string conf = dir + "/client.conf";
  {
    std::ofstream f(conf);
    f << "brokerServiceUrl=pulsar+ssl://127.0.0.1:" << broker_->tls_port()
      << "\ntlsTrustCertsFilePath=" << certs->ca_cert << "\ntlsEnableHostnameVerification=true\n";
  }
  auto produced = run_bare({"--conf", conf, "produce", topic(), "-m", "over-tls"});
  EXPECT_EQ(produced.code, 0) << produced.err;
  EXPECT_EQ(produced.out, "1 messages successfully produced\n");
  auto read = run_bare({"--conf", conf, "read", topic(), "-m", "earliest", "-n", "1"});
  EXPECT_EQ(read.code, 0) << read.err;
  EXPECT_NE(read.out.find("over-tls"), std::string::npos) << read.out;
  std::filesystem::remove_all(dir);
}

TEST_F(ClientToolTest, FilesAreSentWholeAndRegexConsumesMatchingTopics) {
  const auto path = std::filesystem::temp_directory_path() /
                    ("magnetar-client-file-" + std::to_string(::getpid()) + ".txt");
  {
    std::ofstream file(path, std::ios::binary);
    file << "line one,\nline two";
  }
  auto produced = run({"produce", topic("-a"), "-f", path.string()});
  std::filesystem::remove(path);
  ASSERT_EQ(produced.code, 0) << produced.err;
  EXPECT_EQ(produced.out, "1 messages successfully produced\n");

  auto consumed =
      run({"consume", "persistent://public/default/" + client::test::test_name() + "-.*", "--regex",
           "-s", "sub", "-p", "Earliest", "-n", "1"});
  ASSERT_EQ(consumed.code, 0) << consumed.err;
  EXPECT_EQ(consumed.out,
            "----- got message -----\nkey:[null], properties:[], content:line one,\nline two\n"
            "1 messages successfully consumed\n");
}

TEST_F(ClientToolTest, BadArgumentsExitOneWithAMessage) {
  auto no_messages = run({"produce", topic()});
  EXPECT_EQ(no_messages.code, 1);
  EXPECT_NE(no_messages.err.find("--messages or --files"), std::string::npos);
  auto bad_property = run({"produce", topic(), "-m", "x", "-p", "novalue"});
  EXPECT_EQ(bad_property.code, 1);
  auto bad_type = run({"consume", topic(), "-s", "s", "-t", "Broadcast"});
  EXPECT_EQ(bad_type.code, 1);
  EXPECT_NE(bad_type.err.find("Invalid subscription type"), std::string::npos);
  auto no_subscription = run({"consume", topic()});
  EXPECT_EQ(no_subscription.code, 1);
  auto bad_id = run({"read", topic(), "-m", "12"});
  EXPECT_EQ(bad_id.code, 1);
  auto help = run_bare({"produce", "--help"});
  EXPECT_EQ(help.code, 0);
  EXPECT_NE(help.out.find("--num-produce"), std::string::npos);
}

}  // namespace
}  // namespace magnetar::cli
