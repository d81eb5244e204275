#include "common/logging.h"

#include <atomic>
#include <mutex>

#include <nlohmann/json.hpp>
#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

namespace magnetar::log {
namespace {

std::atomic<Level> g_level{Level::kInfo};
std::atomic<bool> g_json{false};
std::mutex g_mu;  // guards g_logger replacement; writes go through spdlog's own locking
std::shared_ptr<spdlog::logger> g_logger;

std::shared_ptr<spdlog::logger> make_logger(const Options& o) {
  std::shared_ptr<spdlog::logger> l;
  if (o.file.empty()) {
    l = std::make_shared<spdlog::logger>("magnetar",
                                         std::make_shared<spdlog::sinks::stderr_sink_mt>());
  } else {
    l = std::make_shared<spdlog::logger>(
        "magnetar", std::make_shared<spdlog::sinks::basic_file_sink_mt>(o.file));
  }
  // The message already carries level, module and context; spdlog adds only the time.
  l->set_pattern(o.json ? "%v" : "%Y-%m-%dT%H:%M:%S.%eZ %v", spdlog::pattern_time_type::utc);
  l->set_level(spdlog::level::trace);
  l->flush_on(spdlog::level::warn);
  return l;
}

std::shared_ptr<spdlog::logger> logger() {
  std::lock_guard<std::mutex> lock(g_mu);
  if (!g_logger) g_logger = make_logger(Options{});
  return g_logger;
}

std::string_view level_name(Level l) {
  switch (l) {
    case Level::kTrace: return "TRACE";
    case Level::kDebug: return "DEBUG";
    case Level::kInfo: return "INFO ";
    case Level::kWarn: return "WARN ";
    case Level::kError: return "ERROR";
    case Level::kOff: return "OFF  ";
  }
  return "?";
}

bool needs_quotes(std::string_view v) {
  if (v.empty()) return true;
  for (char c : v) {
    if (c == ' ' || c == '"' || c == '=' || c == '\n' || c == '\t') return true;
  }
  return false;
}

}  // namespace

void init(const Options& options) {
  g_level.store(options.level);
  g_json.store(options.json);
  std::lock_guard<std::mutex> lock(g_mu);
  g_logger = make_logger(options);
}

bool parse_level(std::string_view t, Level* out) {
  if (t == "trace") *out = Level::kTrace;
  else if (t == "debug") *out = Level::kDebug;
  else if (t == "info") *out = Level::kInfo;
  else if (t == "warn" || t == "warning") *out = Level::kWarn;
  else if (t == "error") *out = Level::kError;
  else if (t == "off") *out = Level::kOff;
  else return false;
  return true;
}

Level level() { return g_level.load(std::memory_order_relaxed); }
void set_level(Level l) { g_level.store(l); }

void Logger::append_context(std::string_view key, std::string value) {
  context_ += ' ';
  context_ += key;
  context_ += '=';
  if (needs_quotes(value)) {
    context_ += nlohmann::json(value).dump();  // quoted and escaped
  } else {
    context_ += value;
  }
}

void Logger::write(Level l, const std::string& message) const {
  std::string line;
  if (g_json.load(std::memory_order_relaxed)) {
    nlohmann::json j;
    j["ts_ms"] = std::chrono::duration_cast<std::chrono::milliseconds>(
                     std::chrono::system_clock::now().time_since_epoch())
                     .count();
    std::string_view name = level_name(l);
    while (!name.empty() && name.back() == ' ') name.remove_suffix(1);
    j["level"] = name;
    j["module"] = module_;
    j["msg"] = message;
    if (!context_.empty()) j["context"] = context_.substr(1);
    line = j.dump();
  } else {
    line = fmt::format("{} [{}] {}{}", level_name(l), module_, message, context_);
  }
  logger()->log(l >= Level::kError ? spdlog::level::err : spdlog::level::info, line);
}

}  // namespace magnetar::log
