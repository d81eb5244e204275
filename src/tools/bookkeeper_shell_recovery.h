#pragma once
// The auto-recovery commands of `magnetar bookkeeper` (BookKeeper's shell names):
// listunderreplicated, whoisauditor, decommissionbookie, recover, autorecovery.

#include <optional>

#include "common/asio.h"
#include "ledger/bookkeeper.h"
#include "tools/commands.h"

namespace magnetar::tools {

// Runs `a.command` when it is one of the commands above (its exit code); nullopt otherwise.
Task<std::optional<int>> run_recovery_command(ledger::BookKeeper& bk, const ShellArgs& a);

}  // namespace magnetar::tools
