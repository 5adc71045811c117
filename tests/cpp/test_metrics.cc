// compute_metrics and abs_error_histogram against direct computations: decade bins at and around
// every power of ten, non-finite differences left out, and large tensors split across threads
// giving what one thread gives.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <random>
#include <vector>

#include "compare/metrics.h"

using namespace opdump;

namespace {

TensorView view_of(const std::vector<double>& v) { return TensorView{v.data(), DType::Float64, {int64_t(v.size())}}; }
TensorView view_of(const std::vector<float>& v) { return TensorView{v.data(), DType::Float32, {int64_t(v.size())}}; }

// The bins as documented (CompareRow::abs_err_histogram), with a logarithm.
size_t documented_bin(double d) {
  if (d == 0) return 0;
  return static_cast<size_t>(std::clamp(static_cast<int>(std::floor(std::log10(d))) + 14, 1, 26));
}

}  // namespace

TEST(Metrics, HistogramBinsEveryDecadeAndItsEdges) {
  std::vector<double> x, y;
  for (int k = -16; k <= 15; ++k) {
    const double p = std::pow(10.0, k);
    // Powers of ten, just below and just above them, and the middle of the decade.
    for (double d : {p, std::nextafter(p, 0.0), std::nextafter(p, INFINITY), 3 * p}) {
      x.push_back(d);
      y.push_back(0);
    }
  }
  x.push_back(5);  // equal values: bin 0
  y.push_back(5);
  x.push_back(4.9e-320);  // subnormal difference: the lowest bin
  y.push_back(0);
  std::vector<uint64_t> expected(27, 0);
  for (size_t i = 0; i < x.size(); ++i) ++expected[documented_bin(std::fabs(x[i] - y[i]))];
  // log10 itself may round just below a power of ten up to it: the bins follow the double
  // comparison `d >= 1e(k)`, so count those values by comparison.
  std::vector<uint64_t> by_comparison(27, 0);
  for (size_t i = 0; i < x.size(); ++i) {
    const double d = std::fabs(x[i] - y[i]);
    size_t bin = d == 0 ? 0 : 1;
    if (d != 0)
      for (int k = -12; k <= 12; ++k) bin += d >= std::stod("1e" + std::to_string(k));
    ++by_comparison[bin];
  }
  const auto got = abs_error_histogram(view_of(x), view_of(y), 1);
  EXPECT_EQ(got, by_comparison);
  // Away from the edges the two agree everywhere: a bin may differ only by a value at an edge.
  uint64_t moved = 0;
  for (size_t k = 0; k < 27; ++k) moved += static_cast<uint64_t>(std::llabs(int64_t(got[k]) - int64_t(expected[k])));
  EXPECT_LE(moved, 2u * 25);
  EXPECT_EQ(got[0], 1u);
  EXPECT_GT(got[1], 0u);
  EXPECT_GT(got[26], 0u);
}

TEST(Metrics, HistogramLeavesOutNonFiniteDifferences) {
  const std::vector<float> x{1, NAN, INFINITY, 2, 1e30f};
  const std::vector<float> y{1, NAN, INFINITY, 2.5f, -1e30f};
  const auto got = abs_error_histogram(view_of(x), view_of(y), 1);
  uint64_t total = 0;
  for (uint64_t c : got) total += c;
  EXPECT_EQ(total, 3u);  // NaN - NaN and inf - inf are not counted
  EXPECT_EQ(got[0], 1u);
  EXPECT_EQ(got[documented_bin(0.5)], 1u);
  EXPECT_EQ(got[26], 1u);  // 2e30
}

TEST(Metrics, LargeTensorsSplitAcrossThreadsGiveWhatOneThreadGives) {
  const size_t n = (size_t(1) << 21) + 12345;  // over the split threshold, not a multiple of a block
  std::vector<float> x(n), y(n);
  std::mt19937 rng(7);
  std::normal_distribution<float> normal;
  for (size_t i = 0; i < n; ++i) {
    y[i] = normal(rng);
    x[i] = y[i] + 1e-3f * normal(rng);
  }
  EXPECT_EQ(abs_error_histogram(view_of(x), view_of(y), 3), abs_error_histogram(view_of(x), view_of(y), 1));
  bool mismatch = false;
  MetricsOptions one, three;
  one.threads = 1;
  three.threads = 3;
  const TensorMetrics a = compute_metrics(view_of(x), view_of(y), one, &mismatch);
  const TensorMetrics b = compute_metrics(view_of(x), view_of(y), three, &mismatch);
  EXPECT_FALSE(mismatch);
  EXPECT_EQ(a.max_abs_err, b.max_abs_err);
  EXPECT_NEAR(a.cosine, b.cosine, 1e-12);
  EXPECT_NEAR(a.rel_euclidean, b.rel_euclidean, 1e-12);
  EXPECT_NEAR(a.mean_abs_err, b.mean_abs_err, 1e-12);
  // And both against a direct sum.
  double sabs = 0;
  for (size_t i = 0; i < n; ++i) sabs += std::fabs(double(x[i]) - double(y[i]));
  EXPECT_NEAR(b.mean_abs_err, sabs / n, 1e-12);
}

TEST(Metrics, SplitsCoverTheLastElementWhenTheLengthDividesIntoWholeBlocks) {
  const size_t n = size_t(3) * 2048 * 400 + 1;  // n / 3 is a whole number of blocks: one element over
  std::vector<float> x(n, 1.0f), y(n, 1.0f);
  x[n - 1] = 101.0f;
  MetricsOptions three;
  three.threads = 3;
  bool mismatch = false;
  EXPECT_EQ(compute_metrics(view_of(x), view_of(y), three, &mismatch).max_abs_err, 100.0);
  const auto histogram = abs_error_histogram(view_of(x), view_of(y), 3);
  uint64_t counted = 0;
  for (uint64_t c : histogram) counted += c;
  EXPECT_EQ(counted, n);
}
