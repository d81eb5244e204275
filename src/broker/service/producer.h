#pragma once
// A producer attached to a topic. Lives on the topic's loop; the counters are the topic's
// to update there.

#include <cstdint>
#include <memory>
#include <nlohmann/json_fwd.hpp>
#include <string>

#include "broker/service/consumer_sink.h"
#include "broker/service/rates.h"
#include "proto/pulsar_api.pb.h"

namespace magnetar::broker {

class Producer {
 public:
  // `sink`: the connection it came on (kept weakly: the producer never keeps it open).
  Producer(const std::shared_ptr<ProducerSink>& sink, uint64_t id, std::string name,
           wire::ProducerAccessMode mode);
  uint64_t id() const { return id_; }
  const std::string& name() const { return name_; }
  // Another cluster's replicator (named `pulsar.repl.<source>...`): not listed among the
  // topic's publishers; its sends are deduplicated by source position.
  bool replicator() const { return replicator_; }
  wire::ProducerAccessMode access_mode() const { return mode_; }
  // Null once the connection is gone.
  std::shared_ptr<ProducerSink> sink() const { return sink_.lock(); }
  // The connection's identity, valid for comparisons after it is gone.
  const ProducerSink* owner() const { return owner_; }
  int64_t connected_since_ms() const { return connected_since_ms_; }
  nlohmann::json stats() const;

  int64_t msgs_in = 0;
  int64_t bytes_in = 0;
  RateMeter in_rate;  // msgs_in / bytes_in over the last stats period

 private:
  std::weak_ptr<ProducerSink> sink_;
  const ProducerSink* owner_;
  uint64_t id_;
  std::string name_;
  bool replicator_;
  wire::ProducerAccessMode mode_;
  int64_t connected_since_ms_;
};

// Milliseconds since the epoch (stats' connectedSince).
int64_t wall_clock_ms();

}  // namespace magnetar::broker
