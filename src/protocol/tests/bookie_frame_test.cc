#include "protocol/bookie_frame.h"

#include <gtest/gtest.h>

#include <random>

#include "common/endian.h"
#include "protocol/errors.h"

namespace magnetar::protocol {
namespace {

bookie_wire::BookieRequest add_request(uint64_t id) {
  bookie_wire::BookieRequest r;
  r.set_request_id(id);
  auto* add = r.mutable_add();
  add->set_ledger_id(7);
  add->set_entry_id(static_cast<int64_t>(id));
  add->set_master_key(std::string(20, 'k'));
  return r;
}

TEST(BookieFrameTest, RoundTripWithBodyAcrossSplitReads) {
  std::string stream;
  for (uint64_t i = 0; i < 3; ++i) {
    stream += encode_bookie_frame(add_request(i),
                                  BufferChain(Buffer::copy_of("entry-" + std::to_string(i))))
                  .to_string();
  }
  for (size_t chunk : {1u, 5u, 4096u}) {
    BookieRequestDecoder d;
    int n = 0;
    for (size_t i = 0; i < stream.size(); i += chunk) {
      d.feed(Buffer::copy_of(stream.substr(i, chunk)));
      while (true) {
        auto f = d.next();
        ASSERT_TRUE(f.ok()) << f.status().to_string();
        if (!f->has_value()) break;
        EXPECT_EQ((*f)->header.request_id(), static_cast<uint64_t>(n));
        EXPECT_EQ((*f)->header.add().ledger_id(), 7);
        EXPECT_EQ((*f)->body.view(), "entry-" + std::to_string(n));
        ++n;
      }
    }
    EXPECT_EQ(n, 3) << chunk;
  }
}

TEST(BookieFrameTest, ResponseWithoutBody) {
  bookie_wire::BookieResponse r;
  r.set_request_id(9);
  r.mutable_add()->set_status(bookie_wire::FENCED);
  r.mutable_add()->set_ledger_id(1);
  r.mutable_add()->set_entry_id(2);
  BookieResponseDecoder d;
  d.feed(encode_bookie_frame(r).flatten());
  auto f = d.next();
  ASSERT_TRUE(f.ok() && f->has_value());
  EXPECT_EQ((*f)->header.add().status(), bookie_wire::FENCED);
  EXPECT_TRUE((*f)->body.empty());
}

TEST(BookieFrameTest, LyingAndOversizedFramesFail) {
  std::string huge(8, '\0');
  store_be32(reinterpret_cast<uint8_t*>(huge.data()), 100u << 20);
  BookieRequestDecoder big;
  big.feed(Buffer::copy_of(huge));
  EXPECT_EQ(big.next().status().code(), make_error_code(Error::kFrameTooLarge));

  std::string lie(12, '\0');
  store_be32(reinterpret_cast<uint8_t*>(lie.data()), 8);
  store_be32(reinterpret_cast<uint8_t*>(lie.data()) + 4, 1000);
  BookieRequestDecoder liar;
  liar.feed(Buffer::copy_of(lie));
  EXPECT_EQ(liar.next().status().code(), make_error_code(Error::kMalformedFrame));
  EXPECT_TRUE(liar.failed());

  std::string junk_header(12, '\xff');
  store_be32(reinterpret_cast<uint8_t*>(junk_header.data()), 8);
  store_be32(reinterpret_cast<uint8_t*>(junk_header.data()) + 4, 4);
  BookieRequestDecoder junk;
  junk.feed(Buffer::copy_of(junk_header));
  EXPECT_EQ(junk.next().status().code(), make_error_code(Error::kBadCommand));
  EXPECT_FALSE(junk.next().ok());  // stays failed
}

TEST(BookieFrameTest, RandomGarbageNeverCrashes) {
  std::mt19937 rng(7);
  for (int i = 0; i < 20000; ++i) {
    std::string bytes(rng() % 48, '\0');
    for (char& c : bytes) c = static_cast<char>(rng());
    if (bytes.size() >= 8 && rng() % 2) {
      store_be32(reinterpret_cast<uint8_t*>(bytes.data()), static_cast<uint32_t>(bytes.size() - 4));
      store_be32(reinterpret_cast<uint8_t*>(bytes.data()) + 4, rng() % 40);
    }
    BookieRequestDecoder d;
    d.feed(Buffer::copy_of(bytes));
    for (int k = 0; k < 3; ++k) {
      auto f = d.next();
      if (!f.ok() || !f->has_value()) break;
    }
  }
}

TEST(BookieFrameTest, ReadRangeBodyIsCutByItsSizesOrRejected) {
  bookie_wire::ReadRangeResponse r;
  r.set_status(bookie_wire::OK);
  r.set_ledger_id(1);
  r.set_first_entry_id(0);
  for (uint32_t size : {3u, 0u, 5u}) r.add_entry_sizes(size);
  auto entries = split_read_range(r, Buffer::copy_of("abc12345"));
  ASSERT_TRUE(entries.ok()) << entries.status().to_string();
  ASSERT_EQ(entries->size(), 3u);
  EXPECT_EQ((*entries)[0].view(), "abc");
  EXPECT_EQ((*entries)[1].view(), "");
  EXPECT_EQ((*entries)[2].view(), "12345");
  EXPECT_TRUE(split_read_range(r, Buffer::copy_of("abc1234")).status().is(Errc::kCorruption));
  EXPECT_TRUE(split_read_range(r, Buffer::copy_of("abc123456")).status().is(Errc::kCorruption));
  r.add_entry_sizes(UINT32_MAX);
  EXPECT_TRUE(split_read_range(r, Buffer::copy_of("abc12345")).status().is(Errc::kCorruption));
}

}  // namespace
}  // namespace magnetar::protocol
