#include "cli/command_line.h"

#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cctype>

namespace magnetar::cli {

std::optional<int> parse_command_line(CLI::App& app, std::vector<std::string> args,
                                      std::ostream& out, std::ostream& err) {
  std::reverse(args.begin(), args.end());  // CLI11 takes the arguments last first
  try {
    app.parse(args);
  } catch (const CLI::CallForHelp&) {
    out << app.help();
    return 0;
  } catch (const CLI::CallForAllHelp&) {
    out << app.help("", CLI::AppFormatMode::All);
    return 0;
  } catch (const CLI::CallForVersion& e) {
    out << e.what() << "\n";
    return 0;
  } catch (const CLI::ParseError& e) {
    err << e.what() << "\n\n" << app.help();
    return 1;
  }
  return std::nullopt;
}

namespace {

// Whether `token` is an option name of `command` that takes a value.
bool takes_value(const CLI::App& command, const std::string& token) {
  if (token.size() < 2 || token[0] != '-' || token.find('=') != std::string::npos) return false;
  const CLI::Option* o = command.get_option_no_throw(token);
  return o != nullptr && o->get_expected_min() > 0;
}

bool all_letters(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) {
    return std::isalpha(static_cast<unsigned char>(c)) || c == '_';
  });
}

}  // namespace

Result<std::vector<std::string>> rewrite_pulsar_names(const CLI::App& app,
                                                      std::vector<std::string> args,
                                                      const PulsarNames& names,
                                                      std::string_view pulsar_tool) {
  const CLI::App* command = &app;
  std::string command_name;
  std::vector<std::string> out;
  bool value_next = false;
  for (size_t i = 0; i < args.size(); ++i) {
    std::string arg = std::move(args[i]);
    if (arg == "--") {  // the rest are positional, whatever they look like
      out.push_back(std::move(arg));
      for (++i; i < args.size(); ++i) out.push_back(std::move(args[i]));
      break;
    }
    if (value_next) {
      value_next = false;
      out.push_back(std::move(arg));
      continue;
    }
    if (command == &app && arg.empty() == false && arg[0] != '-') {
      auto subs = app.get_subcommands([&arg](const CLI::App* a) { return a->check_name(arg); });
      if (!subs.empty()) {
        command = subs.front();
        command_name = subs.front()->get_name();
      }
      out.push_back(std::move(arg));
      continue;
    }
    const size_t eq = arg.find('=');
    const std::string name = arg.substr(0, eq);
    const bool single_dash_word = name.size() > 2 && name[0] == '-' && name[1] != '-' &&
                                  all_letters(std::string_view(name).substr(1));
    if (!single_dash_word) {
      value_next = takes_value(*command, arg) || (command != &app && takes_value(app, arg));
      out.push_back(std::move(arg));
      continue;
    }
    const std::string* long_name = nullptr;
    for (const std::string& scope : {command_name, std::string()}) {
      auto table = names.find(scope);
      if (table == names.end()) continue;
      auto it = table->second.find(name);
      if (it != table->second.end()) {
        long_name = &it->second;
        break;
      }
    }
    if (long_name == nullptr) {
      // A one-letter option with its value attached ("-q5000", "-sname"), as Pulsar's parser
      // also reads it.
      if (takes_value(*command, name.substr(0, 2))) {
        out.push_back(std::move(arg));
        continue;
      }
      return Status(Errc::kInvalidArgument, fmt::format("Unknown option: '{}'", name));
    }
    if (long_name->empty()) {
      return Status(Errc::kNotSupported,
                    fmt::format("{}'s option {} is not supported here", pulsar_tool, name));
    }
    out.push_back(*long_name);
    if (eq != std::string::npos) {
      out.push_back(arg.substr(eq + 1));
    } else {
      value_next = takes_value(*command, *long_name) || takes_value(app, *long_name);
    }
  }
  return out;
}

}  // namespace magnetar::cli
