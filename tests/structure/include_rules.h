#pragma once
// The include rule of DESIGN.md §2 / docs/architecture.md as data, and a checker over a
// source tree: every quoted include of a file under src/ (tests excepted) must name its own
// module or one the table allows. A module is the first folder under src/, or
// broker/<room> for the broker's rooms; a file of a module the table does not know is a
// violation too, so a new folder cannot skip the rule.
//
// Test code (any file below a tests/ folder) may include anything: tests wire real
// components together.

#include <filesystem>
#include <string>
#include <vector>

namespace magnetar::structure {

struct Violation {
  std::string file;  // relative to the tree's root
  int line = 0;
  std::string include;  // what it includes
  std::string why;
};

// The module an include path or a file path under src/ belongs to: "broker/service",
// "broker" (the wiring), "client" for "magnetar/..." (the client's public headers), ...
std::string module_of(const std::string& path_under_src);

// Checks every .h and .cc under `root`/src.
std::vector<Violation> check_includes(const std::filesystem::path& root);

}  // namespace magnetar::structure
