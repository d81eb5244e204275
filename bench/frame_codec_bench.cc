// Decoding and encoding throughput of the Pulsar frame codec on one core.
// The target: >= 1,000,000 decoded 1 KiB SEND frames per second.

#include <benchmark/benchmark.h>

#include <string>

#include "protocol/frame.h"

namespace {

using namespace magnetar;
using namespace magnetar::protocol;

std::string one_send(size_t payload_size, uint64_t seq) {
  wire::BaseCommand cmd;
  cmd.set_type(wire::BaseCommand::SEND);
  cmd.mutable_send()->set_producer_id(1);
  cmd.mutable_send()->set_sequence_id(seq);
  cmd.mutable_send()->set_num_messages(1);
  wire::MessageMetadata md;
  md.set_producer_name("standalone-0-1");
  md.set_sequence_id(seq);
  md.set_publish_time(1764475200000);
  return encode_payload_command(cmd, md,
                                BufferChain(Buffer::copy_of(std::string(payload_size, 'm'))))
      .to_string();
}

// A socket read holding many back-to-back frames, decoded as a connection would: into a
// fresh Frame each (next(), reuse=0) or into the decoder's reused one (next_frame(), reuse=1,
// what the broker and the client do).
void BM_DecodeSendStream(benchmark::State& state) {
  const size_t payload = static_cast<size_t>(state.range(0));
  const bool parse_metadata = state.range(1) != 0;
  const bool reuse = state.range(2) != 0;
  constexpr int kFrames = 1024;
  std::string stream;
  for (int i = 0; i < kFrames; ++i) stream += one_send(payload, static_cast<uint64_t>(i));
  Buffer read = Buffer::copy_of(stream);
  int64_t frames = 0;
  for (auto _ : state) {
    FrameDecoder decoder(DecoderOptions{kDefaultMaxFrameSize, parse_metadata});
    decoder.feed(read);
    while (reuse) {
      auto f = decoder.next_frame();
      if (!f.ok() || *f == nullptr) break;
      benchmark::DoNotOptimize((*f)->payload.data());
      ++frames;
    }
    while (!reuse) {
      auto f = decoder.next();
      if (!f.ok() || !f->has_value()) break;
      benchmark::DoNotOptimize((*f)->payload.data());
      ++frames;
    }
  }
  state.SetItemsProcessed(frames);
  state.SetBytesProcessed(static_cast<int64_t>(stream.size()) * state.iterations());
}
BENCHMARK(BM_DecodeSendStream)
    ->ArgNames({"payload", "parse_metadata", "reuse"})
    ->Args({100, 1, 0})
    ->Args({100, 1, 1})
    ->Args({1024, 0, 0})
    ->Args({1024, 1, 0})
    ->Args({1024, 1, 1})
    ->Args({16384, 1, 1});

// Re-framing a stored entry behind a MESSAGE command: the dispatch path.
void BM_EncodeMessageFromEntry(benchmark::State& state) {
  wire::MessageMetadata md;
  md.set_producer_name("standalone-0-1");
  md.set_sequence_id(1);
  md.set_publish_time(1764475200000);
  Buffer entry = encode_entry(md, BufferChain(Buffer::copy_of(std::string(1024, 'm')))).flatten();
  wire::BaseCommand cmd;
  cmd.set_type(wire::BaseCommand::MESSAGE);
  auto* m = cmd.mutable_message();
  m->set_consumer_id(1);
  for (auto _ : state) {
    m->mutable_message_id()->set_ledgerid(7);
    m->mutable_message_id()->set_entryid(static_cast<uint64_t>(state.iterations()));
    BufferChain out = encode_with_entry(cmd, entry);
    benchmark::DoNotOptimize(out.size());
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_EncodeMessageFromEntry);

}  // namespace
