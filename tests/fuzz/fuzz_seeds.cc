// Writes a seed corpus for the fuzzers into the directories given: valid frames of each
// kind our encoder produces, and valid batches in every compression.
//   fuzz_seeds FRAME_DIR BATCH_DIR

#include <cstdio>
#include <fstream>
#include <string>

#include "common/endian.h"
#include "protocol/batch.h"
#include "protocol/compression.h"
#include "protocol/frame.h"

namespace {

using namespace magnetar;
using namespace magnetar::protocol;

void write(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

wire::MessageMetadata metadata() {
  wire::MessageMetadata m;
  m.set_producer_name("seed");
  m.set_sequence_id(1);
  m.set_publish_time(1700000000000);
  return m;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: fuzz_seeds FRAME_DIR BATCH_DIR\n");
    return 2;
  }
  std::string frames = argv[1], batches = argv[2];

  wire::BaseCommand connect;
  connect.set_type(wire::BaseCommand::CONNECT);
  connect.mutable_connect()->set_client_version("seed");
  connect.mutable_connect()->set_protocol_version(21);
  write(frames + "/connect", std::string(1, '\x10') + encode_command(connect).to_string());

  wire::BaseCommand producer;
  producer.set_type(wire::BaseCommand::PRODUCER);
  producer.mutable_producer()->set_topic("persistent://public/default/t");
  producer.mutable_producer()->set_producer_id(1);
  producer.mutable_producer()->set_request_id(2);
  write(frames + "/producer", std::string(1, '\x03') + encode_command(producer).to_string());

  BatchBuilder builder;
  builder.add(wire::SingleMessageMetadata(), "hello");
  wire::SingleMessageMetadata keyed;
  keyed.set_partition_key("key");
  builder.add(keyed, "world");
  Buffer batch = builder.finish();

  wire::BaseCommand send;
  send.set_type(wire::BaseCommand::SEND);
  send.mutable_send()->set_producer_id(1);
  send.mutable_send()->set_sequence_id(1);
  send.mutable_send()->set_num_messages(2);
  wire::MessageMetadata md = metadata();
  md.set_num_messages_in_batch(2);
  std::string send_bytes = encode_payload_command(send, md, BufferChain(batch)).to_string();
  write(frames + "/send_batch", std::string(1, '\x07') + send_bytes);

  wire::BaseCommand message;
  message.set_type(wire::BaseCommand::MESSAGE);
  message.mutable_message()->set_consumer_id(1);
  message.mutable_message()->mutable_message_id()->set_ledgerid(1);
  message.mutable_message()->mutable_message_id()->set_entryid(2);
  wire::BrokerEntryMetadata bem;
  bem.set_broker_timestamp(1);
  bem.set_index(2);
  Buffer entry = encode_entry(metadata(), BufferChain(Buffer::copy_of("single"))).flatten();
  write(frames + "/message_bem",
        std::string(1, '\x01') + encode_with_entry(message, entry, &bem).to_string() +
            send_bytes);

  for (CompressionType t : {CompressionType::kNone, CompressionType::kLz4, CompressionType::kZlib,
                            CompressionType::kZstd, CompressionType::kSnappy}) {
    Buffer body = batch;
    if (t != CompressionType::kNone) body = compress(t, batch.span()).value();
    std::string head(9, '\0');
    auto* p = reinterpret_cast<uint8_t*>(head.data());
    store_be32(p, 2);
    store_be32(p + 4, static_cast<uint32_t>(batch.size()));
    p[8] = static_cast<uint8_t>(t);
    write(batches + "/batch_" + std::string(to_string(t)), head + body.to_string());
  }
  return 0;
}
