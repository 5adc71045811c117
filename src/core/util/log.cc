#include "util/log.h"

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>

namespace opdump {
namespace {

LogLevel level_from_env() {
  const char* v = std::getenv("OPDUMP_LOG_LEVEL");
  if (!v) return LogLevel::Info;
  if (!std::strcmp(v, "debug")) return LogLevel::Debug;
  if (!std::strcmp(v, "warning")) return LogLevel::Warning;
  if (!std::strcmp(v, "error")) return LogLevel::Error;
  return LogLevel::Info;
}

std::mutex& sink_mutex() {
  static std::mutex m;
  return m;
}
LogSink& sink() {
  static LogSink s;
  return s;
}
std::atomic<int>& level_store() {
  static std::atomic<int> l{static_cast<int>(level_from_env())};
  return l;
}

const char* level_name(LogLevel l) {
  switch (l) {
    case LogLevel::Debug: return "debug";
    case LogLevel::Info: return "info";
    case LogLevel::Warning: return "warning";
    case LogLevel::Error: return "error";
  }
  return "?";
}

}  // namespace

LogSink set_log_sink(LogSink s) {
  std::lock_guard<std::mutex> lock(sink_mutex());
  LogSink previous = std::move(sink());
  sink() = std::move(s);
  return previous;
}

void set_log_level(LogLevel level) { level_store().store(static_cast<int>(level)); }
LogLevel log_level() { return static_cast<LogLevel>(level_store().load()); }

void log(LogLevel level, const std::string& message) {
  if (static_cast<int>(level) < level_store().load(std::memory_order_relaxed)) return;
  std::lock_guard<std::mutex> lock(sink_mutex());
  if (sink()) {
    sink()(level, message);
    return;
  }
  std::fprintf(stderr, "[opdump %s] %s\n", level_name(level), message.c_str());
}

}  // namespace opdump
