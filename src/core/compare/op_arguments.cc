#include "compare/op_arguments.h"

#include <nlohmann/json.hpp>

#include "format/dump_files.h"
#include "layout/layout.h"
#include "util/file_read.h"

namespace opdump::detail {
namespace {

using json = nlohmann::json;

// The args file of an entry's op ({op_type}.{op_name}.json in its folder); null when there is none.
json arguments_of(const DumpEntry& e) {
  if (e.op_type.empty() || e.op_name.empty() || e.source == DumpEntry::Source::Pt) return nullptr;
  const std::string path = folder_of(e.path) + "/" + sanitize_name(e.op_type) + "." + sanitize_name(e.op_name) + ".json";
  try {
    const std::string text = read_text_file_if_present(path, uint64_t(64) << 20);
    if (text.empty()) return nullptr;
    json spec = json::parse(text);
    if (!spec.is_object() || !spec.contains("arguments") || !spec["arguments"].is_array()) return nullptr;
    return std::move(spec["arguments"]);
  } catch (const std::exception&) {
    return nullptr;  // an unreadable args file only loses this detail of the cause
  }
}

bool holds_tensors(const json& v) { return v.is_object() && (v.contains("tensor") || v.contains("tensors")); }

// Tensor slots are data, compared by the rows; dtypes recorded beside them are compared here.
std::string shown(const json& v) {
  std::string text = v.dump();
  return text.size() > 60 ? text.substr(0, 57) + "..." : text;
}

}  // namespace

std::vector<std::string> differing_arguments(const DumpEntry& target, const DumpEntry& reference) {
  const json t = arguments_of(target), r = arguments_of(reference);
  std::vector<std::string> out;
  if (!t.is_array() || !r.is_array()) return out;
  for (const json& a : t) {
    if (!a.is_object() || !a.contains("name") || !a["name"].is_string()) continue;
    const std::string& name = a["name"].get_ref<const std::string&>();
    const json* other = nullptr;
    for (const json& b : r)
      if (b.is_object() && b.value("name", std::string()) == name) other = &b;
    if (!other) continue;
    const json& x = a.contains("value") ? a["value"] : json();
    const json& y = other->contains("value") ? (*other)["value"] : json();
    if (holds_tensors(x) || holds_tensors(y)) continue;
    if (x != y) out.push_back(name + ": " + shown(x) + " vs " + shown(y));
  }
  return out;
}

}  // namespace opdump::detail
