// What an operator type does to data, as selection and data flow need to know it: the one place
// that lists op types (framework-independent: names are ATen's, which torch_npu shares).
#pragma once
#include <string>
#include <string_view>
#include <vector>

#include "opdump/api.h"

namespace opdump::op_kinds {

// "aten::add" or "c10d::allreduce_" is an operator; "autograd::engine::...", "profiler::..."
// and names with spaces are records of other things.
OPDUMP_ADAPTER_API bool is_operator(const char* record_name);
// Factories, views and metadata: nothing is computed from data (skip_no_compute_ops).
OPDUMP_ADAPTER_API bool computes_nothing(std::string_view op_type);
// Its output is a copy of the input at this slot (to, clone, contiguous, copy_'s source): data
// flow runs through it. -1 for other ops.
OPDUMP_ADAPTER_API int copied_input(std::string_view op_type);
// Its output is its first input under another tensor object, sharing its version counter, as views do
// (detach, alias, view): where the two also read the same elements in the same order, whatever is known
// of the input's values holds for the output. Autograd hands a parameter its gradient through detach.
OPDUMP_ADAPTER_API bool aliases_input(std::string_view op_type);
// Its result is drawn from the random number generator (dropout, bernoulli, the rand* family): no re-run
// draws the same numbers, and two PyTorch versions draw differently from one seed.
OPDUMP_ADAPTER_API bool draws_random(std::string_view op_type);
// It normalizes its input by the input's own statistics (layer, group, instance and RMS norms): its
// output's size is set by the normalization and its affine parameters, whatever error its input carries.
bool normalizes(std::string_view op_type);
// Each output element is one of its input's elements, or an average of some with non-negative weights
// (pooling, ReLU and its clamps, padding, nearest upsampling, concatenation): the rounding error its
// input carries reaches its output no larger, where a sum with signed weights (a convolution) can grow it.
bool selects_or_averages(std::string_view op_type);
// Which extremes of its output are its first input's, mapped by a monotone function of slope at most 1
// (ReLU, leaky ReLU, their clamps, sigmoid, tanh, ELU at its usual alpha of 1: both; max pooling, amax: the
// max; amin: the min).
enum class ExtremesKept { None, Max, Min, Both };
ExtremesKept extremes_kept(std::string_view op_type);
// Ops whose output is memory nothing wrote yet (empty, new_empty, resize_, set_): its bit patterns
// are whatever the memory held, and may read as NaN/Inf.
OPDUMP_ADAPTER_API bool leaves_memory_unwritten(std::string_view op_type);
// Ops the overflow scene ignores unless the config names its own list: those that leave memory unwritten.
const std::vector<std::string>& overflow_ignored_by_default();

}  // namespace opdump::op_kinds
