#pragma once
// Metadata store tests drive coroutines with the shared test event loop.

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "metadata/metadata_store.h"
#include "testing/event_loop.h"

namespace magnetar::metadata::test {

using Loop = magnetar::testing::EventLoop;

inline PutOptions ephemeral() { return PutOptions{std::nullopt, true, false}; }

inline StoreOptions store_options(std::chrono::milliseconds session,
                                  std::chrono::milliseconds operation) {
  StoreOptions options;
  options.session_timeout = session;
  options.operation_timeout = operation;
  return options;
}

// Records the session events a store reports, in order, with when each came.
struct SessionEvents {
  using Clock = std::chrono::steady_clock;
  std::vector<std::pair<SessionEvent, Clock::time_point>> seen;

  void attach(MetadataStore& store, Loop& loop) {
    store.add_session_listener(loop.executor(),
                               [this](SessionEvent e) { seen.emplace_back(e, Clock::now()); });
  }
  bool has(SessionEvent e) const { return first(e) < seen.size(); }
  // Index of the first `e` (seen.size() when there is none).
  size_t first(SessionEvent e) const {
    auto it = std::find_if(seen.begin(), seen.end(), [e](const auto& s) { return s.first == e; });
    return static_cast<size_t>(it - seen.begin());
  }
  std::optional<Clock::time_point> when(SessionEvent e) const {
    size_t i = first(e);
    return i < seen.size() ? std::optional<Clock::time_point>(seen[i].second) : std::nullopt;
  }
  std::string describe() const {
    std::string out;
    for (const auto& s : seen) out += fmt::format("{} ", to_string(s.first));
    return out;
  }
};

// After a lost session was replaced: `store`'s new session sees its old ephemeral `path`
// gone, creates it again and owns it, and `observer` reads the new value.
inline ::testing::AssertionResult new_session_owns_a_new_ephemeral(Loop& loop,
                                                                   MetadataStore& store,
                                                                   MetadataStore& observer,
                                                                   const std::string& path) {
  auto gone = loop.await(store.get(path));
  if (!gone.ok() || gone->has_value()) {
    return ::testing::AssertionFailure() << path << " still there: " << gone.status().to_string();
  }
  auto mine = loop.await(store.put(path, "again", ephemeral()));
  if (!mine.ok()) return ::testing::AssertionFailure() << mine.status().to_string();
  if (mine->stat.ephemeral_owner != store.session_id()) {
    return ::testing::AssertionFailure() << "owned by " << mine->stat.ephemeral_owner
                                         << ", the session is " << store.session_id();
  }
  auto read = loop.await(observer.get(path));
  if (!read.ok() || !read->has_value() || (*read)->value != "again") {
    return ::testing::AssertionFailure() << "the observer does not read the new value";
  }
  return ::testing::AssertionSuccess();
}

}  // namespace magnetar::metadata::test
