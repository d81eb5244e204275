#pragma once
// Structured logging. One line per event, logfmt-style context after the message:
//
//   2026-11-30T04:10:02.113Z INFO  [broker] producer created topic=persistent://public/default/t producer_id=3
//
//   auto log = log::Logger("broker").with("topic", name).with("producer_id", id);
//   log.info("producer created");
//   log.warn("send failed: {}", status.to_string());
//
// Loggers are cheap values (a module name and a pre-rendered context string) and may be
// copied into objects and lambdas; every method is thread-safe. Never put credentials in a
// context value or message.

#include <string>
#include <string_view>

#include <fmt/format.h>

namespace magnetar::log {

enum class Level { kTrace, kDebug, kInfo, kWarn, kError, kOff };

struct Options {
  Level level = Level::kInfo;
  bool json = false;     // one JSON object per line instead of text
  std::string file;      // empty: stderr
};

// Configures the process-wide sink. Safe to call again (tests, reconfiguration).
void init(const Options& options);
// Parses "trace", "debug", "info", "warn"/"warning", "error", "off".
bool parse_level(std::string_view text, Level* out);
Level level();
void set_level(Level level);

class Logger {
 public:
  explicit Logger(std::string module) : module_(std::move(module)) {}

  // A copy with one more key=value pair of context.
  template <typename T>
  Logger with(std::string_view key, const T& value) const {
    Logger copy = *this;
    copy.append_context(key, fmt::format("{}", value));
    return copy;
  }

  template <typename... Args>
  void trace(fmt::format_string<Args...> f, Args&&... args) const {
    log(Level::kTrace, f, std::forward<Args>(args)...);
  }
  template <typename... Args>
  void debug(fmt::format_string<Args...> f, Args&&... args) const {
    log(Level::kDebug, f, std::forward<Args>(args)...);
  }
  template <typename... Args>
  void info(fmt::format_string<Args...> f, Args&&... args) const {
    log(Level::kInfo, f, std::forward<Args>(args)...);
  }
  template <typename... Args>
  void warn(fmt::format_string<Args...> f, Args&&... args) const {
    log(Level::kWarn, f, std::forward<Args>(args)...);
  }
  template <typename... Args>
  void error(fmt::format_string<Args...> f, Args&&... args) const {
    log(Level::kError, f, std::forward<Args>(args)...);
  }

  bool enabled(Level l) const noexcept { return l >= level(); }
  const std::string& context() const noexcept { return context_; }

 private:
  template <typename... Args>
  void log(Level l, fmt::format_string<Args...> f, Args&&... args) const {
    if (!enabled(l)) return;
    write(l, fmt::format(f, std::forward<Args>(args)...));
  }
  void append_context(std::string_view key, std::string value);
  void write(Level l, const std::string& message) const;

  std::string module_;
  std::string context_;  // " key=value key2=value2"
};

}  // namespace magnetar::log
