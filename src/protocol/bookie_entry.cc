#include "protocol/bookie_entry.h"

#include <fmt/format.h>

#include "common/crc32c.h"
#include "common/endian.h"
#include "protocol/errors.h"

namespace magnetar::protocol {

BufferChain package_entry(const EntryHeader& h, const BufferChain& payload) {
  Buffer head = Buffer::allocate(kEntryOverhead);
  uint8_t* p = head.mutable_data();
  store_be64(p, static_cast<uint64_t>(h.ledger_id));
  store_be64(p + 8, static_cast<uint64_t>(h.entry_id));
  store_be64(p + 16, static_cast<uint64_t>(h.lac));
  store_be64(p + 24, static_cast<uint64_t>(h.length));
  uint32_t crc = crc32c::extend(crc32c::value(p, kEntryHeaderSize), payload);
  store_be32(p + kEntryHeaderSize, crc);
  BufferChain out(std::move(head));
  out.append(payload);
  return out;
}

Result<EntryHeader> peek_entry_header(const Buffer& packaged) {
  if (packaged.size() < kEntryOverhead) {
    return Status(Error::kMalformedFrame,
                  fmt::format("entry of {} bytes is shorter than its {}-byte header",
                              packaged.size(), kEntryOverhead));
  }
  const uint8_t* p = packaged.data();
  EntryHeader h;
  h.ledger_id = static_cast<int64_t>(load_be64(p));
  h.entry_id = static_cast<int64_t>(load_be64(p + 8));
  h.lac = static_cast<int64_t>(load_be64(p + 16));
  h.length = static_cast<int64_t>(load_be64(p + 24));
  if (h.length < 0) {
    return Status(Error::kMalformedFrame,
                  fmt::format("entry header has a negative running length {}", h.length));
  }
  return h;
}

Result<Buffer> unpack_entry(const Buffer& packaged, int64_t ledger_id, int64_t entry_id,
                            EntryHeader* header_out) {
  MAGNETAR_ASSIGN_OR_RETURN(EntryHeader h, peek_entry_header(packaged));
  uint32_t stored = load_be32(packaged.data() + kEntryHeaderSize);
  uint32_t actual = crc32c::extend(crc32c::value(packaged.data(), kEntryHeaderSize),
                                   packaged.data() + kEntryOverhead,
                                   packaged.size() - kEntryOverhead);
  if (stored != actual) {
    return Status(Error::kChecksumMismatch,
                  fmt::format("entry {}:{} digest mismatch: stored {:#010x}, computed {:#010x}",
                              ledger_id, entry_id, stored, actual));
  }
  if (h.ledger_id != ledger_id || h.entry_id != entry_id) {
    return Status(Error::kMalformedFrame,
                  fmt::format("asked for entry {}:{}, got {}:{}", ledger_id, entry_id,
                              h.ledger_id, h.entry_id));
  }
  if (header_out != nullptr) *header_out = h;
  return packaged.slice(kEntryOverhead);
}

}  // namespace magnetar::protocol
