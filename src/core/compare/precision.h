// Internal to compare: the precision each side's values hold, and how much of a difference that
// precision explains (docs/compare.md, "Across stacks"). Two stacks that compute in different
// dtypes (bf16 autocast against float32, float16 against float32) differ in every op; what a
// dtype's rounding explains is not a divergence.
#pragma once
#include "compare/compare.h"

namespace opdump::detail {

// Errors up to this many machine epsilons of the coarser dtype of a row are its rounding.
inline constexpr double kPrecisionFloorEps = 2.0;
// An op whose inputs already differ is an origin only when its output's error exceeds this many
// times its inputs' error, plus its own precision floor (what a fault-free op amplifies, measured
// on bf16 and float16 training steps of resnet18 and a transformer: docs/compare.md).
inline constexpr double kErrorGrowth = 12.0;
// From statistics, the rounding an input held in a coarser dtype may hide (its precision floor) reaches
// the output of an op that selects or averages its elements (op_kinds::selects_or_averages) at most
// this many times, where other ops may grow it kErrorGrowth times.
inline constexpr double kHiddenErrorPassedOn = 2.0;

// Machine epsilon of a float dtype (2^-7 for bfloat16, 2^-10 float16, 2^-23 float32, 2^-52
// float64; complex as its parts); 0 for exact types (integers, bool).
double dtype_epsilon(DType t);

// The coarser of two dtypes by epsilon (exact types count as the finest).
DType coarser_dtype(DType a, DType b);

// The precision a tensor's values hold: its dtype, except float32 values that all fit in
// bfloat16 (a dump that widened bfloat16 to float32, as npy files do): bfloat16. Decided on up
// to 256 values spread over the tensor; values that are all integers say nothing (float32), unless
// some beyond 256 differ (in bfloat16 every value from there up is an integer).
DType held_precision(const TensorView& v);

// A compared row's relative error: the relative euclidean distance of tensors; of statistics, the
// norm's relative difference (else the largest one recorded); infinity for rows that failed
// without metrics (shapes, NaN).
double row_error(const CompareRow& r);

// The coarser of a row's two sides' precisions: what its comparison can resolve.
DType row_precision(const CompareRow& r);

// The error a row's precision explains: kPrecisionFloorEps epsilons of its sides' coarser dtype.
double precision_floor(const CompareRow& r);

// Whether a compared row differs by no more than precision_floor: its relative euclidean distance,
// or every statistic's relative difference (rounding moves a max or a min by less than that too).
bool within_rounding(const CompareRow& r);

}  // namespace opdump::detail
