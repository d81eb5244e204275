#include "cli/arguments.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <limits>
#include <nlohmann/json.hpp>

#include "protocol/topic_name.h"

namespace magnetar::cli {

namespace {

bool valid_name_part(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '-' || c == '=' || c == ':' || c == '.';
  });
}

}  // namespace

std::vector<std::string> split_list(std::string_view text) {
  std::vector<std::string> out;
  while (true) {
    const size_t comma = text.find(',');
    out.emplace_back(text.substr(0, comma));
    if (comma == std::string_view::npos) return out;
    text.remove_prefix(comma + 1);
  }
}

Result<protocol::MessageId> parse_message_id(std::string_view text) {
  auto id = protocol::MessageId::parse(text);
  if (!id.ok()) {
    return Status(Errc::kInvalidArgument,
                  fmt::format("Invalid message id '{}': expected earliest, latest or "
                              "ledgerId:entryId",
                              text));
  }
  return id;
}

std::string reset_cursor_body(const protocol::MessageId& id, bool excluded) {
  nlohmann::json j = {{"ledgerId", id.ledger_id},
                      {"entryId", id.entry_id},
                      {"partitionIndex", id.partition},
                      {"isExcluded", excluded},
                      {"batchIndex", id.batch_index}};
  return j.dump();
}

Result<std::string> namespace_path(std::string_view name) {
  const size_t slash = name.find('/');
  if (slash == std::string_view::npos || !valid_name_part(name.substr(0, slash)) ||
      !valid_name_part(name.substr(slash + 1))) {
    return Status(Errc::kInvalidArgument,
                  fmt::format("Invalid namespace name '{}': expected <tenant>/<namespace>", name));
  }
  return std::string(name);
}

Result<std::string> topic_path(std::string_view name) {
  auto topic = protocol::TopicName::parse(name);
  if (!topic.ok()) {
    // The parser's message says why ("invalid topic name '...': the tenant ... contains ' '").
    std::string why = topic.status().message();
    if (!why.empty()) why[0] = 'I';
    return Status(Errc::kInvalidArgument, std::move(why));
  }
  // Legacy names (with a cluster) live under Pulsar's v1 paths.
  return (topic->is_legacy() ? "/admin/" : "/admin/v2/") + topic->rest_path();
}

Result<std::string> namespace_topics_root(std::string_view name, std::string_view domain) {
  auto ns = namespace_path(name);
  if (!ns.ok()) return ns.status();
  return fmt::format("/admin/v2/{}/{}", domain, *ns);
}

std::string encode_segment(std::string_view s) {
  std::string out;
  for (unsigned char c : s) {
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
        c == '.' || c == '_' || c == '~') {
      out += static_cast<char>(c);
    } else {
      out += fmt::format("%{:02X}", c);
    }
  }
  return out;
}

}  // namespace magnetar::cli
