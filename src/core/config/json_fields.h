// Internal: typed, path-aware access to one JSON object of a config. Every error names the
// full JSON path (e.g. "common_dump_settings.iteration"), the bad value and what is allowed;
// keys nobody asked for are reported as unknown.
#pragma once
#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace opdump::config_detail {

using nlohmann::json;

// Short rendering of a JSON value for messages (strings quoted, long values cut).
std::string show(const json& v);

class Fields {
 public:
  // `obj` must be an object (checked; the error names `path`).
  Fields(const json& obj, std::string path, std::vector<std::string> known);

  const json* get(const std::string& key) const;
  bool has(const std::string& key) const { return get(key) != nullptr; }
  std::string path(const std::string& key) const;

  std::optional<std::string> string(const std::string& key) const;
  std::optional<bool> boolean(const std::string& key) const;
  std::optional<int64_t> integer(const std::string& key, int64_t lo, int64_t hi) const;
  // One of `allowed` (returned as given); a wrong type or value names the choices.
  std::optional<std::string> choice(const std::string& key, const std::vector<std::string>& allowed) const;
  std::optional<std::vector<std::string>> string_list(const std::string& key, size_t max_items) const;
  // Raises ConfigError "<path> is required".
  const json& require(const std::string& key) const;

  // "unknown key 'x' in <path> (ignored)" for every key not in `known`.
  void warn_unknown(std::vector<std::string>* warnings) const;

 private:
  const json& obj_;
  std::string path_;
  std::vector<std::string> known_;
};

}  // namespace opdump::config_detail
