// magnetar-client run in-process against a broker and a bookie in-process: produce, consume
// and read with pulsar-client's flags, checking the printed lines and counts.

#include "cli/client_tool.h"

#include <fmt/format.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "cli/admin.h"
#include "client/tests/client_test_support.h"
#include "http/http_client.h"
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
  // magnetar-admin against the web port at `web` (serve_http()).
  static Outcome admin(const std::string& web, std::vector<std::string> args) {
    args.insert(args.begin(), {"--admin-url", web});
    std::ostringstream out, err;
    Outcome o;
    o.code = run_admin(std::move(args), out, err);
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

TEST_F(ClientToolTest, FailoverFlagsReachTheClient) {
  // A secondary of the primary's scheme is taken (the primary serves: nothing moves).
  auto fine = run({"--secondary-service-url", "pulsar://127.0.0.1:1", "--check-interval-ms",
                   "100", "--failover-delay-ms", "200", "produce", topic(), "-m", "a"});
  ASSERT_EQ(fine.code, 0) << fine.err;
  EXPECT_EQ(fine.out, "1 messages successfully produced\n");
  auto mixed = run({"--secondary-service-url", "pulsar+ssl://127.0.0.1:6651", "produce", topic(),
                    "-m", "a"});
  EXPECT_EQ(mixed.code, 1);
  EXPECT_NE(mixed.err.find("secondary service URL"), std::string::npos) << mixed.err;
  auto wrong = run({"--discover-peer-clusters", "--discovery-web-service-url", "nope://x",
                    "produce", topic(), "-m", "a"});
  EXPECT_EQ(wrong.code, 1);
  EXPECT_NE(wrong.err.find("discovery_web_service_url"), std::string::npos) << wrong.err;
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
    c.tls.certificate_file_path = certs->server_cert;
    c.tls.key_file_path = certs->server_key;
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

// magnetar-admin peek / examine / get-message-by-id against the broker's own answers: an LZ4
// batch comes back decompressed and split, properties with a CR/LF never become headers.
TEST_F(ClientToolTest, AdminShowsStoredBatchesAsPulsarAdminDoes) {
  using client::CompressionType;
  using client::Message;
  using client::MessageId;
  using client::ProducerOptions;
  const std::string web = serve_http();
  auto sub = consumer(topic(), "sub");  // the subscription the peek reads
  ProducerOptions o;
  o.compression = CompressionType::kLz4;
  o.batching_max_delay = std::chrono::milliseconds(200);
  auto p = producer(topic(), o);
  std::atomic<int> sent{0};
  for (int i = 0; i < 3; ++i) {
    Message m("batched-" + std::to_string(i));
    m.set_property("n", std::to_string(i));
    p.send_async(std::move(m), [&](Result<MessageId> r) {
      EXPECT_TRUE(r.ok()) << r.status().to_string();
      ++sent;
    });
  }
  ASSERT_TRUE(p.flush().ok());
  ASSERT_EQ(sent.load(), 3);
  // An entry-level property (no batch) whose key would write a header: left out of them.
  ProducerOptions single;
  single.batching_enabled = false;
  auto plain = producer(topic(), single);
  Message evil("plain");
  evil.set_property("evil\r\nX-Injected", "1");
  evil.set_property("fine", "2");
  ASSERT_TRUE(plain.send(std::move(evil)).ok());
  auto admin = [&web](std::vector<std::string> args) {
    return ClientToolTest::admin(web, std::move(args));
  };
  auto peeked = admin({"topics", "peek-messages", topic(), "-s", "sub", "-n", "4"});
  ASSERT_EQ(peeked.code, 0) << peeked.err;
  EXPECT_EQ(occurrences(peeked.out, "Batch Message ID: "), 3) << peeked.out;
  EXPECT_EQ(occurrences(peeked.out, "\nMessage ID: "), 1) << peeked.out;
  EXPECT_NE(peeked.out.find("fine    2\n"), std::string::npos) << peeked.out;
  for (int i = 0; i < 3; ++i) {
    EXPECT_NE(peeked.out.find(fmt::format(":{}\nPublish time: ", i)), std::string::npos);
  }
  EXPECT_NE(peeked.out.find("|batched-0       |"), std::string::npos) << peeked.out;
  EXPECT_NE(peeked.out.find("|batched-2       |"), std::string::npos) << peeked.out;
  EXPECT_NE(peeked.out.find("X-Pulsar-num-batch-message    3\n"), std::string::npos);
  // The key reaches the tool intact (in X-Pulsar-PROPERTY's JSON), but never as a header.
  EXPECT_NE(peeked.out.find("evil\r\nX-Injected    1\n"), std::string::npos) << peeked.out;
  http::HttpRequest raw;
  raw.method = "GET";
  raw.url = web + "/admin/v2/persistent/public/default/" + client::test::test_name() +
            "/subscription/sub/position/2";
  auto answer = http::HttpClient().send_blocking(raw);
  ASSERT_TRUE(answer.ok()) << answer.status().to_string();
  EXPECT_EQ(answer->header("x-pulsar-property-fine"), "2");
  EXPECT_EQ(answer->header("x-injected"), "");
  for (const auto& [name, value] : answer->fields) EXPECT_EQ(name.find("evil"), std::string::npos);

  auto examined = admin({"topics", "examine-messages", topic(), "-i", "earliest"});
  ASSERT_EQ(examined.code, 0) << examined.err;
  EXPECT_EQ(occurrences(examined.out, "Batch Message ID: "), 1);
  EXPECT_NE(examined.out.find("|batched-0       |"), std::string::npos) << examined.out;
  // The batch's id, read back from the peek's first line ("Batch Message ID: L:E:0").
  const size_t at = peeked.out.find("Batch Message ID: ") + 18;
  const std::string id = peeked.out.substr(at, peeked.out.find('\n', at) - at);
  const size_t colon = id.find(':');
  const std::string ledger = id.substr(0, colon);
  const std::string entry = id.substr(colon + 1, id.rfind(':') - colon - 1);
  auto by_id = admin({"topics", "get-message-by-id", topic(), "-l", ledger, "-e", entry});
  ASSERT_EQ(by_id.code, 0) << by_id.err;
  EXPECT_NE(by_id.out.find("Redelivery count: 0\n"), std::string::npos);
  auto missing = admin({"topics", "get-message-by-id", topic(), "-l", ledger, "-e", "99"});
  EXPECT_EQ(missing.code, 1);
  EXPECT_NE(missing.err.find("Message not found"), std::string::npos) << missing.err;
}

// A missing tenant or namespace is said at once (TopicNotFound on the partitioned-metadata
// lookup, which clients do not retry), not after the operation timeout; a topic name with a
// space is refused by name.
TEST_F(ClientToolTest, AnUnknownNamespaceFailsAtOnceAndBadNamesAreRefused) {
  const auto start = std::chrono::steady_clock::now();
  auto produced = run({"produce", "persistent://nosuch/ns/t", "-m", "x"});
  EXPECT_EQ(produced.code, 1);
  EXPECT_NE(produced.err.find("Tenant or namespace or topic does not exist: nosuch/ns"),
            std::string::npos)
      << produced.err;
  auto consumed = run({"consume", "persistent://public/nosuch/t", "-s", "s"});
  EXPECT_EQ(consumed.code, 1);
  EXPECT_NE(consumed.err.find("Tenant or namespace or topic does not exist: public/nosuch"),
            std::string::npos)
      << consumed.err;
  // Both well inside one operation timeout (30 s for the tool): nothing was retried.
  EXPECT_LT(std::chrono::steady_clock::now() - start, 10s);

  auto spaced = run({"produce", "persistent://public/default/a b", "-m", "x"});
  EXPECT_EQ(spaced.code, 1);
  EXPECT_NE(spaced.err.find("a space or a control character"), std::string::npos) << spaced.err;
  const std::string web = serve_http();
  std::ostringstream out, err;
  EXPECT_EQ(run_admin({"--admin-url", web, "topics", "create", "persistent://public/default/a b"},
                      out, err),
            1);
  EXPECT_NE(err.str().find("Invalid topic name 'persistent://public/default/a b': the topic part "
                           "contains a space or a control character"),
            std::string::npos)
      << err.str();
}

// As in Pulsar: create-subscription on a topic that does not exist creates it (auto-creation
// on); with auto-creation off it is 404 "Topic not found".
TEST_F(ClientToolTest, CreateSubscriptionOnAMissingTopicCreatesIt) {
  const std::string web = serve_http();
  auto admin = [&web](std::vector<std::string> args) {
    return ClientToolTest::admin(web, std::move(args));
  };
  auto created = admin({"topics", "create-subscription", topic(), "-s", "s1"});
  ASSERT_EQ(created.code, 0) << created.err;
  EXPECT_EQ(admin({"topics", "subscriptions", topic()}).out, "s1\n");
  EXPECT_NE(admin({"topics", "list", "public/default"}).out.find(topic() + "\n"),
            std::string::npos);

  start_broker([](broker::BrokerConfig& c) { c.allow_auto_topic_creation = false; });
  const std::string strict = serve_http();
  std::ostringstream out, err;
  EXPECT_EQ(run_admin({"--admin-url", strict, "topics", "create-subscription", topic("-other"),
                       "-s", "s1"},
                      out, err),
            1);
  EXPECT_NE(err.str().find("Topic not found"), std::string::npos) << err.str();
}

// pulsar-admin's schemas, brokers, lookups and namespace options, printed as it prints them.
TEST_F(ClientToolTest, AdminSchemasBrokersLookupsAsPulsarAdminPrintsThem) {
  const std::string web = serve_http();
  auto admin = [&web](std::vector<std::string> args) {
    return ClientToolTest::admin(web, std::move(args));
  };
  const std::string file = ::testing::TempDir() + "/schema-" + client::test::test_name() + ".json";
  {
    std::ofstream f(file);
    f << R"({"type":"JSON","schema":"{\"type\":\"record\",\"name\":\"U\",\"fields\":[]}","properties":{"b":"2","a":"1"}})";
  }
  auto uploaded = admin({"schemas", "upload", topic(), "-f", file});
  ASSERT_EQ(uploaded.code, 0) << uploaded.err;
  EXPECT_EQ(uploaded.out, "");
  auto got = admin({"schemas", "get", topic()});
  ASSERT_EQ(got.code, 0) << got.err;
  // Pulsar's SchemaInfoWithVersion: version, then the info in its field order, the JSON
  // definition embedded, properties sorted.
  EXPECT_EQ(got.out.rfind("{\n  \"version\": 0,\n  \"schemaInfo\": {\n    \"name\": \"" +
                              client::test::test_name() + "\",\n    \"schema\": {",
                          0),
            0u)
      << got.out;
  EXPECT_NE(got.out.find("\"type\": \"JSON\""), std::string::npos) << got.out;
  EXPECT_LT(got.out.find("\"a\": \"1\""), got.out.find("\"b\": \"2\"")) << got.out;
  auto compatible = admin({"schemas", "compatibility", topic(), "-f", file});
  ASSERT_EQ(compatible.code, 0) << compatible.err;
  EXPECT_NE(compatible.out.find("\"compatibility\" : true"), std::string::npos) << compatible.out;
  EXPECT_EQ(admin({"schemas", "upload", topic(), "-f", "/no/such.json"}).err,
            "Schema file /no/such.json is not found.\n\n");
  EXPECT_EQ(admin({"schemas", "delete", topic()}).code, 0);
  auto gone = admin({"schemas", "get", topic()});
  EXPECT_EQ(gone.code, 1);
  EXPECT_NE(gone.err.find("Schema is deleted"), std::string::npos) << gone.err;

  // brokers get-runtime-config: "key    value" lines; clusters list -c marks this cluster.
  auto runtime = admin({"brokers", "get-runtime-config"});
  ASSERT_EQ(runtime.code, 0) << runtime.err;
  EXPECT_NE(runtime.out.find("\nclusterName    "), std::string::npos) << runtime.out;
  const size_t at = runtime.out.find("\nclusterName    ") + std::string("\nclusterName    ").size();
  const std::string own = runtime.out.substr(at, runtime.out.find('\n', at) - at);
  ASSERT_EQ(admin({"clusters", "create", own, "--url", web}).code, 0);
  ASSERT_EQ(admin({"clusters", "create", "elsewhere", "--url", web}).code, 0);
  auto clusters = admin({"clusters", "list", "-c"});
  ASSERT_EQ(clusters.code, 0) << clusters.err;
  EXPECT_NE(clusters.out.find(own + "(*)\n"), std::string::npos) << clusters.out;
  EXPECT_NE(clusters.out.find("elsewhere\n"), std::string::npos) << clusters.out;

  // Lookups print the broker URL; a partitioned lookup each partition's.
  ASSERT_EQ(admin({"topics", "create-partitioned-topic", topic("-p"), "-p", "2"}).code, 0);
  auto looked = admin({"topics", "lookup", topic()});
  ASSERT_EQ(looked.code, 0) << looked.err;
  EXPECT_EQ(looked.out, url() + "\n");
  auto partitions = admin({"topics", "partitioned-lookup", topic("-p")});
  ASSERT_EQ(partitions.code, 0) << partitions.err;
  EXPECT_EQ(partitions.out, fmt::format("persistent://public/default/{0}-p-partition-0    {1}\n"
                                        "persistent://public/default/{0}-p-partition-1    {1}\n",
                                        client::test::test_name(), url()));
  EXPECT_NE(admin({"topics", "list-partitioned-topics", "public/default"}).out.find(topic("-p")),
            std::string::npos);
  // Compaction: requested, then its status (-w waits for it to end); the threshold policy.
  ASSERT_EQ(admin({"topics", "create", topic("-c")}).code, 0);
  auto never = admin({"topics", "compaction-status", topic("-c")});
  ASSERT_EQ(never.code, 0) << never.err;
  EXPECT_EQ(never.out,
            "Compaction has not been run for " + topic("-c") + " since broker startup\n");
  auto compact = admin({"topics", "compact", topic("-c")});
  ASSERT_EQ(compact.code, 0) << compact.err;
  EXPECT_EQ(compact.out, "Topic compaction requested for " + topic("-c") + "\n");
  auto status = admin({"topics", "compaction-status", "-w", topic("-c")});
  ASSERT_EQ(status.code, 0) << status.err;
  EXPECT_EQ(status.out, "Compaction was a success\n");
  ASSERT_EQ(admin({"namespaces", "set-compaction-threshold", "-t", "10M", "public/default"}).code,
            0);
  EXPECT_EQ(admin({"namespaces", "get-compaction-threshold", "public/default"}).out,
            "10485760\n");
  ASSERT_EQ(admin({"topics", "set-compaction-threshold", "-t", "1K", topic("-c")}).code, 0);
  EXPECT_EQ(admin({"topics", "get-compaction-threshold", topic("-c")}).out, "1024\n");
  ASSERT_EQ(admin({"namespaces", "remove-compaction-threshold", "public/default"}).code, 0);

  // Replicated subscription status: switched on and read back; neither flag is refused.
  ASSERT_EQ(admin({"topics", "create-subscription", "-s", "rs", topic("-c")}).code, 0);
  ASSERT_EQ(admin({"topics", "set-replicated-subscription-status", "--enable", "-s", "rs",
                   topic("-c")})
                .code,
            0);
  auto replicated =
      admin({"topics", "get-replicated-subscription-status", "-s", "rs", topic("-c")});
  ASSERT_EQ(replicated.code, 0) << replicated.err;
  EXPECT_NE(replicated.out.find("\"" + topic("-c") + "\" : true"), std::string::npos)
      << replicated.out;
  EXPECT_EQ(admin({"topics", "set-replicated-subscription-status", "-s", "rs", topic("-c")}).code,
            1);

  // Namespace options.
  EXPECT_EQ(admin({"namespaces", "get-auto-topic-creation", "public/default"}).out, "null\n");
  EXPECT_EQ(admin({"namespaces", "set-auto-topic-creation", "public/default", "-e", "-t",
                   "partitioned", "-n", "2"})
                .code,
            0);
  EXPECT_NE(admin({"namespaces", "get-auto-topic-creation", "public/default"})
                .out.find("\"defaultNumPartitions\" : 2"),
            std::string::npos);
  EXPECT_EQ(admin({"namespaces", "set-auto-topic-creation", "public/default", "-e", "-t",
                   "partitioned"})
                .code,
            1);  // the broker's 412: partitions needed
  EXPECT_EQ(admin({"namespaces", "set-schema-compatibility-strategy", "public/default", "-c",
                   "BACKWARD"})
                .code,
            0);
  EXPECT_EQ(admin({"namespaces", "get-schema-compatibility-strategy", "public/default"}).out,
            "BACKWARD\n");

  // An unknown subcommand is named, with the close ones.
  auto unknown = admin({"topics", "lokup", topic()});
  EXPECT_EQ(unknown.code, 1);
  EXPECT_EQ(unknown.err.rfind("Unmatched argument at index 3: 'lokup'\nDid you mean: lookup", 0),
            0u)
      << unknown.err;
}

// -vs registers the schema (schemas get shows it); a producer of another type is refused; a
// consumer with -st auto_consume takes the topic whatever its schema; -m NonDurable leaves
// no subscription behind.
TEST_F(ClientToolTest, ValueSchemaSchemaTypeAndSubscriptionMode) {
  const std::string web = serve_http();
  auto produced = run({"produce", topic(), "-m", "hello", "-vs", "string"});
  ASSERT_EQ(produced.code, 0) << produced.err;
  auto got = admin(web, {"schemas", "get", topic()});
  ASSERT_EQ(got.code, 0) << got.err;
  EXPECT_NE(got.out.find("\"type\": \"STRING\""), std::string::npos) << got.out;
  auto other = run({"produce", topic(), "-m", "{}", "-vs", "json:{\"type\":\"record\"}"});
  EXPECT_EQ(other.code, 1);
  EXPECT_NE(other.err.find("Error while producing messages"), std::string::npos) << other.err;
  ASSERT_EQ(run({"produce", topic(), "-m", "again", "-vs", "string"}).code, 0);
  auto consumed = run({"consume", topic(), "-s", "auto", "-st", "auto_consume", "-p", "Earliest",
                       "-n", "2", "-m", "NonDurable"});
  ASSERT_EQ(consumed.code, 0) << consumed.err;
  EXPECT_NE(consumed.out.find("content:hello"), std::string::npos) << consumed.out;
  EXPECT_EQ(admin(web, {"topics", "subscriptions", topic()}).out, "");  // non-durable: gone
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
  // Pulsar's multi-letter options: ours by name, the others refused by name, never misread
  // as one-letter clusters (-vs was -v -s: print the version and exit 0, sending nothing).
  auto refused = run({"produce", topic(), "-m", "hello", "-ekv", "x"});
  EXPECT_EQ(refused.code, 1);
  EXPECT_EQ(refused.err, "pulsar-client's option -ekv is not supported here\n");
  auto bad_schema = run({"produce", topic(), "-m", "hello", "-vs", "nonsense"});
  EXPECT_EQ(bad_schema.code, 1);
  EXPECT_NE(bad_schema.err.find("Invalid value schema 'nonsense'"), std::string::npos);
  EXPECT_EQ(run({"produce", topic(), "-m", "x", "-vs", "json"}).code, 1);  // needs a definition
  EXPECT_EQ(run({"consume", topic(), "-s", "s", "-st", "avro"}).code, 1);
  EXPECT_EQ(run({"consume", topic(), "-s", "s", "-m", "Sometimes"}).code, 1);
  auto unknown = run({"consume", topic(), "-s", "s", "-zz"});
  EXPECT_EQ(unknown.code, 1);
  EXPECT_EQ(unknown.err, "Unknown option: '-zz'\n");
  // A message that looks like an option is still a message.
  auto dashed = run({"produce", topic(), "-m", "-hello", "-db"});
  EXPECT_EQ(dashed.code, 0) << dashed.err;
  auto help = run_bare({"produce", "--help"});
  EXPECT_EQ(help.code, 0);
  EXPECT_NE(help.out.find("--num-produce"), std::string::npos);
}

}  // namespace
}  // namespace magnetar::cli
