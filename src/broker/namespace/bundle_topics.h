#pragma once
// What the namespace room needs of the topics served here, without knowing them: closing
// the topics of a bundle being unloaded, and their counters for load reports and bundle
// splits. The service room's topic registry implements it.

#include <cstdint>
#include <functional>
#include <vector>

#include "common/asio.h"
#include "protocol/topic_name.h"

namespace magnetar::broker {

// Counters of one loaded topic.
struct TopicLoad {
  protocol::TopicName name;
  int64_t msgs_in = 0, bytes_in = 0, msgs_out = 0, bytes_out = 0;
  int64_t producers = 0, consumers = 0;
};

class BundleTopics {
 public:
  virtual ~BundleTopics() = default;
  // Closes and forgets every loaded topic `which` selects (their clients reconnect and look
  // the topic up again); returns how many. May be awaited from any loop.
  virtual Task<int> close_topics(std::function<bool(const protocol::TopicName&)> which) = 0;
  virtual Task<std::vector<TopicLoad>> topic_loads() = 0;
};

}  // namespace magnetar::broker
