#include "broker/service/consumer.h"

#include <nlohmann/json.hpp>

#include "broker/service/producer.h"

namespace magnetar::broker {

Consumer::Consumer(const std::shared_ptr<ConsumerSink>& sink, uint64_t id, std::string name,
                   int priority, int partition)
    : sink_(sink),
      owner_(sink.get()),
      id_(id),
      name_(std::move(name)),
      priority_(priority),
      partition_(partition),
      connected_since_ms_(wall_clock_ms()) {}

nlohmann::json Consumer::stats() const {
  auto sink = sink_.lock();
  return {{"consumerName", name_},
          {"msgRateOut", out_rate.msg_rate()},
          {"msgThroughputOut", out_rate.byte_rate()},
          {"msgRateRedeliver", redeliver_rate.msg_rate()},
          {"blockedConsumerOnUnackedMsgs", blocked},
          {"availablePermits", permits},
          {"unackedMessages", unacked_messages},
          {"msgOutCounter", msgs_out},
          {"bytesOutCounter", bytes_out},
          {"priorityLevel", priority_},
          {"address", sink ? sink->remote() : ""},
          {"clientVersion", sink ? sink->client_version() : ""},
          {"connectedSince", connected_since_ms_}};
}

}  // namespace magnetar::broker
