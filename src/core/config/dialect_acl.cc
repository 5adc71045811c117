// acl.json dialect: {"dump": {...}} (the CANN offline-model dump guide, the torch_npu accuracy
// comparison guide, the CANN aclmdlSetDump reference), with the aclmdlSetDump reference's rules.
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
    m.layers = *v;
    KernelFilter(m.layers, f.path("layer"));  // validates every entry (name-regex syntax) now, as dumping will
  }
  if (auto v = f.string_list("watcher_nodes", kMaxListEntries)) m.watcher_nodes = *v;
  f.warn_unknown(warnings);
  return m;
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
            "dump_step"});
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
  if (auto v = f.string("dump_step")) c.iterations = IterationSet::parse(*v, f.path("dump_step"));
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

  // Single-operator dump: dump_op_switch "on" (single-operator model execution), or an empty
  // dump_list in a plain dump (single-operator API execution, the CANN offline-model dump guide's third example).
  c.op_switch = op_switch_on || (c.scene == Scene::Normal && !model_dump);
  c.dump_all_ops = true;
  resolve_output(f, c, options);
}

}  // namespace opdump::config_detail
