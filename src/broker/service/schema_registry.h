#pragma once
// Schema storage: the versions of each topic's schema (partitions share their topic's), in
// the metadata store under /schemas/<tenant>/<namespace>/<encoded topic>, updated with
// compare-and-set. A schema identical to a stored version gets that version; a new one of
// the same type becomes the next version; a schema of another type is incompatible.
// (Pulsar's per-type compatibility strategies — BACKWARD, FULL, ... over Avro — are not
// checked yet.)

#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "common/asio.h"
#include "common/status.h"
#include "proto/pulsar_api.pb.h"
#include "protocol/topic_name.h"

namespace magnetar::metadata {
class MetadataStore;
}

namespace magnetar::broker {

struct StoredSchema {
  int64_t version = 0;
  wire::Schema schema;
  int64_t timestamp_ms = 0;  // when it was stored
};

class SchemaRegistry {
 public:
  explicit SchemaRegistry(metadata::MetadataStore& store) : store_(store) {}

  // The given version, or the latest; nullopt when the topic has none (or not that one, or
  // its schema was deleted since).
  Task<Result<std::optional<StoredSchema>>> get(protocol::TopicName topic,
                                                std::optional<int64_t> version);
  // What get() finds, told apart: kNone (never had one), kDeleted (deleted last).
  enum class Absence { kNone, kDeleted };
  Task<Result<std::variant<StoredSchema, Absence>>> latest(protocol::TopicName topic);
  // Every version since the last deletion, oldest first.
  Task<Result<std::vector<StoredSchema>>> all(protocol::TopicName topic);
  // Deletes the schema: a deletion marker (the next schema may be of any type and takes the
  // next version), or with `force` the whole history. Returns the marker's version (the
  // last version with `force`). Errors: kNotFound when there is no schema.
  Task<Result<int64_t>> remove(protocol::TopicName topic, bool force);
  // The version of `schema`, stored first when new (unless not `may_add`: the namespace's
  // or topic's auto-update policy is off). Errors: kIncompatibleSchema (service/errors.h),
  // the store's.
  Task<Result<int64_t>> get_or_create(protocol::TopicName topic, wire::Schema schema,
                                      bool may_add = true);

  // Pulsar's schema version on the wire: 8 bytes, big-endian.
  static std::string encode_version(int64_t version);
  static std::optional<int64_t> decode_version(const std::string& bytes);
  // Schema types that carry no stored schema (raw bytes, AUTO_CONSUME).
  static bool is_storable(const wire::Schema& schema);

 private:
  static std::string path(const protocol::TopicName& topic);
  metadata::MetadataStore& store_;
};

}  // namespace magnetar::broker
