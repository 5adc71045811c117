// msprobe's config.json (the msprobe PyTorch data-dump guide): "task", "dump_path", "rank", "step",
// "level", "async_dump" at the top, and the task's own object ("statistics", "tensor",
// "overflow_check") with "scope", "list", "data_mode", "summary_mode", "file_format", "overflow_nums".
// Tasks and fields opdump cannot honour are errors naming them, never silently ignored.
#include <string>

#include "config_internal.h"
#include "opdump/error.h"

namespace opdump::config_detail {
namespace {

// msprobe's other tasks and where opdump has what they do.
std::string not_a_dump_task(const std::string& task) {
  if (task == "run_ut") return "; opdump's `replay` re-runs a dump's ops against a CPU float64 reference";
  if (task == "free_benchmark") return "; opdump's `replay` checks each op against a reference run instead";
  return "";
}

// "step": [0, 1, "4-6"] -> the IterationSet syntax "0|1|4-6".
IterationSet parse_steps(const Fields& f, const char* key) {
  const json* steps = f.get(key);
  if (!steps) return IterationSet::all();
  if (!steps->is_array()) throw ConfigError(f.path(key), show(*steps) + " must be a list of steps (integers or \"a-b\" ranges)");
  if (steps->empty()) return IterationSet::all();  // msprobe: an empty list is every step
  if (steps->size() > kMaxListEntries) throw ConfigError(f.path(key), "has more than " + std::to_string(kMaxListEntries) + " entries");
  std::string spec;
  for (size_t i = 0; i < steps->size(); ++i) {
    const json& s = (*steps)[i];
    const std::string item = f.path(key) + "[" + std::to_string(i) + "]";
    if (s.is_number_unsigned()) spec += std::to_string(s.get<uint64_t>());
    else if (s.is_string()) spec += s.get<std::string>();
    else throw ConfigError(item, show(s) + " is not a step; allowed: integers from 0 and \"a-b\" ranges");
    if (i + 1 < steps->size()) spec += "|";
    if (s.is_string()) IterationSet::parse(s.get<std::string>(), item);  // names the bad entry itself
  }
  return IterationSet::parse(spec, f.path(key));
}

std::vector<uint32_t> parse_ranks(const Fields& f) {
  std::vector<uint32_t> ranks;
  const json* list = f.get("rank");
  if (!list) return ranks;
  if (!list->is_array()) throw ConfigError(f.path("rank"), show(*list) + " must be a list of ranks");
  if (list->size() > 65536) throw ConfigError(f.path("rank"), "has more than 65536 entries");
  for (size_t i = 0; i < list->size(); ++i) {
    const json& r = (*list)[i];
    if (!r.is_number_unsigned() || r.get<uint64_t>() > UINT32_MAX)
      throw ConfigError(f.path("rank") + "[" + std::to_string(i) + "]", show(r) + " is not a rank; allowed: integers from 0");
    ranks.push_back(static_cast<uint32_t>(r.get<uint64_t>()));
  }
  return ranks;
}

// The task object's fields that select and shape the data.
void parse_task_fields(const json& doc, const std::string& task, DumpConfig& c) {
  const json* obj = doc.contains(task) ? &doc.at(task) : nullptr;
  static const json kEmpty = json::object();
  Fields f(obj ? *obj : kEmpty, task,
           {"scope", "list", "data_mode", "summary_mode", "file_format", "overflow_nums", "check_mode", "tensor_list",
            "bench_path", "diff_nums"});
  if (auto scope = f.string_list("scope", kMaxListEntries); scope && !scope->empty())
    throw ConfigError(f.path("scope"), "ranges of modules or APIs are not available in opdump; select APIs by name with "
                                       "\"" + task + ".list\" (each entry a part of the API's name) or steps with \"step\"");
  if (auto list = f.string_list("list", kMaxListEntries); list && !list->empty()) {
    // msprobe dumps the APIs whose names contain an entry: a kernels entry without '/' matches
    // the same way (case-insensitive part of the op type).
    for (size_t i = 0; i < list->size(); ++i)
      if ((*list)[i].empty() || (*list)[i].find('/') != std::string::npos || (*list)[i].find("-op") != std::string::npos)
        throw ConfigError(f.path("list") + "[" + std::to_string(i) + "]",
                          show((*list)[i]) + " is not an API name; give a part of one, e.g. \"relu\" or \"conv2d\"");
    c.kernels = *list;
    c.kernels_field = f.path("list");
    c.dump_all_ops = false;
  }
  if (auto modes = f.string_list("data_mode", 8)) {
    // PrecisionDebugger writing msprobe's own layout records forward and backward calls apart
    const json* own = doc.contains("opdump") && doc.at("opdump").is_object() && doc.at("opdump").contains("layout")
                          ? &doc.at("opdump").at("layout") : nullptr;
    const bool msprobe_layout = own && own->is_string() && own->get<std::string>() == "msprobe";
    bool in = false, out = false;
    for (size_t i = 0; i < modes->size(); ++i) {
      const std::string& m = (*modes)[i];
      const std::string item = f.path("data_mode") + "[" + std::to_string(i) + "]";
      if (m == "all") in = out = true;
      else if (m == "input") in = true;
      else if (m == "output") out = true;
      else if ((m == "forward" || m == "backward") && msprobe_layout) in = out = true;
      else if (m == "forward" || m == "backward")
        throw ConfigError(item, "\"" + m + "\": opdump's engine does not split forward from backward ops; allowed "
                                "here: \"all\", \"input\", \"output\" (or msprobe's layout: \"opdump\": {\"layout\": \"msprobe\"})");
      else throw ConfigError(item, show(m) + " is not a data mode; allowed: \"all\", \"input\", \"output\"");
    }
    if (!in && !out) throw ConfigError(f.path("data_mode"), "is empty; leave it out for [\"all\"]");
    c.io = in && out ? IoSelect::All : in ? IoSelect::Input : IoSelect::Output;
  } else {
    c.io = IoSelect::All;  // msprobe's default ["all"]
  }
  // msprobe's statistics: Max, Min, Mean, Norm (L2), and with summary_mode "md5" the CRC of each tensor
  // (opdump writes the MD5 of its bytes).
  c.stat_categories = {StatCategory::Max, StatCategory::Min, StatCategory::Avg, StatCategory::L2Norm};
  if (auto v = f.choice("summary_mode", {"statistics", "md5"}); v && *v == "md5")
    c.stat_categories.push_back(StatCategory::Md5);
  if (auto v = f.choice("file_format", {"npy", "bin"}); v && *v == "bin")
    throw ConfigError(f.path("file_format"), "\"bin\" (torch.save files) is not available; opdump writes \"npy\"");
  if (task == "overflow_check") {
    // -1: every overflow (opdump's 0); n: stop after n.
    if (const json* n = f.get("overflow_nums")) {
      if (!n->is_number_integer() || (n->get<int64_t>() != -1 && (n->get<int64_t>() < 1 || n->get<int64_t>() > UINT32_MAX)))
        throw ConfigError(f.path("overflow_nums"), show(*n) + " is not allowed; give -1 (every overflow) or a positive count");
      c.overflow_number = n->get<int64_t>() == -1 ? 0 : static_cast<uint32_t>(n->get<int64_t>());
    } else {
      c.overflow_number = 1;  // msprobe's default
    }
    if (auto v = f.choice("check_mode", {"all", "aicore", "atomic"}); v && *v != "all")
      c.warnings.push_back(f.path("check_mode") + " \"" + *v + "\" names an Ascend NPU unit: opdump checks every output (\"all\")");
  } else if (f.has("overflow_nums") || f.has("check_mode")) {
    c.warnings.push_back(task + ": overflow_nums and check_mode apply to the overflow_check task only (ignored)");
  }
  if (f.has("tensor_list") && !f.string_list("tensor_list", kMaxListEntries)->empty())
    throw ConfigError(f.path("tensor_list"), "(tensors of some APIs in a statistics dump) is not available; use the \"tensor\" task");
  f.warn_unknown(&c.warnings);
}

}  // namespace

void parse_msprobe(const json& doc, DumpConfig& c, const ParseOptions& options) {
  Fields top(doc, "",
             {"task", "dump_path", "rank", "step", "level", "async_dump", "enable_dataloader", "is_deterministic",
              "precision", "framework", "statistics", "tensor", "overflow_check", "opdump"});
  const std::string task = top.string("task").value_or("statistics");
  if (task != "statistics" && task != "tensor" && task != "overflow_check")
    throw ConfigError(top.path("task"), show(task) + " is not a dump task opdump has; allowed: \"statistics\", \"tensor\", "
                                        "\"overflow_check\"" + not_a_dump_task(task));
  for (const char* other : {"statistics", "tensor", "overflow_check"})
    if (task != other && top.has(other))
      c.warnings.push_back(std::string("\"") + other + "\" is not the task (\"" + task + "\"): its settings are ignored");
  // Every op in a folder of its step, per rank, as msprobe's step{N}/rank{R}: MindSpore's layout
  // {dump_path}/rank_{R}/{net_name}/{model id}/{step}/.
  c.layout = Layout::MindSporeSync;
  c.file_format = FileFormat::Npy;
  c.saved_data = task == "tensor" ? SavedData::Full : SavedData::Statistic;  // a tensor dump keeps msprobe's statistics too
  if (task == "overflow_check") c.scene = Scene::Overflow;

  // L0: modules' own inputs and outputs (records the front end makes with module hooks), L1: the
  // framework's APIs (opdump's "api" level), mix: both, the APIs named by the modules they run in,
  // L2: kernels. The overflow check watches every API's outputs whatever the level.
  const std::string level = top.choice("level", {"L0", "L1", "L2", "mix"}).value_or("L1");
  c.level = level == "L2" ? ObserveLevel::Kernel : level == "L0" ? ObserveLevel::Modules : ObserveLevel::Api;
  c.module_records = level == "L0" || level == "mix";
  if (task == "overflow_check" && level == "L0") {
    c.level = ObserveLevel::Api;
    c.module_records = false;
    c.warnings.push_back("level \"L0\" with task \"overflow_check\": every API's outputs are checked (opdump's overflow check)");
  }
  c.iterations = parse_steps(top, "step");
  c.support_rank = parse_ranks(top);
  (void)top.boolean("async_dump");          // opdump always writes on its own threads
  (void)top.boolean("enable_dataloader");   // deprecated in msprobe; steps are counted by step()
  if (top.boolean("is_deterministic").value_or(false))
    c.warnings.push_back("is_deterministic is set by the front end (torch.use_deterministic_algorithms), not by the dump");
  if (auto v = top.string("framework"); v && *v != "pytorch")
    throw ConfigError(top.path("framework"), show(*v) + ": opdump dumps PyTorch; allowed: \"pytorch\"");
  parse_task_fields(doc, task, c);

  const std::string path = top.string("dump_path").value_or("");
  if (path.empty()) throw ConfigError(top.path("dump_path"), "is required (the folder the dump goes to)");
  c.dump_path = resolve_path(path, top.path("dump_path"), options);
  c.dump_path_origin = "dump_path";
  c.op_switch = true;  // msprobe dumps every API, in a model or not
  top.warn_unknown(&c.warnings);
}

}  // namespace opdump::config_detail
