#include "arguments.h"

#include <ATen/core/jit_type.h>

#include <cmath>

#include "opdump/error.h"

namespace opdump::replay {
namespace {

using json = nlohmann::json;

double real_of(const json& v) {
  if (v.is_string()) {
    const std::string& s = v.get_ref<const std::string&>();
    if (s == "nan") return NAN;
    if (s == "inf") return INFINITY;
    if (s == "-inf") return -INFINITY;
  }
  return v.get<double>();
}

bool is_real(const json& v) {
  if (v.is_number()) return true;
  if (!v.is_string()) return false;
  const std::string& s = v.get_ref<const std::string&>();
  return s == "nan" || s == "inf" || s == "-inf";
}

class Builder {
 public:
  Builder(const std::vector<at::Tensor>& inputs, std::string* why) : inputs_(inputs), why_(why) {}

  std::optional<c10::IValue> value(const c10::TypePtr& type, const json& v) {
    if (v.is_null()) return c10::IValue();
    if (v.is_object() && v.contains("unsupported")) return fail("an argument of a kind the args file does not record");
    switch (type->kind()) {
      case c10::TypeKind::OptionalType: return value(type->expectRef<c10::OptionalType>().getElementType(), v);
      case c10::TypeKind::TensorType: return tensor(v);
      case c10::TypeKind::ListType: return list(type->expectRef<c10::ListType>().getElementType(), v);
      case c10::TypeKind::BoolType:
        if (v.is_boolean()) return c10::IValue(v.get<bool>());
        return fail("a bool argument that is not true or false");
      case c10::TypeKind::FloatType:
        if (is_real(v)) return c10::IValue(real_of(v));
        return fail("a float argument that is not a number");
      case c10::TypeKind::StringType:
        if (v.is_string()) return c10::IValue(v.get<std::string>());
        return fail("a string argument that is not a string");
      case c10::TypeKind::DeviceObjType:
        if (v.is_object() && v.contains("device")) return c10::IValue(c10::Device(v["device"].get<std::string>()));
        return fail("a device argument without a device");
      case c10::TypeKind::NumberType:  // Scalar
        if (v.is_boolean()) return c10::IValue(v.get<bool>());
        if (v.is_number_integer()) return c10::IValue(v.get<int64_t>());
        if (is_real(v)) return c10::IValue(real_of(v));
        if (v.is_object() && v.contains("complex"))
          return c10::IValue(c10::complex<double>(real_of(v["complex"][0]), real_of(v["complex"][1])));
        return fail("a Scalar argument that is not a number");
      default:
        // int, SymInt, ScalarType, Layout, MemoryFormat: integers in the args file.
        if (v.is_number_integer()) return c10::IValue(v.get<int64_t>());
        if (v.is_boolean()) return c10::IValue(v.get<bool>());
        return fail("an argument of type " + type->str() + " the replay cannot rebuild");
    }
  }

 private:
  std::optional<c10::IValue> fail(const std::string& why) {
    *why_ = why;
    return std::nullopt;
  }
  std::optional<at::Tensor> slot(const json& index) {
    if (!index.is_number_unsigned() || index.get<uint64_t>() >= inputs_.size()) {
      *why_ = "tensor slot " + index.dump() + " is not among the dumped inputs";
      return std::nullopt;
    }
    return inputs_[index.get<size_t>()];
  }
  std::optional<c10::IValue> tensor(const json& v) {
    if (!v.is_object() || !v.contains("tensor")) return fail("a tensor argument without a tensor slot");
    auto t = slot(v["tensor"]);
    if (!t) return std::nullopt;
    if (v.value("wrapped_number", false) && t->defined() && t->dim() == 0 && t->device().is_cpu()) {
      at::Tensor number = t->detach();  // its own TensorImpl: the slot's tensor serves other runs too
      number.unsafeGetTensorImpl()->set_wrapped_number(true);
      return c10::IValue(number);
    }
    return c10::IValue(*t);
  }
  std::optional<c10::IValue> list(const c10::TypePtr& element, const json& v) {
    if (element->kind() == c10::TypeKind::TensorType) {
      if (!v.is_object() || !v.contains("tensors")) return fail("a tensor list without its slots");
      c10::List<at::Tensor> out;
      for (const auto& index : v["tensors"]) {
        auto t = slot(index);
        if (!t) return std::nullopt;
        out.push_back(*t);
      }
      return c10::IValue(out);
    }
    if (!v.is_array()) return fail("a list argument that is not a list");
    if (element->kind() == c10::TypeKind::OptionalType &&
        element->expectRef<c10::OptionalType>().getElementType()->kind() == c10::TypeKind::TensorType) {
      c10::List<c10::optional<at::Tensor>> out;  // Tensor?[] (index)
      for (const auto& e : v) {
        if (e.is_null()) {
          out.push_back(c10::nullopt);
          continue;
        }
        auto t = tensor(e);
        if (!t) return std::nullopt;
        out.push_back(t->toTensor());
      }
      return c10::IValue(out);
    }
    switch (element->kind()) {
      case c10::TypeKind::FloatType: {
        c10::List<double> out;
        for (const auto& e : v) {
          if (!is_real(e)) return fail("a float list with a non-number");
          out.push_back(real_of(e));
        }
        return c10::IValue(out);
      }
      case c10::TypeKind::BoolType: {
        c10::List<bool> out;
        for (const auto& e : v) {
          if (!e.is_boolean()) return fail("a bool list with a non-bool");
          out.push_back(e.get<bool>());
        }
        return c10::IValue(out);
      }
      case c10::TypeKind::NumberType: {  // Scalar[]: an optimizer's _foreach_div_(self, scalars)
        c10::impl::GenericList out(c10::NumberType::get());
        for (const auto& e : v) {
          if (e.is_number_integer()) out.push_back(c10::IValue(e.get<int64_t>()));
          else if (is_real(e)) out.push_back(c10::IValue(real_of(e)));
          else return fail("a Scalar list with a non-number");
        }
        return c10::IValue(out);
      }
      default: {  // int[], SymInt[]
        c10::List<int64_t> out;
        for (const auto& e : v) {
          if (!e.is_number_integer()) return fail("an int list with a non-integer");
          out.push_back(e.get<int64_t>());
        }
        return c10::IValue(out);
      }
    }
  }

  const std::vector<at::Tensor>& inputs_;
  std::string* why_;
};

}  // namespace

at::ScalarType aten_dtype(DType d) {
  switch (d) {
    case DType::Bool: return at::kBool;
    case DType::Int8: return at::kChar;
    case DType::Int16: return at::kShort;
    case DType::Int32: return at::kInt;
    case DType::Int64: return at::kLong;
    case DType::UInt8: return at::kByte;
    case DType::Float16: return at::kHalf;
    case DType::BFloat16: return at::kBFloat16;
    case DType::Float32: return at::kFloat;
    case DType::Float64: return at::kDouble;
    case DType::Complex64: return at::kComplexFloat;
    case DType::Complex128: return at::kComplexDouble;
    default: throw Error(std::string("dtype ") + std::string(dtype_name(d)) + " has no PyTorch equivalent here");
  }
}

c10::optional<c10::OperatorHandle> find_operator(const json& spec) {
  if (!spec.contains("operator") || !spec["operator"].is_string()) return c10::nullopt;
  const std::string overload = spec.contains("overload") && spec["overload"].is_string() ? spec["overload"].get<std::string>() : "";
  return c10::Dispatcher::singleton().findSchema({spec["operator"].get<std::string>(), overload});
}

std::optional<std::vector<c10::IValue>> build_stack(const c10::OperatorHandle& op, const json& spec,
                                                    const std::vector<at::Tensor>& inputs, std::string* why) {
  const auto& schema = op.schema();
  const json& args = spec["arguments"];
  if (!args.is_array()) {
    *why = "the args file has no argument list";
    return std::nullopt;
  }
  if (args.size() > schema.arguments().size()) {
    *why = "the args file lists more arguments than " + schema.name() + " takes";
    return std::nullopt;
  }
  Builder builder(inputs, why);
  std::vector<c10::IValue> stack;
  for (size_t i = 0; i < schema.arguments().size(); ++i) {
    const auto& argument = schema.arguments()[i];
    if (i >= args.size()) {  // recorded by an older PyTorch with fewer arguments: the default
      if (!argument.default_value()) {
        *why = "argument " + argument.name() + " is not in the args file";
        return std::nullopt;
      }
      stack.push_back(*argument.default_value());
      continue;
    }
    auto v = builder.value(argument.type(), args[i].contains("value") ? args[i]["value"] : json());
    if (!v) {
      *why = "argument " + argument.name() + ": " + *why;
      return std::nullopt;
    }
    stack.push_back(std::move(*v));
  }
  return stack;
}

at::ScalarType scalar_type_named(const json& name) {
  if (!name.is_string()) return at::ScalarType::Undefined;
  static const std::pair<const char*, at::ScalarType> known[] = {
      {"Float", at::kFloat}, {"Double", at::kDouble}, {"Half", at::kHalf}, {"BFloat16", at::kBFloat16},
      {"Long", at::kLong},   {"Int", at::kInt},       {"Short", at::kShort}, {"Char", at::kChar},
      {"Byte", at::kByte},   {"Bool", at::kBool},     {"ComplexFloat", at::kComplexFloat},
      {"ComplexDouble", at::kComplexDouble}};
  for (const auto& [n, t] : known)
    if (name.get_ref<const std::string&>() == n) return t;
  return at::ScalarType::Undefined;
}

namespace {

// Calls `visit` on each object in the args file's argument values, through lists and the objects' own
// members (a tensor list's "layouts"), in order.
void for_each_argument_object(const json& spec, const std::function<void(const json&)>& visit) {
  std::function<void(const json&)> walk = [&](const json& v) {
    if (v.is_object()) visit(v);
    if (v.is_structured())
      for (const auto& e : v) walk(e);
  };
  if (spec.contains("arguments") && spec["arguments"].is_array())
    for (const auto& a : spec["arguments"])
      if (a.contains("value")) walk(a["value"]);
}

}  // namespace

std::vector<at::ScalarType> recorded_dtypes(const json& spec) {
  std::vector<at::ScalarType> out;
  auto put = [&](const json& slot, const json& dtype) {
    if (!slot.is_number_unsigned() || slot.get<uint64_t>() > 100000) return;  // build_stack names a bad slot
    const size_t at = slot.get<size_t>();
    if (out.size() <= at) out.resize(at + 1, at::ScalarType::Undefined);
    out[at] = scalar_type_named(dtype);
  };
  for_each_argument_object(spec, [&](const json& v) {
    if (v.contains("tensor")) put(v["tensor"], v.contains("dtype") ? v["dtype"] : json());
    if (v.contains("tensors") && v["tensors"].is_array())
      for (size_t i = 0; i < v["tensors"].size(); ++i)
        put(v["tensors"][i], v.contains("dtypes") && i < v["dtypes"].size() ? v["dtypes"][i] : json());
  });
  return out;
}

bool ran_on_the_cpu(const json& spec) {
  bool recorded = false, elsewhere = false;
  auto note = [&](bool on_cpu) {
    recorded = true;
    elsewhere = elsewhere || !on_cpu;
  };
  for_each_argument_object(spec, [&](const json& v) {
    if (v.contains("device_type") && v["device_type"].is_number_integer())
      note(v["device_type"].get<int64_t>() == static_cast<int64_t>(c10::DeviceType::CPU));
    if (v.contains("device") && v["device"].is_string()) note(v["device"].get<std::string>() == "cpu");
  });
  return recorded && !elsewhere;
}

at::ScalarType autocast_of(const json& spec) {
  auto it = spec.find("autocast_cpu");
  return it == spec.end() ? at::ScalarType::Undefined : scalar_type_named(*it);
}

}  // namespace opdump::replay
