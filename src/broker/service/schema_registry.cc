#include "broker/service/schema_registry.h"

#include <fmt/format.h>

#include <chrono>

#include "broker/service/errors.h"
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

Task<Result<std::optional<StoredSchema>>> SchemaRegistry::get(protocol::TopicName topic,
                                                              std::optional<int64_t> version) {
  const std::string node = path(topic);
  auto got = co_await store_.get(node);
  if (!got.ok()) co_return got.status();
  std::optional<StoredSchema> none;
  if (!got->has_value()) co_return none;
  schema_wire::StoredSchemas stored;
  if (!stored.ParseFromString((*got)->value)) {
    co_return Status(Errc::kCorruption, fmt::format("schemas at {} do not parse", node));
  }
  for (int i = stored.versions_size() - 1; i >= 0; --i) {
    const auto& v = stored.versions(i);
    if (version && v.version() != *version) continue;
    StoredSchema out;
    out.version = v.version();
    if (!out.schema.ParseFromString(v.schema())) {
      co_return Status(Errc::kCorruption,
                       fmt::format("schema version {} does not parse", out.version));
    }
    co_return out;
  }
  co_return none;
}

Task<Result<int64_t>> SchemaRegistry::get_or_create(protocol::TopicName topic,
                                                    wire::Schema schema) {
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
    for (const auto& v : stored.versions()) {
      wire::Schema existing;
      if (!existing.ParseFromString(v.schema())) continue;
      if (same_schema(existing, schema)) co_return v.version();
      next = std::max(next, v.version() + 1);
    }
    if (stored.versions_size() > 0) {
      wire::Schema latest;
      latest.ParseFromString(stored.versions(stored.versions_size() - 1).schema());
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
    v->set_timestamp(std::chrono::duration_cast<std::chrono::milliseconds>(
                         std::chrono::system_clock::now().time_since_epoch())
                         .count());
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
