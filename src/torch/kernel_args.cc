#include "kernel_args.h"

#include <ATen/autocast_mode.h>
#include <ATen/core/function_schema.h>
#include <torch/version.h>

#include <cmath>
#include <nlohmann/json.hpp>

namespace opdump::pt::detail {
namespace {

using json = nlohmann::ordered_json;  // keys in the order written: op_name first, for people reading it

// JSON has no NaN or infinity: they are written as strings, as Python's json reads them back.
json number(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  return v;
}

// A tensor's dtype as ATen names it ("BFloat16"): npy stores bfloat16 as float32, so a replay needs
// it from here to run the op on the tensors it had.
std::string dtype_name_of(const at::Tensor& t) { return t.defined() ? c10::toString(t.scalar_type()) : "Undefined"; }

// Where a tensor sits in memory: its own strides and storage offset, and its device type (the
// torch_npu 1.5 dumper's Stride and DeviceType; npy and .h5 data are contiguous copies).
json layout(const at::Tensor& t) {
  if (!t.defined()) return json::object();
  json out = json::object();
  if (t.layout() == at::kStrided) {
    out["stride"] = t.strides().vec();
    out["offset"] = t.storage_offset();
  }
  out["device_type"] = static_cast<int>(t.device().type());
  // A Python number the op was given as a tensor (`norm + 1e-6`): it takes no part in type promotion,
  // and a replay must pass it so or float32 + float64 0-dim tensors give float64.
  if (t.unsafeGetTensorImpl()->is_wrapped_number()) out["wrapped_number"] = true;
  return out;
}

// One argument; tensors become {"tensor": slot, "dtype": ...} in the order the dump numbers them.
json argument(const c10::IValue& v, uint32_t* slot) {
  if (v.isTensor()) {
    json out = {{"tensor", (*slot)++}, {"dtype", dtype_name_of(v.toTensor())}};
    out.update(layout(v.toTensor()));
    return out;
  }
  if (v.isNone()) return nullptr;
  if (v.isBool()) return v.toBool();
  if (v.isInt()) return v.toInt();
  if (v.isDouble()) return number(v.toDouble());
  if (v.isString()) return v.toStringRef();
  if (v.isDevice()) return {{"device", v.toDevice().str()}};
  if (v.isTensorList()) {
    json slots = json::array(), dtypes = json::array(), layouts = json::array();
    for (const at::Tensor& t : v.toTensorVector()) {
      slots.push_back((*slot)++);
      dtypes.push_back(dtype_name_of(t));
      layouts.push_back(layout(t));
    }
    return {{"tensors", std::move(slots)}, {"dtypes", std::move(dtypes)}, {"layouts", std::move(layouts)}};
  }
  if (v.isList()) {
    json out = json::array();
    for (const c10::IValue& e : v.toListRef()) out.push_back(argument(e, slot));
    return out;
  }
  if (v.isComplexDouble()) {
    auto z = v.toComplexDouble();
    return {{"complex", {number(z.real()), number(z.imag())}}};
  }
  return {{"unsupported", v.tagKind()}};
}

// The op's returns by name: the schema's name, else the argument a return writes ("self" for an
// in-place op, the out= buffer), else "" (the reader names it result / result_<i>).
json returns(const c10::FunctionSchema& schema) {
  json out = json::array();
  for (const c10::Argument& r : schema.returns()) {
    std::string name = r.name();
    if (name.empty() && r.alias_info() && r.alias_info()->isWrite())
      for (const c10::Argument& a : schema.arguments())
        if (a.alias_info() && a.alias_info()->isWrite() && a.alias_info()->beforeSets() == r.alias_info()->beforeSets()) {
          name = a.name();
          break;
        }
    out.push_back({{"name", name}, {"type", r.type()->str()}});
  }
  return out;
}

// The dtype CPU autocast ran the op in, or null when it was off: a replay runs it the same way
// (npy cannot tell a bfloat16 result that autocast made from a float32 one).
json cpu_autocast() {
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 4)
  if (!at::autocast::is_autocast_enabled(at::kCPU)) return nullptr;
  return c10::toString(at::autocast::get_autocast_dtype(at::kCPU));
#else
  if (!at::autocast::is_cpu_enabled()) return nullptr;
  return c10::toString(at::autocast::get_autocast_cpu_dtype());
#endif
}

}  // namespace

std::string kernel_args_json(const at::RecordFunction& fn, c10::ArrayRef<const c10::IValue> inputs,
                             const std::string& op_name) {
  json out = json::object();
  out["op_name"] = op_name;
  out["operator"] = fn.name();
  auto schema = fn.operator_schema();
  if (schema) out["overload"] = schema->overload_name();
  json arguments = json::array();
  uint32_t slot = 0;
  for (size_t i = 0; i < inputs.size(); ++i) {
    std::string name = "arg" + std::to_string(i), type;
    bool kwarg_only = false;
    if (schema && i < schema->arguments().size()) {
      name = schema->arguments()[i].name();
      kwarg_only = schema->arguments()[i].kwarg_only();
      type = schema->arguments()[i].type()->str();
    }
    json a = {{"name", name}, {"kwarg_only", kwarg_only}, {"value", argument(inputs[i], &slot)}};
    if (!type.empty()) a["type"] = type;
    arguments.push_back(std::move(a));
  }
  out["arguments"] = std::move(arguments);
  if (schema) out["returns"] = returns(*schema);
  out["autocast_cpu"] = cpu_autocast();
  // Strings from the program (argument values) need not be UTF-8: replaced, never an exception.
  return out.dump(-1, ' ', false, json::error_handler_t::replace) + "\n";
}

std::string tensor_layouts_json(const std::vector<at::Tensor>& tensors) {
  json out = json::array();
  for (const at::Tensor& t : tensors) out.push_back(layout(t));
  return out.dump();
}

}  // namespace opdump::pt::detail
