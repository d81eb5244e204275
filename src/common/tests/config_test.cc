#include "common/config.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>

namespace magnetar {
namespace {

struct TestConfig {
  int32_t port = 3181;
  int64_t max_size_mb = 2048;
  bool sync = true;
  double ratio = 0.5;
  std::string mode = "default";
  std::vector<std::string> dirs = {"data/journal"};
  std::string auth_token;
};

class ConfigTest : public ::testing::Test {
 protected:
  ConfigTest() {
    schema_.bind("bookiePort", &cfg_.port, "port").range(1, 65535);
    schema_.bind("journalMaxSizeMB", &cfg_.max_size_mb, "journal size");
    schema_.bind("journalSyncData", &cfg_.sync, "fsync");
    schema_.bind("ratio", &cfg_.ratio, "ratio").range(0, 1);
    schema_.bind("placement", &cfg_.mode, "policy").one_of({"default", "rack", "region"});
    schema_.bind("journalDirectories", &cfg_.dirs, "dirs");
    schema_.bind("authToken", &cfg_.auth_token, "token");
  }
  TestConfig cfg_;
  ConfigSchema schema_{"bookie"};
};

TEST_F(ConfigTest, DefaultsStayWithoutInput) {
  EXPECT_EQ(cfg_.port, 3181);
  EXPECT_EQ(schema_.source_of("bookiePort"), "default");
}

TEST_F(ConfigTest, FileSetsTypedValuesAndSkipsCommentsAndBlanks) {
  Status st = schema_.load_text(
      "# comment\n\n  bookiePort = 4000 \njournalSyncData=false\nratio=0.25\n"
      "journalDirectories= /a , /b,,\nplacement=rack\njournalMaxSizeMB=\n",
      "bookie.conf");
  ASSERT_TRUE(st.ok()) << st.to_string();
  EXPECT_EQ(cfg_.port, 4000);
  EXPECT_FALSE(cfg_.sync);
  EXPECT_DOUBLE_EQ(cfg_.ratio, 0.25);
  EXPECT_EQ(cfg_.dirs, (std::vector<std::string>{"/a", "/b"}));
  EXPECT_EQ(cfg_.mode, "rack");
  EXPECT_EQ(cfg_.max_size_mb, 2048);  // empty value keeps the default
  EXPECT_EQ(schema_.source_of("bookiePort"), "bookie.conf:3");
}

TEST_F(ConfigTest, UnknownKeyNamesKeyFileAndLine) {
  Status st = schema_.load_text("bookiePort=1\n\nbogusKey=3\n", "conf/bookie.conf");
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.code(), make_error_code(ConfigError::kUnknownKey));
  EXPECT_NE(st.message().find("'bogusKey'"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("conf/bookie.conf:3"), std::string::npos) << st.message();
}

TEST_F(ConfigTest, BadValuesNameKeyAndLine) {
  struct Case {
    const char* text;
    const char* expect;
  };
  for (const Case& c :
       {Case{"bookiePort=abc", "expected an integer"},
        Case{"bookiePort=70000", "between 1 and 65535"},
        Case{"bookiePort=99999999999999", "out of range"}, Case{"journalSyncData=maybe", "boolean"},
        Case{"ratio=2", "between 0 and 1"}, Case{"ratio=1x", "expected a number"},
        Case{"placement=zone", "one of: default,rack,region"}}) {
    Status st = schema_.load_text(std::string("\n") + c.text, "f.conf");
    ASSERT_FALSE(st.ok()) << c.text;
    EXPECT_TRUE(st.is(Errc::kInvalidArgument));
    EXPECT_NE(st.message().find("f.conf:2"), std::string::npos) << st.message();
    EXPECT_NE(st.message().find(c.expect), std::string::npos) << st.message();
  }
}

TEST_F(ConfigTest, LineWithoutEqualsIsSyntaxError) {
  Status st = schema_.load_text("bookiePort 3181\n", "x.conf");
  EXPECT_EQ(st.code(), make_error_code(ConfigError::kBadSyntax));
  EXPECT_NE(st.message().find("x.conf:1"), std::string::npos);
}

TEST_F(ConfigTest, MissingFileIsIoError) {
  Status st = schema_.load_file("/nonexistent/bookie.conf");
  EXPECT_TRUE(st.is(Errc::kIoError));
  EXPECT_NE(st.message().find("/nonexistent/bookie.conf"), std::string::npos);
}

TEST_F(ConfigTest, LoadsRealFile) {
  std::string path = ::testing::TempDir() + "/config_test.conf";
  std::ofstream(path) << "bookiePort=5000\n";
  ASSERT_TRUE(schema_.load_file(path).ok());
  EXPECT_EQ(cfg_.port, 5000);
  std::remove(path.c_str());
}

TEST_F(ConfigTest, LayersOverrideInOrderFileEnvFlag) {
  ASSERT_TRUE(schema_.load_text("bookiePort=4000\njournalMaxSizeMB=10\n", "f").ok());
  ASSERT_TRUE(schema_
                  .apply_environment({{"MAGNETAR_BOOKIE_PORT", "4001"},
                                      {"MAGNETAR_journalMaxSizeMB", "20"},
                                      {"MAGNETAR_UNRELATED", "x"}})
                  .ok());
  EXPECT_EQ(cfg_.port, 4001);
  EXPECT_EQ(cfg_.max_size_mb, 20);
  EXPECT_EQ(schema_.source_of("bookiePort"), "environment variable MAGNETAR_BOOKIE_PORT");
  ASSERT_TRUE(schema_.apply_assignment("bookiePort=4002", "--set").ok());
  EXPECT_EQ(cfg_.port, 4002);
  EXPECT_EQ(schema_.source_of("bookiePort"), "command line");
}

TEST_F(ConfigTest, BadEnvironmentValueNamesTheVariable) {
  Status st = schema_.apply_environment({{"MAGNETAR_JOURNAL_SYNC_DATA", "perhaps"}});
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("MAGNETAR_JOURNAL_SYNC_DATA"), std::string::npos) << st.message();
}

TEST_F(ConfigTest, UnknownFlagIsAnError) {
  EXPECT_EQ(schema_.apply_flag("nope", "1").code(), make_error_code(ConfigError::kUnknownKey));
  EXPECT_EQ(schema_.apply_assignment("novalue", "--set").code(),
            make_error_code(ConfigError::kBadSyntax));
}

TEST_F(ConfigTest, EnvSuffixIsUpperSnakeCase) {
  EXPECT_EQ(ConfigSchema::env_suffix("bookiePort"), "BOOKIE_PORT");
  EXPECT_EQ(ConfigSchema::env_suffix("journalMaxSizeMB"), "JOURNAL_MAX_SIZE_MB");
  EXPECT_EQ(ConfigSchema::env_suffix("managedLedgerDefaultEnsembleSize"),
            "MANAGED_LEDGER_DEFAULT_ENSEMBLE_SIZE");
}

TEST_F(ConfigTest, SecretsAreMaskedInDescriptionsAndErrors) {
  ASSERT_TRUE(schema_.apply_flag("authToken", "eyJhbGciOi.secret").ok());
  std::string d = schema_.describe_effective();
  EXPECT_EQ(d.find("eyJhbGciOi"), std::string::npos);
  EXPECT_NE(d.find("authToken=*** (command line)"), std::string::npos) << d;
  // Authentication parameters carry credentials too (token:<jwt>, tlsKeyFile:...).
  std::string params;
  ConfigSchema broker("broker");
  broker.bind("brokerClientAuthenticationParameters", &params, "credentials");
  ASSERT_TRUE(broker.apply_flag("brokerClientAuthenticationParameters", "token:eyJ.x.y").ok());
  EXPECT_EQ(broker.describe_effective().find("eyJ"), std::string::npos);
}

TEST_F(ConfigTest, TemplateListsEveryKeyWithDefault) {
  std::string t = schema_.render_template();
  EXPECT_NE(t.find("bookiePort=3181"), std::string::npos);
  EXPECT_NE(t.find("journalDirectories=data/journal"), std::string::npos);
  // A template loads back cleanly into a fresh schema.
  TestConfig other;
  ConfigSchema again("bookie");
  again.bind("bookiePort", &other.port, "port");
  again.bind("journalMaxSizeMB", &other.max_size_mb, "journal size");
  again.bind("journalSyncData", &other.sync, "fsync");
  again.bind("ratio", &other.ratio, "ratio");
  again.bind("placement", &other.mode, "policy");
  again.bind("journalDirectories", &other.dirs, "dirs");
  again.bind("authToken", &other.auth_token, "token");
  EXPECT_TRUE(again.load_text(t, "template").ok());
}

// Pulsar's Optional<Integer> keys (brokerServicePortTls): unset until given a value.
TEST(ConfigOptionalTest, OptionalIntegerIsUnsetUntilGiven) {
  std::optional<int32_t> tls_port;
  ConfigSchema schema("broker");
  schema.bind("brokerServicePortTls", &tls_port, "TLS port").range(0, 65535);
  EXPECT_NE(schema.render_template().find("\nbrokerServicePortTls=\n"), std::string::npos)
      << schema.render_template();
  ASSERT_TRUE(schema.load_text("brokerServicePortTls=\n", "broker.conf").ok());
  EXPECT_FALSE(tls_port.has_value());  // empty keeps the default: unset
  Status bad = schema.load_text("brokerServicePortTls=70000\n", "broker.conf");
  EXPECT_FALSE(bad.ok());
  EXPECT_FALSE(tls_port.has_value());
  EXPECT_FALSE(schema.load_text("brokerServicePortTls=tls\n", "broker.conf").ok());
  ASSERT_TRUE(schema.load_text("brokerServicePortTls=6651\n", "broker.conf").ok());
  ASSERT_TRUE(tls_port.has_value());
  EXPECT_EQ(*tls_port, 6651);
  EXPECT_NE(schema.describe_effective().find("brokerServicePortTls=6651"), std::string::npos);
}

}  // namespace
}  // namespace magnetar
