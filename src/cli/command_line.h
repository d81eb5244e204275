#pragma once
// The command-line parse every tool ends its set-up with.

#include <map>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "common/status.h"

namespace CLI {
class App;
}

namespace magnetar::cli {

// Parses `args` (after the program name, already rewritten for single-dash long options)
// into `app`. nullopt: go on and run the command. Otherwise the exit code, after printing
// the help (0) or the parse error and the help (1).
std::optional<int> parse_command_line(CLI::App& app, std::vector<std::string> args,
                                      std::ostream& out, std::ostream& err);

// Pulsar's tools take options of several letters after a single dash ("-st Shared",
// "-ioThreads 2", "-time=10"), which CLI11 would read as clusters of one-letter options. Per
// subcommand ("" for the tool's own options, before the subcommand), `names` maps each such
// Pulsar name to the long option it stands for here, or to "" when this tool does not have
// it. rewrite_pulsar_names() replaces them in `args` (values after an option that takes one
// are left alone, so a message "-xy" stays a message) and fails naming any such option that
// the table does not have, or this tool does not support, instead of misreading it.
using PulsarNames = std::map<std::string, std::map<std::string, std::string>>;
Result<std::vector<std::string>> rewrite_pulsar_names(const CLI::App& app,
                                                      std::vector<std::string> args,
                                                      const PulsarNames& names,
                                                      std::string_view pulsar_tool);

}  // namespace magnetar::cli
