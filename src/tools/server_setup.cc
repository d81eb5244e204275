#include "tools/server_setup.h"

#include <csignal>

namespace magnetar::tools {

Status load_server_config(ConfigSchema& schema, const ServerArgs& args) {
  if (!args.conf.empty()) MAGNETAR_TRY(schema.load_file(args.conf));
  MAGNETAR_TRY(schema.apply_environment());
  for (const std::string& s : args.sets) MAGNETAR_TRY(schema.apply_assignment(s, "--set"));
  return Status::OK();
}

namespace {
sigset_t shutdown_signals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  return set;
}
}  // namespace

void block_shutdown_signals() {
  sigset_t set = shutdown_signals();
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
}

int wait_for_shutdown_signal() {
  sigset_t set = shutdown_signals();
  int sig = 0;
  sigwait(&set, &sig);
  return sig;
}

}  // namespace magnetar::tools
