// Checks that proto/pulsar_api.proto carries the Pulsar wire-protocol interface facts
// (field numbers, labels, types, defaults, enum values) that unmodified clients depend on.
#include "proto/pulsar_api.pb.h"

#include <google/protobuf/descriptor.h>
#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <google/protobuf/unknown_field_set.h>
#include <gtest/gtest.h>

#include <set>
#include <string>

namespace magnetar::protocol {
namespace {

namespace pb = google::protobuf;
using FD = pb::FieldDescriptor;

const pb::Descriptor* Msg(const std::string& name) {
  const pb::Descriptor* d =
      pb::DescriptorPool::generated_pool()->FindMessageTypeByName("magnetar.wire." + name);
  EXPECT_NE(d, nullptr) << "missing message " << name;
  return d;
}

const pb::EnumDescriptor* Enum(const std::string& name) {
  const pb::EnumDescriptor* e =
      pb::DescriptorPool::generated_pool()->FindEnumTypeByName("magnetar.wire." + name);
  EXPECT_NE(e, nullptr) << "missing enum " << name;
  return e;
}

// Returns the named field after checking its number, label and type; nullptr on failure.
const FD* Field(const std::string& message, const std::string& field, int number, FD::Label label,
                FD::Type type) {
  const pb::Descriptor* d = Msg(message);
  if (d == nullptr) return nullptr;
  const FD* f = d->FindFieldByName(field);
  EXPECT_NE(f, nullptr) << message << "." << field << " missing";
  if (f == nullptr) return nullptr;
  EXPECT_EQ(f->number(), number) << message << "." << field;
  EXPECT_EQ(f->label(), label) << message << "." << field;
  EXPECT_EQ(f->type(), type) << message << "." << field;
  return f;
}

int EnumValue(const std::string& enum_name, const std::string& value) {
  const pb::EnumDescriptor* e = Enum(enum_name);
  if (e == nullptr) return -1000;
  const pb::EnumValueDescriptor* v = e->FindValueByName(value);
  EXPECT_NE(v, nullptr) << enum_name << "." << value << " missing";
  return v == nullptr ? -1000 : v->number();
}

// (a) Every BaseCommand::Type has a sub-command field with the same number, and vice versa.
TEST(WireSchemaTest, BaseCommandFieldNumberEqualsTypeValue) {
  const pb::Descriptor* base = wire::BaseCommand::descriptor();
  const pb::EnumDescriptor* type = wire::BaseCommand::Type_descriptor();

  std::set<int> type_numbers;
  for (int i = 0; i < type->value_count(); ++i) {
    const pb::EnumValueDescriptor* v = type->value(i);
    type_numbers.insert(v->number());
    const FD* f = base->FindFieldByNumber(v->number());
    ASSERT_NE(f, nullptr) << "no BaseCommand field for type " << v->name();
    EXPECT_EQ(f->label(), FD::LABEL_OPTIONAL) << v->name();
    EXPECT_EQ(f->type(), FD::TYPE_MESSAGE) << v->name();
  }
  // 2..40 and 50..68: 39 + 19 types.
  EXPECT_EQ(type->value_count(), 58);

  // Apart from the required `type` (field 1), every field is a sub-command with a Type value.
  const FD* type_field = Field("BaseCommand", "type", 1, FD::LABEL_REQUIRED, FD::TYPE_ENUM);
  ASSERT_NE(type_field, nullptr);
  EXPECT_EQ(type_field->enum_type(), type);
  for (int i = 0; i < base->field_count(); ++i) {
    const FD* f = base->field(i);
    if (f->number() == 1) continue;
    EXPECT_EQ(type_numbers.count(f->number()), 1u) << "field " << f->name() << " has no Type value";
  }

  // A few pairings of type -> sub-command message.
  struct Pair {
    wire::BaseCommand::Type type;
    const char* message;
  };
  const Pair pairs[] = {
      {wire::BaseCommand::CONNECT, "CommandConnect"},
      {wire::BaseCommand::SEND, "CommandSend"},
      {wire::BaseCommand::REDELIVER_UNACKNOWLEDGED_MESSAGES, "CommandRedeliverUnacknowledgedMessages"},
      {wire::BaseCommand::CONSUMER_STATS, "CommandConsumerStats"},
      {wire::BaseCommand::CONSUMER_STATS_RESPONSE, "CommandConsumerStatsResponse"},
      {wire::BaseCommand::AUTH_CHALLENGE, "CommandAuthChallenge"},
      {wire::BaseCommand::ACK_RESPONSE, "CommandAckResponse"},
      {wire::BaseCommand::TC_CLIENT_CONNECT_REQUEST, "CommandTcClientConnectRequest"},
      {wire::BaseCommand::END_TXN_ON_SUBSCRIPTION_RESPONSE, "CommandEndTxnOnSubscriptionResponse"},
      {wire::BaseCommand::WATCH_TOPIC_LIST_CLOSE, "CommandWatchTopicListClose"},
      {wire::BaseCommand::TOPIC_MIGRATED, "CommandTopicMigrated"},
  };
  for (const Pair& p : pairs) {
    const FD* f = base->FindFieldByNumber(p.type);
    ASSERT_NE(f, nullptr);
    EXPECT_EQ(f->message_type()->name(), p.message);
  }
  EXPECT_EQ(wire::BaseCommand::TOPIC_MIGRATED, 68);
  EXPECT_EQ(wire::BaseCommand::GET_OR_CREATE_SCHEMA_RESPONSE, 40);
  EXPECT_EQ(wire::BaseCommand::NEW_TXN, 50);
}

// (b) Spot checks of facts listed in the protocol reference.
TEST(WireSchemaTest, MessageMetadataAndBatchFacts) {
  Field("MessageMetadata", "producer_name", 1, FD::LABEL_REQUIRED, FD::TYPE_STRING);
  Field("MessageMetadata", "publish_time", 3, FD::LABEL_REQUIRED, FD::TYPE_UINT64);
  Field("MessageMetadata", "uncompressed_size", 9, FD::LABEL_OPTIONAL, FD::TYPE_UINT32);
  Field("MessageMetadata", "highest_sequence_id", 24, FD::LABEL_OPTIONAL, FD::TYPE_UINT64);
  Field("MessageMetadata", "deliver_at_time", 19, FD::LABEL_OPTIONAL, FD::TYPE_INT64);
  Field("MessageMetadata", "compacted_batch_indexes", 31, FD::LABEL_REPEATED, FD::TYPE_INT32);
  Field("MessageMetadata", "schema_id", 32, FD::LABEL_OPTIONAL, FD::TYPE_BYTES);
  if (const FD* f = Field("MessageMetadata", "num_messages_in_batch", 11, FD::LABEL_OPTIONAL,
                          FD::TYPE_INT32)) {
    EXPECT_EQ(f->default_value_int32(), 1);
  }
  EXPECT_EQ(Msg("MessageMetadata")->FindFieldByNumber(10), nullptr);  // retired checksum slot
  Field("SingleMessageMetadata", "payload_size", 3, FD::LABEL_REQUIRED, FD::TYPE_INT32);
  Field("SingleMessageMetadata", "sequence_id", 8, FD::LABEL_OPTIONAL, FD::TYPE_UINT64);
  Field("SingleMessageMetadata", "null_partition_key", 10, FD::LABEL_OPTIONAL, FD::TYPE_BOOL);
  Field("BrokerEntryMetadata", "broker_timestamp", 1, FD::LABEL_OPTIONAL, FD::TYPE_UINT64);
  Field("BrokerEntryMetadata", "index", 2, FD::LABEL_OPTIONAL, FD::TYPE_UINT64);
  EXPECT_EQ(wire::LZ4, 1);
  EXPECT_EQ(wire::ZSTD, 3);
  EXPECT_EQ(wire::SNAPPY, 4);
}

TEST(WireSchemaTest, MessageIdFacts) {
  Field("MessageIdData", "ledgerId", 1, FD::LABEL_REQUIRED, FD::TYPE_UINT64);
  Field("MessageIdData", "entryId", 2, FD::LABEL_REQUIRED, FD::TYPE_UINT64);
  if (const FD* f = Field("MessageIdData", "partition", 3, FD::LABEL_OPTIONAL, FD::TYPE_INT32)) {
    EXPECT_EQ(f->default_value_int32(), -1);
  }
  if (const FD* f = Field("MessageIdData", "batch_index", 4, FD::LABEL_OPTIONAL, FD::TYPE_INT32)) {
    EXPECT_EQ(f->default_value_int32(), -1);
  }
  Field("MessageIdData", "ack_set", 5, FD::LABEL_REPEATED, FD::TYPE_INT64);
  Field("MessageIdData", "first_chunk_message_id", 7, FD::LABEL_OPTIONAL, FD::TYPE_MESSAGE);
  wire::MessageIdData id;
  EXPECT_EQ(id.partition(), -1);
  EXPECT_EQ(id.batch_index(), -1);
}

TEST(WireSchemaTest, ConnectionFacts) {
  Field("CommandConnect", "client_version", 1, FD::LABEL_REQUIRED, FD::TYPE_STRING);
  Field("CommandConnect", "auth_method_name", 5, FD::LABEL_OPTIONAL, FD::TYPE_STRING);
  Field("CommandConnect", "feature_flags", 10, FD::LABEL_OPTIONAL, FD::TYPE_MESSAGE);
  Field("CommandConnect", "proxy_version", 11, FD::LABEL_OPTIONAL, FD::TYPE_STRING);
  Field("CommandConnected", "server_version", 1, FD::LABEL_REQUIRED, FD::TYPE_STRING);
  Field("CommandConnected", "max_message_size", 3, FD::LABEL_OPTIONAL, FD::TYPE_INT32);
  Field("FeatureFlags", "supports_broker_entry_metadata", 2, FD::LABEL_OPTIONAL, FD::TYPE_BOOL);
  Field("FeatureFlags", "supports_topic_watchers", 4, FD::LABEL_OPTIONAL, FD::TYPE_BOOL);
  Field("FeatureFlags", "supports_topic_watcher_reconcile", 7, FD::LABEL_OPTIONAL, FD::TYPE_BOOL);
  Field("CommandAuthChallenge", "challenge", 2, FD::LABEL_OPTIONAL, FD::TYPE_MESSAGE);
  Field("CommandError", "message", 3, FD::LABEL_REQUIRED, FD::TYPE_STRING);
  EXPECT_EQ(wire::ServiceNotReady, 6);
  EXPECT_EQ(wire::InvalidTopicName, 17);
  EXPECT_EQ(wire::ProducerFenced, 25);
  EXPECT_EQ(EnumValue("ServerError", "TransactionNotFound"), 24);
  EXPECT_EQ(wire::v21, 21);
  EXPECT_EQ(wire::ProtocolVersion_MAX, wire::v21);
  EXPECT_EQ(Enum("ProtocolVersion")->value_count(), 22);
}

TEST(WireSchemaTest, DiscoveryFacts) {
  if (const FD* f = Field("CommandPartitionedTopicMetadata", "metadata_auto_creation_enabled", 6,
                          FD::LABEL_OPTIONAL, FD::TYPE_BOOL)) {
    EXPECT_TRUE(f->default_value_bool());
  }
  Field("CommandLookupTopic", "advertised_listener_name", 7, FD::LABEL_OPTIONAL, FD::TYPE_STRING);
  Field("CommandLookupTopicResponse", "request_id", 4, FD::LABEL_REQUIRED, FD::TYPE_UINT64);
  if (const FD* f = Field("CommandLookupTopicResponse", "proxy_through_service_url", 8,
                          FD::LABEL_OPTIONAL, FD::TYPE_BOOL)) {
    EXPECT_FALSE(f->default_value_bool());
  }
  EXPECT_EQ(wire::CommandLookupTopicResponse::Connect, 1);
  EXPECT_EQ(wire::CommandLookupTopicResponse::Failed, 2);
  if (const FD* f = Field("CommandGetTopicsOfNamespaceResponse", "changed", 5, FD::LABEL_OPTIONAL,
                          FD::TYPE_BOOL)) {
    EXPECT_TRUE(f->default_value_bool());
  }
  EXPECT_EQ(wire::CommandGetTopicsOfNamespace::ALL, 2);
}

TEST(WireSchemaTest, ProducerFacts) {
  if (const FD* f = Field("CommandProducerSuccess", "last_sequence_id", 3, FD::LABEL_OPTIONAL,
                          FD::TYPE_INT64)) {
    EXPECT_EQ(f->default_value_int64(), -1);
  }
  if (const FD* f = Field("CommandProducerSuccess", "producer_ready", 6, FD::LABEL_OPTIONAL,
                          FD::TYPE_BOOL)) {
    EXPECT_TRUE(f->default_value_bool());
  }
  if (const FD* f = Field("CommandProducer", "user_provided_producer_name", 9, FD::LABEL_OPTIONAL,
                          FD::TYPE_BOOL)) {
    EXPECT_TRUE(f->default_value_bool());
  }
  Field("CommandProducer", "producer_access_mode", 10, FD::LABEL_OPTIONAL, FD::TYPE_ENUM);
  Field("CommandProducer", "initial_subscription_name", 13, FD::LABEL_OPTIONAL, FD::TYPE_STRING);
  if (const FD* f = Field("CommandSend", "num_messages", 3, FD::LABEL_OPTIONAL, FD::TYPE_INT32)) {
    EXPECT_EQ(f->default_value_int32(), 1);
  }
  Field("CommandSend", "highest_sequence_id", 6, FD::LABEL_OPTIONAL, FD::TYPE_UINT64);
  Field("CommandSend", "is_chunk", 7, FD::LABEL_OPTIONAL, FD::TYPE_BOOL);
  Field("CommandSendReceipt", "highest_sequence_id", 4, FD::LABEL_OPTIONAL, FD::TYPE_UINT64);
  Field("CommandCloseProducer", "assignedBrokerServiceUrlTls", 4, FD::LABEL_OPTIONAL,
        FD::TYPE_STRING);
  EXPECT_EQ(wire::ExclusiveWithFencing, 3);
  EXPECT_EQ(wire::CommandProducerSuccess().last_sequence_id(), -1);
}

TEST(WireSchemaTest, ConsumerFacts) {
  Field("CommandSubscribe", "subType", 3, FD::LABEL_REQUIRED, FD::TYPE_ENUM);
  if (const FD* f = Field("CommandSubscribe", "durable", 8, FD::LABEL_OPTIONAL, FD::TYPE_BOOL)) {
    EXPECT_TRUE(f->default_value_bool());
  }
  if (const FD* f = Field("CommandSubscribe", "force_topic_creation", 15, FD::LABEL_OPTIONAL,
                          FD::TYPE_BOOL)) {
    EXPECT_TRUE(f->default_value_bool());
  }
  Field("CommandSubscribe", "keySharedMeta", 17, FD::LABEL_OPTIONAL, FD::TYPE_MESSAGE);
  Field("CommandSubscribe", "consumer_epoch", 19, FD::LABEL_OPTIONAL, FD::TYPE_UINT64);
  EXPECT_EQ(wire::CommandSubscribe::Exclusive, 0);
  EXPECT_EQ(wire::CommandSubscribe::Key_Shared, 3);
  EXPECT_EQ(wire::CommandSubscribe::Earliest, 1);
  Field("KeySharedMeta", "hashRanges", 3, FD::LABEL_REPEATED, FD::TYPE_MESSAGE);
  Field("CommandFlow", "messagePermits", 2, FD::LABEL_REQUIRED, FD::TYPE_UINT32);
  Field("CommandMessage", "redelivery_count", 3, FD::LABEL_OPTIONAL, FD::TYPE_UINT32);
  Field("CommandMessage", "ack_set", 4, FD::LABEL_REPEATED, FD::TYPE_INT64);
  Field("CommandAck", "message_id", 3, FD::LABEL_REPEATED, FD::TYPE_MESSAGE);
  Field("CommandAck", "request_id", 8, FD::LABEL_OPTIONAL, FD::TYPE_UINT64);
  Field("CommandAckResponse", "request_id", 6, FD::LABEL_OPTIONAL, FD::TYPE_UINT64);
  Field("CommandUnsubscribe", "force", 3, FD::LABEL_OPTIONAL, FD::TYPE_BOOL);
  Field("CommandSeek", "message_publish_time", 4, FD::LABEL_OPTIONAL, FD::TYPE_UINT64);
  Field("CommandGetLastMessageIdResponse", "consumer_mark_delete_position", 3, FD::LABEL_OPTIONAL,
        FD::TYPE_MESSAGE);
  Field("CommandConsumerStats", "request_id", 1, FD::LABEL_REQUIRED, FD::TYPE_UINT64);
  Field("CommandConsumerStats", "consumer_id", 4, FD::LABEL_REQUIRED, FD::TYPE_UINT64);
  EXPECT_EQ(Msg("CommandConsumerStats")->FindFieldByNumber(2), nullptr);
  Field("CommandConsumerStatsResponse", "msgBacklog", 15, FD::LABEL_OPTIONAL, FD::TYPE_UINT64);
  Field("CommandConsumerStatsResponse", "messageAckRate", 16, FD::LABEL_OPTIONAL, FD::TYPE_DOUBLE);
}

TEST(WireSchemaTest, SchemaTransactionAndMigrationFacts) {
  Field("Schema", "schema_data", 3, FD::LABEL_REQUIRED, FD::TYPE_BYTES);
  Field("Schema", "type", 4, FD::LABEL_REQUIRED, FD::TYPE_ENUM);
  EXPECT_EQ(wire::Schema::ProtobufNative, 20);
  EXPECT_EQ(wire::Schema::AutoConsume, 21);
  EXPECT_EQ(wire::Schema::External, 22);
  Field("CommandGetOrCreateSchema", "schema", 3, FD::LABEL_REQUIRED, FD::TYPE_MESSAGE);
  Field("CommandGetOrCreateSchema", "producerName", 4, FD::LABEL_OPTIONAL, FD::TYPE_STRING);
  Field("CommandTcClientConnectRequest", "tc_id", 2, FD::LABEL_REQUIRED, FD::TYPE_UINT64);
  Field("CommandEndTxnOnSubscription", "subscription", 4, FD::LABEL_OPTIONAL, FD::TYPE_MESSAGE);
  Field("CommandEndTxnOnPartition", "txnid_least_bits_of_low_watermark", 6, FD::LABEL_OPTIONAL,
        FD::TYPE_UINT64);
  EXPECT_EQ(wire::ABORT, 1);
  Field("CommandWatchTopicList", "topics_pattern", 4, FD::LABEL_REQUIRED, FD::TYPE_STRING);
  Field("CommandWatchTopicUpdate", "deleted_topics", 3, FD::LABEL_REPEATED, FD::TYPE_STRING);
  Field("CommandTopicMigrated", "resource_type", 2, FD::LABEL_REQUIRED, FD::TYPE_ENUM);
  Field("CommandTopicMigrated", "brokerServiceUrlTls", 4, FD::LABEL_OPTIONAL, FD::TYPE_STRING);
  EXPECT_EQ(wire::CommandTopicMigrated::Consumer, 1);
}

// (c) Unknown fields from newer peers must not break parsing.
std::string WithUnknownVarint(const std::string& encoded, int field_number, uint64_t value) {
  std::string out = encoded;
  {
    pb::io::StringOutputStream stream(&out);
    pb::io::CodedOutputStream coded(&stream);
    coded.WriteTag(static_cast<uint32_t>(field_number) << 3);  // wire type 0 = varint
    coded.WriteVarint64(value);
  }
  return out;
}

TEST(WireSchemaTest, UnknownFieldIsKeptNotRejected) {
  const std::string bytes = WithUnknownVarint(wire::CommandPing().SerializeAsString(), 1000, 42);
  ASSERT_FALSE(bytes.empty());

  wire::CommandPing ping;
  ASSERT_TRUE(ping.ParseFromString(bytes));
  const pb::UnknownFieldSet& unknown = ping.GetReflection()->GetUnknownFields(ping);
  ASSERT_EQ(unknown.field_count(), 1);
  EXPECT_EQ(unknown.field(0).number(), 1000);
  EXPECT_EQ(unknown.field(0).varint(), 42u);
  EXPECT_EQ(ping.SerializeAsString(), bytes);  // preserved on re-serialisation
}

TEST(WireSchemaTest, UnknownFieldInBaseCommandParses) {
  wire::BaseCommand cmd;
  cmd.set_type(wire::BaseCommand::PING);
  cmd.mutable_ping();
  // Unknown field appended at the envelope level, after the known fields.
  const std::string bytes = WithUnknownVarint(cmd.SerializeAsString(), 1000, 7);

  wire::BaseCommand parsed;
  ASSERT_TRUE(parsed.ParseFromString(bytes));
  EXPECT_EQ(parsed.type(), wire::BaseCommand::PING);
  EXPECT_TRUE(parsed.has_ping());
  EXPECT_EQ(parsed.GetReflection()->GetUnknownFields(parsed).field_count(), 1);
}

}  // namespace
}  // namespace magnetar::protocol
