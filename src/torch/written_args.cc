#include "written_args.h"

#include <algorithm>

#include "capture.h"
#include "host_stats.h"

namespace opdump::pt::detail {

void collect_written(const at::RecordFunction& fn, const OpTraits& op, WrittenTensors& tensors,
                     WrittenStorages& storages) {
  const auto& positions = op.written;
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

void written_results(const at::RecordFunction& fn, const OpTraits& op, std::vector<at::Tensor>& results) {
  const auto inputs = fn.inputs();
  for (uint32_t i : op.written)
    if (i < inputs.size()) tensors_of(c10::ArrayRef<c10::IValue>(&inputs[i], 1), results);
}

std::vector<bool> out_buffer_slots(const at::RecordFunction& fn, const OpTraits& op) {
  const auto& out = op.out;
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
