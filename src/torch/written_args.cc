#include "written_args.h"

#include <ATen/core/function_schema.h>

#include <algorithm>
#include <cstring>

#include "capture.h"
#include "host_stats.h"

namespace opdump::pt::detail {

const WrittenArgs::Positions& WrittenArgs::of(const at::RecordFunction& fn) {
  static const Positions none;
  auto it = by_overload_.find(fn.name());
  if (it != by_overload_.end()) return it->second;
  auto schema = fn.operator_schema();
  if (!schema) return none;  // not a dispatcher op: nothing cached (its name may be a temporary)
  Positions p;
  const auto& args = schema->arguments();
  // PyTorch 1.x does not annotate the running statistics batch_norm kernels update in place, and
  // not every kernel bumps the version counter of what it writes.
  const bool batch_norm = std::strstr(fn.name(), "batch_norm") != nullptr;
  for (size_t i = 0; i < args.size(); ++i) {
    const bool writes = args[i].alias_info() && args[i].alias_info()->isWrite();
    if (writes || (batch_norm && (args[i].name() == "running_mean" || args[i].name() == "running_var")))
      p.written.push_back(static_cast<uint32_t>(i));
    if (writes && args[i].kwarg_only()) p.out.push_back(static_cast<uint32_t>(i));
  }
  return by_overload_.emplace(fn.name(), std::move(p)).first->second;
}

void WrittenArgs::collect(const at::RecordFunction& fn, WrittenTensors& tensors, WrittenStorages& storages) {
  const auto& positions = of(fn).written;
  if (positions.empty()) return;
  auto add = [&](const at::Tensor& t) {
    if (!t.defined()) return;
    tensors.push_back(t.unsafeGetTensorImpl());
    if (const c10::StorageImpl* storage = storage_of(t)) storages.push_back(storage);
  };
  const auto inputs = fn.inputs();
  for (uint32_t i : positions) {
    if (i >= inputs.size()) continue;
    if (inputs[i].isTensor()) {
      add(inputs[i].toTensor());
    } else if (inputs[i].isTensorList()) {  // _foreach_add_(Tensor(a!)[] self, ...): optimizers
      for (const at::Tensor& t : inputs[i].toTensorVector()) add(t);
    }
  }
}

std::vector<bool> WrittenArgs::out_buffer_slots(const at::RecordFunction& fn) {
  const auto& out = of(fn).out;
  std::vector<bool> slots;
  const auto inputs = fn.inputs();
  for (size_t i = 0; i < inputs.size(); ++i) {
    const size_t n = tensors_of(c10::ArrayRef<c10::IValue>(&inputs[i], 1)).size();
    const bool is_out = std::find(out.begin(), out.end(), static_cast<uint32_t>(i)) != out.end();
    slots.insert(slots.end(), n, is_out);
  }
  return slots;
}

}  // namespace opdump::pt::detail
