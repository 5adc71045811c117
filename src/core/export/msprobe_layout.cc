#include "export/msprobe_layout.h"

#include <fmt/format.h>

#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>

#include "format/msprobe_dump.h"
#include "identity/op_names.h"
#include "opdump/error.h"
#include "util/dtype.h"
#include "util/path.h"
#include "writer/atomic_file.h"

namespace opdump {
namespace {

using ordered_json = nlohmann::ordered_json;

// Python's json writes NaN and Infinity as these bare words (msprobe's files have them); nlohmann
// writes null. Non-finite statistics go in as these marker strings and are unquoted afterwards.
constexpr const char* kNan = "\x01NaN";
constexpr const char* kPosInf = "\x01Infinity";
constexpr const char* kNegInf = "\x01-Infinity";

std::string python_json(const ordered_json& j) {
  std::string text = j.dump(1);
  for (const char* marker : {kNan, kPosInf, kNegInf}) {
    const std::string quoted = fmt::format("\"\\u0001{}\"", marker + 1);
    for (size_t at = text.find(quoted); at != std::string::npos; at = text.find(quoted, at))
      text.replace(at, quoted.size(), marker + 1);
  }
  return text;
}

ordered_json number(double v) {
  if (std::isnan(v)) return kNan;
  if (std::isinf(v)) return v > 0 ? kPosInf : kNegInf;
  return v;
}

void put_statistics(ordered_json& t, const RecordedStats& s, DType dtype) {
  const MsprobeStatistics m = msprobe_statistics(s, dtype);
  auto value = [](const std::optional<double>& v) { return v ? number(*v) : ordered_json(); };
  t["Max"] = value(m.max);
  t["Min"] = value(m.min);
  t["Mean"] = value(m.mean);
  t["Norm"] = value(m.norm);
}

// One op call of the dump: its entries, inputs and outputs by slot.
struct Call {
  std::string name;      // as msprobe names it
  std::string module;    // module path of a forward op ("" unknown), for construct.json
  bool backward = false;
  std::vector<const DumpEntry*> inputs, outputs;
};

struct Folder {
  std::vector<Call> calls;
  std::map<std::string, uint64_t> counts;  // calls so far per name stem and direction ("Aten.add.forward")
};

std::string prefix_for(const DumpEntry& e) {
  // ATen's op types are lower case ("conv2d", "add_"); CANN's and MindSpore's are capitalized ("Conv2D").
  const bool aten = !e.op_type.empty() && !std::isupper(static_cast<unsigned char>(e.op_type[0]));
  return aten ? "Aten" : "Primitive";
}

class Exporter {
 public:
  Exporter(const DumpIndex& index, MsprobeExport& out, Progress* progress)
      : index_(index), out_(out), progress_(progress) {}

  void run(const std::string& out_root) {
    std::map<std::pair<int64_t, uint32_t>, Folder> folders;  // by step and rank
    bool first = true;
    std::tuple<int64_t, uint32_t, uint64_t, std::string, uint64_t> last_key;
    for (const DumpEntry& e : index_.entries) {
      if (!e.where.below.empty()) continue;  // watcher and constant folders: not op calls of the step
      const auto where = std::make_pair(std::max<int64_t>(e.iteration(), 0), e.rank());
      auto key = std::make_tuple(where.first, where.second, e.order, e.op_name, e.occurrence);
      Folder& folder = folders[where];
      if (first || key != last_key) {
        folder.calls.push_back(new_call(e, folder.counts));
        last_key = std::move(key);
        first = false;
      }
      Call& call = folder.calls.back();
      auto& side = e.io == IoKind::Input ? call.inputs : call.outputs;
      if (side.size() <= e.slot) side.resize(e.slot + 1, nullptr);
      side[e.slot] = &e;
    }
    for (const auto& [where, folder] : folders) {
      const std::string dir = join_path(out_root, fmt::format("step{}/rank{}", where.first, where.second));
      make_dirs(dir);
      write_folder(dir, folder);
      ++out_.folders;
    }
  }

 private:
  Call new_call(const DumpEntry& e, std::map<std::string, uint64_t>& counts) {
    Call c;
    c.backward = e.backward();
    if (is_msprobe_call_name(e.op_name)) {
      c.name = e.op_name;
      c.backward = c.name.find(".backward") != std::string::npos || c.name.find(".parameters_grad") != std::string::npos;
      c.module = e.msprobe ? e.module : "";
    } else {
      const std::string stem = prefix_for(e) + "." + e.op_type;
      const std::string direction = c.backward ? "backward" : "forward";
      c.name = fmt::format("{}.{}.{}", stem, counts[stem + "." + direction]++, direction);
      if (!c.backward) c.module = identity::module_path_of(e.op_name).value_or("");
    }
    return c;
  }

  ordered_json tensor(const DumpEntry* e) {
    if (!e) return nullptr;
    struct Advance {  // also when the tensor fails
      Progress* p;
      uint64_t bytes = 0;
      ~Advance() {
        if (p) p->advance(1, bytes);
      }
    } advance{progress_};
    if (!e->placeholder.empty()) return nullptr;  // an undefined tensor: msprobe writes null
    ++out_.tensors;
    ordered_json t;
    t["type"] = "torch.Tensor";
    t["dtype"] = "torch." + std::string(dtype_name(e->dtype));
    t["shape"] = e->shape_known ? ordered_json(e->shape) : ordered_json::array();
    if (e->stats) {
      put_statistics(t, *e->stats, e->dtype);
    } else if (e->unreadable.empty()) {
      try {
        const Tensor values = load_entry(*e);
        advance.bytes = values.view().nbytes();
        put_statistics(t, RecordedStats::of(compute_stats(values.view())), e->dtype);
        ++out_.statistics_computed;
      } catch (const Error& err) {
        warn_without(*e, err.what());
        put_statistics(t, RecordedStats{}, e->dtype);
      }
    } else {
      warn_without(*e, e->unreadable);
      put_statistics(t, RecordedStats{}, e->dtype);
    }
    return t;
  }

  void warn_without(const DumpEntry& e, const std::string& why) {
    if (out_.without_statistics++ < 5) out_.warnings.push_back(e.path + ": no statistics written: " + why);
  }

  ordered_json side(const std::vector<const DumpEntry*>& entries) {
    ordered_json list = ordered_json::array();
    for (const DumpEntry* e : entries) list.push_back(tensor(e));
    return list;
  }

  void write_folder(const std::string& dir, const Folder& folder) {
    // construct.json: a call's parent is the call of its module that encloses it (module records are
    // written as the module ends, after the calls inside it), or the enclosing module of a module.
    std::map<std::string, std::vector<size_t>> module_calls;  // forward module records by module path
    for (size_t i = 0; i < folder.calls.size(); ++i) {
      const Call& c = folder.calls[i];
      if (!c.backward && c.name.rfind("Module.", 0) == 0) module_calls[module_path(c.name)].push_back(i);
    }
    ordered_json data = ordered_json::object(), construct = ordered_json::object();
    for (size_t i = 0; i < folder.calls.size(); ++i) {
      const Call& c = folder.calls[i];
      ordered_json record;
      if (c.backward) {
        record["input"] = side(c.inputs);
        record["output"] = side(c.outputs);
      } else {
        record["input_args"] = side(c.inputs);
        record["input_kwargs"] = ordered_json::object();
        record["output"] = side(c.outputs);
      }
      data[c.name] = std::move(record);
      ++out_.calls;
      if (module_calls.empty()) continue;  // an API-level dump: msprobe's construct.json is empty
      construct[c.name] = c.backward ? ordered_json() : parent_of(folder, module_calls, i);
    }
    ordered_json dump;
    dump["task"] = "statistics";
    dump["level"] = module_calls.empty() ? "L1" : "mix";
    dump["framework"] = "pytorch";
    dump["dump_data_dir"] = nullptr;
    dump["data"] = std::move(data);
    write_file(dir + "/dump.json", python_json(dump));
    write_file(dir + "/construct.json", python_json(construct));
    write_file(dir + "/stack.json", "{}");
  }

  // The innermost module call enclosing call i: the first call of its module path (a module record: of
  // the path one attribute up) made after it; null at the model's top.
  static ordered_json parent_of(const Folder& folder, const std::map<std::string, std::vector<size_t>>& module_calls,
                                size_t i) {
    const Call& c = folder.calls[i];
    std::string path = c.module;
    if (c.name.rfind("Module.", 0) == 0) {
      path = module_path(c.name);
      if (!drop_last_attribute(path)) return nullptr;
    }
    for (;;) {
      if (auto it = module_calls.find(path); it != module_calls.end())
        for (size_t at : it->second)
          if (at > i) return folder.calls[at].name;
      if (!drop_last_attribute(path)) return nullptr;
    }
  }

  static bool drop_last_attribute(std::string& path) {
    if (path.empty()) return false;
    const size_t dot = path.rfind('.');
    path.resize(dot == std::string::npos ? 0 : dot);
    return true;
  }

  static void write_file(const std::string& path, const std::string& text) {
    AtomicFileWriter out(path);
    out.write(text);
    out.commit();
  }

  const DumpIndex& index_;
  MsprobeExport& out_;
  Progress* progress_;
};

}  // namespace

bool is_msprobe_call_name(const std::string& name) {
  static const std::regex re(
      R"(^(Module\.[^/]+\.(forward|backward|parameters_grad)\.\d+|[A-Z][A-Za-z]*\.[^/]+\.\d+\.(forward|backward))$)");
  return std::regex_match(name, re);
}

MsprobeExport export_msprobe_layout(const DumpIndex& index, const std::string& out_root, Progress* progress) {
  MsprobeExport out;
  Exporter(index, out, progress).run(out_root);
  return out;
}

}  // namespace opdump
