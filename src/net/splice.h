#pragma once
// A one-way relay between two plain TCP streams that moves the bytes inside the kernel
// (Linux splice(2) through a pipe): nothing is copied to user space, which is what a proxy
// that does not look at the bytes wants. Each step moves what the source has (up to the
// pipe's size) and waits until the destination took all of it before reading again, so a
// slow destination slows the source (back-pressure, nothing buffered beyond the pipe).
//
// Threading: on the streams' event loop (both on one); the streams must outlive the relay;
// closing either stream ends it (operation_aborted).

#include <cstddef>
#include <functional>

#include "common/asio.h"
#include "net/stream.h"

namespace magnetar::net {

// Whether both streams can be spliced (plain TCP, on a platform with splice(2)).
bool can_splice(Stream& from, Stream& to);

// Relays until `from` reaches its end (returns eof) or an error (returned); `moved` is called
// after every step with the bytes moved. Errors of the pipe itself (no descriptors left) are
// returned before anything moves, so the caller may fall back to copying.
Task<boost::system::error_code> splice_relay(Stream& from, Stream& to,
                                             std::function<void(size_t)> moved);

}  // namespace magnetar::net
