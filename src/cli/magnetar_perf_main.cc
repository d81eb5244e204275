// `magnetar-perf`: load and latency tests (see cli/perf_tool.h). Ctrl+C ends the run and
// prints the aggregated stats.

#include <iostream>
#include <string>
#include <vector>

#include "cli/interrupt.h"
#include "cli/perf_tool.h"
#include "common/logging.h"

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  magnetar::cli::install_stop_handler();
  // The client library's connection chatter is not the output; warnings still show.
  magnetar::log::set_level(magnetar::log::Level::kWarn);
  return magnetar::cli::run_perf(std::move(args), std::cout, std::cerr);
}
