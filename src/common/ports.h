#pragma once
// Free TCP ports on 127.0.0.1 for processes a tool or a test is about to start.

#include <vector>

#include "common/status.h"

namespace magnetar {

// `count` distinct ports free right now on 127.0.0.1. Each is bound until all are picked, so
// they differ from each other; all are released on return for the caller's processes to
// bind. Another process may take one in between: a caller that can, starts again on other
// ports when its bind fails with "Address already in use".
Result<std::vector<int>> pick_free_ports(int count);

}  // namespace magnetar
