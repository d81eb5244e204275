#pragma once
// Gathered writes of queued frames: one socket write for as many queued frames as fit.
// Shared by every connection that queues frames (broker, client, bookie server, ledger client).

#include <boost/asio/buffer.hpp>
#include <cstddef>
#include <deque>
#include <vector>

#include "common/buffer.h"

namespace magnetar {

// Moves frames from the front of `queue` into `batch` (which keeps them alive) and their
// pieces into `iov`, for one gathered write: at most `max_pieces` pieces and about
// `max_bytes` bytes (at least one frame). `batch` and `iov` are cleared first.
void take_write_batch(std::deque<BufferChain>& queue, std::vector<BufferChain>& batch,
                      std::vector<boost::asio::const_buffer>& iov, size_t max_pieces,
                      size_t max_bytes);

}  // namespace magnetar
