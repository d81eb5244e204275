#pragma once
// The command-line parse every tool ends its set-up with.

#include <optional>
#include <ostream>
#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace magnetar::cli {

// Parses `args` (after the program name, already rewritten for single-dash long options)
// into `app`. nullopt: go on and run the command. Otherwise the exit code, after printing
// the help (0) or the parse error and the help (1).
std::optional<int> parse_command_line(CLI::App& app, std::vector<std::string> args,
                                      std::ostream& out, std::ostream& err);

}  // namespace magnetar::cli
