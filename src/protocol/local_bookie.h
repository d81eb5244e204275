#pragma once
// A bookie in the caller's own process, served by calls instead of a socket: `magnetar
// standalone` hands its embedded bookie to its broker's ledger clients this way. Requests and
// answers are the bookie protocol's own messages (proto/bookie.proto), request ids included;
// only the framing, the loopback socket and the bookie's event loop are left out. The ledger
// client (ledger/bookie_client.h) keeps its deadlines, metrics and failure handling for it;
// the bookie server (bookie/server/bookie_server.h) implements it.

#include <functional>
#include <memory>
#include <vector>

#include "common/buffer.h"
#include "proto/bookie.pb.h"

namespace magnetar::protocol {

struct LocalBookieRequest {
  bookie_wire::BookieRequest header;  // request_id set by the caller
  BufferChain body;                   // an add's packaged entry; empty otherwise
};

class LocalBookie {
 public:
  // Gets each answer, on any thread (the caller's, a storage worker, a journal thread), at
  // most once per request: requests the bookie had not answered when it stopped get none.
  using Answer = std::function<void(bookie_wire::BookieResponse header, BufferChain body)>;

  virtual ~LocalBookie() = default;
  // Serves `requests` in order, as the requests of one socket read: the adds among them go to
  // storage together, each before the requests that follow it. An add may be stored on the
  // caller's thread, but only where nothing would wait (never a disk read, a full write
  // cache or a full journal queue): the call never blocks. False once the bookie has
  // stopped: nothing was served.
  virtual bool serve(std::vector<LocalBookieRequest> requests,
                     std::shared_ptr<const Answer> answer) = 0;
};

}  // namespace magnetar::protocol
