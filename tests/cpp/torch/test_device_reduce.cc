// The one device-reduction path (statistics and overflow checks made with ATen ops where the
// tensor lives): its numbers equal the host kernels' on the same data, for CPU tensors and, on a
// machine with a GPU, for the same tensors on the CUDA device (skipped without one).
#include "device_reduce.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>
#include <limits>
#include <string>

#include "debug_scenes/debug_scenes.h"
#include "stats/stats.h"

using namespace opdump;
using namespace opdump::pt::detail;

namespace {

TensorView view_of(const at::Tensor& t, DType dtype) {
  return TensorView{t.data_ptr(), dtype, Shape(t.sizes().begin(), t.sizes().end())};
}

at::Tensor with_specials() {
  at::Tensor t = torch::randn({1000}) * 1e5;  // some values beyond float16's range
  const float inf = std::numeric_limits<float>::infinity();
  t[3] = std::nanf("");
  t[10] = inf;
  t[11] = -inf;
  t[12] = inf;
  t[20] = 0;
  return t;
}

}  // namespace

// Outside the anonymous namespace: gtest derives each test from it (gcc warns of an anonymous base).
class ReductionOnDevice : public ::testing::TestWithParam<c10::DeviceType> {
 protected:
  void SetUp() override {
    if (GetParam() == c10::DeviceType::CUDA && !torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device";
  }
  // The host kernel's input stays on the CPU; the reduction gets the same values where the test runs.
  at::Tensor there(const at::Tensor& t) const { return t.defined() ? t.to(GetParam()) : t; }
};

static std::string device_name(const ::testing::TestParamInfo<c10::DeviceType>& info) {
  return info.param == c10::DeviceType::CUDA ? "CUDA" : "CPU";
}

INSTANTIATE_TEST_SUITE_P(Devices, ReductionOnDevice, ::testing::Values(c10::DeviceType::CPU, c10::DeviceType::CUDA),
                         device_name);

TEST_P(ReductionOnDevice, StatisticsEqualTheHostKernel) {
  torch::manual_seed(1);
  for (at::Tensor t : {with_specials(), torch::randint(-50, 50, {777}, torch::kInt64), torch::empty({0})}) {
    const DType dtype = t.scalar_type() == at::kLong ? DType::Int64 : DType::Float32;
    const TensorStats host = compute_stats(view_of(t, dtype), StatsOptions{});
    const TensorStats device = device_stats(there(t))->get();
    EXPECT_EQ(device.count, host.count);
    EXPECT_EQ(device.nan, host.nan);
    EXPECT_EQ(device.pos_inf, host.pos_inf);
    EXPECT_EQ(device.neg_inf, host.neg_inf);
    EXPECT_EQ(device.negative, host.negative);
    EXPECT_EQ(device.positive, host.positive);
    EXPECT_EQ(device.zero, host.zero);
    EXPECT_EQ(device.finite, host.finite);
    if (host.finite) {
      EXPECT_EQ(device.min, host.min);
      EXPECT_EQ(device.max, host.max);
      EXPECT_NEAR(device.sum, host.sum, 1e-9 * std::abs(host.sum) + 1e-9);
      EXPECT_NEAR(device.sum_sq, host.sum_sq, 1e-9 * host.sum_sq);
    }
  }
}

TEST_P(ReductionOnDevice, OverflowChecksEqualTheHostCheckPerTensor) {
  torch::manual_seed(2);
  const at::Tensor specials = with_specials();
  const at::Tensor fine = torch::rand({64});
  const at::Tensor half = (torch::rand({256}) * 70000).to(torch::kHalf);  // beyond 65504 are Inf in float16
  const at::Tensor ints = torch::arange(10);                               // cannot overflow
  const std::vector<at::Tensor> outputs = {specials, at::Tensor(), fine, half, ints};
  std::vector<at::Tensor> placed;
  for (const at::Tensor& t : outputs) placed.push_back(there(t));
  DeviceReduction r(Reduction::Overflow, placed);
  const OverflowCheck a = check_overflow(view_of(specials, DType::Float32));
  ASSERT_GT(a.nan_or_inf, 0u);
  ASSERT_GT(a.beyond_fp16, 0u);
  EXPECT_EQ(r.overflow(0).nan_or_inf, a.nan_or_inf);
  EXPECT_EQ(r.overflow(0).beyond_fp16, a.beyond_fp16);
  EXPECT_EQ(r.overflow(1).nan_or_inf, 0u) << "an undefined output checks as clean";
  EXPECT_EQ(r.overflow(2).nan_or_inf, 0u);
  EXPECT_EQ(r.overflow(2).beyond_fp16, 0u);
  const OverflowCheck h = check_overflow(view_of(half, DType::Float16));
  ASSERT_GT(h.nan_or_inf, 0u);
  EXPECT_EQ(r.overflow(3).nan_or_inf, h.nan_or_inf);
  EXPECT_EQ(r.overflow(3).beyond_fp16, h.beyond_fp16);
  EXPECT_EQ(r.overflow(4).nan_or_inf, 0u);
}
