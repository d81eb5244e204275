#include "protocol/errors.h"

#include <gtest/gtest.h>

namespace magnetar::protocol {
namespace {

TEST(ProtocolErrorsTest, MapToGenericConditions) {
  Status s(Error::kChecksumMismatch, "frame 3");
  EXPECT_TRUE(s.is(Errc::kCorruption));
  EXPECT_EQ(s.to_string(), "protocol.checksum mismatch: frame 3");
  EXPECT_TRUE(Status(Error::kFrameTooLarge, "").is(Errc::kResourceExhausted));
  EXPECT_TRUE(Status(Error::kUnknownCommand, "").is(Errc::kNotSupported));
  EXPECT_TRUE(Status(Error::kInvalidTopicName, "").is(Errc::kInvalidArgument));
  EXPECT_FALSE(Status(Error::kMalformedFrame, "").retriable());
}

}  // namespace
}  // namespace magnetar::protocol
