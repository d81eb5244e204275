#pragma once
// A fault-injecting TCP relay: listens on a loopback address and forwards every accepted
// connection to one target, with faults switched at run time (the chaos suite's partitions,
// tests that need a slow or cut-off link between two processes that keep running):
//
//   set_delay(dir, d)   every byte read in direction `dir` is written `d` later (order kept;
//                       bytes already queued keep the delay they were read with)
//   cut()               pass nothing either way: open connections stay open and their bytes
//                       wait (read no further, so the senders' TCP windows fill, as over a
//                       partitioned network); new connections are accepted and held without
//                       being forwarded (a blackhole), or with CutMode::kRefuse reset at once
//   heal()              held bytes and held connections go on, in order
//   reset_connections() every open connection gets a TCP reset on both sides
//
// Bytes are never dropped from inside a connection: TCP retransmits across a real partition,
// so the far end sees a stall, never a gap; a gap would corrupt the stream instead.
//
// Threading: the relay runs on a thread of its own (one io_context); every public method may be
// called from any other thread and returns once the change is in effect. Never call them from
// inside the relay's thread (nothing of the caller runs there).

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "common/status.h"

namespace magnetar::net {

struct FaultRelayOptions {
  std::string listen_address = "127.0.0.1";
  int listen_port = 0;  // 0: a free port (port() says which)
  std::string target_address = "127.0.0.1";
  int target_port = 0;
  // Connecting to the target: a connection whose target does not answer in time is closed.
  std::chrono::milliseconds connect_timeout{5000};
  // Bytes read but not yet written, per connection and direction, past which reading waits
  // (back-pressure while a delay holds bytes).
  size_t max_queued_bytes = 4 * 1024 * 1024;
};

enum class RelayDirection {
  kToTarget,   // what the accepted side sends
  kFromTarget  // what the target answers
};

enum class CutMode {
  kBlackhole,  // new connections accepted and held until heal()
  kRefuse      // new connections reset at once (as a closed port answers)
};

struct FaultRelayStats {
  int64_t accepted = 0;           // connections accepted since start
  int64_t open = 0;               // connections open now (held ones included)
  int64_t refused = 0;            // reset at accept (kRefuse) or when the target failed
  int64_t reset = 0;              // connections reset by reset_connections()
  int64_t bytes_to_target = 0;    // written to the target
  int64_t bytes_from_target = 0;  // written back to the accepted side
};

class FaultRelay {
 public:
  // Binds the listener and starts the relay's thread. Errors name the address.
  static Result<std::unique_ptr<FaultRelay>> start(FaultRelayOptions options);

  FaultRelay(const FaultRelay&) = delete;
  FaultRelay& operator=(const FaultRelay&) = delete;
  // Closes the listener and every connection, then joins the thread.
  ~FaultRelay();

  int port() const { return port_; }
  // "127.0.0.1:PORT": the address to give to whoever should go through the relay.
  std::string address() const;
  const FaultRelayOptions& options() const { return options_; }

  void set_delay(RelayDirection direction, std::chrono::milliseconds delay);
  // Both directions: a round trip costs twice `one_way`.
  void set_delay(std::chrono::milliseconds one_way);
  void cut(CutMode mode = CutMode::kBlackhole);
  void heal();
  bool is_cut() const;
  // Resets every open connection (both sides); returns how many there were.
  int64_t reset_connections();

  FaultRelayStats stats() const;

  struct Impl;  // the loop's state (fault_relay.cc)
  FaultRelay(FaultRelayOptions options, std::unique_ptr<Impl> impl, int port);

 private:
  const FaultRelayOptions options_;
  std::unique_ptr<Impl> impl_;
  const int port_;
};

}  // namespace magnetar::net
