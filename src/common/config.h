#pragma once
// Configuration in Pulsar's style: `key=value` files (broker.conf, bookie.conf), then
// environment variables, then command-line flags, each layer overriding the one before.
//
// A role declares its keys by binding each one to a field of its own config struct:
//
//   BookieConfig cfg;
//   ConfigSchema schema("bookie");
//   schema.bind("bookiePort", &cfg.bookie_port, "TCP port of the bookie protocol").range(1, 65535);
//   MAGNETAR_TRY(schema.load_file("conf/bookie.conf"));
//   MAGNETAR_TRY(schema.apply_environment());     // MAGNETAR_bookiePort or MAGNETAR_BOOKIE_PORT
//   MAGNETAR_TRY(schema.apply_flag("bookiePort", "3182"));
//
// A file line with an unknown key or a bad value is an error naming the key, the file and
// the line. Environment variables with the MAGNETAR_ prefix that match no key are ignored
// (one environment serves several roles). The schema holds raw pointers into the bound
// struct: the struct must outlive the schema.

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace magnetar {

enum class ConfigError {
  kOk = 0,
  kUnknownKey = 1,
  kBadValue,
  kBadSyntax,
  kFileError,
};

const std::error_category& config_category() noexcept;
std::error_code make_error_code(ConfigError e) noexcept;

}  // namespace magnetar

template <>
struct std::is_error_code_enum<magnetar::ConfigError> : std::true_type {};

namespace magnetar {

// A role's configuration file where Pulsar's tools look for theirs ($PULSAR_HOME/conf):
// $MAGNETAR_HOME/conf/<file>, else ./conf/<file>; "" when neither exists.
std::string home_conf_file(std::string_view file);

class ConfigSchema {
 public:
  // One declared key. Returned by bind() so constraints can be chained.
  class Key {
   public:
    // Accept only integers (or doubles) in [lo, hi].
    Key& range(double lo, double hi);
    // Accept only one of these strings.
    Key& one_of(std::vector<std::string> allowed);

   private:
    friend class ConfigSchema;
    std::string name_;
    std::string doc_;
    std::string type_;          // "bool", "int", "double", "string", "list"
    std::string default_text_;  // the value before any layer applied, as text
    std::string source_ = "default";
    std::function<Status(std::string_view)> assign_;  // parses and stores, or explains
    std::function<std::string()> current_;            // the value now, as text
    bool has_range_ = false;
    double lo_ = 0, hi_ = 0;
    std::vector<std::string> allowed_;
  };

  explicit ConfigSchema(std::string role) : role_(std::move(role)) {}
  ConfigSchema(const ConfigSchema&) = delete;
  ConfigSchema& operator=(const ConfigSchema&) = delete;

  Key& bind(std::string key, bool* target, std::string doc);
  Key& bind(std::string key, int32_t* target, std::string doc);
  Key& bind(std::string key, int64_t* target, std::string doc);
  // An integer that may be unset (Pulsar's Optional<Integer>, e.g. brokerServicePortTls):
  // unset by default, shown empty in templates.
  Key& bind(std::string key, std::optional<int32_t>* target, std::string doc);
  Key& bind(std::string key, double* target, std::string doc);
  Key& bind(std::string key, std::string* target, std::string doc);
  // Comma-separated in text form; blanks around items are trimmed, empty items dropped.
  Key& bind(std::string key, std::vector<std::string>* target, std::string doc);

  // Applies a `key=value` file. `#` starts a comment line; blank lines are skipped; blanks
  // around key and value are trimmed; an empty value keeps the default.
  Status load_file(const std::string& path);
  // Same, from text already in memory; `origin` names it in errors.
  Status load_text(std::string_view text, std::string_view origin);
  // MAGNETAR_<key> (exact case) or MAGNETAR_<KEY_IN_UPPER_SNAKE_CASE>.
  Status apply_environment();
  Status apply_environment(const std::map<std::string, std::string>& env);
  // One override from the command line (`--set key=value` or `--key value`).
  Status apply_flag(std::string_view key, std::string_view value);
  // `key=value` form of the above.
  Status apply_assignment(std::string_view assignment, std::string_view origin);

  // Keys of Pulsar's (or BookKeeper's) own files that this role does not act on: accepted
  // from files and flags without a check of the value, and listed by ignored(). Other
  // unknown keys stay errors.
  void accept_foreign(std::span<const std::string_view> keys);
  // Every key starting with `prefix` (Pulsar passes bookkeeper_* and brokerClient_* on to
  // its clients) counts as foreign.
  void accept_foreign_prefix(std::string prefix);
  // Another name of `key` (Pulsar's deprecated spellings: zookeeperServers for
  // metadataStoreUrl, journalDirectory for journalDirectories); `convert` maps its value to
  // the key's. It never overrides a value given under the key's own name.
  void alias(std::string other_name, std::string key,
             std::function<std::string(std::string_view)> convert = {});
  // Foreign keys given a value, in the order first seen (each once).
  const std::vector<std::string>& ignored() const { return ignored_; }
  // One line naming ignored(), for the startup log; empty when there are none.
  std::string ignored_warning() const;

  bool has(std::string_view key) const { return keys_.count(std::string(key)) != 0; }
  // Where the key's current value came from: "default", "FILE:LINE", "env NAME" or "flag".
  std::string source_of(std::string_view key) const;
  // The key in upper snake case, as an environment variable suffix: bookiePort -> BOOKIE_PORT.
  static std::string env_suffix(std::string_view key);

  // A commented `key=value` template of every key with its default: the conf/ files.
  std::string render_template() const;
  // Every key with its current value and source, one per line, for the startup log.
  // Values of keys whose names contain "token", "password", "secret", "key" (as in
  // tlsKeyFilePath), "parameters" or "params" (brokerClientAuthenticationParameters) are masked.
  std::string describe_effective() const;
  // Every key with its current value as text (sensitive ones masked as above), sorted: the
  // broker's /admin/v2/brokers/configuration/runtime.
  std::map<std::string, std::string> values() const;

 private:
  Key& add(std::string key, std::string type, std::string doc);
  Status assign(Key& key, std::string_view value, std::string source);
  // A key not bound here: an alias assigned, a foreign key noted (true), or unknown (false).
  Result<bool> assign_other(const std::string& key, std::string_view value,
                            const std::string& source);
  bool is_foreign(std::string_view key) const;

  struct Alias {
    std::string key;
    std::function<std::string(std::string_view)> convert;
  };
  std::map<std::string, Alias, std::less<>> aliases_;
  std::set<std::string, std::less<>> foreign_;
  std::vector<std::string> foreign_prefixes_;
  std::vector<std::string> ignored_;
  std::set<std::string, std::less<>> own_name_set_;  // keys given under their own name

  std::string role_;
  std::map<std::string, std::unique_ptr<Key>> keys_;
  std::vector<std::string> order_;  // declaration order, for templates
};

}  // namespace magnetar
