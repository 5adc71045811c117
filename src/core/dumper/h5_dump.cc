#include "dumper/h5_dump.h"

#include <nlohmann/json.hpp>

#include "format/h5_file.h"
#include "opdump/error.h"
#include "util/log.h"

namespace opdump {
namespace {

using json = nlohmann::json;
using h5::ValueType;

// c10::ScalarType's numbering (stable across PyTorch versions), as an op's dtype arguments carry it.
std::optional<DType> dtype_of_scalar_type(int64_t v) {
  switch (v) {
    case 0: return DType::UInt8;
    case 1: return DType::Int8;
    case 2: return DType::Int16;
    case 3: return DType::Int32;
    case 4: return DType::Int64;
    case 5: return DType::Float16;
    case 6: return DType::Float32;
    case 7: return DType::Float64;
    case 9: return DType::Complex64;
    case 10: return DType::Complex128;
    case 11: return DType::Bool;
    case 15: return DType::BFloat16;
  }
  return std::nullopt;
}

std::string ir_name(const json& args, const std::string& op_type) {
  if (args.is_object() && args.contains("operator") && args["operator"].is_string())
    return h5_ir_name(args["operator"].get<std::string>(),
                      args.contains("overload") && args["overload"].is_string() ? args["overload"].get<std::string>() : "");
  return h5_ir_name(op_type, "");
}

// Writes one op's datasets; runs on a writer thread.
class OpWriter {
 public:
  OpWriter(h5::Writer& file, std::string group, const std::vector<DumpTensor>& inputs,
           const std::vector<DumpTensor>& outputs)
      : file_(file), group_(std::move(group)), inputs_(inputs), outputs_(outputs) {}

  void write(const json& args) {
    std::vector<bool> inputs_written(inputs_.size(), false);
    if (args.is_object() && args.contains("arguments") && args["arguments"].is_array())
      for (const json& a : args["arguments"]) {
        if (!a.is_object() || !a.contains("name") || !a["name"].is_string()) continue;
        const std::string name = a["name"].get<std::string>();
        const std::string type = a.value("type", std::string());
        argument(group_ + "/input/" + name, name, type, a.contains("value") ? a["value"] : json(), &inputs_written);
      }
    for (size_t slot = 0; slot < inputs_.size(); ++slot)  // no arguments recorded for it: named by slot
      if (!inputs_written[slot]) tensor(group_ + "/input/input_" + std::to_string(slot), inputs_[slot], nullptr);
    write_outputs(args);
  }

 private:
  void tensor(const std::string& path, const DumpTensor& t, const json* layout) {
    if (!t.placeholder.empty()) {
      file_.none(path);
      file_.attr(path, "Placeholder", t.placeholder);
      return;
    }
    if (t.owner) t.owner->wait_ready();
    h5::TensorAttrs attrs;
    if (layout && layout->is_object()) {
      if (layout->contains("stride") && (*layout)["stride"].is_array())
        for (const json& s : (*layout)["stride"])
          if (s.is_number_integer()) attrs.stride.push_back(s.get<int64_t>());
      if (attrs.stride.size() != t.view.shape.size()) attrs.stride.clear();
      attrs.storage_offset = layout->value("offset", int64_t(0));
      attrs.device_type = layout->value("device_type", 0);
    }
    file_.tensor(path, t.view, attrs);
    bytes_ += t.view.nbytes();
    ++datasets_;
  }

  void tensor_slot(const std::string& path, const json& slot, const json& layout, std::vector<bool>* written) {
    if (!slot.is_number_unsigned() || slot.get<uint64_t>() >= inputs_.size()) {
      file_.text(path, "tensor slot " + slot.dump() + " not in the dump", ValueType::Unsupported);
      return;
    }
    const size_t s = slot.get<size_t>();
    tensor(path, inputs_[s], &layout);
    (*written)[s] = true;
  }

  // One argument under `path`, by the schema's type and the recorded value.
  void argument(const std::string& path, const std::string& name, const std::string& type, const json& v,
                std::vector<bool>* written) {
    if (v.is_null()) return file_.none(path);
    if (v.is_object() && v.contains("tensor")) return tensor_slot(path, v["tensor"], v, written);
    if (v.is_object() && v.contains("tensors") && v["tensors"].is_array()) {
      const json& slots = v["tensors"];
      const json layouts = v.contains("layouts") && v["layouts"].is_array() ? v["layouts"] : json::array();
      for (size_t i = 0; i < slots.size(); ++i)
        tensor_slot(path + "/" + name + "_" + std::to_string(i), slots[i],
                    i < layouts.size() ? layouts[i] : json::object(), written);
      if (slots.empty()) file_.ints(path, {}, false, ValueType::IntList);
      return;
    }
    if (v.is_object() && v.contains("device")) return file_.text(path, v["device"].dump(), ValueType::Device);
    if (v.is_object() && v.contains("complex") && v["complex"].is_array() && v["complex"].size() == 2)
      return file_.reals(path, {number(v["complex"][0]), number(v["complex"][1])}, ValueType::Complex);
    if (v.is_object()) return file_.text(path, v.dump(), ValueType::Unsupported);
    if (v.is_string() && type.rfind("float", 0) != 0) return file_.text(path, v.get<std::string>(), ValueType::String);
    if (v.is_boolean()) {
      const bool scalar_arg = type.rfind("Scalar", 0) == 0;
      return file_.ints(path, {v.get<bool>() ? 1 : 0}, true, scalar_arg ? scalar_type(type) : ValueType::Bool,
                        DType::Int8);
    }
    if (v.is_number_integer()) {
      const int64_t i = v.get<int64_t>();
      if (type.rfind("ScalarType", 0) == 0) {
        const auto d = dtype_of_scalar_type(i);
        return file_.ints(path, {d ? h5::data_type_code(*d) : -1}, true, ValueType::ScalarType, DType::Int32);
      }
      if (type.rfind("MemoryFormat", 0) == 0) return file_.ints(path, {i}, true, ValueType::OptionalMemoryFormat);
      if (type.rfind("Scalar", 0) == 0) return file_.ints(path, {i}, true, scalar_type(type));
      if (type.rfind("float", 0) == 0)
        return file_.real(path, static_cast<double>(i), type.back() == '?' ? ValueType::OptionalDouble : ValueType::Double);
      return file_.ints(path, {i}, true, type.back() == '?' ? ValueType::OptionalInt : ValueType::Int);
    }
    if (v.is_number() || v.is_string()) {  // floats; non-finite ones are recorded as strings
      const double d = number(v);
      if (type.rfind("Scalar", 0) == 0) return file_.real(path, d, scalar_type(type));
      return file_.real(path, d, type.back() == '?' ? ValueType::OptionalDouble : ValueType::Double);
    }
    if (v.is_array()) {
      bool ints = true, bools = true;
      for (const json& e : v) {
        ints = ints && e.is_number_integer();
        bools = bools && e.is_boolean();
      }
      if (ints) {
        std::vector<int64_t> values;
        for (const json& e : v) values.push_back(e.get<int64_t>());
        return file_.ints(path, values, false, ValueType::IntList);
      }
      if (bools) {
        std::vector<int64_t> values;
        for (const json& e : v) values.push_back(e.get<bool>() ? 1 : 0);
        return file_.ints(path, values, false, ValueType::BoolList, DType::Int8);
      }
      bool numbers = true;
      for (const json& e : v) numbers = numbers && (e.is_number() || e.is_string());
      if (numbers) {
        std::vector<double> values;
        for (const json& e : v) values.push_back(number(e));
        return file_.reals(path, values, ValueType::DoubleList);
      }
      // A list of optional tensors (index's indices) or of mixed values: one member each.
      for (size_t i = 0; i < v.size(); ++i)
        argument(path + "/" + name + "_" + std::to_string(i), name + "_" + std::to_string(i), "", v[i], written);
      return;
    }
    file_.text(path, v.dump(), ValueType::Unsupported);
  }

  static ValueType scalar_type(const std::string& type) {
    return type.back() == '?' ? ValueType::OptionalScalar : ValueType::Scalar;
  }

  static double number(const json& v) {
    if (v.is_number()) return v.get<double>();
    if (v.is_string()) {
      const std::string s = v.get<std::string>();
      if (s == "nan") return std::nan("");
      if (s == "inf") return HUGE_VAL;
      if (s == "-inf") return -HUGE_VAL;
    }
    return std::nan("");
  }

  // Returns are named as the schema names them ("self" for an in-place op, the out= arguments),
  // "result" for one unnamed return, "result_<i>" for several; a list return gets one member each.
  void write_outputs(const json& args) {
    std::vector<std::pair<std::string, bool>> returns;  // name, is a list
    if (args.is_object() && args.contains("returns") && args["returns"].is_array())
      for (const json& r : args["returns"])
        if (r.is_object())
          returns.emplace_back(r.value("name", std::string()), r.value("type", std::string()).find("[]") != std::string::npos);
    for (size_t i = 0; i < returns.size(); ++i)
      if (returns[i].first.empty()) returns[i].first = returns.size() == 1 ? "result" : "result_" + std::to_string(i);
    size_t slot = 0;
    const bool one_list = returns.size() == 1 && returns[0].second;
    for (size_t r = 0; r < returns.size() && slot < outputs_.size(); ++r) {
      if (one_list) {
        for (size_t i = 0; slot < outputs_.size(); ++i, ++slot)
          tensor(group_ + "/output/" + returns[r].first + "/" + returns[r].first + "_" + std::to_string(i),
                 outputs_[slot], layout_of_output(args, slot));
        break;
      }
      tensor(group_ + "/output/" + returns[r].first, outputs_[slot], layout_of_output(args, slot));
      ++slot;
    }
    for (; slot < outputs_.size(); ++slot)
      tensor(group_ + "/output/result_" + std::to_string(slot), outputs_[slot], layout_of_output(args, slot));
  }

  static const json* layout_of_output(const json& args, size_t slot) {
    if (!args.is_object() || !args.contains("output_layouts") || !args["output_layouts"].is_array()) return nullptr;
    const json& l = args["output_layouts"];
    return slot < l.size() ? &l[slot] : nullptr;
  }

 public:
  uint64_t bytes_ = 0, datasets_ = 0;

 private:
  h5::Writer& file_;
  std::string group_;
  const std::vector<DumpTensor>& inputs_;
  const std::vector<DumpTensor>& outputs_;
};

uint64_t tensor_bytes(const std::vector<DumpTensor>& list) {
  uint64_t n = 0;
  for (const auto& t : list)
    if (!(t.owner && t.owner->charged())) n += t.view.nbytes();
  return n;
}

}  // namespace

void add_output_layouts(std::string& arguments, const std::string& json_array) {
  const size_t end = arguments.rfind('}');
  if (end == std::string::npos || json_array.empty()) return;
  arguments.insert(end, ",\"output_layouts\":" + json_array);
}

std::string h5_ir_name(const std::string& op, const std::string& overload) {
  const size_t ns = op.find("::");
  std::string name = ns == std::string::npos ? op : op.substr(ns + 2);
  if (!overload.empty()) name += "_" + overload;
  for (char& c : name)
    if (c == '/' || c == ' ') c = '_';
  return name.empty() ? "op" : name;
}

std::string h5_op_group(const std::string& arguments, const std::string& op_type, uint64_t seqid) {
  const json args = arguments.empty() ? json() : json::parse(arguments, nullptr, false);
  return "/" + ir_name(args, op_type) + "/" + std::to_string(seqid);
}

H5Dump::H5Dump(std::string path, AsyncWriter& writer, bool bypass_page_cache)
    : path_(std::move(path)), writer_(writer), file_(std::make_shared<h5::Writer>(path_, bypass_page_cache)) {}

H5Dump::~H5Dump() = default;

uint64_t H5Dump::dump(const OpRecord& op, const std::vector<DumpTensor>& inputs, const std::vector<DumpTensor>& outputs) {
  const uint64_t seqid = op.sequence ? op.sequence : unnumbered_.fetch_add(1, std::memory_order_relaxed) + 1;
  writer_.run(tensor_bytes(inputs) + tensor_bytes(outputs), [this, op, inputs, outputs, seqid] {
    const std::string& arguments = op.arguments;
    if (writer_.tensor_writes_stopped()) {
      writer_.record_lost(1, 0, "");
      return;
    }
    const json args = arguments.empty() ? json() : json::parse(arguments, nullptr, false);
    const std::string group = "/" + ir_name(args, op.id.op_type) + "/" + std::to_string(seqid);
    OpWriter w(*file_, group, inputs, outputs);
    try {
      w.write(args);
      file_->attr(group, "OpName", op.id.op_name);
      file_->attr(group, "OpType", op.id.op_type);
      file_->attr(group, "Iteration", static_cast<int64_t>(op.iteration));
      file_->attr(group, "TaskId", static_cast<int64_t>(op.id.task_id));
      if (!arguments.empty()) file_->attr(group, "Arguments", arguments);
    } catch (const Error& e) {
      writer_.record_lost(w.datasets_, w.bytes_, e.what());
      return;
    }
    writer_.record_written(w.datasets_, w.bytes_);
  });
  return seqid;
}

void H5Dump::close() {
  if (file_) file_->close();
}

namespace {
class H5OutputFile final : public H5Output {
 public:
  H5OutputFile(const std::string& path, WriterOptions options) : writer_(options), h5_(path, writer_) {}
  uint64_t dump(const OpRecord& op, const std::vector<DumpTensor>& inputs,
                const std::vector<DumpTensor>& outputs) override {
    return h5_.dump(op, inputs, outputs);
  }
  void close() override {
    writer_.drain();
    h5_.close();
  }
  WriterReport report() const override { return writer_.report(); }

 private:
  AsyncWriter writer_;  // before h5_: the file's datasets are queued on it
  H5Dump h5_;
};
}  // namespace

std::unique_ptr<H5Output> open_h5_output(const std::string& path, WriterOptions options) {
  return std::make_unique<H5OutputFile>(path, options);
}

}  // namespace opdump
