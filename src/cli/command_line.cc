#include "cli/command_line.h"

#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cctype>
#include <string_view>
#include <utility>
#include <vector>

namespace magnetar::cli {

namespace {

bool takes_value(const CLI::App& command, const std::string& token);

// Levenshtein distance, for "Did you mean".
size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = up;
    }
  }
  return row[b.size()];
}

// A word where a command group expects one of its subcommands and names none of them:
// picocli's message, as pulsar-admin prints it ("Unmatched argument at index 1: 'xyz'", then
// up to three close names), and the group.
std::optional<std::pair<std::string, const CLI::App*>> unknown_subcommand(
    const CLI::App& app, const std::vector<std::string>& args) {
  const CLI::App* current = &app;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& word = args[i];
    if (word == "--") return std::nullopt;
    if (!word.empty() && word[0] == '-') {
      if (takes_value(*current, word) || takes_value(app, word)) ++i;
      continue;
    }
    const auto subcommands = current->get_subcommands([](const CLI::App*) { return true; });
    if (subcommands.empty() || current->get_require_subcommand_min() == 0) return std::nullopt;
    const auto next = std::find_if(subcommands.begin(), subcommands.end(),
                                   [&word](const CLI::App* sub) { return sub->check_name(word); });
    if (next != subcommands.end()) {
      current = *next;
      continue;
    }
    std::vector<std::pair<size_t, std::string>> close;
    for (const CLI::App* sub : subcommands) {
      const std::string& name = sub->get_name();
      const size_t d = edit_distance(word, name);
      const bool related = name.find(word) != std::string::npos ||
                           word.find(name) != std::string::npos;
      if (related || d <= std::max<size_t>(2, word.size() / 3)) close.emplace_back(d, name);
    }
    std::sort(close.begin(), close.end());
    std::string message = fmt::format("Unmatched argument at index {}: '{}'", i, word);
    for (size_t k = 0; k < close.size() && k < 3; ++k) {
      message += (k == 0 ? "\nDid you mean: " : " or ") + close[k].second;
    }
    if (!close.empty()) message += "?";
    return std::make_pair(message, current);
  }
  return std::nullopt;
}

}  // namespace

std::optional<int> parse_command_line(CLI::App& app, std::vector<std::string> args,
                                      std::ostream& out, std::ostream& err) {
  if (auto unknown = unknown_subcommand(app, args)) {
    err << unknown->first << "\n\n" << unknown->second->help();
    return 1;
  }
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
