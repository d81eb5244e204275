#pragma once
// A packaged ledger entry as the ledger client sends it to bookies and reads it back
// (BookKeeper's layout, CRC32C digest):
//
//   [ledger_id i64][entry_id i64][lac i64][length i64][crc32c u32][payload]
//
// big-endian. `length` is the ledger's running length: payload bytes of entries 0..entry_id
// (BookKeeper's meaning), so recovery learns a ledger's length from its last entry alone;
// the payload's own size is what follows the header. The digest covers the 32-byte header and the payload, so a reader detects a
// corrupted copy (and an entry served for the wrong ledger or id). Bookies read the header
// (for the LAC) but do not verify the digest; readers do.

#include <cstdint>

#include "common/buffer.h"
#include "common/status.h"

namespace magnetar::protocol {

inline constexpr size_t kEntryHeaderSize = 32;
inline constexpr size_t kEntryDigestSize = 4;
inline constexpr size_t kEntryOverhead = kEntryHeaderSize + kEntryDigestSize;

struct EntryHeader {
  int64_t ledger_id = 0;
  int64_t entry_id = 0;
  int64_t lac = -1;
  int64_t length = 0;  // running length (see above); >= 0
};

// Header + digest in one new buffer, followed by the payload buffers (not copied).
BufferChain package_entry(const EntryHeader& header, const BufferChain& payload);

// Reads the header without checking the digest (what a bookie needs). Fails on a short
// buffer or a negative length.
Result<EntryHeader> peek_entry_header(const Buffer& packaged);

// Verifies the digest and that the entry is (ledger_id, entry_id); returns the payload as a
// slice of `packaged`. Errors: corruption (digest), invalid argument (ids, sizes).
Result<Buffer> unpack_entry(const Buffer& packaged, int64_t ledger_id, int64_t entry_id,
                            EntryHeader* header_out = nullptr);

}  // namespace magnetar::protocol
