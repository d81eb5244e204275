#include "broker/service/schema_registry.h"

#include <fmt/format.h>

#include <chrono>

#include "broker/service/errors.h"
#include "broker/service/producer.h"  // wall_clock_ms
#include "metadata/metadata_store.h"
#include "proto/schema_storage.pb.h"

namespace magnetar::broker {

namespace {

bool same_schema(const wire::Schema& a, const wire::Schema& b) {
  if (a.type() != b.type() || a.schema_data() != b.schema_data()) return false;
  if (a.properties_size() != b.properties_size()) return false;
  for (int i = 0; i < a.properties_size(); ++i) {
    if (a.properties(i).key() != b.properties(i).key() ||
        a.properties(i).value() != b.properties(i).value()) {
      return false;
    }
  }
  return true;
}

}  // namespace

std::string SchemaRegistry::path(const protocol::TopicName& topic) {
  const protocol::TopicName base = topic.partitioned_topic_name();
  return fmt::format("/schemas/{}/{}", base.namespace_name(), base.encoded_local_name());
}

std::string SchemaRegistry::encode_version(int64_t version) {
  std::string out(8, '\0');
  for (int i = 0; i < 8; ++i) {
    out[static_cast<size_t>(i)] = static_cast<char>(static_cast<uint64_t>(version) >> (56 - 8 * i));
  }
  return out;
}

std::optional<int64_t> SchemaRegistry::decode_version(const std::string& bytes) {
  if (bytes.size() != 8) return std::nullopt;
  uint64_t v = 0;
  for (unsigned char c : bytes) v = (v << 8) | c;
  return static_cast<int64_t>(v);
}

bool SchemaRegistry::is_storable(const wire::Schema& schema) {
  return schema.type() != wire::Schema::None && schema.type() != wire::Schema::AutoConsume;
}

namespace {

// The versions after the last deletion marker, oldest first; `deleted` tells whether the
// history ends with one.
Result<std::vector<StoredSchema>> live_versions(const schema_wire::StoredSchemas& stored,
                                                bool* deleted) {
  std::vector<StoredSchema> out;
  *deleted = false;
  for (const auto& v : stored.versions()) {
    if (v.deleted()) {
      out.clear();
      *deleted = true;
      continue;
    }
    *deleted = false;
    StoredSchema s;
    s.version = v.version();
    s.timestamp_ms = v.timestamp();
    if (!s.schema.ParseFromString(v.schema())) {
      return Status(Errc::kCorruption, fmt::format("schema version {} does not parse", s.version));
    }
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace

Task<Result<std::vector<StoredSchema>>> SchemaRegistry::all(protocol::TopicName topic) {
  const std::string node = path(topic);
  auto got = co_await store_.get(node);
  if (!got.ok()) co_return got.status();
  if (!got->has_value()) co_return std::vector<StoredSchema>{};
  schema_wire::StoredSchemas stored;
  if (!stored.ParseFromString((*got)->value)) {
    co_return Status(Errc::kCorruption, fmt::format("schemas at {} do not parse", node));
  }
  bool deleted = false;
  co_return live_versions(stored, &deleted);
}

Task<Result<std::variant<StoredSchema, SchemaRegistry::Absence>>> SchemaRegistry::latest(
    protocol::TopicName topic) {
  const std::string node = path(topic);
  auto got = co_await store_.get(node);
  if (!got.ok()) co_return got.status();
  using Found = std::variant<StoredSchema, Absence>;
  if (!got->has_value()) co_return Found(Absence::kNone);
  schema_wire::StoredSchemas stored;
  if (!stored.ParseFromString((*got)->value)) {
    co_return Status(Errc::kCorruption, fmt::format("schemas at {} do not parse", node));
  }
  bool deleted = false;
  auto live = live_versions(stored, &deleted);
  if (!live.ok()) co_return live.status();
  if (deleted) co_return Found(Absence::kDeleted);
  if (live->empty()) co_return Found(Absence::kNone);
  co_return Found(std::move(live->back()));
}

Task<Result<std::optional<StoredSchema>>> SchemaRegistry::get(protocol::TopicName topic,
                                                              std::optional<int64_t> version) {
  auto live = co_await all(std::move(topic));
  if (!live.ok()) co_return live.status();
  std::optional<StoredSchema> out;
  for (auto& s : *live) {
    if (!version || s.version == *version) out = std::move(s);
  }
  co_return out;
}

Task<Result<int64_t>> SchemaRegistry::remove(protocol::TopicName topic, bool force) {
  const std::string node = path(topic);
  for (int attempt = 0; attempt < 10; ++attempt) {
    auto got = co_await store_.get(node);
    if (!got.ok()) co_return got.status();
    if (!got->has_value()) co_return Status(Errc::kNotFound, "Schema not found");
    schema_wire::StoredSchemas stored;
    if (!stored.ParseFromString((*got)->value)) {
      co_return Status(Errc::kCorruption, fmt::format("schemas at {} do not parse", node));
    }
    bool deleted = false;
    auto live = live_versions(stored, &deleted);
    if (!live.ok()) co_return live.status();
    if (live->empty()) co_return Status(Errc::kNotFound, deleted ? "Schema is deleted" : "Schema not found");
    const int64_t last = stored.versions(stored.versions_size() - 1).version();
    if (force) {
      Status st = co_await store_.remove(node, (*got)->stat.version);
      if (st.ok()) co_return last;
      if (!st.is(Errc::kBadVersion)) co_return st;
      continue;
    }
    auto* marker = stored.add_versions();
    marker->set_version(last + 1);
    marker->set_schema("");
    marker->set_timestamp(wall_clock_ms());
    marker->set_deleted(true);
    metadata::PutOptions options;
    options.expected_version = (*got)->stat.version;
    auto put = co_await store_.put(node, stored.SerializeAsString(), options);
    if (put.ok()) co_return last + 1;
    if (!put.status().is(Errc::kBadVersion)) co_return put.status();
  }
  co_return Status(Errc::kUnavailable, fmt::format("schemas at {} keep changing", node));
}

Task<Result<int64_t>> SchemaRegistry::get_or_create(protocol::TopicName topic,
                                                    wire::Schema schema, bool may_add) {
  const std::string node = path(topic);
  for (int attempt = 0; attempt < 10; ++attempt) {
    auto got = co_await store_.get(node);
    if (!got.ok()) co_return got.status();
    schema_wire::StoredSchemas stored;
    std::optional<int64_t> expected_version = -1;
    if (got->has_value()) {
      expected_version = (*got)->stat.version;
      if (!stored.ParseFromString((*got)->value)) {
        co_return Status(Errc::kCorruption, fmt::format("schemas at {} do not parse", node));
      }
    }
    int64_t next = 0;
    for (const auto& v : stored.versions()) next = std::max(next, v.version() + 1);
    bool deleted = false;
    auto live = live_versions(stored, &deleted);
    if (!live.ok()) co_return live.status();
    for (const auto& v : *live) {
      if (same_schema(v.schema, schema)) co_return v.version;
    }
    if (!may_add) {
      co_return Status(Error::kIncompatibleSchema,
                       "Schema not found and schema auto updating is disabled.");
    }
    if (!live->empty()) {
      const wire::Schema& latest = live->back().schema;
      if (latest.type() != schema.type()) {
        co_return Status(Error::kIncompatibleSchema,
                         fmt::format("schema of type {} is incompatible with the topic's {}",
                                     wire::Schema::Type_Name(schema.type()),
                                     wire::Schema::Type_Name(latest.type())));
      }
    }
    auto* v = stored.add_versions();
    v->set_version(next);
    v->set_schema(schema.SerializeAsString());
    v->set_timestamp(wall_clock_ms());
    metadata::PutOptions options;
    options.expected_version = expected_version;
    std::string value = stored.SerializeAsString();
    auto put = co_await store_.put_recursive(node, std::move(value), options);
    if (put.ok()) co_return next;
    if (!put.status().is(Errc::kBadVersion)) co_return put.status();
    // Raced with another writer: read again.
  }
  co_return Status(Errc::kUnavailable, fmt::format("schemas at {} keep changing", node));
}

}  // namespace magnetar::broker
