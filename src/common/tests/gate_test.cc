#include "common/gate.h"

#include <gtest/gtest.h>

#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <thread>
#include <vector>

namespace magnetar {
namespace {

TEST(GateTest, HoldersCountUntilReleasedAndMoveWithoutDoubleRelease) {
  Gate gate;
  auto a = gate.enter();
  ASSERT_TRUE(a);
  EXPECT_EQ(gate.count(), 1);
  Gate::Holder moved = std::move(*a);
  EXPECT_EQ(gate.count(), 1);
  a.reset();
  EXPECT_EQ(gate.count(), 1);
  moved = Gate::Holder();
  EXPECT_EQ(gate.count(), 0);
}

TEST(GateTest, AClosedGateRefusesNewHoldersAndWaitReturnsOnceTheLastLeaves) {
  Gate gate;
  auto held = gate.enter();
  gate.close();
  EXPECT_FALSE(gate.enter());
  EXPECT_EQ(gate.count(), 1);
  EXPECT_FALSE(gate.wait(std::chrono::milliseconds(20)));  // still held
  std::thread releaser([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    held.reset();
  });
  EXPECT_TRUE(gate.wait(std::chrono::seconds(10)));
  EXPECT_EQ(gate.count(), 0);
  releaser.join();
}

TEST(GateTest, SpawnInHoldsTheGateForTheWholeCoroutine) {
  asio::io_context io;
  Gate gate;
  bool finished = false;
  asio::steady_timer timer(io, std::chrono::milliseconds(20));
  ASSERT_TRUE(spawn_in(gate, io.get_executor(), [&]() -> Task<void> {
    boost::system::error_code ec;
    co_await timer.async_wait(asio::redirect_error(asio::use_awaitable, ec));
    finished = true;
  }));
  EXPECT_EQ(gate.count(), 1);
  std::thread loop([&] { io.run(); });
  gate.close();
  EXPECT_FALSE(spawn_in(gate, io.get_executor(), []() -> Task<void> { co_return; }));
  EXPECT_TRUE(gate.wait(std::chrono::seconds(10)));
  loop.join();
  EXPECT_TRUE(finished);
}

TEST(GateTest, AFrameDestroyedUnfinishedReleasesItsHold) {
  Gate gate;
  {
    asio::io_context io;
    asio::steady_timer never(io, std::chrono::hours(1));
    ASSERT_TRUE(spawn_in(gate, io.get_executor(), [&]() -> Task<void> {
      boost::system::error_code ec;
      co_await never.async_wait(asio::redirect_error(asio::use_awaitable, ec));
    }));
    io.run_for(std::chrono::milliseconds(10));
    EXPECT_EQ(gate.count(), 1);
  }  // the io_context destroys the waiting frame
  EXPECT_EQ(gate.count(), 0);
}

TEST(GateTest, ManyThreadsEnteringAndLeavingWhileItClosesNeverLoseAHolder) {
  Gate gate;
  std::atomic<int64_t> admitted{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 200000; ++i) {
        if (auto h = gate.enter()) admitted.fetch_add(1);
      }
    });
  }
  // Close once the threads are under way, while they still enter and leave.
  while (admitted.load() < 1000) std::this_thread::yield();
  gate.close();
  for (auto& t : threads) t.join();
  EXPECT_TRUE(gate.wait(std::chrono::seconds(1)));
  EXPECT_EQ(gate.count(), 0);
  EXPECT_FALSE(gate.enter());  // and it stays closed
}

}  // namespace
}  // namespace magnetar
