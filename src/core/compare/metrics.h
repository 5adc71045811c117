// The metrics of one pair of tensors (compare's rows; docs/compare.md), over float64 widenings of
// any dtype, split across threads for large tensors.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "util/tensor.h"

namespace opdump {

// Computed in float64 over the flattened tensors; definitions in docs/compare.md.
struct TensorMetrics {
  uint64_t count = 0;
  double cosine = 0;
  double max_abs_err = 0;
  double max_rel_err = 0;
  double mean_rel_err = 0;
  double accumulated_rel_err = 0;
  double rel_euclidean = 0;
  double euclidean = 0;
  double mean_abs_err = 0;
  double rmse = 0;
  double kl_divergence = 0;  // NaN unless asked for (a second pass)
  double mean_x = 0, std_x = 0, mean_y = 0, std_y = 0;
  double one_thousandth_ratio = 0;   // fraction with |x-y| / |y| < 0.001 (|x-y| / eps of the dtype where y is 0)
  double five_thousandths_ratio = 0;  // ... < 0.005
  double sqnr_db = 0;
  uint64_t nan_inf_same_position = 0;  // elements set to 0 on both sides before the metrics
};

class ThreadBudget;

struct MetricsOptions {
  bool kl_divergence = false;
  unsigned threads = 0;  // inside one large tensor (0 = all cores)
  // Shared with other work running at the same time (compare's rows): the extra threads for one
  // large tensor come from it. Null: `threads` are started regardless.
  ThreadBudget* budget = nullptr;
};

// x = data under test, y = reference. Shapes must have the same element count; non-finite
// values must be at the same positions (else *mismatch is set and nothing is computed).
TensorMetrics compute_metrics(const TensorView& x, const TensorView& y, const MetricsOptions& options,
                              bool* nan_position_mismatch);

// Counts of |x - y| per decade, CompareRow::abs_err_histogram's bins (non-finite differences are
// left out), split across `threads` for large tensors.
std::vector<uint64_t> abs_error_histogram(const TensorView& x, const TensorView& y, unsigned threads);

// Values [begin, begin + n) of a tensor as float64 (complex: interleaved real and imaginary).
void widen_values(const TensorView& v, size_t begin, size_t n, double* out);

}  // namespace opdump
