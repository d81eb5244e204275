// `magnetar-admin`: administer a cluster over the admin REST API (see cli/admin.h).

#include <iostream>
#include <string>
#include <vector>

#include "cli/admin.h"

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  return magnetar::cli::run_admin(std::move(args), std::cout, std::cerr, std::cin);
}
