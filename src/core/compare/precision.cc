#include "compare/precision.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

namespace opdump::detail {

namespace {
// bfloat16 holds every integer up to this one exactly; beyond it only some.
constexpr float kBfloat16ExactIntegers = 256;
}  // namespace

double dtype_epsilon(DType t) {
  switch (t) {
    case DType::BFloat16: return 0x1p-7;
    case DType::Float16: return 0x1p-10;
    case DType::Float32:
    case DType::Complex64: return 0x1p-23;
    case DType::Float64:
    case DType::Complex128: return 0x1p-52;
    default: return 0;
  }
}

DType coarser_dtype(DType a, DType b) { return dtype_epsilon(b) > dtype_epsilon(a) ? b : a; }

DType held_precision(const TensorView& v) {
  if (v.dtype != DType::Float32 || !v.data) return v.dtype;
  const uint64_t n = v.numel();
  if (n == 0) return v.dtype;
  const uint64_t samples = std::min<uint64_t>(n, 256);
  const auto* p = static_cast<const unsigned char*>(v.data);
  bool fractional = false, large_values = false;
  float large = 0;  // the first value beyond bfloat16's exact integers
  for (uint64_t i = 0; i < samples; ++i) {
    const uint64_t at = samples == n ? i : i * (n - 1) / (samples - 1);
    uint32_t bits;
    std::memcpy(&bits, p + at * 4, 4);
    if (bits & 0xFFFFu) return DType::Float32;
    float f;
    std::memcpy(&f, &bits, 4);
    if (!std::isfinite(f)) continue;
    fractional |= f != std::trunc(f);
    // bfloat16 holds every value from 256 up as an integer: activations that grew that large in
    // bfloat16 are all integers, and float32 values as large are not all multiples of 2^(e-7).
    if (std::fabs(f) > kBfloat16ExactIntegers) {
      if (large == 0) large = f;
      else large_values |= f != large;
    }
  }
  return fractional || large_values ? DType::BFloat16 : DType::Float32;
}

double row_error(const CompareRow& r) {
  if (!r.compared) return r.verdict == Verdict::Error ? std::numeric_limits<double>::infinity() : 0.0;
  if (r.statistics_only) {
    // The norm's relative difference bounds the relative euclidean distance from below and moves
    // with it; max, min and mean of a few values move far more with rounding alone.
    if (r.stat_compared[kStatL2Norm])
      return std::isnan(r.stat_rel[kStatL2Norm]) ? std::numeric_limits<double>::infinity() : std::fabs(r.stat_rel[kStatL2Norm]);
    double worst = 0;
    for (int i = 0; i < kStatCount; ++i)
      if (r.stat_compared[i])
        worst = std::max(worst, std::isnan(r.stat_rel[i]) ? std::numeric_limits<double>::infinity() : std::fabs(r.stat_rel[i]));
    return worst;
  }
  if (std::isnan(r.metrics.cosine)) return std::numeric_limits<double>::infinity();
  return r.metrics.rel_euclidean;
}

DType row_precision(const CompareRow& r) { return coarser_dtype(r.target_precision, r.reference_precision); }

double precision_floor(const CompareRow& r) { return kPrecisionFloorEps * dtype_epsilon(row_precision(r)); }

bool within_rounding(const CompareRow& r) {
  if (!r.compared) return false;
  const double floor = precision_floor(r);
  if (!r.statistics_only) return row_error(r) <= floor;
  for (int i = 0; i < kStatCount; ++i)
    if (r.stat_compared[i] && !(std::fabs(r.stat_rel[i]) <= floor)) return false;
  return true;
}

}  // namespace opdump::detail
