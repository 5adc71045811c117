// Errors carry their context (config field, file, reason) in the message.
#pragma once
#include <stdexcept>
#include <string>

#include "opdump/api.h"

namespace opdump {

// Base of every exception opdump throws.
class OPDUMP_API Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Invalid configuration: the message names the file, the JSON path, the value and what is allowed.
class OPDUMP_API ConfigError : public Error {
 public:
  ConfigError(std::string field, std::string reason, std::string source = "")
      : Error(compose(source, field, reason)),
        field_(std::move(field)),
        reason_(std::move(reason)),
        source_(std::move(source)) {}
  const std::string& field() const noexcept { return field_; }
  const std::string& reason() const noexcept { return reason_; }
  const std::string& source() const noexcept { return source_; }
  // The same error, attributed to a config file.
  ConfigError in_source(const std::string& source) const { return ConfigError(field_, reason_, source); }

 private:
  static std::string compose(const std::string& source, const std::string& field, const std::string& reason) {
    std::string s = source.empty() ? "" : source + ": ";
    if (!field.empty()) s += field + ": ";
    return s + reason;
  }
  std::string field_, reason_, source_;
};

// A dump file that cannot be read: the message names the file and what is wrong.
class OPDUMP_API FormatError : public Error {
 public:
  FormatError(const std::string& file, const std::string& message)
      : Error(file + ": " + message), file_(file) {}
  const std::string& file() const noexcept { return file_; }

 private:
  std::string file_;
};

// A failed system call (open, write, rename...), with the path and errno text.
class OPDUMP_API IoError : public Error {
 public:
  IoError(const std::string& path, const std::string& what, int err);
  int error_number() const noexcept { return errno_; }

 private:
  int errno_;
};

}  // namespace opdump
