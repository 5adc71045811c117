// The tensors an op writes in place, at the argument positions its traits list (op_traits.h: its
// schema's alias annotations, "Tensor(a!)"): the statistics barrier finishes what reads those
// storages before the op runs, and out= buffers are dumped as placeholders (their bytes before
// the op mean nothing).
#pragma once
#include <ATen/ATen.h>
#include <ATen/record_function.h>
#include <c10/util/SmallVector.h>

#include <cstdint>
#include <vector>

#include "op_traits.h"

namespace opdump::pt::detail {

// What one op writes: most write one tensor (an optimizer's _foreach_ ops, one per parameter), so
// the lists live inside the op's context without an allocation of their own.
using WrittenTensors = c10::SmallVector<const c10::TensorImpl*, 4>;
using WrittenStorages = c10::SmallVector<const c10::StorageImpl*, 4>;

// The tensors (and their storages) `fn` may modify in place: its arguments at `op.written`.
void collect_written(const at::RecordFunction& fn, const OpTraits& op, WrittenTensors& tensors,
                     WrittenStorages& storages);
// The tensors `fn` writes in place, in argument order, appended to `results`: the results of an op
// whose schema returns nothing (an optimizer's `_foreach_add_(Tensor(a!)[] self, ...) -> ()`).
// Asked at the op's start: its boxed inputs are gone by its end.
void written_results(const at::RecordFunction& fn, const OpTraits& op, std::vector<at::Tensor>& results);
// Per dump slot of `fn`'s input tensors: whether it is an out= buffer (`op.out`).
std::vector<bool> out_buffer_slots(const at::RecordFunction& fn, const OpTraits& op);

}  // namespace opdump::pt::detail
