#pragma once
// What every server role does before it starts: layered configuration and signals.

#include "common/config.h"
#include "tools/commands.h"

namespace magnetar::tools {

// --conf file (if given), then MAGNETAR_* environment, then --set overrides.
Status load_server_config(ConfigSchema& schema, const ServerArgs& args);

// Blocks SIGINT and SIGTERM in the calling thread; threads started afterwards inherit the
// mask, so the signals stay pending for wait_for_shutdown_signal(). Call before starting any
// thread.
void block_shutdown_signals();
// Returns the first SIGINT/SIGTERM received (after block_shutdown_signals()).
int wait_for_shutdown_signal();

}  // namespace magnetar::tools
