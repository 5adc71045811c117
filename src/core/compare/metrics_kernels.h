// Internal: the one-pass comparison kernel over two float64 (or float32) blocks, compiled twice (baseline and
// AVX2) from metrics_kernels.inc.
#pragma once
#include <cstddef>
#include <cstdint>

namespace opdump::detail {

struct MetricsPartial {
  uint64_t n = 0, rel_valid = 0, within_1e3 = 0, within_5e3 = 0, nan_mismatch = 0, nan_both = 0;
  double sxy = 0, sxx = 0, syy = 0;      // raw sums for cosine, norms
  double dx = 0, dy = 0, dxx = 0, dyy = 0;  // sums shifted by the first element, for mean/std
  double sabs = 0, ssq = 0, max_abs = 0, max_rel = 0, sum_rel = 0;
};

void merge(MetricsPartial& into, const MetricsPartial& from);

// Accumulates n elements of x and y (float64). kx, ky: the shifts for mean/std. eps_t: the data
// type's epsilon for the thousandth ratios.
using MetricsKernel = void (*)(const double* x, const double* y, size_t n, double kx, double ky, double eps_t,
                               MetricsPartial* out);
// The same for float32 blocks, widened to float64 inside the kernel.
using MetricsKernelF32 = void (*)(const float* x, const float* y, size_t n, double kx, double ky, double eps_t,
                                  MetricsPartial* out);

namespace k_baseline {
void metrics_block(const double* x, const double* y, size_t n, double kx, double ky, double eps_t, MetricsPartial* out);
void metrics_block_f32(const float* x, const float* y, size_t n, double kx, double ky, double eps_t,
                       MetricsPartial* out);
}
namespace k_avx2 {
void metrics_block(const double* x, const double* y, size_t n, double kx, double ky, double eps_t, MetricsPartial* out);
void metrics_block_f32(const float* x, const float* y, size_t n, double kx, double ky, double eps_t,
                       MetricsPartial* out);
}

MetricsKernel best_metrics_kernel();
MetricsKernelF32 best_metrics_kernel_f32();

}  // namespace opdump::detail
