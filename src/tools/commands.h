#pragma once
// The subcommands of the `magnetar` binary, one file each.

#include <string>
#include <vector>

namespace magnetar::tools {

// Prints every frame of a captured client<->broker byte stream (one direction).
int decode_frames(const std::string& path, bool unpack);

struct ServerArgs {
  std::string conf;                 // --conf FILE (optional)
  std::vector<std::string> sets;    // --set key=value (repeatable)
  bool print_template = false;      // --print-conf-template
};

// `magnetar bookie`: runs a bookie until SIGINT/SIGTERM.
int run_bookie(const ServerArgs& args);

}  // namespace magnetar::tools
