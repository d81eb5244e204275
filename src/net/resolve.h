#pragma once
// A host name as the IP address a server listens on and advertises: blocking, for start-up
// only (never on an event loop).

#include <string>

#include "common/status.h"

namespace magnetar::net {

// `host` itself when it is an IP address; else the first IPv4 address it resolves to (an
// IPv6 one when it has none). Errors: kInvalidArgument naming the host and the reason.
Result<std::string> resolve_listen_address(const std::string& host);

}  // namespace magnetar::net
