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

  // Streaming decoding, cut into reads of `chunk` bytes: into fresh frames (next()) and
  // into the decoder's reused one (next_frame(), as the broker and client read), which must
  // agree frame for frame.
  FrameDecoder decoder(DecoderOptions{kMaxFrame, true});
  FrameDecoder reusing(DecoderOptions{kMaxFrame, true});
  for (size_t i = 0; i < size; i += chunk) {
    Buffer read = Buffer::copy_of(data + i, std::min(chunk, size - i));
    decoder.feed(read);
    reusing.feed(read);
    while (true) {
      auto f = decoder.next();
      auto r = reusing.next_frame();
      if (f.ok() != r.ok()) __builtin_trap();
      if (!f.ok()) break;
      if (f->has_value() != (*r != nullptr)) __builtin_trap();
      if (!f->has_value()) break;
      const Frame& a = **f;
      const Frame& b = **r;
      // Partial: a frame's metadata may lack required fields (not parsed, or a relay's view).
      if (a.command.SerializePartialAsString() != b.command.SerializePartialAsString() ||
          a.has_payload != b.has_payload || a.had_checksum != b.had_checksum ||
          a.broker_entry_metadata.has_value() != b.broker_entry_metadata.has_value() ||
          a.metadata.SerializePartialAsString() != b.metadata.SerializePartialAsString() ||
          a.metadata_bytes.view() != b.metadata_bytes.view() ||
          a.payload.view() != b.payload.view() || a.entry.view() != b.entry.view()) {
        __builtin_trap();
      }
      exercise(**f);
      exercise(**r);
    }
    if (decoder.failed()) break;
  }
  return 0;
}
