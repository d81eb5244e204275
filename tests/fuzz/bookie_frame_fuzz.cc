// Fuzz target: arbitrary bytes as a bookie connection's stream, decoded as requests (the
// bookie's side) and as responses (the ledger client's side), read-range answers cut into
// their entries.

#include <cstddef>
#include <cstdint>

#include "protocol/bookie_frame.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace magnetar;
  using namespace magnetar::protocol;
  Buffer bytes = Buffer::copy_of(data, size);
  BookieRequestDecoder requests(64 * 1024);
  BookieResponseDecoder responses(64 * 1024);
  requests.feed(bytes);
  responses.feed(bytes);
  for (int i = 0; i < 64; ++i) {
    auto f = requests.next();
    if (!f.ok() || !f->has_value()) break;
  }
  for (int i = 0; i < 64; ++i) {
    auto f = responses.next();
    if (!f.ok() || !f->has_value()) break;
    if ((*f)->header.has_read_range()) (void)split_read_range((*f)->header.read_range(), (*f)->body);
  }
  return 0;
}
