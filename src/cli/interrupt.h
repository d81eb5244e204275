#pragma once
// A process-wide stop request for magnetar-client and magnetar-perf: the executables set it
// from their SIGINT/SIGTERM handler (a lock-free atomic store, async-signal-safe); long
// loops poll it, finish what is in flight and print their summary.

namespace magnetar::cli {

void request_stop() noexcept;
bool stop_requested() noexcept;
// Clears the request (run_client and run_perf call it when they start).
void clear_stop() noexcept;
// Installs a SIGINT and SIGTERM handler that calls request_stop().
void install_stop_handler();

}  // namespace magnetar::cli
