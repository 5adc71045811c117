#include "json_fields.h"

#include <algorithm>

#include "opdump/error.h"

namespace opdump::config_detail {

std::string show(const json& v) {
  std::string s = v.dump();
  if (s.size() > 80) s = s.substr(0, 77) + "...";
  return s;
}

namespace {

std::string type_name(const json& v) {
  if (v.is_string()) return "a string";
  if (v.is_boolean()) return "a boolean";
  if (v.is_number_integer() || v.is_number_unsigned()) return "an integer";
  if (v.is_number()) return "a number";
  if (v.is_array()) return "an array";
  if (v.is_object()) return "an object";
  return "null";
}

std::string join(const std::vector<std::string>& items) {
  std::string s;
  for (size_t i = 0; i < items.size(); ++i) {
    if (i) s += ", ";
    s += "\"" + items[i] + "\"";
  }
  return s;
}

}  // namespace

Fields::Fields(const json& obj, std::string path, std::vector<std::string> known)
    : obj_(obj), path_(std::move(path)), known_(std::move(known)) {
  if (!obj_.is_object()) throw ConfigError(path_, "must be an object, not " + type_name(obj_) + " " + show(obj_));
}

const json* Fields::get(const std::string& key) const {
  auto it = obj_.find(key);
  return it == obj_.end() ? nullptr : &*it;
}

std::string Fields::path(const std::string& key) const { return path_.empty() ? key : path_ + "." + key; }

const json& Fields::require(const std::string& key) const {
  const json* v = get(key);
  if (!v) throw ConfigError(path(key), "is required");
  return *v;
}

std::optional<std::string> Fields::string(const std::string& key) const {
  const json* v = get(key);
  if (!v) return std::nullopt;
  if (!v->is_string()) throw ConfigError(path(key), "must be a string, not " + type_name(*v) + " " + show(*v));
  return v->get<std::string>();
}

std::optional<bool> Fields::boolean(const std::string& key) const {
  const json* v = get(key);
  if (!v) return std::nullopt;
  if (!v->is_boolean()) throw ConfigError(path(key), "must be true or false, not " + show(*v));
  return v->get<bool>();
}

std::optional<int64_t> Fields::integer(const std::string& key, int64_t lo, int64_t hi) const {
  const json* v = get(key);
  if (!v) return std::nullopt;
  const std::string range = "an integer from " + std::to_string(lo) + " to " + std::to_string(hi);
  if (v->is_number_unsigned()) {
    uint64_t u = v->get<uint64_t>();
    if (u > static_cast<uint64_t>(hi) || (lo > 0 && u < static_cast<uint64_t>(lo))) throw ConfigError(path(key), show(*v) + " is out of range; allowed: " + range);
    return static_cast<int64_t>(u);
  }
  if (!v->is_number_integer()) throw ConfigError(path(key), "must be " + range + ", not " + type_name(*v) + " " + show(*v));
  int64_t i = v->get<int64_t>();
  if (i < lo || i > hi) throw ConfigError(path(key), show(*v) + " is out of range; allowed: " + range);
  return i;
}

std::optional<std::string> Fields::choice(const std::string& key, const std::vector<std::string>& allowed) const {
  const json* v = get(key);
  if (!v) return std::nullopt;
  if (!v->is_string() || std::find(allowed.begin(), allowed.end(), v->get<std::string>()) == allowed.end())
    throw ConfigError(path(key), show(*v) + " is not allowed; allowed: " + join(allowed));
  return v->get<std::string>();
}

std::optional<std::vector<std::string>> Fields::string_list(const std::string& key, size_t max_items) const {
  const json* v = get(key);
  if (!v) return std::nullopt;
  if (!v->is_array()) throw ConfigError(path(key), "must be an array of strings, not " + type_name(*v) + " " + show(*v));
  if (v->size() > max_items)
    throw ConfigError(path(key), "has " + std::to_string(v->size()) + " entries; at most " +
                                     std::to_string(max_items) + " are accepted");
  std::vector<std::string> out;
  out.reserve(v->size());
  for (size_t i = 0; i < v->size(); ++i) {
    const json& e = (*v)[i];
    if (!e.is_string())
      throw ConfigError(path(key) + "[" + std::to_string(i) + "]", "must be a string, not " + type_name(e) + " " + show(e));
    out.push_back(e.get<std::string>());
  }
  return out;
}

void Fields::warn_unknown(std::vector<std::string>* warnings) const {
  for (auto it = obj_.begin(); it != obj_.end(); ++it)
    if (std::find(known_.begin(), known_.end(), it.key()) == known_.end())
      warnings->push_back("unknown key \"" + it.key() + "\" in " + (path_.empty() ? "the top level" : path_) +
                          " (ignored)");
}

}  // namespace opdump::config_detail
