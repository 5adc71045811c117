#include "kernel_args.h"

#include <ATen/core/function_schema.h>

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

// One argument; tensors become {"tensor": slot} in the order the dump numbers them.
json argument(const c10::IValue& v, uint32_t* slot) {
  if (v.isTensor()) return {{"tensor", (*slot)++}};
  if (v.isNone()) return nullptr;
  if (v.isBool()) return v.toBool();
  if (v.isInt()) return v.toInt();
  if (v.isDouble()) return number(v.toDouble());
  if (v.isString()) return v.toStringRef();
  if (v.isDevice()) return {{"device", v.toDevice().str()}};
  if (v.isTensorList()) {
    json slots = json::array();
    const size_t n = v.toTensorVector().size();
    for (size_t i = 0; i < n; ++i) slots.push_back((*slot)++);
    return {{"tensors", std::move(slots)}};
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
    std::string name = "arg" + std::to_string(i);
    bool kwarg_only = false;
    if (schema && i < schema->arguments().size()) {
      name = schema->arguments()[i].name();
      kwarg_only = schema->arguments()[i].kwarg_only();
    }
    arguments.push_back({{"name", name}, {"kwarg_only", kwarg_only}, {"value", argument(inputs[i], &slot)}});
  }
  out["arguments"] = std::move(arguments);
  // Strings from the program (argument values) need not be UTF-8: replaced, never an exception.
  return out.dump(-1, ' ', false, json::error_handler_t::replace) + "\n";
}

}  // namespace opdump::pt::detail
