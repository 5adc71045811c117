#include "compare/op_arguments.h"

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string_view>

#include "format/dump_files.h"
#include "layout/layout.h"
#include "util/file_read.h"

namespace opdump::detail {
namespace {

using json = nlohmann::json;

// The arguments of an entry's op, from its args file; null when there is none.
json arguments_of(const DumpEntry& e) {
  json spec = read_kernel_args(e);
  if (!spec.contains("arguments") || !spec["arguments"].is_array()) return nullptr;
  return std::move(spec["arguments"]);
}

bool holds_tensors(const json& v) { return v.is_object() && (v.contains("tensor") || v.contains("tensors")); }

// Tensor slots are data, compared by the rows; dtypes recorded beside them are compared here.
std::string shown(const json& v) {
  std::string text = v.dump();
  return text.size() > 60 ? text.substr(0, 57) + "..." : text;
}

}  // namespace

json read_kernel_args(const DumpEntry& e) {
  if (e.op_type.empty() || e.op_name.empty() || e.source == DumpEntry::Source::Pt) return nullptr;
  const std::string base = folder_of(e.path) + "/" + sanitize_name(e.op_type) + "." + sanitize_name(e.op_name);
  try {
    // A repeated name's op has a file of its own, named with its task id; the first has the plain one.
    std::string text = read_text_file_if_present(base + "." + std::to_string(e.order) + ".json", uint64_t(64) << 20);
    if (text.empty()) text = read_text_file_if_present(base + ".json", uint64_t(64) << 20);
    if (text.empty()) return nullptr;
    json spec = json::parse(text);
    return spec.is_object() ? spec : nullptr;
  } catch (const std::exception&) {
    return nullptr;  // an unreadable args file only loses what it would have told
  }
}

namespace {

// Whether `path` is an args file: it names its operator near its start.
bool names_an_operator(const std::filesystem::path& path) {
  std::ifstream in(path);
  char head[512] = {};
  in.read(head, sizeof head - 1);
  return std::string_view(head).find("\"operator\"") != std::string_view::npos;
}

}  // namespace

bool dump_has_kernel_args(const std::string& dump) {
  // Args files lie beside their op's tensors, named {op_type}.{op_name}.json where the tensor files
  // are {op_type}.{op_name}.{task}.{stream}.{timestamp}...: the first tensor file found says, without
  // reading every name of a dump of 100,000 files.
  std::error_code ec;
  std::filesystem::recursive_directory_iterator it(dump, std::filesystem::directory_options::skip_permission_denied, ec), end;
  for (size_t seen = 0; !ec && it != end && seen < 100000; it.increment(ec), ++seen) {
    const std::string name = it->path().filename().string();
    const bool npy = name.size() > 4 && name.compare(name.size() - 4, 4, ".npy") == 0;
    if (!npy || !it->is_regular_file(ec)) continue;
    const size_t first = name.find('.'), second = first == std::string::npos ? first : name.find('.', first + 1);
    if (second == std::string::npos) continue;
    const auto args = it->path().parent_path() / (name.substr(0, second) + ".json");
    return std::filesystem::is_regular_file(args, ec) && names_an_operator(args);
  }
  return false;
}

std::optional<std::vector<ArgumentDifference>> differing_arguments(const DumpEntry& target, const DumpEntry& reference) {
  const json t = arguments_of(target), r = arguments_of(reference);
  if (!t.is_array() || !r.is_array()) return std::nullopt;
  std::vector<ArgumentDifference> out;
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
    if (x == y) continue;
    // dtype, input_dtype, out_dtype (softmax backward records the forward's input dtype), device, ...
    const bool placement = name.find("dtype") != std::string::npos || name == "device" || name == "layout" ||
                           name == "memory_format" || name == "pin_memory";
    out.push_back({name, name + ": " + shown(x) + " vs " + shown(y), placement});
  }
  return out;
}

}  // namespace opdump::detail
