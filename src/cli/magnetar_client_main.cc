// `magnetar-client`: produce, consume and read messages (see cli/client_tool.h).

#include <iostream>
#include <string>
#include <vector>

#include "cli/client_tool.h"
#include "cli/interrupt.h"
#include "common/logging.h"

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  magnetar::cli::install_stop_handler();
  // The client library's connection chatter is not the output; warnings still show.
  magnetar::log::set_level(magnetar::log::Level::kWarn);
  return magnetar::cli::run_client(std::move(args), std::cout, std::cerr);
}
