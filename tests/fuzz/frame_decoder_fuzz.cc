// Fuzz target: arbitrary bytes as a connection's stream. The first byte picks how the
// stream is cut into reads; every decoded frame's payload is further unpacked as the
// broker and client would (entry parse, decompression, batch split), and its metadata read
// as a replication target reads it (source position, replicate_to).

#include <cstddef>
#include <cstdint>

#include "protocol/batch.h"
#include "protocol/frame.h"
#include "protocol/replication.h"

namespace {

constexpr uint32_t kMaxFrame = 64 * 1024;  // small, so size checks are reachable

void exercise(const magnetar::protocol::Frame& f) {
  using namespace magnetar::protocol;
  if (!f.has_payload) return;
  (void)parse_entry(f.entry);
  (void)unpack_messages(f.metadata, f.payload, kMaxFrame);
  (void)source_position(f.metadata);
  (void)replicates_to(f.metadata, "west");
  (void)replicator_source(f.metadata.producer_name());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace magnetar;
  using namespace magnetar::protocol;
  if (size == 0) return 0;
  size_t chunk = 1 + data[0] % 64;
  ++data;
  --size;

  // Whole-buffer decoding.
  auto whole = decode_frame(Buffer::copy_of(data, size), DecoderOptions{kMaxFrame, true});
  if (whole.ok()) exercise(*whole);

  // Streaming decoding, cut into reads of `chunk` bytes.
  FrameDecoder decoder(DecoderOptions{kMaxFrame, true});
  for (size_t i = 0; i < size; i += chunk) {
    decoder.feed(Buffer::copy_of(data + i, std::min(chunk, size - i)));
    while (true) {
      auto f = decoder.next();
      if (!f.ok() || !f->has_value()) break;
      exercise(**f);
    }
    if (decoder.failed()) break;
  }
  return 0;
}
