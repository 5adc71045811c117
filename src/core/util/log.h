// The one place opdump logs through. Messages go to stderr with an "[opdump]" prefix
// unless a sink is installed (tests, the Python module).
#pragma once
#include <functional>
#include <string>

#include "opdump/api.h"

namespace opdump {

enum class LogLevel { Debug = 0, Info = 1, Warning = 2, Error = 3 };

using LogSink = std::function<void(LogLevel, const std::string&)>;

// Replaces the sink; an empty function restores stderr. Returns the previous sink.
LogSink set_log_sink(LogSink sink);
// Messages below this level are dropped (default Info; OPDUMP_LOG_LEVEL=debug|info|warning|error).
void set_log_level(LogLevel level);
LogLevel log_level();

OPDUMP_ADAPTER_API void log(LogLevel level, const std::string& message);
inline void log_debug(const std::string& m) { log(LogLevel::Debug, m); }
inline void log_info(const std::string& m) { log(LogLevel::Info, m); }
inline void log_warning(const std::string& m) { log(LogLevel::Warning, m); }
inline void log_error(const std::string& m) { log(LogLevel::Error, m); }

}  // namespace opdump
