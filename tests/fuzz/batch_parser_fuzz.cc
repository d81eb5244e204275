// Fuzz target: a batch payload with attacker-chosen count, compression type and claimed
// uncompressed size: the path every MESSAGE a client receives (and every replicated
// entry) goes through.

#include <cstddef>
#include <cstdint>

#include "common/endian.h"
#include "protocol/batch.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace magnetar;
  using namespace magnetar::protocol;
  if (size < 9) return 0;
  int32_t count = static_cast<int32_t>(load_be32(data));
  uint32_t claimed = load_be32(data + 4) % (1 << 20);
  int compression = data[8] % 6;  // includes one value we do not implement
  Buffer payload = Buffer::copy_of(data + 9, size - 9);

  (void)parse_batch(payload, count);

  wire::MessageMetadata md;
  md.set_producer_name("fuzz");
  md.set_sequence_id(0);
  md.set_publish_time(0);
  if (count != 1) md.set_num_messages_in_batch(count);
  md.set_compression(static_cast<wire::CompressionType>(compression % 5));
  md.set_uncompressed_size(claimed);
  (void)unpack_messages(md, payload, 1 << 20);
  return 0;
}
