#include "load_mode.h"

#include <ATen/record_function.h>

#include <algorithm>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <nlohmann/json.hpp>

#include "capture.h"
#include "dumper/h5_dump.h"
#include "kernel_args.h"
#include "opdump/error.h"
#include "read/h5_index.h"
#include "replay/arguments.h"
#include "replay/op_call.h"
#include "opdump/opdump.h"
#include "runtime/runtime_interface.h"
#include "util/file_read.h"

namespace opdump::pt {
namespace {

using json = nlohmann::json;

// A stored op call: where it is, its arguments, its inputs by slot.
struct StoredCall {
  std::string ir, group;
  uint64_t seqid = 0;
  std::string op_type, op_name, arguments;
  json spec;
  std::string signature;
  std::map<uint32_t, DumpEntry> inputs;
  bool used = false;
};

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (int64_t d : shape) s += std::to_string(d) + ",";
  return s + "]";
}

// What must be equal for a running call to match a stored one: each argument by name, tensors by
// dtype and shape (their values are the inputs being replaced), everything else by value, and the
// autocast it ran under. Where tensors sit in memory does not matter.
json canonical(const json& v, const std::function<std::string(uint32_t)>& shape_of) {
  if (v.is_object() && v.contains("tensor") && v["tensor"].is_number_unsigned())
    return "T " + v.value("dtype", std::string("?")) + shape_of(v["tensor"].get<uint32_t>());
  if (v.is_object() && v.contains("tensors") && v["tensors"].is_array()) {
    json out = json::array();
    const json& slots = v["tensors"];
    const json dtypes = v.contains("dtypes") && v["dtypes"].is_array() ? v["dtypes"] : json::array();
    for (size_t i = 0; i < slots.size(); ++i)
      out.push_back("T " + (i < dtypes.size() && dtypes[i].is_string() ? dtypes[i].get<std::string>() : "?") +
                    (slots[i].is_number_unsigned() ? shape_of(slots[i].get<uint32_t>()) : "?"));
    return out;
  }
  if (v.is_array()) {
    json out = json::array();
    for (const json& e : v) out.push_back(canonical(e, shape_of));
    return out;
  }
  return v;
}

std::string signature(const json& spec, const std::function<std::string(uint32_t)>& shape_of) {
  json out = json::array();
  if (spec.contains("arguments") && spec["arguments"].is_array())
    for (const json& a : spec["arguments"])
      if (a.is_object()) out.push_back({a.value("name", std::string()), canonical(a.value("value", json()), shape_of)});
  out.push_back(spec.value("autocast_cpu", json()));
  return out.dump();
}

class Session {
 public:
  Session(const std::string& load_file, std::string out_file, const std::string& acl_config)
      : out_file_(std::move(out_file)) {
    std::vector<DumpEntry> entries;
    index_h5_dump(load_file, DumpPosition{}, entries);
    const std::map<std::string, std::string> arguments = h5_op_arguments(load_file);
    std::map<std::string, StoredCall> by_group;
    for (DumpEntry& e : entries) {
      // "/<op>/<seqid>/input/..."
      const size_t a = e.object.find('/', 1), b = a == std::string::npos ? a : e.object.find('/', a + 1);
      if (b == std::string::npos) continue;
      StoredCall& call = by_group[e.object.substr(0, b)];
      if (call.group.empty()) {
        call.group = e.object.substr(0, b);
        call.ir = e.object.substr(1, a - 1);
        call.seqid = std::strtoull(e.object.c_str() + a + 1, nullptr, 10);
        call.op_type = e.op_type;
        call.op_name = e.op_name;
        auto it = arguments.find(e.key_name);
        if (it != arguments.end()) call.arguments = it->second;
      }
      if (e.io == IoKind::Input) call.inputs[e.slot] = std::move(e);
    }
    for (auto& [group, call] : by_group) {
      call.spec = json::parse(call.arguments, nullptr, false);
      if (!call.spec.is_object()) {
        problems_.push_back(group + ": no arguments recorded (files of the torch_npu 1.5 tool itself cannot be "
                                    "loaded: opdump needs each op's Arguments attribute)");
        continue;
      }
      call.signature = signature(call.spec, [&call](uint32_t slot) {
        auto it = call.inputs.find(slot);
        return it == call.inputs.end() || !it->second.placeholder.empty() ? std::string("-") : shape_text(it->second.shape);
      });
      calls_.push_back(std::move(call));
    }
    if (calls_.empty()) throw Error(load_file + ": no op call with its arguments to load");
    std::sort(calls_.begin(), calls_.end(), [](const StoredCall& x, const StoredCall& y) {
      return std::tie(x.ir, x.seqid) < std::tie(y.ir, y.seqid);
    });
    for (size_t i = 0; i < calls_.size(); ++i) by_ir_[calls_[i].ir].push_back(i);
    h5_ = open_h5_output(out_file_, WriterOptions{1, uint64_t(256) << 20, PageCache::Use});
    if (!acl_config.empty()) start_kernel_dump(acl_config);
    handle_ = at::addGlobalCallback(at::RecordFunctionCallback(&Session::start_cb, &Session::end_cb)
                                        .needsInputs(true)
                                        .scopes({at::RecordScope::FUNCTION}));
  }

  LoadReport stop() {
    at::removeCallback(handle_);
    if (kernel_dump_) {
      const WriterReport k = runtime_interface().finalize_dump();
      if (!k.ok()) problems_.push_back("the kernel dump of the re-run calls: " + k.first_error);
    }
    LoadReport r;
    r.out_file = out_file_;
    try {
      h5_->close();
    } catch (const Error& e) {
      problems_.push_back(e.what());
    }
    const WriterReport w = h5_->report();
    if (!w.first_error.empty()) problems_.push_back(w.first_error);
    r.stored = calls_.size();
    r.matched = matched_;
    r.failed = failed_;
    for (const StoredCall& c : calls_)
      if (!c.used) r.unmatched.push_back(c.group);
    r.problems = problems_;
    return r;
  }

  static Session* current;
  static std::mutex current_mutex;

 private:
  static thread_local int depth_;
  static thread_local bool running_;

  static std::unique_ptr<at::ObserverContext> start_cb(const at::RecordFunction& fn) {
    if (running_ || depth_++ != 0) return nullptr;  // outermost calls only, never our own re-runs
    std::lock_guard<std::mutex> lock(current_mutex);
    if (current) current->on_call(fn);
    return nullptr;
  }
  static void end_cb(const at::RecordFunction&, at::ObserverContext*) {
    if (!running_) --depth_;
  }

  void on_call(const at::RecordFunction& fn) {
    const auto schema = fn.operator_schema();
    if (!schema) return;
    auto it = by_ir_.find(h5_ir_name(schema->name(), schema->overload_name()));
    if (it == by_ir_.end()) return;
    const auto inputs = fn.inputs();
    const json live = json::parse(detail::kernel_args_json(fn, inputs, ""), nullptr, false);
    const std::vector<at::Tensor> tensors = detail::tensors_of(inputs);
    const std::string sig = signature(live, [&tensors](uint32_t slot) {
      return slot >= tensors.size() || !tensors[slot].defined() ? std::string("-") : shape_text(tensors[slot].sizes().vec());
    });
    for (size_t i : it->second) {
      StoredCall& call = calls_[i];
      if (call.used || call.signature != sig) continue;
      call.used = true;
      c10::Device device = at::kCPU;
      for (const at::Tensor& t : tensors)
        if (t.defined()) {
          device = t.device();
          break;
        }
      rerun(call, device);
      return;
    }
  }

  // load_with_acl_dump: the acl.json's dump at kernel level, of the model the re-runs run as (the
  // model is loaded after the config, as CANN's model dumps need).
  void start_kernel_dump(const std::string& acl_config) {
    json doc = json::parse(read_text_file(acl_config, uint64_t(64) << 20), nullptr, false);
    if (!doc.is_object() || !doc.contains("dump") || !doc["dump"].is_object())
      throw ConfigError("dump", "load_with_acl_dump needs an acl.json with a \"dump\" object", acl_config);
    doc["dump"]["dump_list"] = json::array({{{"model_name", kLoadModel}}});
    doc["dump"]["dump_op_switch"] = "off";
    doc["opdump"]["level"] = "kernel";
    runtime_interface().set_dump_config(parse_config(doc.dump(), acl_config));
    runtime_interface().register_model(kLoadModel);
    kernel_dump_ = true;
  }

  // The stored call on copies of its stored inputs, on `device`; inputs and outputs to the new file.
  void rerun(const StoredCall& call, c10::Device device) {
    running_ = true;
    // Unseen by every observer, except with a kernel dump: then as the model kLoadModel.
    std::optional<at::RecordFunctionGuard> no_record;
    std::optional<ModelScope> as_model;
    if (kernel_dump_) as_model.emplace(kLoadModel, call.ir);
    else no_record.emplace(false);
    std::string why;
    try {
      std::vector<at::Tensor> inputs, on_device;
      const uint32_t slots = call.inputs.empty() ? 0 : call.inputs.rbegin()->first + 1;
      for (uint32_t slot = 0; slot < slots; ++slot) {
        auto it = call.inputs.find(slot);
        if (it == call.inputs.end()) throw Error("input " + std::to_string(slot) + " is not in the file");
        if (!it->second.placeholder.empty()) {
          inputs.emplace_back();
          on_device.emplace_back();
          continue;
        }
        inputs.push_back(replay::load_tensor(it->second));
        on_device.push_back(inputs.back().to(device, /*non_blocking=*/false, /*copy=*/true));
      }
      const auto handle = replay::find_operator(call.spec);
      if (!handle) throw Error("operator " + call.spec.value("operator", std::string("?")) + " is not in this PyTorch");
      auto stack = replay::build_stack(*handle, call.spec, on_device, &why);
      if (!stack) throw Error(why);
      const std::vector<at::Tensor> outputs = replay::run_call(*handle, std::move(*stack), replay::autocast_of(call.spec));
      std::vector<DumpTensor> ins, outs;
      for (const at::Tensor& t : inputs) ins.push_back(detail::dump_copy(t));
      for (const at::Tensor& t : outputs) outs.push_back(detail::dump_copy(t));
      OpRecord record;
      record.id.op_type = call.op_type;
      record.id.op_name = call.op_name;
      record.sequence = call.seqid;
      record.arguments = call.arguments;
      add_output_layouts(record.arguments, detail::tensor_layouts_json(outputs));  // this run's outputs, where they sit
      h5_->dump(record, ins, outs);
      ++matched_;
    } catch (const std::exception& e) {
      ++failed_;
      std::string what = e.what();
      problems_.push_back(call.group + ": " + what.substr(0, what.find('\n')));
    }
    running_ = false;
  }

  std::string out_file_;
  std::vector<StoredCall> calls_;
  std::map<std::string, std::vector<size_t>> by_ir_;
  std::unique_ptr<H5Output> h5_;
  at::CallbackHandle handle_ = 0;
  bool kernel_dump_ = false;
  static constexpr const char* kLoadModel = "opdump_load";
  uint64_t matched_ = 0, failed_ = 0;
  std::vector<std::string> problems_;
};

Session* Session::current = nullptr;
std::mutex Session::current_mutex;
thread_local int Session::depth_ = 0;
thread_local bool Session::running_ = false;

}  // namespace

void start_load(const std::string& load_file, const std::string& out_file, const std::string& acl_config) {
  {
    std::lock_guard<std::mutex> lock(Session::current_mutex);
    if (Session::current) throw Error("a load (use_load) is already running");
  }
  auto session = std::make_unique<Session>(load_file, out_file, acl_config);
  std::lock_guard<std::mutex> lock(Session::current_mutex);
  Session::current = session.release();
}

LoadReport stop_load() {
  Session* session;
  {
    std::lock_guard<std::mutex> lock(Session::current_mutex);
    if (!Session::current) throw Error("no load (use_load) is running");
    session = Session::current;
    Session::current = nullptr;
  }
  std::unique_ptr<Session> owned(session);
  return owned->stop();
}

}  // namespace opdump::pt
