// Comparison metrics in float64: blocks of both tensors are widened to double in an L1-sized
// buffer and run through the vectorized kernel; large tensors are split across threads.
#include <cmath>
#include <complex>
#include <cstring>
#include <limits>
#include <thread>
#include <vector>
#include <algorithm>

#include "metrics_kernels.h"
#include "compare/metrics.h"
#include "util/cpu_features.h"
#include "util/thread_budget.h"
#include "opdump/error.h"

namespace opdump {
namespace detail {

void merge(MetricsPartial& a, const MetricsPartial& b) {
  a.n += b.n;
  a.rel_valid += b.rel_valid;
  a.within_1e3 += b.within_1e3;
  a.within_5e3 += b.within_5e3;
  a.nan_mismatch += b.nan_mismatch;
  a.nan_both += b.nan_both;
  a.sxy += b.sxy;
  a.sxx += b.sxx;
  a.syy += b.syy;
  a.dx += b.dx;
  a.dy += b.dy;
  a.dxx += b.dxx;
  a.dyy += b.dyy;
  a.sabs += b.sabs;
  a.ssq += b.ssq;
  a.max_abs = std::max(a.max_abs, b.max_abs);
  a.max_rel = std::max(a.max_rel, b.max_rel);
  a.sum_rel += b.sum_rel;
}

#if defined(__x86_64__) && defined(OPDUMP_HAVE_AVX2_KERNELS)
MetricsKernel best_metrics_kernel() {
  return cpu_runs_avx2_kernels() ? &k_avx2::metrics_block : &k_baseline::metrics_block;
}
MetricsKernelF32 best_metrics_kernel_f32() {
  return cpu_runs_avx2_kernels() ? &k_avx2::metrics_block_f32 : &k_baseline::metrics_block_f32;
}
#else
MetricsKernel best_metrics_kernel() { return &k_baseline::metrics_block; }
MetricsKernelF32 best_metrics_kernel_f32() { return &k_baseline::metrics_block_f32; }
#endif

}  // namespace detail

namespace {

constexpr size_t kBlock = 2048;

// Real values of a tensor (complex tensors count as interleaved real and imaginary parts).
uint64_t real_count(const TensorView& v) { return v.numel() * (dtype_is_complex(v.dtype) ? 2 : 1); }

template <typename T>
void widen_as(const void* p, size_t begin, size_t n, double* out) {
  const T* s = static_cast<const T*>(p) + begin;
  for (size_t i = 0; i < n; ++i) out[i] = static_cast<double>(s[i]);
}

}  // namespace

// Values [begin, begin + n) of a tensor as double.
void widen_values(const TensorView& v, size_t begin, size_t n, double* out) {
  switch (v.dtype) {
    case DType::Float32: widen_as<float>(v.data, begin, n, out); return;
    case DType::Float64: std::memcpy(out, static_cast<const double*>(v.data) + begin, n * 8); return;
    case DType::Float16: {
      const uint16_t* s = static_cast<const uint16_t*>(v.data) + begin;
      for (size_t i = 0; i < n; ++i) out[i] = half_to_float(s[i]);
      return;
    }
    case DType::BFloat16: {
      const uint16_t* s = static_cast<const uint16_t*>(v.data) + begin;
      for (size_t i = 0; i < n; ++i) out[i] = bf16_to_float(s[i]);
      return;
    }
    case DType::Bool:
    case DType::UInt8: widen_as<uint8_t>(v.data, begin, n, out); return;
    case DType::Int8: widen_as<int8_t>(v.data, begin, n, out); return;
    case DType::Int16: widen_as<int16_t>(v.data, begin, n, out); return;
    case DType::Int32: widen_as<int32_t>(v.data, begin, n, out); return;
    case DType::Int64: widen_as<int64_t>(v.data, begin, n, out); return;
    case DType::UInt16: widen_as<uint16_t>(v.data, begin, n, out); return;
    case DType::UInt32: widen_as<uint32_t>(v.data, begin, n, out); return;
    case DType::UInt64: widen_as<uint64_t>(v.data, begin, n, out); return;
    case DType::Complex64: widen_as<float>(v.data, begin, n, out); return;
    case DType::Complex128: std::memcpy(out, static_cast<const double*>(v.data) + begin, n * 8); return;
  }
}

namespace {

void widen(const TensorView& v, size_t begin, size_t n, double* out) { widen_values(v, begin, n, out); }

double dtype_epsilon(DType t) {
  switch (t) {
    case DType::Float16: return 9.765625e-4;
    case DType::BFloat16: return 7.8125e-3;
    case DType::Float64:
    case DType::Complex128: return std::numeric_limits<double>::epsilon();
    default: return std::numeric_limits<float>::epsilon();
  }
}

void run_range(const TensorView& x, const TensorView& y, size_t begin, size_t end, double kx, double ky, double eps_t,
               detail::MetricsPartial* out) {
  if (x.dtype == DType::Float32 && y.dtype == DType::Float32) {
    const auto kernel = detail::best_metrics_kernel_f32();
    const float* fx = static_cast<const float*>(x.data);
    const float* fy = static_cast<const float*>(y.data);
    for (size_t b = begin; b < end; b += kBlock) kernel(fx + b, fy + b, std::min(kBlock, end - b), kx, ky, eps_t, out);
    return;
  }
  alignas(64) double bx[kBlock], by[kBlock];
  const auto kernel = detail::best_metrics_kernel();
  for (size_t b = begin; b < end; b += kBlock) {
    const size_t n = std::min(kBlock, end - b);
    widen(x, b, n, bx);
    widen(y, b, n, by);
    kernel(bx, by, n, kx, ky, eps_t, out);
  }
}

// KL divergence (msaccucmp): each side min-max normalised to [0, 1], clamped below at float32
// eps, divided by its own sum; p from x, q from y.
double kl_divergence(const TensorView& x, const TensorView& y, uint64_t n) {
  alignas(64) double bx[kBlock], by[kBlock];
  double xmin = INFINITY, xmax = -INFINITY, ymin = INFINITY, ymax = -INFINITY;
  for (uint64_t b = 0; b < n; b += kBlock) {
    const size_t m = std::min<uint64_t>(kBlock, n - b);
    widen(x, b, m, bx);
    widen(y, b, m, by);
    for (size_t i = 0; i < m; ++i) {
      if (std::isfinite(bx[i])) xmin = std::min(xmin, bx[i]), xmax = std::max(xmax, bx[i]);
      if (std::isfinite(by[i])) ymin = std::min(ymin, by[i]), ymax = std::max(ymax, by[i]);
    }
  }
  const double feps = std::numeric_limits<float>::epsilon();
  auto norm = [&](double v, double lo, double hi) {
    if (!std::isfinite(v)) v = 0;
    double r = hi > lo ? (v - lo) / (hi - lo) : v;
    return std::max(r, feps);
  };
  double px = 0, qy = 0;
  for (int pass = 0; pass < 2; ++pass) {
    double kl = 0;
    for (uint64_t b = 0; b < n; b += kBlock) {
      const size_t m = std::min<uint64_t>(kBlock, n - b);
      widen(x, b, m, bx);
      widen(y, b, m, by);
      for (size_t i = 0; i < m; ++i) {
        const double p = norm(bx[i], xmin, xmax), q = norm(by[i], ymin, ymax);
        if (pass == 0) {
          px += p;
          qy += q;
        } else {
          kl += (p / px) * std::log((p / px) / (q / qy));
        }
      }
    }
    if (pass == 1) return kl;
    if (px <= 0 || qy <= 0) return NAN;
  }
  return NAN;
}

// Splits [0, n) into `threads` block-aligned ranges, runs range(begin, end, part) for each (the
// first on the calling thread) and returns the parts, in order.
template <typename Part, typename Range>
std::vector<Part> split_across(uint64_t n, unsigned threads, Range range) {
  std::vector<Part> parts(std::max(1u, threads));
  const uint64_t per = part_length(n, parts.size(), kBlock);
  std::vector<std::thread> pool;
  for (size_t t = 1; t < parts.size(); ++t)
    pool.emplace_back([&, t] { range(std::min(n, per * t), std::min(n, per * (t + 1)), parts[t]); });
  range(0, parts.size() == 1 ? n : std::min(n, per), parts[0]);
  for (auto& th : pool) th.join();
  return parts;
}

// Thresholds of the histogram's bins 2..26: 1e-12 ... 1e12 (index k + 12 holds 1e(k)).
constexpr double kDecades[] = {1e-12, 1e-11, 1e-10, 1e-9, 1e-8, 1e-7, 1e-6, 1e-5, 1e-4, 1e-3, 1e-2, 1e-1, 1e0,
                               1e1,   1e2,   1e3,   1e4,  1e5,  1e6,  1e7,  1e8,  1e9,  1e10, 1e11, 1e12};

// floor(log10(d)) + 14 clamped to 1..26, for finite d > 0, without a logarithm: the binary
// exponent gives the decade or the one below it, and one comparison decides.
size_t decade_bin(double d) {
  if (d < kDecades[0]) return 1;
  if (d >= kDecades[24]) return 26;
  uint64_t bits;
  std::memcpy(&bits, &d, sizeof bits);
  const int e2 = static_cast<int>((bits >> 52) & 0x7ff) - 1023;  // |e2| <= 41 here
  int k = (e2 * 1233) >> 12;                                     // floor(e2 * log10(2)), exact for |e2| < 680
  k += d >= kDecades[k + 13];
  return static_cast<size_t>(k + 14);
}

void histogram_range(const TensorView& x, const TensorView& y, size_t begin, size_t end, std::vector<uint64_t>& bins) {
  alignas(64) double bx[kBlock], by[kBlock];
  bins.assign(27, 0);
  for (size_t b = begin; b < end; b += kBlock) {
    const size_t n = std::min(kBlock, end - b);
    widen(x, b, n, bx);
    widen(y, b, n, by);
    for (size_t i = 0; i < n; ++i) {
      const double d = std::fabs(bx[i] - by[i]);
      if (!std::isfinite(d)) continue;
      ++bins[d == 0 ? 0 : decade_bin(d)];
    }
  }
}

}  // namespace

std::vector<uint64_t> abs_error_histogram(const TensorView& x, const TensorView& y, unsigned threads) {
  const uint64_t n = real_count(x);
  if (n != real_count(y)) throw Error("tensors of different sizes cannot be compared");
  if (n < (uint64_t(1) << 21)) threads = 1;
  auto parts = split_across<std::vector<uint64_t>>(
      n, threads, [&](uint64_t b, uint64_t e, std::vector<uint64_t>& bins) { histogram_range(x, y, b, e, bins); });
  std::vector<uint64_t> bins(27, 0);
  for (const auto& p : parts)
    for (size_t k = 0; k < bins.size(); ++k) bins[k] += p[k];
  return bins;
}

TensorMetrics compute_metrics(const TensorView& x, const TensorView& y, const MetricsOptions& options,
                              bool* nan_position_mismatch) {
  const uint64_t n = real_count(x);
  if (n != real_count(y)) throw Error("tensors of different sizes cannot be compared");
  TensorMetrics m;
  m.count = x.numel();
  *nan_position_mismatch = false;
  if (n == 0) return m;
  double first[2] = {0, 0};
  widen(x, 0, 1, &first[0]);
  widen(y, 0, 1, &first[1]);
  const double kx = std::isfinite(first[0]) ? first[0] : 0, ky = std::isfinite(first[1]) ? first[1] : 0;
  const double eps_t = std::max(dtype_epsilon(x.dtype), dtype_epsilon(y.dtype));
  detail::MetricsPartial total;
  unsigned threads = options.threads ? options.threads : hardware_threads();
  unsigned borrowed = 0;
  if (n >= (uint64_t(1) << 21) && threads > 1 && options.budget) {
    borrowed = options.budget->take(threads - 1);
    threads = 1 + borrowed;
  }
  struct GiveBack {
    ThreadBudget* budget;
    unsigned n;
    ~GiveBack() {
      if (budget && n) budget->give_back(n);
    }
  } give_back{options.budget, borrowed};
  if (n < (uint64_t(1) << 21)) threads = 1;
  const auto parts = split_across<detail::MetricsPartial>(
      n, threads, [&](uint64_t b, uint64_t e, detail::MetricsPartial& part) { run_range(x, y, b, e, kx, ky, eps_t, &part); });
  for (const auto& p : parts) detail::merge(total, p);
  if (total.nan_mismatch) {
    *nan_position_mismatch = true;
    return m;
  }
  const double N = static_cast<double>(total.n);
  m.nan_inf_same_position = total.nan_both;
  const double nx = std::sqrt(total.sxx), ny = std::sqrt(total.syy);
  if (total.n == 1) m.cosine = 1.0;  // msaccucmp: "This tensor is scalar"
  else if (nx == 0 && ny == 0) m.cosine = 1.0;
  else if (nx == 0 || ny == 0) m.cosine = NAN;
  else m.cosine = std::min(1.0, total.sxy / (nx * ny));
  m.max_abs_err = total.max_abs;
  m.max_rel_err = total.max_rel;
  m.accumulated_rel_err = total.sum_rel;
  m.mean_rel_err = total.sum_rel / N;
  m.euclidean = std::sqrt(total.ssq);
  m.rel_euclidean = ny <= std::numeric_limits<double>::epsilon() ? 0.0 : std::sqrt(total.ssq / total.syy);
  m.mean_abs_err = total.sabs / N;
  m.rmse = std::sqrt(total.ssq / N);
  m.mean_x = kx + total.dx / N;
  m.mean_y = ky + total.dy / N;
  m.std_x = std::sqrt(std::max(0.0, total.dxx / N - (total.dx / N) * (total.dx / N)));
  m.std_y = std::sqrt(std::max(0.0, total.dyy / N - (total.dy / N) * (total.dy / N)));
  m.one_thousandth_ratio = static_cast<double>(total.within_1e3) / N;
  m.five_thousandths_ratio = static_cast<double>(total.within_5e3) / N;
  m.sqnr_db = total.ssq == 0 ? INFINITY : 10.0 * std::log10(total.syy / total.ssq);
  m.kl_divergence = options.kl_divergence ? kl_divergence(x, y, n) : NAN;
  return m;
}

}  // namespace opdump
