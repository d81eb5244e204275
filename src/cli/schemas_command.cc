// `magnetar-admin schemas ...`: /admin/v2/schemas, with pulsar-admin's subcommands and output.
//
//   schemas get <topic> [-v N | -a]      the schema as pulsar-admin prints a SchemaInfo
//   schemas upload <topic> -f FILE       FILE: {"type": ..., "schema": ..., "properties": {}}
//   schemas delete <topic> [-f]
//   schemas compatibility <topic> -f FILE  (prints the answer, which pulsar-admin drops)

#include <fmt/format.h>

#include <fstream>
#include <memory>
#include <sstream>

#include <nlohmann/json.hpp>

#include "cli/arguments.h"
#include "cli/commands.h"

namespace magnetar::cli {

namespace {

struct SchemaArgs {
  std::string topic;
  int64_t version = -1;
  bool all = false;
  bool force = false;
  std::string file;
};

// "/admin/v2/schemas/t/ns/x" of a topic name as the other commands take it.
Result<std::string> schema_root(std::string_view topic) {
  auto path = topic_path(topic);
  if (!path.ok()) return path.status();
  constexpr std::string_view kPersistent = "/admin/v2/persistent/";
  if (!path->starts_with(kPersistent)) {
    return Status(Errc::kInvalidArgument, "schemas are kept for persistent topics only");
  }
  return "/admin/v2/schemas/" + path->substr(kPersistent.size());
}

// Pulsar's SchemaInfo JSON (its field order): the definition of an AVRO, JSON or PROTOBUF
// schema embedded as JSON, any other as its text.
nlohmann::ordered_json schema_info(const std::string& local_name, const Json& response) {
  const std::string type = response.value("type", "NONE");
  const std::string data = response.value("data", "");
  nlohmann::ordered_json info;
  info["name"] = local_name;
  const bool structured = type == "AVRO" || type == "JSON" || type == "PROTOBUF";
  const auto parsed = nlohmann::ordered_json::parse(data, nullptr, false);
  if (structured && !parsed.is_discarded()) {
    info["schema"] = parsed;
  } else {
    info["schema"] = data;
  }
  info["type"] = type;
  info["timestamp"] = response.value("timestamp", int64_t{0});
  nlohmann::ordered_json properties = nlohmann::ordered_json::object();
  if (response.contains("properties") && response["properties"].is_object()) {
    for (const auto& [k, v] : response["properties"].items()) properties[k] = v;  // sorted
  }
  info["properties"] = std::move(properties);
  return info;
}

std::string local_name_of(const std::string& root) { return root.substr(root.rfind('/') + 1); }

std::optional<std::string> read_schema_file(Session& s, const std::string& file) {
  std::ifstream in(file);
  if (!in) {
    s.argument_error("Schema file " + file + " is not found.");
    return std::nullopt;
  }
  std::stringstream text;
  text << in.rdbuf();
  if (Json::parse(text.str(), nullptr, false).is_discarded()) {
    s.argument_error("Schema file " + file + " is not JSON ({\"type\": ..., \"schema\": ...})");
    return std::nullopt;
  }
  return text.str();
}

int get_schema(Session& s, const SchemaArgs& a) {
  if (a.all && a.version >= 0) {
    return s.argument_error("Only one or neither of --version and --all-version can be specified.");
  }
  auto root = schema_root(a.topic);
  if (!root.ok()) return s.argument_error(root.status().message());
  const std::string name = local_name_of(*root);
  if (a.all) {
    auto response = s.call("GET", *root + "/schemas");
    if (!response) return 1;
    const Json j = Session::parse(*response);
    if (j.is_object() && j.contains("getSchemaResponses") && j["getSchemaResponses"].is_array()) {
      for (const Json& v : j["getSchemaResponses"]) s.out() << schema_info(name, v).dump(2) << "\n";
    }
    return 0;
  }
  const std::string path =
      a.version >= 0 ? fmt::format("{}/schema/{}", *root, a.version) : *root + "/schema";
  auto response = s.call("GET", path);
  if (!response) return 1;
  const Json j = Session::parse(*response);
  if (a.version >= 0) {
    s.out() << schema_info(name, j).dump(2) << "\n";
    return 0;
  }
  nlohmann::ordered_json out;
  out["version"] = j.value("version", int64_t{0});
  out["schemaInfo"] = schema_info(name, j);
  s.out() << out.dump(2) << "\n";
  return 0;
}

}  // namespace

void add_schema_commands(CLI::App& app, CommandTable& table) {
  CLI::App* group = add_group(app, "schemas", "Operations about schemas");

  auto get = std::make_shared<SchemaArgs>();
  CLI::App* get_cmd = group->add_subcommand("get", "Get the schema of a topic");
  get_cmd->add_option("topic", get->topic, "persistent://tenant/namespace/topic")->required();
  get_cmd->add_option("-v,--version", get->version, "The version (default: the latest)");
  get_cmd->add_flag("-a,--all-version", get->all, "Every version");
  table.on(get_cmd, [get](Session& s) { return get_schema(s, *get); });

  auto upload = std::make_shared<SchemaArgs>();
  CLI::App* upload_cmd = group->add_subcommand("upload", "Upload a schema for a topic");
  upload_cmd->add_option("topic", upload->topic, "persistent://tenant/namespace/topic")
      ->required();
  upload_cmd->add_option("-f,--filename", upload->file, "The schema file (JSON)")->required();
  table.on(upload_cmd, [upload](Session& s) {
    auto root = schema_root(upload->topic);
    if (!root.ok()) return s.argument_error(root.status().message());
    auto body = read_schema_file(s, upload->file);
    if (!body) return 1;
    return s.call("POST", *root + "/schema", *body) ? 0 : 1;
  });

  auto del = std::make_shared<SchemaArgs>();
  CLI::App* del_cmd = group->add_subcommand("delete", "Delete the schema of a topic");
  del_cmd->add_option("topic", del->topic, "persistent://tenant/namespace/topic")->required();
  del_cmd->add_flag("-f,--force", del->force, "Delete the whole history");
  table.on(del_cmd, [del](Session& s) {
    auto root = schema_root(del->topic);
    if (!root.ok()) return s.argument_error(root.status().message());
    return s.call("DELETE", *root + "/schema" + (del->force ? "?force=true" : "")) ? 0 : 1;
  });

  auto compat = std::make_shared<SchemaArgs>();
  CLI::App* compat_cmd = group->add_subcommand(
      "compatibility", "Check whether a schema is compatible with the topic's");
  compat_cmd->add_option("topic", compat->topic, "persistent://tenant/namespace/topic")
      ->required();
  compat_cmd->add_option("-f,--filename", compat->file, "The schema file (JSON)")->required();
  table.on(compat_cmd, [compat](Session& s) {
    auto root = schema_root(compat->topic);
    if (!root.ok()) return s.argument_error(root.status().message());
    auto body = read_schema_file(s, compat->file);
    if (!body) return 1;
    auto response = s.call("POST", *root + "/compatibility", *body);
    if (!response) return 1;
    s.print(Session::parse(*response));
    return 0;
  });
}

}  // namespace magnetar::cli
