#include "op_traits.h"

#include <ATen/core/function_schema.h>

#include <cstring>

#include "select/op_kinds.h"

namespace opdump::pt::detail {
namespace {

OpTraits traits_of(const char* name, const c10::FunctionSchema* schema) {
  OpTraits t;
  t.is_operator = op_kinds::is_operator(name);
  if (!t.is_operator) return t;
  t.type = std::strstr(name, "::") + 2;
  t.computes_nothing = op_kinds::computes_nothing(t.type);
  t.copied_input = op_kinds::copied_input(t.type);
  t.aliases_input = op_kinds::aliases_input(t.type);
  t.bound_rule = bound_rule(t.type);
  t.product_sum = product_sum_of(t.type);
  // (_foreach_zero_, an optimizer's zero_grad() in PyTorch 1.13, writes zeros into a list: nothing to check)
  if (!std::strcmp(name, "aten::zero_") || !std::strcmp(name, "aten::fill_") || !std::strcmp(name, "aten::_foreach_zero_"))
    t.derives = OpTraits::Derives::Fill;
  else if (!std::strcmp(name, "aten::add_")) t.derives = OpTraits::Derives::AddInPlace;
  else if (!std::strcmp(name, "aten::mul_")) t.derives = OpTraits::Derives::MulInPlace;
  if (!schema) return t;
  const auto& args = schema->arguments();
  t.returns_nothing = schema->returns().empty();
  // PyTorch 1.x does not annotate the running statistics batch_norm kernels update in place, and
  // not every kernel bumps the version counter of what it writes.
  const bool batch_norm = std::strstr(name, "batch_norm") != nullptr;
  for (size_t i = 0; i < args.size(); ++i) {
    const bool writes = args[i].alias_info() && args[i].alias_info()->isWrite();
    if (writes || (batch_norm && (args[i].name() == "running_mean" || args[i].name() == "running_var")))
      t.written.push_back(static_cast<uint32_t>(i));
    if (writes && args[i].kwarg_only()) t.out.push_back(static_cast<uint32_t>(i));
  }
  return t;
}

}  // namespace

const OpTraits& OpTraitsCache::of(const at::RecordFunction& fn) {
  const char* name = fn.name();
  Recent& recent = recent_[(reinterpret_cast<uintptr_t>(name) >> 3) % recent_.size()];
  if (recent.name == name) return *recent.traits;
  auto it = by_overload_.find(name);
  if (it != by_overload_.end()) {
    recent = Recent{name, &it->second};
    return it->second;
  }
  // Only a dispatcher op's name is one static string; another record's may be a temporary whose
  // address a later record reuses.
  auto schema = fn.operator_schema();
  if (!schema) return uncached_ = traits_of(name, nullptr);
  const OpTraits& traits = by_overload_.emplace(name, traits_of(name, &*schema)).first->second;
  recent = Recent{name, &traits};
  return traits;
}

}  // namespace opdump::pt::detail
