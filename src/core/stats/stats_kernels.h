// Internal: the one-pass statistics kernels. Compiled once per instruction set (baseline and AVX2) from
// stats_kernels.inc; stats.cc picks one at run time.
#pragma once
#include <cstddef>
#include <cstdint>

#include "util/dtype.h"

namespace opdump::detail {

// Partial results over a contiguous range of elements; merged across threads.
struct StatsPartial {
  uint64_t count = 0, negative = 0, positive = 0, zero = 0, nan = 0, neg_inf = 0, pos_inf = 0, finite = 0;
  double max = 0, min = 0, sum = 0, sum_sq = 0;
  bool have_minmax = false;
  // Exact integer extremes for integer dtypes (signed types and bool use i*, unsigned u*).
  int64_t imax = 0, imin = 0;
  uint64_t umax = 0, umin = 0;
};

void merge(StatsPartial& into, const StatsPartial& from);

// `sign_counts`: count elements < 0, > 0 and == 0 (without, floating-point passes leave them 0).
using StatsKernel = void (*)(const void* data, size_t begin, size_t end, DType dtype, bool sign_counts,
                             StatsPartial* out);

// Counts NaN/Inf elements and finite elements beyond float16's range (|x| > 65504; for
// float16 itself with `saturating_limit`, |x| >= 65504). `largest_abs`: the largest |x| (of a
// real or imaginary part) when nothing was counted; meaningless otherwise.
using RangeScanKernel = void (*)(const void* data, size_t n, DType dtype, bool saturating_limit,
                                 uint64_t* nonfinite, uint64_t* beyond_fp16, double* largest_abs);

namespace k_baseline {
void compute(const void* data, size_t begin, size_t end, DType dtype, bool sign_counts, StatsPartial* out);
void range_scan(const void* data, size_t n, DType dtype, bool saturating_limit, uint64_t* nonfinite,
                uint64_t* beyond_fp16, double* largest_abs);
}
namespace k_avx2 {
void compute(const void* data, size_t begin, size_t end, DType dtype, bool sign_counts, StatsPartial* out);
void range_scan(const void* data, size_t n, DType dtype, bool saturating_limit, uint64_t* nonfinite,
                uint64_t* beyond_fp16, double* largest_abs);
}

// One compiled build of the kernels.
struct KernelBuild {
  const char* name;  // "baseline", "avx2"
  StatsKernel compute;
  RangeScanKernel range_scan;
};
// Every build this CPU runs, narrowest first (the baseline); the last is the one a pass uses. The
// tests hold each build to the same reference, bench/bench_core times each.
const KernelBuild* runnable_kernel_builds(size_t* count);

// The widest build this CPU runs (one build for every pass: a tensor's sums must not depend on
// which categories asked for it, since remembered statistics answer later requests).
StatsKernel best_stats_kernel();
RangeScanKernel best_range_scan_kernel();

}  // namespace opdump::detail
