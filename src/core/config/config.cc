// Reads a config file, detects its dialect by shape, and hands it to the dialect parser.
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <vector>

#include "config_internal.h"
#include "opdump/error.h"
#include "util/file_read.h"

namespace opdump {

using config_detail::json;

std::string_view to_string(Dialect d) {
  switch (d) {
    case Dialect::Acl: return "acl.json";
    case Dialect::MindSpore: return "mindspore";
    case Dialect::Session: return "session options";
    case Dialect::Msprobe: return "msprobe";
  }
  return "?";
}
std::string_view to_string(IoSelect s) {
  return s == IoSelect::Input ? "input" : s == IoSelect::Output ? "output" : "all";
}
std::string_view to_string(SavedData s) {
  return s == SavedData::Tensor ? "tensor" : s == SavedData::Statistic ? "statistic" : "full";
}
std::string_view to_string(FileFormat f) { return f == FileFormat::Npy ? "npy" : f == FileFormat::Bin ? "bin" : "h5"; }
std::string_view to_string(Layout l) { return l == Layout::Ascend ? "ascend" : "mindspore-sync"; }
std::string_view to_string(Scene s) {
  switch (s) {
    case Scene::Normal: return "normal";
    case Scene::Overflow: return "overflow";
    case Scene::ExceptionBrief: return "aic_err_brief_dump";
    case Scene::ExceptionNorm: return "aic_err_norm_dump";
    case Scene::ExceptionDetail: return "aic_err_detail_dump";
    case Scene::Watcher: return "watcher";
  }
  return "?";
}
std::string_view to_string(ObserveLevel l) {
  switch (l) {
    case ObserveLevel::Api: return "api";
    case ObserveLevel::Kernel: return "kernel";
    case ObserveLevel::All: return "all";
    case ObserveLevel::Modules: return "modules";
  }
  return "?";
}

std::string_view to_string(HostWork w) {
  return w == HostWork::Auto ? "auto" : w == HostWork::Background ? "background" : "inline";
}

bool DumpConfig::device_selected(uint32_t device) const {
  return support_device.empty() || std::find(support_device.begin(), support_device.end(), device) != support_device.end();
}

bool DumpConfig::rank_selected(uint32_t rank) const {
  return support_rank.empty() || std::find(support_rank.begin(), support_rank.end(), rank) != support_rank.end();
}

bool DumpConfig::model_dump_needs_reload() const {
  if (dialect != Dialect::Acl || scene != Scene::Normal) return false;
  for (const auto& m : dump_list)
    if (!m.model_name.empty()) return true;
  return false;
}

EnvLookup process_env() {
  return [](const std::string& name) -> std::optional<std::string> {
    const char* v = std::getenv(name.c_str());
    if (!v) return std::nullopt;
    return std::string(v);
  };
}

namespace config_detail {

std::string resolve_path(const std::string& raw, const std::string& field, const ParseOptions& options) {
  std::string out;
  for (size_t i = 0; i < raw.size(); ++i) {
    if (raw[i] != '$') {
      out += raw[i];
      continue;
    }
    size_t start = i + 1, end;
    std::string name;
    if (start < raw.size() && raw[start] == '{') {
      end = raw.find('}', start);
      if (end == std::string::npos) throw ConfigError(field, "\"" + raw + "\" has an unterminated ${...}");
      name = raw.substr(start + 1, end - start - 1);
      i = end;
    } else {
      end = start;
      while (end < raw.size() && (std::isalnum(static_cast<unsigned char>(raw[end])) || raw[end] == '_')) ++end;
      name = raw.substr(start, end - start);
      i = end - 1;
    }
    if (name.empty()) throw ConfigError(field, "\"" + raw + "\" has a '$' without a variable name");
    auto value = options.env(name);
    if (!value) throw ConfigError(field, "\"" + raw + "\" uses $" + name + ", which is not set");
    out += *value;
  }
  if (out.find('\0') != std::string::npos) throw ConfigError(field, "contains a NUL character");
  if (out.empty()) throw ConfigError(field, "is empty");
  if (out.front() != '/') {
    std::string cwd = options.cwd;
    if (cwd.empty()) {
      char buf[4096];
      if (!::getcwd(buf, sizeof buf)) throw ConfigError(field, "cannot determine the current directory");
      cwd = buf;
    }
    out = cwd + "/" + out;
  }
  out = std::filesystem::path(out).lexically_normal().string();
  while (out.size() > 1 && out.back() == '/') out.pop_back();
  return out;
}

void parse_opdump_options(const json& doc, DumpConfig& c, const ParseOptions& options) {
  auto it = doc.find("opdump");
  if (it == doc.end()) return;
  Fields f(*it, "opdump",
           {"level", "skip_no_compute_ops", "check_fp16_range", "max_inflight_mb", "writer_threads", "direct_io", "net_name",
            "save_kernel_args", "overflow_ignore_ops", "overflow_number", "host_work", "h5_file", "layout",
            "device_path_on_cpu"});
  if (auto v = f.choice("layout", {"mindspore", "msprobe"})) {
    c.msprobe_layout = *v == "msprobe";
    if (c.msprobe_layout && c.dialect != Dialect::Msprobe)
      throw ConfigError(f.path("layout"), "\"msprobe\" is written from msprobe's config.json (a \"task\" config) by "
                                          "PrecisionDebugger; `opdump convert DUMP -o OUT --to msprobe` converts any dump");
    if (c.msprobe_layout && c.scene != Scene::Normal)
      throw ConfigError(f.path("layout"), "\"msprobe\" holds the statistics and tensor tasks; the overflow check "
                                          "writes opdump's overflow summary in MindSpore's layout");
  }
  if (auto v = f.choice("level", {"api", "kernel", "all"}))
    c.level = *v == "api" ? ObserveLevel::Api : *v == "kernel" ? ObserveLevel::Kernel : ObserveLevel::All;
  if (auto v = f.boolean("skip_no_compute_ops")) c.skip_no_compute_ops = *v;
  if (auto v = f.boolean("check_fp16_range")) c.check_fp16_range = *v;
  if (auto v = f.integer("max_inflight_mb", 1, 1 << 20)) c.max_inflight_bytes = static_cast<uint64_t>(*v) << 20;
  if (auto v = f.integer("writer_threads", 0, 64)) c.writer_threads = static_cast<unsigned>(*v);
  if (auto v = f.boolean("direct_io")) c.direct_io = *v;
  if (auto v = f.string("net_name")) c.net_name = *v;
  if (auto v = f.choice("host_work", {"auto", "background", "inline"}))
    c.host_work = *v == "auto" ? HostWork::Auto : *v == "background" ? HostWork::Background : HostWork::Inline;
  if (auto v = f.boolean("device_path_on_cpu")) c.device_path_on_cpu = *v;
  if (auto v = f.boolean("save_kernel_args")) {
    c.save_kernel_args = *v;
    c.save_kernel_args_given = true;
  }
  if (auto v = f.string_list("overflow_ignore_ops", 4096)) c.overflow_ignore_ops = *v;
  if (auto v = f.integer("overflow_number", 0, UINT32_MAX)) c.overflow_number = static_cast<uint32_t>(*v);
  if (auto v = f.string("h5_file")) {
    // The torch_npu 1.5 dumper's .h5 file: tensors go there, whole and exact (not statistics).
    if (v->empty()) throw ConfigError(f.path("h5_file"), "is empty; give the path of the .h5 file to write");
    if (!c.dumps_tensors() || c.saved_data == SavedData::Full)
      throw ConfigError(f.path("h5_file"), "an .h5 dump holds tensors: the config's saved data must be \"tensor\"");
    if (c.file_format == FileFormat::Bin)
      throw ConfigError(f.path("h5_file"), "cannot be combined with file_format \"bin\"");
    if (c.scene == Scene::Watcher)  // the watcher dumps an op's outputs again and again: one group per call cannot hold them
      throw ConfigError(f.path("h5_file"), "cannot be combined with the watcher (dump_scene \"watcher\")");
    c.h5_file = resolve_path(*v, f.path("h5_file"), options);
    c.file_format = FileFormat::H5;
  }
  f.warn_unknown(&c.warnings);
}

}  // namespace config_detail

namespace {

constexpr size_t kMaxConfigBytes = size_t(64) << 20;
constexpr int kMaxDepth = 64;

// Rejects nesting deeper than kMaxDepth before the JSON parser sees the text.
void check_depth(const std::string& text, const std::string& source) {
  int depth = 0;
  bool in_string = false;
  size_t line = 1;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (c == '\n') ++line;
    if (in_string) {
      if (c == '\\') ++i;
      else if (c == '"') in_string = false;
      continue;
    }
    if (c == '"') in_string = true;
    else if (c == '{' || c == '[') {
      if (++depth > kMaxDepth)
        throw ConfigError("", "line " + std::to_string(line) + ": JSON nested deeper than " +
                                  std::to_string(kMaxDepth) + " levels", source);
    } else if (c == '}' || c == ']') {
      --depth;
    }
  }
}

json parse_json(const std::string& text, const std::string& source) {
  if (text.size() > kMaxConfigBytes)
    throw ConfigError("", "config is " + std::to_string(text.size()) + " bytes; at most " +
                              std::to_string(kMaxConfigBytes) + " are accepted", source);
  check_depth(text, source);
  // Duplicate keys are ambiguous: track the keys of each open object.
  std::vector<std::set<std::string>> open;
  std::string duplicate;
  auto callback = [&](int /*depth*/, json::parse_event_t event, json& parsed) {
    if (event == json::parse_event_t::object_start) open.emplace_back();
    else if (event == json::parse_event_t::object_end && !open.empty()) open.pop_back();
    else if (event == json::parse_event_t::key && !open.empty() && duplicate.empty()) {
      const std::string key = parsed.get<std::string>();
      if (!open.back().insert(key).second) duplicate = key;
    }
    return true;
  };
  json doc;
  try {
    doc = json::parse(text, callback);
  } catch (const json::exception& e) {
    // parse_error, and out_of_range for numbers beyond double (found by fuzzing: "8e888")
    std::string msg = e.what();
    for (const std::string tag : {"parse error ", "number overflow "})
      if (auto p = msg.find(tag); p != std::string::npos) msg = msg.substr(p);
    if (msg.rfind("parse error ", 0) == 0) msg = msg.substr(12);
    throw ConfigError("", "invalid JSON: " + msg, source);
  }
  if (!duplicate.empty()) throw ConfigError("", "key \"" + duplicate + "\" appears twice in one object", source);
  if (!doc.is_object()) throw ConfigError("", "the config must be a JSON object", source);
  return doc;
}

}  // namespace

DumpConfig parse_config(const std::string& text, const std::string& source, const ParseOptions& options) {
  json doc = parse_json(text, source);
  DumpConfig c;
  c.source = source;
  c.original_text = text;
  if (doc.empty()) {  // CANN's validator reads {} as "no dump"
    c.dialect = Dialect::Acl;
    c.enabled = false;
    c.warnings.push_back("the config is {}: no dump is configured, nothing will be dumped");
    return c;
  }
  const bool acl = doc.contains("dump");
  const bool ms = doc.contains("common_dump_settings") || doc.contains("e2e_dump_settings");
  // msprobe's config.json has a top-level dump_path too: its task and level keys tell it apart.
  const bool msprobe = doc.contains("task") || doc.contains("level") || doc.contains("statistics") ||
                       doc.contains("tensor") || doc.contains("overflow_check");
  const bool session = doc.contains("enable_dump") || doc.contains("dump_step") || doc.contains("dump_mode") ||
                       (doc.contains("dump_path") && !msprobe);
  if (int(acl) + int(ms) + int(session) + int(msprobe) > 1)
    throw ConfigError("", "mixes dialects (" + std::string(acl ? "\"dump\" " : "") +
                              (ms ? "\"common_dump_settings\" " : "") + (session ? "top-level dump_* keys " : "") +
                              (msprobe ? "msprobe's task/level keys" : "") +
                              "); use one of acl.json, MindSpore, session options or msprobe's config.json", source);
  try {
    if (acl) {
      c.dialect = Dialect::Acl;
      config_detail::parse_acl(doc, c, options);
    } else if (ms) {
      c.dialect = Dialect::MindSpore;
      config_detail::parse_mindspore(doc, c, options);
    } else if (session) {
      c.dialect = Dialect::Session;
      config_detail::parse_session(doc, c, options);
    } else if (msprobe) {
      c.dialect = Dialect::Msprobe;
      config_detail::parse_msprobe(doc, c, options);
    } else {
      throw ConfigError("", "cannot tell the dialect: expected a \"dump\" object (acl.json), "
                            "\"common_dump_settings\" (MindSpore), \"enable_dump\"/\"dump_path\" (session options) "
                            "or \"task\" (msprobe's config.json)");
    }
    config_detail::parse_opdump_options(doc, c, options);
    if (!c.save_kernel_args_given) c.save_kernel_args = c.dumps_tensors() && c.scene == Scene::Normal;
  } catch (const ConfigError& e) {
    // Attribute the error to the file so that every message says where the problem is.
    if (!e.source().empty()) throw;
    throw e.in_source(source);
  }
  return c;
}

DumpConfig load_config(const std::string& path, const ParseOptions& options) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    throw ConfigError("", "is a folder; give the path of a JSON config file", path);
  std::string text;
  try {  // a regular file only (a pipe would block), of at most kMaxConfigBytes
    text = read_text_file(path, kMaxConfigBytes);
  } catch (const Error& e) {
    throw ConfigError("", std::string("cannot read the config file: ") + e.what(), path);
  }
  return parse_config(text, path, options);
}

}  // namespace opdump
