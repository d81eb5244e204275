#include "common/config.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

extern char** environ;

namespace magnetar {
namespace {

class ConfigCategory final : public std::error_category {
 public:
  const char* name() const noexcept override { return "config"; }
  std::string message(int c) const override {
    switch (static_cast<ConfigError>(c)) {
      case ConfigError::kOk:
        return "ok";
      case ConfigError::kUnknownKey:
        return "unknown key";
      case ConfigError::kBadValue:
        return "bad value";
      case ConfigError::kBadSyntax:
        return "bad syntax";
      case ConfigError::kFileError:
        return "file error";
    }
    return "unknown config error";
  }
  std::error_condition default_error_condition(int c) const noexcept override {
    if (static_cast<ConfigError>(c) == ConfigError::kFileError) {
      return make_error_condition(Errc::kIoError);
    }
    return make_error_condition(c == 0 ? Errc::kOk : Errc::kInvalidArgument);
  }
};

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

Result<bool> parse_bool(std::string_view v) {
  std::string l = lower(v);
  if (l == "true" || l == "1" || l == "yes" || l == "on") return true;
  if (l == "false" || l == "0" || l == "no" || l == "off") return false;
  return Status(ConfigError::kBadValue, "expected a boolean (true/false)");
}

template <typename Int>
Result<Int> parse_int(std::string_view v) {
  Int out{};
  auto [ptr, ec] = std::from_chars(v.data(), v.data() + v.size(), out);
  if (ec == std::errc::result_out_of_range) {
    return Status(ConfigError::kBadValue, "integer out of range");
  }
  if (ec != std::errc() || ptr != v.data() + v.size()) {
    return Status(ConfigError::kBadValue, "expected an integer");
  }
  return out;
}

Result<double> parse_double(std::string_view v) {
  std::string s(v);
  char* end = nullptr;
  errno = 0;
  double d = std::strtod(s.c_str(), &end);
  if (s.empty() || end != s.c_str() + s.size() || errno == ERANGE) {
    return Status(ConfigError::kBadValue, "expected a number");
  }
  return d;
}

std::vector<std::string> split_list(std::string_view v) {
  std::vector<std::string> out;
  while (!v.empty()) {
    size_t comma = v.find(',');
    std::string_view item = trim(v.substr(0, comma));
    if (!item.empty()) out.emplace_back(item);
    if (comma == std::string_view::npos) break;
    v.remove_prefix(comma + 1);
  }
  return out;
}

std::string join_list(const std::vector<std::string>& items) {
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) {
    if (i > 0) out += ",";
    out += items[i];
  }
  return out;
}

std::string number_text(double d) {
  return fmt::format("{}", d);
}

bool is_sensitive(std::string_view key) {
  std::string l = lower(key);
  for (std::string_view word : {"token", "password", "secret", "key", "parameters", "params"}) {
    if (l.find(word) != std::string::npos) return true;
  }
  return false;
}

}  // namespace

const std::error_category& config_category() noexcept {
  static const ConfigCategory category;
  return category;
}

std::error_code make_error_code(ConfigError e) noexcept {
  return {static_cast<int>(e), config_category()};
}

ConfigSchema::Key& ConfigSchema::Key::range(double lo, double hi) {
  has_range_ = true;
  lo_ = lo;
  hi_ = hi;
  return *this;
}

ConfigSchema::Key& ConfigSchema::Key::one_of(std::vector<std::string> allowed) {
  allowed_ = std::move(allowed);
  return *this;
}

ConfigSchema::Key& ConfigSchema::add(std::string key, std::string type, std::string doc) {
  MAGNETAR_ASSERT(!keys_.count(key), "config key declared twice");
  auto k = std::make_unique<Key>();
  k->name_ = key;
  k->type_ = std::move(type);
  k->doc_ = std::move(doc);
  Key& ref = *k;
  order_.push_back(key);
  keys_.emplace(std::move(key), std::move(k));
  return ref;
}

ConfigSchema::Key& ConfigSchema::bind(std::string key, bool* target, std::string doc) {
  Key& k = add(std::move(key), "bool", std::move(doc));
  k.assign_ = [target](std::string_view v) -> Status {
    MAGNETAR_ASSIGN_OR_RETURN(*target, parse_bool(v));
    return Status::OK();
  };
  k.current_ = [target] { return std::string(*target ? "true" : "false"); };
  k.default_text_ = k.current_();
  return k;
}

namespace {
// Shared by the integer and double binders: parse, range-check, store.
template <typename T, typename Parse>
std::function<Status(std::string_view)> numeric_assigner(T* target, Parse parse,
                                                         const bool* has_range, const double* lo,
                                                         const double* hi) {
  return [=](std::string_view v) -> Status {
    MAGNETAR_ASSIGN_OR_RETURN(T parsed, parse(v));
    if (*has_range && (static_cast<double>(parsed) < *lo || static_cast<double>(parsed) > *hi)) {
      return Status(ConfigError::kBadValue,
                    fmt::format("must be between {} and {}", number_text(*lo), number_text(*hi)));
    }
    *target = parsed;
    return Status::OK();
  };
}
}  // namespace

ConfigSchema::Key& ConfigSchema::bind(std::string key, int32_t* target, std::string doc) {
  Key& k = add(std::move(key), "int", std::move(doc));
  k.assign_ = numeric_assigner(target, parse_int<int32_t>, &k.has_range_, &k.lo_, &k.hi_);
  k.current_ = [target] { return std::to_string(*target); };
  k.default_text_ = k.current_();
  return k;
}

ConfigSchema::Key& ConfigSchema::bind(std::string key, int64_t* target, std::string doc) {
  Key& k = add(std::move(key), "int", std::move(doc));
  k.assign_ = numeric_assigner(target, parse_int<int64_t>, &k.has_range_, &k.lo_, &k.hi_);
  k.current_ = [target] { return std::to_string(*target); };
  k.default_text_ = k.current_();
  return k;
}

ConfigSchema::Key& ConfigSchema::bind(std::string key, std::optional<int32_t>* target,
                                      std::string doc) {
  Key& k = add(std::move(key), "int", std::move(doc));
  const Key* kp = &k;
  k.assign_ = [target, kp](std::string_view v) -> Status {
    int32_t value = 0;
    auto store = numeric_assigner(&value, parse_int<int32_t>, &kp->has_range_, &kp->lo_, &kp->hi_);
    MAGNETAR_TRY(store(v));
    *target = value;
    return Status::OK();
  };
  k.current_ = [target] { return *target ? std::to_string(**target) : std::string(); };
  k.default_text_ = k.current_();
  return k;
}

ConfigSchema::Key& ConfigSchema::bind(std::string key, double* target, std::string doc) {
  Key& k = add(std::move(key), "double", std::move(doc));
  k.assign_ = numeric_assigner(target, parse_double, &k.has_range_, &k.lo_, &k.hi_);
  k.current_ = [target] { return number_text(*target); };
  k.default_text_ = k.current_();
  return k;
}

ConfigSchema::Key& ConfigSchema::bind(std::string key, std::string* target, std::string doc) {
  Key& k = add(std::move(key), "string", std::move(doc));
  const Key* kp = &k;
  k.assign_ = [target, kp](std::string_view v) -> Status {
    if (!kp->allowed_.empty()) {
      bool found = false;
      for (const std::string& a : kp->allowed_) found = found || a == v;
      if (!found) {
        return Status(ConfigError::kBadValue, "must be one of: " + join_list(kp->allowed_));
      }
    }
    *target = std::string(v);
    return Status::OK();
  };
  k.current_ = [target] { return *target; };
  k.default_text_ = k.current_();
  return k;
}

ConfigSchema::Key& ConfigSchema::bind(std::string key, std::vector<std::string>* target,
                                      std::string doc) {
  Key& k = add(std::move(key), "list", std::move(doc));
  k.assign_ = [target](std::string_view v) -> Status {
    *target = split_list(v);
    return Status::OK();
  };
  k.current_ = [target] { return join_list(*target); };
  k.default_text_ = k.current_();
  return k;
}

std::string home_conf_file(std::string_view file) {
  std::vector<std::filesystem::path> candidates;
  if (const char* home = std::getenv("MAGNETAR_HOME"); home != nullptr && *home != '\0') {
    candidates.push_back(std::filesystem::path(home) / "conf" / file);
  }
  candidates.push_back(std::filesystem::path("conf") / file);
  for (const auto& c : candidates) {
    std::error_code ec;
    if (std::filesystem::is_regular_file(c, ec)) return c.string();
  }
  return "";
}

void ConfigSchema::accept_foreign(std::span<const std::string_view> keys) {
  for (auto k : keys) foreign_.emplace(k);
}

void ConfigSchema::accept_foreign_prefix(std::string prefix) {
  foreign_prefixes_.push_back(std::move(prefix));
}

void ConfigSchema::alias(std::string other_name, std::string key,
                         std::function<std::string(std::string_view)> convert) {
  aliases_[std::move(other_name)] = Alias{std::move(key), std::move(convert)};
}

bool ConfigSchema::is_foreign(std::string_view key) const {
  if (foreign_.count(key) != 0) return true;
  for (const auto& p : foreign_prefixes_) {
    if (key.size() > p.size() && key.substr(0, p.size()) == p) return true;
  }
  return false;
}

Result<bool> ConfigSchema::assign_other(const std::string& key, std::string_view value,
                                        const std::string& source) {
  if (auto a = aliases_.find(key); a != aliases_.end()) {
    auto target = keys_.find(a->second.key);
    if (target == keys_.end()) return false;
    if (value.empty() || own_name_set_.count(a->second.key) != 0) return true;
    const std::string converted = a->second.convert ? a->second.convert(value) : std::string(value);
    MAGNETAR_TRY(assign(*target->second, converted, fmt::format("{} (as {})", source, key)));
    return true;
  }
  if (!is_foreign(key)) return false;
  if (!value.empty() && std::find(ignored_.begin(), ignored_.end(), key) == ignored_.end()) {
    ignored_.push_back(key);
  }
  return true;
}

std::string ConfigSchema::ignored_warning() const {
  if (ignored_.empty()) return "";
  std::string names;
  for (const auto& k : ignored_) names += (names.empty() ? "" : ", ") + k;
  return fmt::format("{} Pulsar configuration key(s) accepted but not acted on by the {}: {}",
                     ignored_.size(), role_, names);
}

Status ConfigSchema::assign(Key& key, std::string_view value, std::string source) {
  Status st = key.assign_(value);
  if (!st.ok()) {
    return Status(st.code(), fmt::format("invalid value '{}' for key '{}' at {}: {}",
                                         is_sensitive(key.name_) ? "***" : std::string(value),
                                         key.name_, source, st.message()));
  }
  key.source_ = std::move(source);
  return Status::OK();
}

Status ConfigSchema::load_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) {
    return Status(ConfigError::kFileError,
                  fmt::format("cannot read {} configuration file '{}'", role_, path));
  }
  std::stringstream ss;
  ss << in.rdbuf();
  return load_text(ss.str(), path);
}

Status ConfigSchema::load_text(std::string_view text, std::string_view origin) {
  int line_no = 0;
  while (!text.empty()) {
    size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text.remove_prefix(nl == std::string_view::npos ? text.size() : nl + 1);
    ++line_no;
    line = trim(line);
    if (line.empty() || line.front() == '#') continue;
    std::string where = fmt::format("{}:{}", origin, line_no);
    size_t eq = line.find('=');
    if (eq == std::string_view::npos) {
      return Status(ConfigError::kBadSyntax,
                    fmt::format("expected key=value at {}, got '{}'", where, line));
    }
    std::string key(trim(line.substr(0, eq)));
    std::string_view value = trim(line.substr(eq + 1));
    auto it = keys_.find(key);
    if (it == keys_.end()) {
      auto other = assign_other(key, value, where);
      if (!other.ok()) return other.status();
      if (*other) continue;
      return Status(ConfigError::kUnknownKey,
                    fmt::format("unknown {} configuration key '{}' at {}", role_, key, where));
    }
    if (value.empty()) continue;  // as in Pulsar's files: an empty value keeps the default
    MAGNETAR_TRY(assign(*it->second, value, where));
    own_name_set_.insert(key);
  }
  return Status::OK();
}

std::string ConfigSchema::env_suffix(std::string_view key) {
  std::string out;
  for (size_t i = 0; i < key.size(); ++i) {
    char c = key[i];
    bool upper = std::isupper(static_cast<unsigned char>(c)) != 0;
    bool prev_lower = i > 0 && (std::islower(static_cast<unsigned char>(key[i - 1])) ||
                                std::isdigit(static_cast<unsigned char>(key[i - 1])));
    if (upper && prev_lower) out += '_';
    out += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  }
  return out;
}

Status ConfigSchema::apply_environment() {
  std::map<std::string, std::string> env;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    std::string_view entry(*e);
    if (entry.rfind("MAGNETAR_", 0) != 0) continue;
    size_t eq = entry.find('=');
    if (eq == std::string_view::npos) continue;
    env.emplace(std::string(entry.substr(0, eq)), std::string(entry.substr(eq + 1)));
  }
  return apply_environment(env);
}

Status ConfigSchema::apply_environment(const std::map<std::string, std::string>& env) {
  for (const std::string& name : order_) {
    Key& key = *keys_.at(name);
    for (const std::string& var : {"MAGNETAR_" + name, "MAGNETAR_" + env_suffix(name)}) {
      auto it = env.find(var);
      if (it != env.end()) {
        MAGNETAR_TRY(assign(key, trim(it->second), "environment variable " + var));
        own_name_set_.insert(name);
        break;
      }
    }
  }
  return Status::OK();
}

Status ConfigSchema::apply_flag(std::string_view key, std::string_view value) {
  auto it = keys_.find(std::string(key));
  if (it == keys_.end()) {
    auto other = assign_other(std::string(key), trim(value), "command line");
    if (!other.ok()) return other.status();
    if (*other) return Status::OK();
    return Status(ConfigError::kUnknownKey,
                  fmt::format("unknown {} configuration key '{}' on the command line", role_, key));
  }
  MAGNETAR_TRY(assign(*it->second, trim(value), "command line"));
  own_name_set_.insert(std::string(key));
  return Status::OK();
}

Status ConfigSchema::apply_assignment(std::string_view assignment, std::string_view origin) {
  size_t eq = assignment.find('=');
  if (eq == std::string_view::npos) {
    return Status(ConfigError::kBadSyntax,
                  fmt::format("expected key=value in {}, got '{}'", origin, assignment));
  }
  return apply_flag(trim(assignment.substr(0, eq)), assignment.substr(eq + 1));
}

std::string ConfigSchema::source_of(std::string_view key) const {
  auto it = keys_.find(std::string(key));
  return it == keys_.end() ? std::string() : it->second->source_;
}

std::string ConfigSchema::render_template() const {
  std::string out =
      fmt::format("# Magnetar {} configuration. Every key is shown with its default.\n", role_);
  for (const std::string& name : order_) {
    const Key& k = *keys_.at(name);
    out += fmt::format("\n# {} ({})\n{}={}\n", k.doc_, k.type_, k.name_, k.default_text_);
  }
  return out;
}

std::map<std::string, std::string> ConfigSchema::values() const {
  std::map<std::string, std::string> out;
  for (const auto& [name, k] : keys_) {
    std::string value = k->current_();
    if (is_sensitive(name) && !value.empty()) value = "***";
    out.emplace(name, std::move(value));
  }
  return out;
}

std::string ConfigSchema::describe_effective() const {
  std::string out;
  for (const std::string& name : order_) {
    const Key& k = *keys_.at(name);
    std::string value = k.current_();
    if (is_sensitive(name) && !value.empty()) value = "***";
    out += fmt::format("{}={} ({})\n", name, value, k.source_);
  }
  return out;
}

}  // namespace magnetar
