#include "msprobe_arguments.h"

#include <ATen/ATen.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/jit_type.h>

#include <algorithm>
#include <optional>
#include <set>

#include "arguments.h"
#include "format/msprobe_dump.h"
#include "layout/layout.h"
#include "opdump/error.h"
#include "msprobe_apis.inc"  // kMsprobeApisJson: data/msprobe_apis.json

namespace opdump::replay {
namespace {

using json = nlohmann::json;

const json& api_rules() {
  static const json rules = json::parse(kMsprobeApisJson)["apis"];
  return rules;
}

// Every overload of an aten operator, by name ("add" -> "", "Scalar", "Tensor", ...), sorted so
// that the default overload is tried first.
const std::vector<std::string>* overloads_of(const std::string& name) {
  static const auto index = [] {
    std::map<std::string, std::vector<std::string>> out;
    for (const c10::OperatorName& op : c10::Dispatcher::singleton().getAllOpNames())
      out[op.name].push_back(op.overload_name);
    for (auto& [op, overloads] : out) std::sort(overloads.begin(), overloads.end());
    return out;
  }();
  auto it = index.find(name);
  return it == index.end() ? nullptr : &it->second;
}

// One Python argument: its value as dump.json records it and where it sits ("input.2").
struct PyArg {
  json value;
  std::string path;
};

// A Python call with the API's rules applied, ready to bind to an aten schema.
struct PyCall {
  std::string op;  // "aten::add_"
  std::vector<PyArg> positional;
  std::map<std::string, PyArg> named;
  std::map<std::string, std::pair<uint32_t, std::string>> tensors;  // input path -> slot, dtype name
};

bool is_tensor(const json& v) {
  return v.is_object() && ((v.contains("type") && v["type"] == "torch.Tensor") || (v.contains("dtype") && v.contains("shape")));
}

// A builtin as msprobe records it ({"type": "int", "value": 3}) or as a rule gives it (3).
const json& scalar_of(const json& v) {
  if (v.is_object() && v.contains("value") && !is_tensor(v)) return v["value"];
  return v;
}

bool is_int(const json& v) {
  const json& s = scalar_of(v);
  return s.is_number_integer();
}

// Python's json writes NaN and Infinity bare; the reader quoted them. The args file says "nan", "inf".
std::optional<json> real(const json& v) {
  if (v.is_number()) return v;
  if (!v.is_string()) return std::nullopt;
  const std::string& s = v.get_ref<const std::string&>();
  if (s == "NaN" || s == "nan") return json("nan");
  if (s == "Infinity" || s == "inf") return json("inf");
  if (s == "-Infinity" || s == "-inf") return json("-inf");
  return std::nullopt;
}

// A dump's dtype as ATen's (Undefined for one PyTorch lacks: its call is then not replayed, the others are).
at::ScalarType aten_dtype_or_undefined(std::optional<DType> d) {
  if (!d) return at::ScalarType::Undefined;
  try {
    return aten_dtype(*d);
  } catch (const Error&) {
    return at::ScalarType::Undefined;
  }
}

// A torch.dtype argument ({"type": "torch.dtype", "value": "torch.float32"}).
std::optional<at::ScalarType> torch_dtype(const json& v) {
  const json& s = scalar_of(v);
  if (!s.is_string()) return std::nullopt;
  const at::ScalarType t = aten_dtype_or_undefined(msprobe_dtype(s.get<std::string>()));
  if (t == at::ScalarType::Undefined) return std::nullopt;
  return t;
}

// A schema's default as the args file writes values.
std::optional<json> default_json(const c10::IValue& v) {
  if (v.isNone()) return json(nullptr);
  if (v.isBool()) return json(v.toBool());
  if (v.isInt()) return json(v.toInt());
  if (v.isDouble()) return real(json(v.toDouble()));
  if (v.isString()) return json(v.toStringRef());
  if (v.isIntList()) return json(v.toIntVector());
  if (v.isDoubleList()) return json(v.toDoubleVector());
  if (v.isBoolList()) {
    json out = json::array();
    for (bool b : v.toBoolList()) out.push_back(b);
    return out;
  }
  return std::nullopt;
}

class Binder {
 public:
  explicit Binder(const PyCall& call) : call_(call) {}

  // The args-file "arguments" for `schema`, or nullopt with why() set.
  std::optional<json> bind(const c10::FunctionSchema& schema) {
    const auto& params = schema.arguments();
    for (const auto& a : params)
      if (a.kwarg_only() && a.alias_info() && a.alias_info()->isWrite()) return fail("an out= overload");
    bool has_input = false;
    for (const auto& a : params) has_input |= a.name() == "input";
    json arguments = json::array();
    size_t p = 0;
    std::set<std::string> used;
    for (size_t i = 0; i < params.size(); ++i) {
      const auto& a = params[i];
      size_t positional_left = 0;  // this and later schema arguments Python may pass by position
      for (size_t k = i; k < params.size(); ++k) positional_left += !params[k].kwarg_only();
      std::optional<PyArg> given;
      if (!a.kwarg_only() && p < call_.positional.size()) {
        // Tensor.view(2, 3): Python's varargs fill one int[] argument.
        if (int_list(a.real_type()) && is_int(call_.positional[p].value) && call_.positional.size() - p > positional_left) {
          PyArg packed{json::array(), call_.positional[p].path};
          while (p < call_.positional.size()) packed.value.push_back(scalar_of(call_.positional[p++].value));
          given = std::move(packed);
        } else {
          given = call_.positional[p++];
        }
      } else if (auto it = call_.named.find(a.name()); it != call_.named.end()) {
        given = it->second;
        used.insert(a.name());
      } else if (a.name() == "self" && !has_input && call_.named.count("input")) {
        given = call_.named.at("input");
        used.insert("input");
      }
      json value;
      if (!given) {
        if (!a.default_value()) return fail("argument " + a.name() + " is not given");
        auto d = default_json(*a.default_value());
        if (!d) return fail("argument " + a.name() + " has a default the args file cannot write");
        value = std::move(*d);
      } else {
        auto v = convert(a.real_type(), a.N(), given->value, given->path);
        if (!v) return fail("argument " + a.name() + ": " + why_);
        value = std::move(*v);
      }
      arguments.push_back({{"name", a.name()}, {"kwarg_only", a.kwarg_only()}, {"value", std::move(value)}});
    }
    if (p < call_.positional.size()) return fail("more positional arguments than " + schema.name() + " takes");
    for (const auto& [name, arg] : call_.named)
      if (!used.count(name)) return fail("no argument named " + name);
    return arguments;
  }

  const std::string& why() const { return why_; }

 private:
  std::nullopt_t fail(std::string why) {
    why_ = std::move(why);
    return std::nullopt;
  }

  static bool int_list(const c10::TypePtr& type) {
    if (type->kind() != c10::TypeKind::ListType) return false;
    const auto kind = type->expectRef<c10::ListType>().getElementType()->kind();
    return kind == c10::TypeKind::IntType || kind == c10::TypeKind::SymIntType;
  }

  std::optional<json> tensor(const json& v, const std::string& path) {
    if (!is_tensor(v)) return fail("not a tensor");
    auto it = call_.tensors.find(path);
    if (it == call_.tensors.end()) return fail("the tensor at " + path + " is not in dump.json's tensors");
    return json{{"tensor", it->second.first}, {"dtype", it->second.second}};
  }

  std::optional<json> convert(const c10::TypePtr& type, c10::optional<int32_t> n, const json& v, const std::string& path) {
    if (v.is_null()) {
      if (type->kind() == c10::TypeKind::OptionalType) return json(nullptr);
      return fail("None where " + type->str() + " is taken");
    }
    const json& s = scalar_of(v);
    switch (type->kind()) {
      case c10::TypeKind::OptionalType:
        return convert(type->expectRef<c10::OptionalType>().getElementType(), n, v, path);
      case c10::TypeKind::TensorType: return tensor(v, path);
      case c10::TypeKind::ListType: return list(type->expectRef<c10::ListType>().getElementType(), n, v, path);
      case c10::TypeKind::IntType:
      case c10::TypeKind::SymIntType:
        if (s.is_number_integer()) return s;
        return fail("not an int");
      case c10::TypeKind::FloatType:
        if (auto r = real(s)) return r;
        return fail("not a number");
      case c10::TypeKind::BoolType:
        if (s.is_boolean()) return s;
        return fail("not a bool");
      case c10::TypeKind::NumberType:
        if (s.is_boolean() || s.is_number_integer()) return s;
        if (auto r = real(s)) return r;
        return fail("not a number");
      case c10::TypeKind::StringType:
        if (s.is_string()) return s;
        return fail("not a string");
      case c10::TypeKind::ScalarTypeType:
        if (auto t = torch_dtype(v)) return json(static_cast<int64_t>(*t));
        return fail("not a torch.dtype");
      case c10::TypeKind::MemoryFormatType: {
        static const std::pair<const char*, at::MemoryFormat> formats[] = {
            {"contiguous_format", at::MemoryFormat::Contiguous}, {"preserve_format", at::MemoryFormat::Preserve},
            {"channels_last", at::MemoryFormat::ChannelsLast}, {"channels_last_3d", at::MemoryFormat::ChannelsLast3d}};
        const json f = v.is_object() && v.contains("format") ? v["format"] : s;
        for (const auto& [name, format] : formats)
          if (f == name) return json(static_cast<int64_t>(format));
        return fail("not a torch.memory_format");
      }
      case c10::TypeKind::DeviceObjType:
        return json{{"device", "cpu"}};  // the replay runs on the CPU, wherever the op ran
      default: return fail("a " + type->str() + " the replay cannot rebuild from dump.json");
    }
  }

  std::optional<json> list(const c10::TypePtr& element, c10::optional<int32_t> n, const json& v, const std::string& path) {
    const json& s = scalar_of(v);  // torch.Size: {"type": "torch.Size", "value": [...]}
    const auto kind = element->kind();
    const bool optional_tensor = kind == c10::TypeKind::OptionalType &&
                                 element->expectRef<c10::OptionalType>().getElementType()->kind() == c10::TypeKind::TensorType;
    if (!s.is_array()) {
      // int[2] stride=1: one int for every element, as Python's argument parser expands it
      if ((kind == c10::TypeKind::IntType || kind == c10::TypeKind::SymIntType) && s.is_number_integer())
        return json(std::vector<json>(n ? static_cast<size_t>(*n) : 1, s));
      if (kind == c10::TypeKind::FloatType && real(s) && n) return json(std::vector<json>(*n, *real(s)));
      return fail("not a list");
    }
    if (kind == c10::TypeKind::TensorType) {
      json slots = json::array(), dtypes = json::array();
      for (size_t i = 0; i < s.size(); ++i) {
        auto t = tensor(s[i], path + "." + std::to_string(i));
        if (!t) return std::nullopt;
        slots.push_back((*t)["tensor"]);
        dtypes.push_back((*t)["dtype"]);
      }
      return json{{"tensors", std::move(slots)}, {"dtypes", std::move(dtypes)}};
    }
    json out = json::array();
    for (size_t i = 0; i < s.size(); ++i) {
      std::optional<json> e;
      if (optional_tensor) e = s[i].is_null() ? json(nullptr) : tensor(s[i], path + "." + std::to_string(i));
      else e = convert(element, c10::nullopt, s[i], path + "." + std::to_string(i));
      if (!e) return std::nullopt;
      out.push_back(std::move(*e));
    }
    return out;
  }

  const PyCall& call_;
  std::string why_;
};

// The API's Python name without msprobe's prefix and call index: "Functional.conv2d.0.forward" ->
// "Functional.conv2d".
std::string rule_key(const MsprobeCall& call) {
  std::string key = call.api;
  for (int i = 0; i < 2; ++i) key = key.substr(0, key.find_last_of('.'));
  return key;
}

// A rule's object-valued field ({} when absent), kept alive for items().
const json& field(const json& rule, const char* name) {
  static const json empty = json::object();
  auto it = rule.find(name);
  return it == rule.end() || !it->is_object() ? empty : *it;
}

// The call with its API's rules applied; "" or why it cannot be one aten call.
std::string apply_rules(const json& rule, PyCall& call) {
  if (rule.contains("parameters")) {  // Python's positional arguments by the names of its signature
    const json& parameters = rule["parameters"];
    const size_t n = std::min(parameters.size(), call.positional.size());
    for (size_t i = 0; i < n; ++i) call.named[parameters[i].get<std::string>()] = call.positional[i];
    call.positional.erase(call.positional.begin(), call.positional.begin() + static_cast<long>(n));
  }
  auto value_of = [&](const std::string& name) -> const json* {
    auto it = call.named.find(name);
    return it == call.named.end() ? nullptr : &scalar_of(it->second.value);
  };
  for (const auto& name : rule.value("requires_none", json::array())) {
    if (const json* v = value_of(name); v && !v->is_null())
      return "argument " + name.get<std::string>() + "=" + v->dump() + " has no aten equivalent";
    call.named.erase(name.get<std::string>());
  }
  if (rule.contains("inplace"))
    if (const json* v = value_of(rule["inplace"]); v) {
      if (*v == true) call.op += "_";
      call.named.erase(rule["inplace"].get<std::string>());
    }
  for (const auto& [flag, op] : field(rule, "flag_operator").items())
    if (const json* v = value_of(flag); v) {
      if (*v == true) call.op = "aten::" + op.get<std::string>();
      call.named.erase(flag);
    }
  for (const auto& name : rule.value("drop", json::array())) call.named.erase(name.get<std::string>());
  for (const auto& [name, values] : field(rule, "enums").items())
    if (const json* v = value_of(name); v && v->is_string()) {
      if (!values.contains(v->get<std::string>())) return "argument " + name + "=" + v->dump() + " is not one of " + values.dump();
      call.named[name].value = values[v->get<std::string>()];
    }
  for (const auto& [name, value] : field(rule, "none_as").items())
    if (const json* v = value_of(name); v && v->is_null()) call.named[name].value = value;
  for (const auto& [from, to] : field(rule, "rename").items())
    if (auto it = call.named.find(from); it != call.named.end()) {
      PyArg moved = std::move(it->second);
      call.named.erase(it);
      call.named[to.get<std::string>()] = std::move(moved);
    }
  for (const auto& [name, value] : field(rule, "fixed").items())
    if (!call.named.count(name)) call.named[name] = PyArg{value, ""};
  return "";
}

json spec_of(const MsprobeCall& call) {
  json spec = json::object();
  spec["op_name"] = call.api;
  PyCall py;
  py.op = "aten::" + call.api_type;
  for (size_t i = 0; i < call.args.size(); ++i) py.positional.push_back({call.args[i], "input." + std::to_string(i)});
  for (const auto& [name, value] : call.kwargs) py.named[name] = PyArg{value, "input." + name};
  json output_dtypes = json::array();
  bool float32_in = false, low_in = false;
  at::ScalarType low_out = at::ScalarType::Undefined;
  for (const MsprobeTensor* t : call.tensors) {
    const at::ScalarType type = aten_dtype_or_undefined(t->dtype);
    const std::string dtype = c10::toString(type);
    const bool low = type == at::kBFloat16 || type == at::kHalf;
    if (t->input) {
      py.tensors[t->argument] = {t->slot, dtype};
      float32_in |= type == at::kFloat;
      low_in |= low;
    } else {
      if (output_dtypes.size() <= t->slot) output_dtypes.insert(output_dtypes.end(), t->slot + 1 - output_dtypes.size(), nullptr);
      output_dtypes[t->slot] = dtype;
      if (low) low_out = type;
    }
  }
  spec["output_dtypes"] = std::move(output_dtypes);
  // float32 in and bfloat16 out: the op ran under autocast (msprobe does not record it).
  spec["autocast_cpu"] = float32_in && !low_in && low_out != at::ScalarType::Undefined ? json(c10::toString(low_out)) : json(nullptr);

  const json& rules = api_rules();
  const auto rule = rules.find(rule_key(call));
  if (rule != rules.end()) {
    if (rule->contains("unsupported")) return {{"op_name", call.api}, {"unreplayable", (*rule)["unsupported"]}};
    if (rule->contains("operator")) py.op = "aten::" + (*rule)["operator"].get<std::string>();
    if (std::string why = apply_rules(*rule, py); !why.empty()) return {{"op_name", call.api}, {"unreplayable", why}};
  }
  const auto* overloads = overloads_of(py.op);
  if (!overloads)
    return {{"op_name", call.api}, {"unreplayable", "no aten operator " + py.op.substr(6) + " for " + rule_key(call)}};
  Binder binder(py);
  std::string first_why;
  for (const std::string& overload : *overloads) {
    auto handle = c10::Dispatcher::singleton().findSchema({py.op, overload});
    if (!handle) continue;
    if (auto arguments = binder.bind(handle->schema())) {
      spec["operator"] = py.op;
      spec["overload"] = overload;
      spec["arguments"] = std::move(*arguments);
      return spec;
    }
    if (first_why.empty() && binder.why() != "an out= overload") first_why = binder.why();
  }
  return {{"op_name", call.api},
          {"unreplayable", "its arguments fit no overload of " + py.op + (first_why.empty() ? "" : " (" + first_why + ")")}};
}

}  // namespace

std::map<std::string, json> msprobe_kernel_args(const std::string& dump_json) {
  const MsprobeCalls calls = read_msprobe_calls(dump_json);
  std::map<std::string, json> out;
  for (const MsprobeCall& call : calls.calls) out[sanitize_name(call.api)] = spec_of(call);
  return out;
}

}  // namespace opdump::replay
