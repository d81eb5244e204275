#include "cli/stored_messages.h"

#include <fmt/format.h>

#include <cctype>
#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>

#include "common/buffer.h"
#include "common/units.h"
#include "protocol/batch.h"

namespace magnetar::cli {

// The hex dump layout pulsar-admin prints message payloads in: 16 bytes a row, offset, hex
// and printable characters between box lines. Nothing but a newline for an empty payload.
void hex_dump(std::ostream& out, std::string_view bytes) {
  if (bytes.empty()) {
    out << "\n";
    return;
  }
  out << "         +-------------------------------------------------+\n"
      << "         |  0  1  2  3  4  5  6  7  8  9  a  b  c  d  e  f |\n"
      << "+--------+-------------------------------------------------+----------------+\n";
  for (size_t row = 0; row < bytes.size(); row += 16) {
    std::string hex;
    std::string text;
    for (size_t i = row; i < row + 16; ++i) {
      if (i < bytes.size()) {
        const auto c = static_cast<unsigned char>(bytes[i]);
        hex += fmt::format(" {:02x}", c);
        text += (c >= 0x20 && c < 0x7f) ? static_cast<char>(c) : '.';
      } else {
        hex += "   ";
        text += ' ';
      }
    }
    out << fmt::format("|{:08x}|{} |{}|\n", row, hex, text);
  }
  out << "+--------+-------------------------------------------------+----------------+\n";
}

// Milliseconds since the epoch of an ISO-8601 UTC time as brokers send it in
// X-Pulsar-publish-time ("2026-09-15T16:51:11.802Z"), or of a plain number; else the text.
std::string epoch_millis(const std::string& text) {
  Result<int64_t> ms = parse_iso_time(text);
  return ms.ok() ? std::to_string(*ms) : text;
}

namespace {

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

}  // namespace

Result<std::vector<StoredMessage>> stored_messages(const http::HttpResponse& response) {
  std::string id = response.header("x-pulsar-message-id");
  if (size_t colon = id.find(':'); colon != std::string::npos) {
    // "ledger:entry[:partition[:batch]]": the entry's ledger:entry.
    id = id.substr(0, id.find(':', colon + 1));
  }
  StoredMessage common;
  const std::string published = response.header("x-pulsar-publish-time");
  const std::string event = response.header("x-pulsar-event-time");
  const std::string deliver = response.header("x-pulsar-deliver-at-time");
  common.publish_time_ms = published.empty() ? "0" : epoch_millis(published);
  common.event_time_ms = event.empty() ? "0" : epoch_millis(event);
  common.deliver_at_time_ms = deliver.empty() ? "" : epoch_millis(deliver);

  // Pulsar's client keeps them in one sorted map: X-Pulsar-batch-size, the entry's
  // X-Pulsar-PROPERTY-<key> headers (or the JSON object of X-Pulsar-PROPERTY, newer brokers),
  // X-Pulsar-num-batch-message, then each batched message's own.
  std::map<std::string, std::string> properties;
  const std::string batch_size = response.header("x-pulsar-batch-size");
  if (!batch_size.empty()) properties["X-Pulsar-batch-size"] = batch_size;
  if (const std::string all = response.header("x-pulsar-property"); !all.empty()) {
    auto j = nlohmann::json::parse(all, nullptr, false);
    if (j.is_object()) {
      for (const auto& [k, v] : j.items())
        properties[k] = v.is_string() ? v.get<std::string>() : v.dump();
    }
  }
  constexpr std::string_view kPrefix = "x-pulsar-property-";
  for (const auto& [name, value] : response.fields) {
    if (name.size() > kPrefix.size() && lower(name.substr(0, kPrefix.size())) == kPrefix) {
      properties[name.substr(kPrefix.size())] = value;
    }
  }
  const std::string count_text = response.header("x-pulsar-num-batch-message");
  std::vector<StoredMessage> out;
  if (count_text.empty()) {
    common.id = id;
    common.properties.assign(properties.begin(), properties.end());
    common.payload = response.body;
    out.push_back(std::move(common));
    return out;
  }
  properties["X-Pulsar-num-batch-message"] = count_text;
  int32_t count = 0;
  if (std::sscanf(count_text.c_str(), "%d", &count) != 1 || count < 1) {
    return Status(Errc::kInvalidArgument,
                  fmt::format("the broker answered a bad X-Pulsar-num-batch-message: {}",
                              count_text.substr(0, 32)));
  }
  auto batch = protocol::parse_batch(Buffer::copy_of(response.body), count);
  if (!batch.ok()) {
    return Status(Errc::kInvalidArgument,
                  fmt::format("the batch of {} does not parse: {}", id, batch.status().message()));
  }
  for (const auto& single : *batch) {
    for (const auto& kv : single.metadata.properties()) properties[kv.key()] = kv.value();
  }
  common.batched = true;
  common.properties.assign(properties.begin(), properties.end());
  for (size_t i = 0; i < batch->size(); ++i) {
    StoredMessage m = common;
    m.id = fmt::format("{}:{}", id, i);
    m.payload = (*batch)[i].payload.to_string();
    out.push_back(std::move(m));
  }
  return out;
}

void print_stored_message(std::ostream& out, const StoredMessage& m, bool redelivery_count) {
  out << (m.batched ? "Batch Message ID: " : "Message ID: ") << m.id << "\n";
  out << "Publish time: " << m.publish_time_ms << "\n";
  out << "Event time: " << m.event_time_ms << "\n";
  if (redelivery_count) out << "Redelivery count: 0\n";
  if (!m.deliver_at_time_ms.empty() && m.deliver_at_time_ms != "0") {
    out << "Deliver at time: " << m.deliver_at_time_ms << "\n";
  }
  if (!m.properties.empty()) {
    out << "Properties:\n";
    for (const auto& [k, v] : m.properties) out << k << "    " << v << "\n";
  }
  hex_dump(out, m.payload);
}

}  // namespace magnetar::cli
