// Fuzz target: an entry of a compacted ledger as a bookie returns it (a damaged or foreign
// ledger must give an error, never a crash or a read outside the buffer), then the topic
// entry inside it split as dispatch and the compactor split it.

#include <cstddef>
#include <cstdint>

#include "broker/compaction/compacted_ledger.h"
#include "protocol/batch.h"
#include "protocol/frame.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace magnetar;
  auto entry = broker::compaction::decode_compacted_entry(Buffer::copy_of(data, size));
  if (!entry.ok()) return 0;
  auto parts = protocol::parse_entry(entry->data);
  if (!parts.ok()) return 0;
  wire::MessageMetadata md;
  if (!md.ParseFromArray(parts->metadata_bytes.data(),
                         static_cast<int>(parts->metadata_bytes.size()))) {
    return 0;
  }
  (void)protocol::unpack_messages(md, parts->payload, 1 << 20);
  return 0;
}
