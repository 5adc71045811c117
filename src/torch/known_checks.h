// What overflow mode knows of host tensors as they are now: their checks (an op's output is
// checked once it is produced, on the background thread, and the next op writing it in place reads
// the result here instead of scanning it again), and the bounds of their |x| that let an
// elementwise op's output be known clean without reading it (range_bound.h).
#pragma once
#include <ATen/ATen.h>
#include <c10/util/SmallVector.h>

#include <limits>
#include <mutex>
#include <optional>
#include <unordered_map>
#include <utility>
#include <vector>

#include "debug_scenes/debug_scenes.h"
#include "debug_scenes/product_sum_bound.h"
#include "debug_scenes/range_bound.h"

namespace opdump::pt::detail {

constexpr double kUnknownBound = std::numeric_limits<double>::infinity();

// One read-only pass over a host tensor (split over the intra-op threads where it may be).
OverflowCheck check_host(const at::Tensor& t);

// An op whose output has a bound rule (range_bound.h), as the rule reads its arguments: tensors
// by their index in the op's tensor inputs (tensors_of), their bounds looked up when the output is
// checked; an input the op writes in place by its bound before the op (infinite when not known then).
// (Inline storage for the few operands of the ops that have rules: no allocation per op.)
struct BoundedOp {
  using Operands = c10::SmallVector<BoundOperand, 5>;
  BoundRule rule = BoundRule::None;
  Operands operands;
  c10::SmallVector<int, 5> input_index;  // per operand: its slot among the tensor inputs, -1 for numbers and others
  c10::SmallVector<std::pair<size_t, double>, 2> written_before;  // (slot, bound)
  // The output's bound when the operands' bounds already showed it clean before the op ran
  // (KnownChecks::bound_before); infinite otherwise.
  double clean_before = kUnknownBound;
};

// The value of a one-element host tensor of a real dtype (a Python number passed to a Tensor
// argument, a 0-dim learning rate), read in place.
std::optional<double> single_value(const at::Tensor& t);

// The op's arguments as its bound rule reads them (tensors numbered as tensors_of numbers them);
// false for arguments no rule takes (lists). `Values`: RecordFunction::inputs().
template <typename Values>
bool describe_operands(const Values& args, BoundedOp& op) {
  op.operands.reserve(args.size());
  op.input_index.reserve(args.size());
  int tensor = 0;
  for (const c10::IValue& v : args) {
    if (v.isTensor()) {
      const std::optional<double> value = op.operands.empty() ? std::nullopt : single_value(v.toTensor());
      op.operands.push_back(value ? BoundOperand::number(*value) : BoundOperand::tensor());
      op.input_index.push_back(value ? -1 : tensor);
      ++tensor;
      continue;
    }
    if (v.isTensorList() || v.isList()) return false;
    op.operands.push_back(v.isDouble() ? BoundOperand::number(v.toDouble())
                          : v.isInt()  ? BoundOperand::number(static_cast<double>(v.toInt()))
                          : v.isBool() ? BoundOperand::number(v.toBool() ? 1.0 : 0.0)
                                       : BoundOperand::other());
    op.input_index.push_back(-1);
  }
  return true;
}

// An op of bound rule `rule` (bound_rule of its type, OpTraits::bound_rule) with its arguments as the
// rule reads them, into `op`, a default one (built in place: no small vectors moved per op); rule None
// when it has none or its arguments fit no rule.
template <typename Values>
void describe_bounded_op(BoundRule rule, const Values& args, BoundedOp& op) {
  op.rule = rule;
  if (op.rule != BoundRule::None && !describe_operands(args, op)) op = BoundedOp{};
}

// A product-sum op (product_sum_bound.h) as its rule reads its arguments: its first three tensor
// arguments by their index in the op's tensor inputs (-1: absent, an optional bias left out), read
// when its outputs are checked; its flags and factors as given.
struct ProductSumOp {
  ProductSum kind = ProductSum::None;
  int8_t slot[3] = {-1, -1, -1};
  bool transposed = false;
  double alpha = 1, beta = 1;
};

// An op of product-sum rule `kind` (product_sum_of of its type, OpTraits::product_sum) with its arguments
// as the rule reads them; kind None when it has none or its arguments fit it not. `Values`:
// RecordFunction::inputs().
template <typename Values>
ProductSumOp product_sum_op(ProductSum kind, const Values& args) {
  ProductSumOp op;
  op.kind = kind;
  if (op.kind == ProductSum::None) return op;
  if (args.size() < 2) return ProductSumOp{};
  int8_t tensors = 0;
  for (size_t i = 0; i < 3 && i < args.size(); ++i) {
    if (args[i].isTensor()) op.slot[i] = tensors++;
    else if (!args[i].isNone() || i < 2) return ProductSumOp{};  // the two factors are tensors; a bias may be None
  }
  if (const int t = product_sum_transposed_arg(op.kind); t >= 0) {
    if (static_cast<size_t>(t) >= args.size() || !args[t].isBool()) return ProductSumOp{};
    op.transposed = args[t].toBool();
  }
  if (op.kind == ProductSum::AddMatrixProduct) {
    auto number = [&](size_t i, double& out) {
      if (i >= args.size()) return true;  // the default, 1
      if (args[i].isDouble()) out = args[i].toDouble();
      else if (args[i].isInt()) out = static_cast<double>(args[i].toInt());
      else return false;
      return true;
    };
    if (!number(3, op.beta) || !number(4, op.alpha)) return ProductSumOp{};
  }
  return op;
}

// A check is valid while the tensor lives with the same version, data, storage generation (bumped
// by every op writing the storage: an alias with its own version counter, as `.data` gives,
// writes it unseen by the version) and storage fingerprint (writes no op showed: NumPy views).
// Shared by the training threads and the background thread.
class KnownChecks {
 public:
  void remember(const at::Tensor& t, const OverflowCheck& check);
  // The check of `t` if known.
  std::optional<OverflowCheck> peek(const at::Tensor& t);
  // The check of `t`, known or scanned now.
  OverflowCheck of(const at::Tensor& t);
  // An upper bound of |x| over `t`: its own check's, or else that of the tensor it is a view of
  // (a linear layer's weight gradient is the transpose of a product); infinite when not known.
  double bound_of(const at::Tensor& t);
  // The check of a bounded op's one output when its rule shows it clean from its operands' bounds
  // (remembered as the output's check); nullopt when it cannot (an operand's bound the rule reads
  // not known yet, a bound beyond float16's range, an output on a device).
  std::optional<OverflowCheck> bounded_check(const BoundedOp& op, const std::vector<at::Tensor>& inputs,
                                             const std::vector<at::Tensor>& outputs);
  // An upper bound of |x| over output `index` of a product-sum op, from its operands' bounds as known
  // now; infinite when it cannot be given (an operand's bound not known, dtypes other than float32 and
  // float64, an output on a device).
  double product_sum_bound(const ProductSumOp& op, const std::vector<at::Tensor>& inputs, const at::Tensor& output,
                           size_t index);
  // The check of output `index` of a product-sum op when its bound shows it clean (remembered as the
  // output's check); nullopt when it cannot.
  std::optional<OverflowCheck> product_sum_check(const ProductSumOp& op, const std::vector<at::Tensor>& inputs,
                                                 const at::Tensor& output, size_t index);
  // Whether every output of a product-sum op that can overflow is clean from its bound (each
  // remembered then); nothing is remembered when one is not.
  bool product_sum_checks(const ProductSumOp& op, const std::vector<at::Tensor>& inputs,
                          const std::vector<at::Tensor>& outputs);
  // The bound of a bounded op's output of dtype `output` from its operands' bounds as they are
  // before it runs (what an op writing an input in place reads is the input as it is now);
  // infinite when an operand's bound the rule reads is not known.
  // `operands`, when given, gets the operands with the bounds it read (infinite: not known).
  double bound_before(const BoundedOp& op, const std::vector<at::Tensor>& inputs, DType output,
                      BoundedOp::Operands* operands = nullptr);
  // An op wrote these storages.
  void written(c10::ArrayRef<const c10::StorageImpl*> storages);
  void drop_dead();  // entries of tensors that died
  void clear();

 private:
  // The rule's operands with the bounds of the tensors among them: `written_before`'s for the
  // inputs it lists, the tensors' own (as known now) for the others.
  BoundedOp::Operands operand_bounds(const BoundedOp& op, const std::vector<at::Tensor>& inputs);

  struct Entry {
    c10::weak_intrusive_ptr<c10::TensorImpl> impl;
    int64_t version;
    const void* data;
    const c10::StorageImpl* storage;
    uint64_t generation;
    uint64_t fingerprint;  // of the storage: writes no version or op showed
    OverflowCheck check;
  };
  std::mutex mutex_;
  std::unordered_map<const c10::TensorImpl*, Entry> entries_;
  // Writes seen per storage, for the storages of entries (those of others do not matter).
  std::unordered_map<const c10::StorageImpl*, uint64_t> generations_;
};

}  // namespace opdump::pt::detail
