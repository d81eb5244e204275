#include "cli/client_tool.h"

#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cctype>
#include <fstream>
#include <map>
#include <ostream>
#include <sstream>

#include "cli/client_conf.h"
#include "cli/command_line.h"
#include "cli/interrupt.h"
#include "cli/message_format.h"
#include "common/token_bucket.h"
#include "common/version.h"
#include "magnetar/client.h"
#include "protocol/schema_type.h"

namespace magnetar::cli {

namespace {

using namespace std::chrono_literals;

// How long one receive waits before the stop request is polled again.
constexpr auto kPollInterval = 200ms;

struct GlobalOptions {
  std::string url;
  std::string conf;
  std::string auth_plugin;
  std::string auth_params;
  FailoverFlags failover;
};

struct ProduceOptions {
  std::string topic;
  std::vector<std::string> messages;
  std::vector<std::string> files;
  int num_produce = 1;
  double rate = 0;
  std::string key;
  std::vector<std::string> properties;
  std::string separator = ",";
  bool chunking = false;
  bool disable_batching = false;
  std::string compression = "NONE";
  std::string value_schema = "bytes";
};

struct ConsumeOptions {
  std::string topic;
  std::string subscription;
  std::string type = "Exclusive";
  std::string position = "Latest";
  std::string mode = "Durable";
  std::string schema_type = "bytes";
  int num_messages = 1;
  double rate = 0;
  bool hex = false;
  bool regex = false;
  bool hide_content = false;
};

struct ReadOptions {
  std::string topic;
  std::string start = "latest";
  bool inclusive = false;
  int num_messages = 1;
  double rate = 0;
  bool hex = false;
  bool hide_content = false;
};

// pulsar-client's single-dash long options, which CLI11 cannot declare.
// pulsar-client's options of several letters after one dash, per command: ours, or "" where
// magnetar-client has no such option (refused by name rather than misread).
const PulsarNames& client_names() {
  static const PulsarNames names = {
      {"", {{"-ml", ""}}},
      {"produce",
       {{"-db", "--disable-batching"},
        {"-ch", "--chunking"},  // pulsar-perf's name for it
        {"-vs", "--value-schema"},
        {"-ekn", ""},
        {"-ekv", ""},
        {"-kvk", ""},
        {"-kvkf", ""},
        {"-ks", ""},
        {"-kvet", ""},
        {"-dr", ""}}},
      {"consume",
       {{"-st", "--schema-type"},
        {"-mp", ""},
        {"-etp", ""},
        {"-stp", ""},
        {"-mc", ""},
        {"-ac", ""},
        {"-pm", ""},
        {"-rs", ""},
        {"-ca", ""},
        {"-ekv", ""}}},
      {"read",
       {{"-st", ""},
        {"-mp", ""},
        {"-mc", ""},
        {"-ac", ""},
        {"-pm", ""},
        {"-ca", ""},
        {"-ekv", ""}}},
  };
  return names;
}

// pulsar-client's --value-schema: bytes (none), a type name (string, int64, ...), or
// json:<definition> / avro:<definition>.
Result<std::optional<client::SchemaInfo>> value_schema(const std::string& text) {
  const size_t colon = text.find(':');
  std::string type = text.substr(0, colon);
  for (char& c : type) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  if (type == "BYTES") return std::optional<client::SchemaInfo>();
  if (!protocol::schema_type_of(type) || type == "AUTO_CONSUME") {
    return Status(Errc::kInvalidArgument,
                  fmt::format("Invalid value schema '{}': bytes, string, json:<definition>, "
                              "avro:<definition>, ...",
                              text));
  }
  client::SchemaInfo schema{type, colon == std::string::npos ? "" : text.substr(colon + 1), {}};
  if ((type == "JSON" || type == "AVRO") && schema.definition.empty()) {
    return Status(Errc::kInvalidArgument,
                  fmt::format("The {} value schema needs its definition: {}:<definition>",
                              text.substr(0, colon), text.substr(0, colon)));
  }
  return std::optional<client::SchemaInfo>(std::move(schema));
}

// Does what the command line selected against a client; prints the outcome.
class ClientCommands {
 public:
  ClientCommands(client::Client& c, std::ostream& out, std::ostream& err)
      : client_(c), out_(out), err_(err) {}

  int produce(const ProduceOptions& o);
  int consume(const ConsumeOptions& o);
  int read(const ReadOptions& o);

 private:
  void print_message(const client::Message& m, bool hex, bool hide_content) {
    out_ << "----- got message -----\n" << describe_message(m, hex, hide_content) << "\n";
  }

  client::Client& client_;
  std::ostream& out_;
  std::ostream& err_;
};

int ClientCommands::produce(const ProduceOptions& o) {
  std::vector<std::string> bodies = split_values(o.messages, o.separator);
  for (const std::string& path : o.files) {
    std::ifstream in(path, std::ios::binary);
    if (!in) {
      err_ << "Cannot read the file " << path << "\n";
      return 1;
    }
    std::stringstream text;
    text << in.rdbuf();
    bodies.push_back(text.str());
  }
  if (bodies.empty()) {
    err_ << "Please supply message content with either --messages or --files\n";
    return 1;
  }
  if (o.num_produce <= 0) {
    err_ << "--num-produce must be positive\n";
    return 1;
  }
  auto properties = parse_properties(o.properties);
  if (!properties.ok()) {
    err_ << properties.status().message() << "\n";
    return 1;
  }
  auto compression = parse_compression(o.compression);
  if (!compression.ok()) {
    err_ << compression.status().message() << "\n";
    return 1;
  }
  auto schema = value_schema(o.value_schema);
  if (!schema.ok()) {
    err_ << schema.status().message() << "\n";
    return 1;
  }
  client::ProducerOptions options;
  options.schema = *schema;
  options.compression = *compression;
  options.chunking_enabled = o.chunking;
  // Chunking needs batching off, as in pulsar-client.
  options.batching_enabled = !o.disable_batching && !o.chunking;
  int64_t sent = 0;
  auto producer = client_.create_producer(o.topic, options);
  if (!producer.ok()) {
    err_ << "Error while producing messages: " << producer.status().to_string() << "\n";
    out_ << sent << " messages successfully produced\n";
    return 1;
  }
  TokenBucket limiter(o.rate, 1);
  int code = 0;
  for (int i = 0; i < o.num_produce && code == 0 && !stop_requested(); ++i) {
    for (const std::string& body : bodies) {
      limiter.acquire();
      client::Message message(body);
      if (!o.key.empty()) message.set_key(o.key);
      if (!properties->empty()) message.set_properties(*properties);
      auto id = producer->send(std::move(message));
      if (!id.ok()) {
        err_ << "Error while producing messages: " << id.status().to_string() << "\n";
        code = 1;
        break;
      }
      ++sent;
    }
  }
  (void)producer->close();
  out_ << sent << " messages successfully produced\n";
  return code;
}

int ClientCommands::consume(const ConsumeOptions& o) {
  auto type = parse_subscription_type(o.type);
  auto position = parse_initial_position(o.position);
  for (const Status& st : {type.status(), position.status()}) {
    if (!st.ok()) {
      err_ << st.message() << "\n";
      return 1;
    }
  }
  if (o.num_messages < 0) {
    err_ << "--num-messages must not be negative\n";
    return 1;
  }
  if (o.mode != "Durable" && o.mode != "NonDurable") {
    err_ << "Invalid subscription mode '" << o.mode << "': Durable or NonDurable\n";
    return 1;
  }
  if (o.schema_type != "bytes" && o.schema_type != "auto_consume") {
    err_ << "Invalid schema type '" << o.schema_type << "': bytes or auto_consume\n";
    return 1;
  }
  client::ConsumerOptions options;
  options.type = *type;
  options.initial_position = *position;
  options.durable = o.mode == "Durable";
  if (o.schema_type == "auto_consume") options.schema = client::SchemaInfo{"AUTO_CONSUME", "", {}};
  auto consumer = o.regex ? client_.subscribe_pattern(o.topic, o.subscription, options)
                          : client_.subscribe(o.topic, o.subscription, options);
  int64_t consumed = 0;
  if (!consumer.ok()) {
    err_ << "Error while consuming messages: " << consumer.status().to_string() << "\n";
    out_ << consumed << " messages successfully consumed\n";
    return 1;
  }
  TokenBucket limiter(o.rate, 1);
  int code = 0;
  while ((o.num_messages == 0 || consumed < o.num_messages) && !stop_requested()) {
    auto m = consumer->receive(kPollInterval);
    if (!m.ok()) {
      if (m.status().is(Errc::kTimeout)) continue;
      err_ << "Error while consuming messages: " << m.status().to_string() << "\n";
      code = 1;
      break;
    }
    limiter.acquire();
    print_message(*m, o.hex, o.hide_content);
    if (Status acked = consumer->acknowledge(*m); !acked.ok()) {
      err_ << "Error while acknowledging a message: " << acked.to_string() << "\n";
      code = 1;
      break;
    }
    ++consumed;
  }
  (void)consumer->close();
  out_ << consumed << " messages successfully consumed\n";
  return code;
}

int ClientCommands::read(const ReadOptions& o) {
  auto start = parse_start_message_id(o.start);
  if (!start.ok()) {
    err_ << start.status().message() << "\n";
    return 1;
  }
  if (o.num_messages < 0) {
    err_ << "--num-messages must not be negative\n";
    return 1;
  }
  client::ReaderOptions options;
  options.start_message_id_inclusive = o.inclusive;
  auto reader = client_.create_reader(o.topic, *start, options);
  int64_t read = 0;
  if (!reader.ok()) {
    err_ << "Error while reading messages: " << reader.status().to_string() << "\n";
    out_ << read << " messages successfully read\n";
    return 1;
  }
  TokenBucket limiter(o.rate, 1);
  int code = 0;
  while ((o.num_messages == 0 || read < o.num_messages) && !stop_requested()) {
    auto m = reader->read_next(kPollInterval);
    if (!m.ok()) {
      if (m.status().is(Errc::kTimeout)) continue;
      err_ << "Error while reading messages: " << m.status().to_string() << "\n";
      code = 1;
      break;
    }
    limiter.acquire();
    print_message(*m, o.hex, o.hide_content);
    ++read;
  }
  (void)reader->close();
  out_ << read << " messages successfully read\n";
  return code;
}

}  // namespace

void apply_tls_settings(const TlsSettings& tls, client::ClientOptions& options) {
  options.tls_trust_certs_file_path = tls.trust_certs_file;
  options.tls_allow_insecure_connection = tls.allow_insecure;
  options.tls_validate_hostname = tls.validate_hostname;
  options.tls_certificate_file_path = tls.certificate_file;
  options.tls_private_key_file_path = tls.key_file;
}

void add_failover_options(CLI::App& app, FailoverFlags& f) {
  app.add_option("--secondary-service-url", f.secondary_service_urls,
                 "Cluster failover: a secondary cluster's service URL (repeatable, in order)");
  app.add_option("--failover-delay-ms", f.failover_delay_ms,
                 "Cluster failover: move once the current cluster is unreachable this long "
                 "(30000)")
      ->check(CLI::Range(0, 86'400'000));
  app.add_option("--switch-back-delay-ms", f.switch_back_delay_ms,
                 "Cluster failover: back to the primary once reachable this long (60000)")
      ->check(CLI::Range(0, 86'400'000));
  app.add_option("--check-interval-ms", f.check_interval_ms,
                 "Cluster failover: probe (or URL provider) period (30000)")
      ->check(CLI::Range(10, 86'400'000));
  app.add_option("--service-url-provider", f.url_provider,
                 "Cluster failover: an http(s) URL answering {\"serviceUrl\": ...}");
  app.add_flag("--discover-peer-clusters", f.discover_peer_clusters,
               "Cluster failover: learn the secondaries from the primary's peerClusterNames");
  app.add_option("--discovery-web-service-url", f.discovery_web_service_url,
                 "The primary's web service for --discover-peer-clusters "
                 "(default http://<primary host>:8080)");
}

void apply_failover_flags(const FailoverFlags& f, client::ClientOptions& options) {
  auto& o = options.cluster_failover;
  o.secondary_service_urls = f.secondary_service_urls;
  o.failover_delay = std::chrono::milliseconds(f.failover_delay_ms);
  o.switch_back_delay = std::chrono::milliseconds(f.switch_back_delay_ms);
  o.check_interval = std::chrono::milliseconds(f.check_interval_ms);
  o.url_provider = f.url_provider;
  o.discover_peer_clusters = f.discover_peer_clusters;
  o.discovery_web_service_url = f.discovery_web_service_url;
}

int run_client(std::vector<std::string> args, std::ostream& out, std::ostream& err) {
  clear_stop();
  CLI::App app{
      "Produce, consume and read messages of a Magnetar (Apache Pulsar compatible) "
      "cluster, with pulsar-client's commands and flags",
      "magnetar-client"};
  app.fallthrough();
  app.require_subcommand(1);
  app.set_version_flag("-v,--version", std::string("magnetar-client ") + kVersion);
  GlobalOptions g;
  app.add_option("--url", g.url,
                 "Service URL: pulsar://host:port, or http://host:port for HTTP lookup (default "
                 "pulsar://localhost:6650, or brokerServiceUrl from the client configuration)");
  app.add_option("--conf", g.conf,
                 "client.conf to read brokerServiceUrl from (default: $PULSAR_CLIENT_CONF)");
  add_failover_options(app, g.failover);
  app.add_option("--auth-plugin", g.auth_plugin,
                 "Authentication plugin: token or "
                 "org.apache.pulsar.client.impl.auth.AuthenticationToken (authPlugin)");
  app.add_option("--auth-params", g.auth_params,
                 "Its parameters: token:<jwt>, file:///path or {\"token\":...} (authParams)");

  ProduceOptions p;
  CLI::App* produce = app.add_subcommand("produce", "Produce messages to a topic");
  produce->add_option("topic", p.topic, "Topic name")->required();
  produce
      ->add_option("-m,--messages", p.messages,
                   "Messages to send, split at the separator (repeatable)")
      ->allow_extra_args(false);
  produce->add_option("-f,--files", p.files, "Files whose contents are sent, one message each")
      ->allow_extra_args(false);
  produce->add_option("-n,--num-produce", p.num_produce, "Times to send every message (1)");
  produce->add_option("-r,--rate", p.rate, "Messages per second, 0 for as fast as possible (0)");
  produce->add_option("-k,--key", p.key, "Message key");
  produce->add_option("-p,--properties", p.properties, "Properties key=value (repeatable)")
      ->allow_extra_args(false);
  produce->add_option("-s,--separator", p.separator, "Separator of --messages (,)");
  produce->add_flag("-c,--chunking", p.chunking, "Split messages too large for the broker");
  produce->add_flag("--disable-batching", p.disable_batching, "Send messages one by one (-db)");
  produce->add_option("-z,--compression", p.compression, "NONE, LZ4, ZLIB, ZSTD or SNAPPY");
  produce->add_option("--value-schema", p.value_schema,
                      "bytes (default), string, int64, ..., json:<definition> or "
                      "avro:<definition> (-vs)");

  ConsumeOptions c;
  CLI::App* consume = app.add_subcommand("consume", "Consume messages of a subscription");
  consume->add_option("topic", c.topic, "Topic name (a regular expression with --regex)")
      ->required();
  consume->add_option("-s,--subscription-name", c.subscription, "Subscription name")->required();
  consume->add_option("-t,--subscription-type", c.type,
                      "Exclusive, Shared, Failover or Key_Shared (Exclusive)");
  consume->add_option("-p,--subscription-position", c.position, "Latest or Earliest (Latest)");
  consume->add_option("-m,--subscription-mode", c.mode,
                      "Durable (the broker keeps the subscription) or NonDurable (Durable)");
  consume->add_option("--schema-type", c.schema_type,
                      "bytes (default: no check) or auto_consume (any schema) (-st)");
  consume->add_option("-n,--num-messages", c.num_messages, "Messages to consume, 0 for ever (1)");
  consume->add_option("-r,--rate", c.rate, "Messages per second, 0 for no limit (0)");
  consume->add_flag("--hex", c.hex, "Print the content as a hex dump");
  consume->add_flag("--regex", c.regex, "The topic is a regular expression");
  consume->add_flag("--hide-content", c.hide_content, "Do not print the content");

  ReadOptions r;
  CLI::App* read = app.add_subcommand("read", "Read messages from a position, no subscription");
  read->add_option("topic", r.topic, "Topic name")->required();
  read->add_option("-m,--start-message-id", r.start,
                   "earliest, latest or ledgerId:entryId (latest)");
  read->add_flag("-i,--start-message-id-inclusive", r.inclusive,
                 "Read the start message itself too");
  read->add_option("-n,--num-messages", r.num_messages, "Messages to read, 0 for ever (1)");
  read->add_option("-r,--rate", r.rate, "Messages per second, 0 for no limit (0)");
  read->add_flag("--hex", r.hex, "Print the content as a hex dump");
  read->add_flag("--hide-content", r.hide_content, "Do not print the content");

  auto rewritten = rewrite_pulsar_names(app, std::move(args), client_names(), "pulsar-client");
  if (!rewritten.ok()) {
    err << rewritten.status().message() << "\n";
    return 1;
  }
  if (auto done = parse_command_line(app, std::move(*rewritten), out, err)) return *done;

  auto url = resolve_service_url(g.url, g.conf);
  if (!url.ok()) {
    err << url.status().message() << "\n";
    return 1;
  }
  auto authentication = resolve_authentication(g.conf, g.auth_plugin, g.auth_params);
  if (!authentication.ok()) {
    err << authentication.status().message() << "\n";
    return 1;
  }
  auto tls = resolve_tls_settings(g.conf);
  if (!tls.ok()) {
    err << tls.status().message() << "\n";
    return 1;
  }
  client::ClientOptions options;
  apply_tls_settings(*tls, options);
  apply_failover_flags(g.failover, options);
  options.authentication = std::move(authentication).value();
  auto made = client::Client::create(*url, options);
  if (!made.ok()) {
    err << "Invalid service URL " << *url << ": " << made.status().to_string() << "\n";
    return 1;
  }
  client::Client client = std::move(made).value();
  ClientCommands commands(client, out, err);
  int code = 1;
  if (produce->parsed()) {
    code = commands.produce(p);
  } else if (consume->parsed()) {
    code = commands.consume(c);
  } else if (read->parsed()) {
    code = commands.read(r);
  }
  (void)client.close();
  return code;
}

}  // namespace magnetar::cli
