#include "broker/service/producer.h"

#include <chrono>
#include <nlohmann/json.hpp>

#include "protocol/replication.h"

namespace magnetar::broker {

int64_t wall_clock_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

Producer::Producer(const std::shared_ptr<ProducerSink>& sink, uint64_t id, std::string name,
                   wire::ProducerAccessMode mode)
    : sink_(sink),
      owner_(sink.get()),
      id_(id),
      name_(std::move(name)),
      replicator_(name_.starts_with(protocol::kReplicatorPrefix)),
      mode_(mode),
      connected_since_ms_(wall_clock_ms()) {}

nlohmann::json Producer::stats() const {
  auto sink = sink_.lock();
  return {{"producerId", id_},
          {"producerName", name_},
          {"accessMode", wire::ProducerAccessMode_Name(mode_)},
          {"msgRateIn", in_rate.msg_rate()},
          {"msgThroughputIn", in_rate.byte_rate()},
          {"averageMsgSize", in_rate.average_size()},
          {"msgInCounter", msgs_in},
          {"bytesInCounter", bytes_in},
          {"address", sink ? sink->remote() : ""},
          {"clientVersion", sink ? sink->client_version() : ""},
          {"connectedSince", connected_since_ms_}};
}

}  // namespace magnetar::broker
