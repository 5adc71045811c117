// KnownChecks: what overflow mode knows of host tensors (known_checks.h).
#include "known_checks.h"

#include <algorithm>

#include "capture.h"
#include "host_stats.h"
#include "device_reduce.h"
#include "intra_op_split.h"

namespace opdump::pt::detail {

OverflowCheck check_host(const at::Tensor& t) {
  DType dtype;
  if (!t.defined() || t.layout() != at::kStrided || !dtype_of(t.scalar_type(), &dtype) || !dtype_can_overflow(dtype))
    return {};
  const at::Tensor c = t.is_contiguous() ? t : t.contiguous();
  const IntraOpSplit split = intra_op_split();
  return check_overflow(TensorView{c.numel() ? c.data_ptr() : nullptr, dtype, Shape(c.sizes().begin(), c.sizes().end())},
                        split.runner, split.parts, IntraOpSplit::kFromBytes);
}

std::optional<double> single_value(const at::Tensor& t) {
  if (!t.defined() || !t.device().is_cpu() || t.layout() != at::kStrided || t.numel() != 1 || !t.has_storage() ||
      !t.storage().data())
    return std::nullopt;  // (wrapper subclasses hold no storage)
  switch (t.scalar_type()) {
    case at::kDouble: return *t.data_ptr<double>();
    case at::kFloat: return *t.data_ptr<float>();
    case at::kHalf: return static_cast<double>(*t.data_ptr<at::Half>());
    case at::kBFloat16: return static_cast<double>(*t.data_ptr<at::BFloat16>());
    case at::kLong: return static_cast<double>(*t.data_ptr<int64_t>());
    case at::kInt: return *t.data_ptr<int32_t>();
    case at::kBool: return *t.data_ptr<bool>() ? 1.0 : 0.0;
    default: return std::nullopt;
  }
}

void KnownChecks::remember(const at::Tensor& t, const OverflowCheck& check) {
  if (!t.defined() || t.is_inference() || !t.device().is_cpu()) return;
  const c10::StorageImpl* storage = storage_of(t);
  Entry e{c10::weak_intrusive_ptr<c10::TensorImpl>(t.getIntrusivePtr()), t._version(),
          t.numel() ? t.data_ptr() : nullptr, storage, 0, storage_fingerprint(t), check};
  std::lock_guard<std::mutex> lock(mutex_);
  if (storage) e.generation = generations_[storage];
  entries_.insert_or_assign(t.unsafeGetTensorImpl(), std::move(e));
}

std::optional<OverflowCheck> KnownChecks::peek(const at::Tensor& t) {
  if (!t.defined() || t.is_inference() || !t.device().is_cpu()) return std::nullopt;
  const c10::StorageImpl* storage = storage_of(t);
  uint64_t fingerprint;
  OverflowCheck check;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = entries_.find(t.unsafeGetTensorImpl());
    if (it == entries_.end()) return std::nullopt;
    const Entry& e = it->second;
    if (e.impl.expired() || e.version != t._version() || e.data != (t.numel() ? t.data_ptr() : nullptr) ||
        e.storage != storage)
      return std::nullopt;
    if (storage) {
      auto g = generations_.find(storage);
      if (g == generations_.end() || g->second != e.generation) return std::nullopt;
    }
    fingerprint = e.fingerprint;
    check = e.check;
  }
  // Sampled outside the lock, which the background thread's checks take too.
  if (fingerprint != storage_fingerprint(t)) return std::nullopt;
  return check;
}

OverflowCheck KnownChecks::of(const at::Tensor& t) {
  if (std::optional<OverflowCheck> known = peek(t)) return *known;
  OverflowCheck c = check_host(t);
  remember(t, c);
  return c;
}

double KnownChecks::bound_of(const at::Tensor& t) {
  if (std::optional<OverflowCheck> known = peek(t)) return known->max_abs;
  if (t.defined() && t.is_view())
    if (std::optional<OverflowCheck> base = peek(at::Tensor(t._base()))) return base->max_abs;
  return kUnknownBound;
}

void KnownChecks::written(c10::ArrayRef<const c10::StorageImpl*> storages) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (generations_.empty()) return;
  for (const c10::StorageImpl* s : storages)
    if (auto g = generations_.find(s); g != generations_.end()) ++g->second;
}

void KnownChecks::drop_dead() {
  std::lock_guard<std::mutex> lock(mutex_);
  for (auto e = entries_.begin(); e != entries_.end();) e = e->second.impl.expired() ? entries_.erase(e) : std::next(e);
  std::unordered_map<const c10::StorageImpl*, uint64_t> live;
  for (const auto& [impl, e] : entries_)
    if (e.storage) live.emplace(e.storage, generations_[e.storage]);
  generations_.swap(live);
}

void KnownChecks::clear() {
  std::lock_guard<std::mutex> lock(mutex_);
  entries_.clear();
  generations_.clear();
}

BoundedOp::Operands KnownChecks::operand_bounds(const BoundedOp& op, const std::vector<at::Tensor>& inputs) {
  BoundedOp::Operands operands = op.operands;
  for (size_t k = 0; k < operands.size(); ++k) {
    const int slot = op.input_index[k];
    if (slot < 0) continue;
    auto before = std::find_if(op.written_before.begin(), op.written_before.end(),
                               [slot](const auto& w) { return w.first == static_cast<size_t>(slot); });
    if (before != op.written_before.end()) {
      operands[k].magnitude = before->second;
    } else {
      operands[k].magnitude = bound_of(inputs[slot]);  // infinite when unknown: a rule reading it gives no bound
    }
  }
  return operands;
}

double KnownChecks::bound_before(const BoundedOp& op, const std::vector<at::Tensor>& inputs, DType output,
                                 BoundedOp::Operands* operands) {
  const BoundedOp::Operands read = operand_bounds(op, inputs);
  if (operands) *operands = read;
  return output_bound(op.rule, BoundOperands(read.data(), read.size()), output);
}

std::optional<OverflowCheck> KnownChecks::bounded_check(const BoundedOp& op, const std::vector<at::Tensor>& inputs,
                                                        const std::vector<at::Tensor>& outputs) {
  DType dtype;
  if (outputs.size() != 1 || !outputs[0].defined() || !outputs[0].device().is_cpu() ||
      outputs[0].layout() != at::kStrided || !dtype_of(outputs[0].scalar_type(), &dtype))
    return std::nullopt;  // (output_bound gives no bound for other than real floating dtypes)
  const double bound = bound_is_clean(op.clean_before) ? op.clean_before : bound_before(op, inputs, dtype);
  if (!bound_is_clean(bound)) return std::nullopt;
  OverflowCheck clean;
  clean.max_abs = bound;
  remember(outputs[0], clean);
  return clean;
}

double KnownChecks::product_sum_bound(const ProductSumOp& op, const std::vector<at::Tensor>& inputs,
                                      const at::Tensor& output, size_t index) {
  DType dtype;
  if (op.kind == ProductSum::None || !output.defined() || !output.device().is_cpu() ||
      output.layout() != at::kStrided || !dtype_of(output.scalar_type(), &dtype))
    return kUnknownBound;
  ProductSumOperands args;
  args.transposed = op.transposed;
  args.alpha = op.alpha;
  args.beta = op.beta;
  for (size_t k = 0; k < 3; ++k) {
    const int slot = op.slot[k];
    if (slot < 0) continue;
    if (static_cast<size_t>(slot) >= inputs.size()) return kUnknownBound;
    const at::Tensor& t = inputs[slot];
    // (the kernel sums in the operands' dtype: only the output's, float32 or float64)
    if (!t.defined() || !t.device().is_cpu() || t.layout() != at::kStrided || t.scalar_type() != output.scalar_type() ||
        static_cast<size_t>(t.dim()) > ProductSumOperands::kMaxDim)
      return kUnknownBound;
    ProductSumOperands::Tensor& a = args.tensor[k];
    a.present = true;
    a.dim = static_cast<size_t>(t.dim());
    for (size_t d = 0; d < a.dim; ++d) a.sizes[d] = t.size(static_cast<int64_t>(d));
    a.bound = bound_of(t);  // (infinite when not known: a rule reading it gives no bound)
  }
  return opdump::product_sum_bound(op.kind, args, index, dtype);
}

std::optional<OverflowCheck> KnownChecks::product_sum_check(const ProductSumOp& op, const std::vector<at::Tensor>& inputs,
                                                            const at::Tensor& output, size_t index) {
  const double bound = product_sum_bound(op, inputs, output, index);
  if (!bound_is_clean(bound)) return std::nullopt;
  OverflowCheck clean;
  clean.max_abs = bound;
  remember(output, clean);
  return clean;
}

bool KnownChecks::product_sum_checks(const ProductSumOp& op, const std::vector<at::Tensor>& inputs,
                                     const std::vector<at::Tensor>& outputs) {
  c10::SmallVector<double, 3> bounds;
  for (size_t i = 0; i < outputs.size(); ++i) {
    const at::Tensor& t = outputs[i];
    const bool checked = t.defined() && t.numel() > 0 && can_overflow(t);  // (an undefined gradient: output_mask)
    bounds.push_back(checked ? product_sum_bound(op, inputs, t, i) : -1.0);
    if (checked && !bound_is_clean(bounds.back())) return false;
  }
  for (size_t i = 0; i < outputs.size(); ++i) {
    if (bounds[i] < 0) continue;
    OverflowCheck clean;
    clean.max_abs = bounds[i];
    remember(outputs[i], clean);
  }
  return true;
}

}  // namespace opdump::pt::detail
