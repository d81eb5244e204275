#include "common/status.h"

#include <gtest/gtest.h>

// A module-style error enum defined by the test, to prove the mapping mechanism.
enum class TestError { kOk = 0, kChecksum = 1, kTooBig = 2 };
template <>
struct std::is_error_code_enum<TestError> : std::true_type {};

namespace {
class TestCategory final : public std::error_category {
 public:
  const char* name() const noexcept override { return "test"; }
  std::string message(int c) const override { return c == 1 ? "checksum" : "too big"; }
  std::error_condition default_error_condition(int c) const noexcept override {
    return magnetar::make_error_condition(c == 1 ? magnetar::Errc::kCorruption
                                                 : magnetar::Errc::kResourceExhausted);
  }
};
}  // namespace

std::error_code make_error_code(TestError e) {
  static const TestCategory category;
  return {static_cast<int>(e), category};
}

namespace magnetar {
namespace {

Result<int> parse_positive(int v) {
  if (v <= 0) return Status(Errc::kInvalidArgument, "not positive: " + std::to_string(v));
  return v;
}

Result<int> doubled(int v) {
  MAGNETAR_ASSIGN_OR_RETURN(int x, parse_positive(v));
  return 2 * x;
}

Status check(int v) {
  MAGNETAR_TRY(parse_positive(v).status());
  return Status::OK();
}

TEST(StatusTest, DefaultIsOk) {
  Status s;
  EXPECT_TRUE(s.ok());
  EXPECT_EQ(s.to_string(), "OK");
  EXPECT_TRUE(s.is(Errc::kOk));
}

TEST(StatusTest, GenericCodesCarryMessage) {
  Status s(Errc::kUnavailable, "bookie 127.0.0.1:3181 down");
  EXPECT_FALSE(s.ok());
  EXPECT_TRUE(s.is(Errc::kUnavailable));
  EXPECT_TRUE(s.retriable());
  EXPECT_EQ(s.to_string(), "magnetar.unavailable: bookie 127.0.0.1:3181 down");
}

TEST(StatusTest, FencedIsNotRetriable) {
  EXPECT_FALSE(Status(Errc::kFenced, "ledger 7 fenced").retriable());
  EXPECT_TRUE(Status(Errc::kBadVersion, "cas lost").retriable());
}

TEST(ResultTest, ValueAndErrorPropagate) {
  EXPECT_EQ(*doubled(21), 42);
  Result<int> bad = doubled(-1);
  ASSERT_FALSE(bad.ok());
  EXPECT_TRUE(bad.status().is(Errc::kInvalidArgument));
  EXPECT_EQ(bad.value_or(7), 7);
  EXPECT_TRUE(check(3).ok());
  EXPECT_FALSE(check(0).ok());
}

TEST(ResultTest, OkStatusIsNotAValue) {
  Result<int> r{Status::OK()};
  EXPECT_FALSE(r.ok());
  EXPECT_TRUE(r.status().is(Errc::kInternal));
}

TEST(StatusTest, ModuleErrorsMapToGenericConditions) {
  Status s(TestError::kChecksum, "frame 3");
  EXPECT_TRUE(s.is(Errc::kCorruption));
  EXPECT_FALSE(s.is(Errc::kInvalidArgument));
  EXPECT_EQ(s.to_string(), "test.checksum: frame 3");
  EXPECT_TRUE(Status(TestError::kTooBig, "").is(Errc::kResourceExhausted));
}

}  // namespace
}  // namespace magnetar
