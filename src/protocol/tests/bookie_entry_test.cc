#include "protocol/bookie_entry.h"

#include <gtest/gtest.h>

#include "protocol/errors.h"

namespace magnetar::protocol {
namespace {

// `running` is the ledger's running length up to this entry.
Buffer packaged(int64_t ledger, int64_t entry, int64_t lac, std::string_view payload,
                int64_t running = 100) {
  return package_entry(EntryHeader{ledger, entry, lac, running},
                       BufferChain(Buffer::copy_of(payload)))
      .flatten();
}

TEST(BookieEntryTest, PackageThenUnpack) {
  Buffer e = packaged(5, 9, 8, "payload");
  ASSERT_EQ(e.size(), kEntryOverhead + 7);
  auto h = peek_entry_header(e);
  ASSERT_TRUE(h.ok());
  EXPECT_EQ(h->lac, 8);
  EXPECT_EQ(h->length, 100);  // the running length, not the payload's size
  EntryHeader out;
  auto payload = unpack_entry(e, 5, 9, &out);
  ASSERT_TRUE(payload.ok()) << payload.status().to_string();
  EXPECT_EQ(payload->view(), "payload");
  EXPECT_TRUE(payload->shares_block_with(e));
  EXPECT_EQ(out.entry_id, 9);
}

TEST(BookieEntryTest, EveryFlippedBitIsDetected) {
  Buffer e = packaged(1, 2, 1, "some bytes");
  std::string bytes = e.to_string();
  for (size_t i = 0; i < bytes.size(); ++i) {
    std::string bad = bytes;
    bad[i] ^= 0x04;
    auto r = unpack_entry(Buffer::copy_of(bad), 1, 2);
    EXPECT_FALSE(r.ok()) << "byte " << i;
  }
}

TEST(BookieEntryTest, WrongIdsAndSizesAreRejected) {
  Buffer e = packaged(1, 2, 1, "x");
  EXPECT_EQ(unpack_entry(e, 1, 3).status().code(), make_error_code(Error::kMalformedFrame));
  EXPECT_EQ(unpack_entry(e, 2, 2).status().code(), make_error_code(Error::kMalformedFrame));
  EXPECT_FALSE(peek_entry_header(e.slice(0, 20)).ok());
  EXPECT_FALSE(unpack_entry(e.slice(0, e.size() - 1), 1, 2).ok());  // digest
  EXPECT_FALSE(peek_entry_header(packaged(1, 2, 1, "x", -5)).ok());
}

}  // namespace
}  // namespace magnetar::protocol
