#pragma once
// The command groups of magnetar-admin, one file each (clusters_command.cc, ...). Each adds
// its subcommands, options and positional arguments to the CLI11 app, and registers for every
// leaf command the action to run once the whole command line has parsed.
//
// Option values live in per-command structs held by shared_ptr inside the registered action,
// so they live as long as the CommandTable; CLI11 writes into them while parsing.

#include <CLI/CLI.hpp>
#include <functional>
#include <map>

#include "cli/session.h"

namespace magnetar::cli {

// Runs a parsed command against the session; returns the process exit code.
using Action = std::function<int(Session&)>;

class CommandTable {
 public:
  void on(const CLI::App* command, Action action) { actions_[command] = std::move(action); }
  // The action of a leaf command, or nullptr.
  const Action* find(const CLI::App* command) const {
    auto it = actions_.find(command);
    return it == actions_.end() ? nullptr : &it->second;
  }

 private:
  std::map<const CLI::App*, Action> actions_;
};

// A new command group ("tenants", ...) that requires one of its subcommands.
CLI::App* add_group(CLI::App& app, const std::string& name, const std::string& description);

void add_cluster_commands(CLI::App& app, CommandTable& table);
void add_tenant_commands(CLI::App& app, CommandTable& table);
void add_namespace_commands(CLI::App& app, CommandTable& table);
void add_topic_commands(CLI::App& app, CommandTable& table);
void add_broker_commands(CLI::App& app, CommandTable& table);
void add_broker_stats_commands(CLI::App& app, CommandTable& table);
void add_schema_commands(CLI::App& app, CommandTable& table);
void add_bookie_commands(CLI::App& app, CommandTable& table);

}  // namespace magnetar::cli
