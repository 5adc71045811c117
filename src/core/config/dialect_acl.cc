// acl.json dialect: {"dump": {...}} (the CANN offline-model dump guide, the torch_npu accuracy
// comparison guide, the CANN aclmdlSetDump reference), with the aclmdlSetDump reference's rules.
#include <algorithm>
#include <cctype>

#include "config_internal.h"
#include "opdump/error.h"
#include "select/kernel_filter.h"

namespace opdump::config_detail {
namespace {

ModelSelection parse_entry(const json& e, const std::string& path, std::vector<std::string>* warnings) {
  Fields f(e, path, {"model_name", "layer", "watcher_nodes"});
  ModelSelection m;
  if (auto v = f.string("model_name")) {
    if (v->empty()) throw ConfigError(f.path("model_name"), "is empty; give the model's name or leave the key out");
    m.model_name = *v;
  }
  if (auto v = f.string_list("layer", kMaxListEntries)) {
    if (v->empty())
      throw ConfigError(f.path("layer"), "is empty: list the layers to dump, or leave the key out to dump the whole "
                                         "model (CANN ignores such an entry, so its model would not be dumped)");
    m.layers = *v;
    KernelFilter(m.layers, f.path("layer"));  // validates every entry (name-regex syntax) now, as dumping will
  }
  if (auto v = f.string_list("watcher_nodes", kMaxListEntries)) m.watcher_nodes = *v;
  f.warn_unknown(warnings);
  return m;
}

// CANN's dump_path rules (GE's DumpConfigValidator): not empty, at most 512 characters, made of
// letters, digits and -=[];\,./!@#$%^&*()_+{}:? only; "IP:path" names a folder on another host.
void check_dump_path(const Fields& f) {
  const std::string field = f.path("dump_path");
  const std::string path = *f.string("dump_path");
  if (path.empty()) throw ConfigError(field, "is empty; give the folder to dump into");
  if (path.size() > 512)
    throw ConfigError(field, "is " + std::to_string(path.size()) + " characters long; CANN allows at most 512");
  const size_t colon = path.find(':');
  if (colon != std::string::npos) {
    const std::string host = path.substr(0, colon);
    int parts = 0;
    bool ipv4 = !host.empty();
    for (size_t start = 0; ipv4 && start <= host.size(); ++parts) {
      size_t dot = host.find('.', start);
      if (dot == std::string::npos) dot = host.size();
      const std::string part = host.substr(start, dot - start);
      ipv4 = !part.empty() && part.size() <= 3 && std::all_of(part.begin(), part.end(), ::isdigit) && std::stoi(part) <= 255;
      start = dot + 1;
    }
    if (ipv4 && parts == 4)
      throw ConfigError(field, "\"" + path + "\" is a remote dump path (IP:folder), which CANN sends to another host; "
                               "opdump writes the files of the process itself: give a local folder");
  }
  static const std::string kAllowed = "-=[];\\,./!@#$%^&*()_+{}:?";
  for (size_t i = 0; i < path.size(); ++i) {
    const unsigned char ch = static_cast<unsigned char>(path[i]);
    if (!std::isalnum(ch) && kAllowed.find(path[i]) == std::string::npos)
      throw ConfigError(field, "\"" + path + "\" has " + (ch == ' ' ? std::string("a space") : "'" + std::string(1, path[i]) + "'") +
                                   " at position " + std::to_string(i) + "; CANN allows letters, digits and " + kAllowed);
  }
}

// dump_stats (with dump_data "stats"): CANN's names for the statistic categories.
std::vector<StatCategory> parse_dump_stats(const Fields& f, const std::vector<std::string>& names) {
  static const std::vector<std::pair<std::string, const char*>> kNames = {
      {"Max", "max"}, {"Min", "min"}, {"Avg", "avg"}, {"Nan", "nan count"}, {"Negative Inf", "negative inf count"},
      {"Positive Inf", "positive inf count"}, {"L2norm", "l2norm"}};
  if (names.empty()) throw ConfigError(f.path("dump_stats"), "is empty; list statistics or leave the key out");
  std::vector<StatCategory> out;
  for (size_t i = 0; i < names.size(); ++i) {
    auto it = std::find_if(kNames.begin(), kNames.end(), [&](const auto& n) { return n.first == names[i]; });
    if (it == kNames.end())
      throw ConfigError(f.path("dump_stats") + "[" + std::to_string(i) + "]",
                        "\"" + names[i] + "\" is not one of \"Max\", \"Min\", \"Avg\", \"Nan\", \"Negative Inf\", "
                        "\"Positive Inf\", \"L2norm\"");
    const StatCategory cat = *stat_category_from_key(it->second);
    if (std::find(out.begin(), out.end(), cat) == out.end()) out.push_back(cat);
  }
  return out;
}

// Where files go: NPU_COLLECT_PATH > ASCEND_WORK_PATH > dump_path > current directory (the CANN
// aclmdlSetDump reference).
void resolve_output(const Fields& f, DumpConfig& c, const ParseOptions& options) {
  for (const char* var : {"NPU_COLLECT_PATH", "ASCEND_WORK_PATH"}) {
    auto v = options.env(var);
    if (v && !v->empty()) {
      c.dump_path = resolve_path(*v, std::string("environment ") + var, options);
      c.dump_path_origin = var;
      return;
    }
  }
  if (auto p = f.string("dump_path")) {
    c.dump_path = resolve_path(*p, f.path("dump_path"), options);
    c.dump_path_origin = "dump.dump_path";
    return;
  }
  c.dump_path = resolve_path(".", "current directory", options);
  c.dump_path_origin = "current directory";
}

}  // namespace

void parse_acl(const json& doc, DumpConfig& c, const ParseOptions& options) {
  Fields top(doc, "", {"dump", "opdump"});
  top.warn_unknown(&c.warnings);
  Fields f(doc.at("dump"), "dump",
           {"dump_list", "dump_path", "dump_mode", "dump_op_switch", "dump_data", "dump_scene", "dump_debug",
            "dump_step", "dump_level", "dump_stats"});
  c.layout = Layout::Ascend;
  c.file_format = FileFormat::Npy;

  if (const json* list = f.get("dump_list")) {
    if (!list->is_array()) throw ConfigError(f.path("dump_list"), "must be an array of objects, not " + show(*list));
    if (list->size() > kMaxListEntries)
      throw ConfigError(f.path("dump_list"), "has more than " + std::to_string(kMaxListEntries) + " entries");
    for (size_t i = 0; i < list->size(); ++i)
      c.dump_list.push_back(parse_entry((*list)[i], f.path("dump_list") + "[" + std::to_string(i) + "]", &c.warnings));
  }
  const bool have_mode = f.has("dump_mode");
  if (auto v = f.choice("dump_mode", {"input", "output", "all"}))
    c.io = *v == "input" ? IoSelect::Input : *v == "output" ? IoSelect::Output : IoSelect::All;
  const bool op_switch_on = f.choice("dump_op_switch", {"on", "off"}).value_or("off") == "on";
  if (auto v = f.choice("dump_data", {"tensor", "stats"})) c.saved_data = *v == "tensor" ? SavedData::Tensor : SavedData::Statistic;
  if (auto v = f.string("dump_step")) {
    if (std::count(v->begin(), v->end(), '|') >= 100)
      throw ConfigError(f.path("dump_step"), "has " + std::to_string(std::count(v->begin(), v->end(), '|') + 1) +
                                                 " entries; CANN dumps at most 100 (use ranges: \"0-99\")");
    c.iterations = IterationSet::parse(*v, f.path("dump_step"));
  }
  if (auto v = f.choice("dump_level", {"op", "kernel", "all"}))  // the "opdump" object's level, read later, wins
    c.level = *v == "op" ? ObserveLevel::Api : *v == "kernel" ? ObserveLevel::Kernel : ObserveLevel::All;
  if (auto v = f.string_list("dump_stats", 16)) {
    if (c.saved_data != SavedData::Statistic)
      throw ConfigError(f.path("dump_stats"), "needs dump.dump_data \"stats\" (the statistics of tensors not dumped)");
    c.stat_categories = parse_dump_stats(f, *v);
  }
  if (f.has("dump_path")) check_dump_path(f);
  if (auto v = f.choice("dump_scene", {"aic_err_brief_dump", "aic_err_norm_dump", "aic_err_detail_dump",
                                       "lite_exception", "watcher"})) {
    if (*v == "watcher") c.scene = Scene::Watcher;
    else if (*v == "aic_err_norm_dump") c.scene = Scene::ExceptionNorm;
    else if (*v == "aic_err_detail_dump") c.scene = Scene::ExceptionDetail;
    else c.scene = Scene::ExceptionBrief;  // aic_err_brief_dump, lite_exception
  }
  const bool debug_on = f.choice("dump_debug", {"on", "off"}).value_or("off") == "on";
  f.warn_unknown(&c.warnings);

  bool model_dump = false;
  for (const auto& m : c.dump_list) model_dump |= !m.model_name.empty();
  const std::string scene_field = "dump.dump_scene \"" + std::string(to_string(c.scene)) + "\"";
  const bool exception = c.scene == Scene::ExceptionBrief || c.scene == Scene::ExceptionNorm ||
                         c.scene == Scene::ExceptionDetail;

  // The CANN aclmdlSetDump reference's exclusions; each error names both fields.
  if (exception && model_dump)
    throw ConfigError("dump.dump_scene", "exception dump (" + scene_field + ") cannot be combined with model dump (dump.dump_list names a model_name)");
  if (exception && op_switch_on)
    throw ConfigError("dump.dump_scene", "exception dump (" + scene_field + ") cannot be combined with single-operator dump (dump.dump_op_switch \"on\")");
  if (exception && debug_on)
    throw ConfigError("dump.dump_scene", "exception dump (" + scene_field + ") cannot be combined with overflow dump (dump.dump_debug \"on\")");
  if (debug_on && c.scene != Scene::Watcher && model_dump)
    throw ConfigError("dump.dump_debug", "overflow dump (dump.dump_debug \"on\") cannot be combined with model dump (dump.dump_list names a model_name)");
  if (debug_on && c.scene != Scene::Watcher && op_switch_on)
    throw ConfigError("dump.dump_debug", "overflow dump (dump.dump_debug \"on\") cannot be combined with single-operator dump (dump.dump_op_switch \"on\")");
  if (c.scene == Scene::Watcher) {
    if (debug_on)
      throw ConfigError("dump.dump_scene", "watcher (dump.dump_scene \"watcher\") cannot be combined with overflow dump (dump.dump_debug \"on\")");
    if (op_switch_on)
      throw ConfigError("dump.dump_scene", "watcher (dump.dump_scene \"watcher\") cannot be combined with single-operator dump (dump.dump_op_switch \"on\")");
    if (!f.has("dump_path"))
      throw ConfigError("dump.dump_path", "is required with dump.dump_scene \"watcher\"");
    if (have_mode && c.io != IoSelect::Output)
      throw ConfigError("dump.dump_mode", "must be \"output\" with dump.dump_scene \"watcher\", not \"" + std::string(to_string(c.io)) + "\"");
    bool any_watched = false;
    for (size_t i = 0; i < c.dump_list.size(); ++i) {
      if (!c.dump_list[i].model_name.empty())
        throw ConfigError("dump.dump_list[" + std::to_string(i) + "].model_name",
                          "cannot be given with dump.dump_scene \"watcher\" (CANN's aclmdlSetDump reference: "
                          "model_name is not configurable under watcher)");
      any_watched |= !c.dump_list[i].watcher_nodes.empty();
    }
    if (!any_watched)
      throw ConfigError("dump.dump_list", "dump.dump_scene \"watcher\" needs an entry with watcher_nodes");
    c.io = IoSelect::Output;
  }
  if (debug_on) {
    if (!f.has("dump_path"))
      throw ConfigError("dump.dump_path", "is required with overflow dump (dump.dump_debug \"on\")");
    c.scene = Scene::Overflow;
    c.io = IoSelect::All;  // overflowing ops are dumped with their inputs and outputs
  }
  if (exception) c.io = IoSelect::All;
  // Every dump but the exception scenes (which write under ASCEND_WORK_PATH) names its folder.
  if (c.scene == Scene::Normal && !f.has("dump_path"))
    throw ConfigError("dump.dump_path", "is required (CANN's aclmdlSetDump reference); NPU_COLLECT_PATH or "
                                        "ASCEND_WORK_PATH, when set, take its place");

  // Single-operator dump: dump_op_switch "on" (single-operator model execution), or an empty
  // dump_list in a plain dump (single-operator API execution, the CANN offline-model dump guide's third example).
  c.op_switch = op_switch_on || (c.scene == Scene::Normal && !model_dump);
  c.dump_all_ops = true;
  resolve_output(f, c, options);
}

}  // namespace opdump::config_detail
