#include "common/write_batch.h"

namespace magnetar {

void take_write_batch(std::deque<BufferChain>& queue, std::vector<BufferChain>& batch,
                      std::vector<boost::asio::const_buffer>& iov, size_t max_pieces,
                      size_t max_bytes) {
  batch.clear();
  iov.clear();
  size_t bytes = 0;
  while (!queue.empty() && (batch.empty() || (iov.size() < max_pieces && bytes < max_bytes))) {
    batch.push_back(std::move(queue.front()));
    queue.pop_front();
    for (const Buffer& b : batch.back().buffers()) {
      iov.emplace_back(b.data(), b.size());
      bytes += b.size();
    }
  }
}

}  // namespace magnetar
