#pragma once
// The name of the GoogleTest case that is running: tests use it to give their ledgers, store
// paths and topics names of their own.

#include <string>

#include <gtest/gtest.h>

namespace magnetar::testing {

inline std::string test_name() {
  return ::testing::UnitTest::GetInstance()->current_test_info()->name();
}

}  // namespace magnetar::testing
