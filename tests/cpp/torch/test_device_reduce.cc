// The one device-reduction path (statistics and overflow checks made with ATen ops where the
// tensor lives): its numbers equal the host kernels' on the same data, for CPU tensors and, on a
// machine with a GPU, for the same tensors on the CUDA device (skipped without one).
#include "device_reduce.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <tuple>

#include "../dumper_fixtures.h"
#include "../test_util.h"
#include "capture.h"
#include "debug_scenes/debug_scenes.h"
#include "device_batch.h"
#include "dumper/dumper.h"
#include "gate_work.h"
#include "host_stats.h"
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

TensorStats host_stats_of(const at::Tensor& t) {
  DType dtype;
  EXPECT_TRUE(dtype_of(t.scalar_type(), &dtype));
  const at::Tensor c = t.contiguous();
  return compute_stats(view_of(c, dtype), StatsOptions{});
}

void expect_same_stats(const TensorStats& device, const TensorStats& host, const std::string& what) {
  SCOPED_TRACE(what);
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
    // The host kernels add float32 lanes flushed into double every 4096 elements; the device sums
    // in double: within float32's rounding of the sum of magnitudes (at most sqrt(n * sum_sq)).
    const double magnitude = std::sqrt(static_cast<double>(host.finite) * host.sum_sq);
    EXPECT_NEAR(device.sum, host.sum, 1e-5 * magnitude + 1e-9);
    EXPECT_NEAR(device.sum_sq, host.sum_sq, 1e-5 * host.sum_sq);
  }
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
    expect_same_stats(device_stats(there(t))->get(), host_stats_of(t), c10::toString(t.scalar_type()));
  }
}

// An op's tensors captured as the observer captures them, under a statistics dump with `e2e` added to
// its e2e_dump_settings and `options` as its "opdump" object. `held`: the barrier's background thread
// waits behind a gate until the end, so the op's host statistics stay pending meanwhile.
struct Captured {
  Captured(const std::vector<at::Tensor>& tensors, const std::string& e2e, const std::string& options,
           HostWork placement = HostWork::Background, bool held = false)
      : dumper(parse_config(config(dir.path(), e2e, options), "t", test::no_env())) {
    barrier.set_placement(placement);
    if (held) barrier.add({}, gate);
    capture(tensors);
  }
  void capture(const std::vector<at::Tensor>& tensors) {  // the next op's, into `out` after this one's
    uint64_t stream = 0;
    capture_tensors(tensors, dumper, cache, batcher, barrier, out, &stream);
  }
  ~Captured() {
    gate->open();
    barrier.force_all();  // nothing pending outlives the barrier
  }
  static std::string config(const std::string& path, const std::string& e2e, const std::string& options) {
    std::string text = test::ms_config(path, R"(, "saved_data": "statistic")", "true" + e2e);
    text.insert(text.size() - 1, R"(, "opdump": {)" + options + "}");
    return text;
  }
  test::TempDir dir;
  Dumper dumper;
  StatsCache cache;
  ReductionBatcher batcher{Reduction::Statistics};
  PendingWork barrier;
  std::shared_ptr<Gate> gate = std::make_shared<Gate>(barrier);
  std::vector<DumpTensor> out;
};

// An empty tensor has nothing to reduce: its capture stages nothing and launches nothing (on a GPU
// a reduction of it still cost a dozen kernel launches); the Dumper writes its row itself, as the
// host path does. The op's other tensors are reduced as before.
TEST_P(ReductionOnDevice, EmptyTensorsAreNotReduced) {
  Captured c({there(torch::empty({3, 0})), there(torch::full({4}, 2.0))}, "", R"("device_path_on_cpu": true)");
  ASSERT_EQ(c.out.size(), 2u);
  EXPECT_FALSE(c.out[0].deferred_stats);
  EXPECT_EQ(c.out[0].pending_bytes, 0u);
  EXPECT_EQ(c.out[0].view.shape, (Shape{3, 0}));
  ASSERT_TRUE(c.out[1].deferred_stats);
  EXPECT_EQ(c.out[1].pending_bytes, 16u);
  const TensorStats four = c.out[1].deferred_stats->get();
  EXPECT_EQ(four.count, 4u);
  EXPECT_EQ(four.max, 2.0);
  EXPECT_EQ(four.sum, 8.0);
}

// A CPU tensor goes down the device path's ATen reductions only when device_path_on_cpu asks (the
// way to run that path without a GPU); MindSpore's stat_calc_mode "device" keeps the host kernels:
// on the CPU the device is the host, and the ATen path is tens of times slower there.
TEST(DevicePathOnCpu, ChosenByItsOptionNotByStatCalcMode) {
  const at::Tensor t = torch::full({4}, 2.0);
  Captured host({t}, R"(, "stat_calc_mode": "device")", "");
  ASSERT_EQ(host.out.size(), 1u);
  EXPECT_NE(dynamic_cast<LazyStats*>(host.out[0].deferred_stats.get()), nullptr) << "the host kernels";
  EXPECT_EQ(host.out[0].deferred_stats->get().sum, 8.0);
  Captured aten({t}, "", R"("device_path_on_cpu": true)");
  ASSERT_EQ(aten.out.size(), 1u);
  ASSERT_TRUE(aten.out[0].deferred_stats);
  EXPECT_EQ(dynamic_cast<LazyStats*>(aten.out[0].deferred_stats.get()), nullptr) << "a batched ATen reduction";
  EXPECT_EQ(aten.out[0].deferred_stats->get().sum, 8.0);
}

// Host statistics charge the writer's in-flight cap (max_inflight_mb) with their tensor's bytes only
// while they still hold it: computed as the op ends (every core training) or remembered from an
// earlier op, they hold nothing, and a batch of such rows charged the cap with memory nobody held.
TEST(HostStatistics, ChargeTheInFlightCapOnlyWhileTheyHoldTheTensor) {
  const at::Tensor t = torch::full({256}, 2.0);  // 1 KiB
  Captured pending({t}, "", "", HostWork::Background, /*held=*/true);
  ASSERT_EQ(pending.out.size(), 1u);
  EXPECT_FALSE(dynamic_cast<LazyStats&>(*pending.out[0].deferred_stats).done());
  EXPECT_EQ(pending.out[0].pending_bytes, 1024u);
  pending.gate->open();
  pending.barrier.force_all();
  pending.capture({t});  // the same tensor, unchanged, read by a later op: its remembered statistics
  ASSERT_EQ(pending.out.size(), 2u);
  EXPECT_EQ(pending.out[1].deferred_stats, pending.out[0].deferred_stats);
  EXPECT_EQ(pending.out[1].pending_bytes, 0u);
  Captured computed({t}, "", "", HostWork::Inline);
  ASSERT_EQ(computed.out.size(), 1u);
  EXPECT_EQ(computed.out[0].pending_bytes, 0u);
  EXPECT_EQ(computed.out[0].deferred_stats->get().sum, 512.0);
}

// Many ops' tensors staged into one batch and reduced together, segment by segment: each tensor's
// statistics equal the host kernel's, whatever its dtype, layout or neighbours.
TEST_P(ReductionOnDevice, BatchedStatisticsEqualTheHostKernel) {
  torch::manual_seed(3);
  at::Tensor specials = with_specials();
  const std::vector<std::vector<at::Tensor>> ops = {
      {specials, torch::randint(-50, 50, {777}, torch::kInt64)},
      {(torch::randn({33, 9}) * 300).to(torch::kHalf), torch::rand({100}).gt(0.3), torch::randn({5}, torch::kDouble),
       torch::randn({40, 30}).t()},  // a transposed view: not contiguous
      {(torch::randn({1000}) * 1e30).to(torch::kBFloat16), -torch::rand({1}), torch::zeros({7})},
      {with_specials().to(torch::kHalf)}};
  ReductionBatcher batcher(Reduction::Statistics);
  std::vector<std::pair<at::Tensor, StagedTensor>> staged;
  for (const auto& op : ops) {
    std::vector<at::Tensor> placed;
    for (const at::Tensor& t : op) placed.push_back(there(t));
    const std::vector<StagedTensor> places = batcher.stage(placed);
    ASSERT_EQ(places.size(), op.size());
    for (size_t i = 0; i < op.size(); ++i) staged.emplace_back(op[i], places[i]);
  }
  for (const auto& [t, place] : staged) EXPECT_EQ(place.batch, staged.front().second.batch) << "one batch for all";
  // What was staged is summarized, not what the tensor holds when the batch is reduced.
  const TensorStats before = host_stats_of(specials);
  specials.fill_(1.0f);
  expect_same_stats(batched_stats(staged.front().second)->get(), before, "written after staging");
  for (size_t i = 1; i < staged.size(); ++i)
    expect_same_stats(batched_stats(staged[i].second)->get(), host_stats_of(staged[i].first),
                      "tensor " + std::to_string(i) + " " + c10::toString(staged[i].first.scalar_type()));
}

TEST_P(ReductionOnDevice, BatchesAreSealedBySizeAndHeldOnlyByTheirUsers) {
  ReductionBatcher batcher(Reduction::Statistics);
  const at::Tensor largest = there(torch::ones({ReductionBatcher::kMaxElements}));
  EXPECT_TRUE(batcher.batched(largest));
  EXPECT_FALSE(batcher.batched(there(torch::ones({ReductionBatcher::kMaxElements + 1})))) << "reduced on its own";
  EXPECT_FALSE(batcher.batched(there(torch::ones({0}))));
  EXPECT_FALSE(batcher.batched(there(torch::ones({4}, torch::kComplexFloat))));
  EXPECT_FALSE(ReductionBatcher(Reduction::Overflow).batched(there(torch::ones({4}, torch::kInt64))))
      << "integers cannot overflow";
  const StagedTensor a = batcher.stage({there(torch::ones({5}))}).front();
  EXPECT_FALSE(a.batch->sealed());
  EXPECT_FALSE(a.batch->ready()) << "nobody reduced it yet";
  const StagedTensor b = batcher.stage({largest}).front();
  EXPECT_EQ(a.batch, b.batch);
  EXPECT_TRUE(b.batch->sealed());
  const StagedTensor c = batcher.stage({there(torch::ones({5}))}).front();
  EXPECT_NE(c.batch, b.batch) << "a batch past kSealElements takes no more";
  EXPECT_EQ(b.batch->statistics(b.member).sum, double(ReductionBatcher::kMaxElements));
  EXPECT_EQ(a.batch->statistics(a.member).positive, 5u);
  EXPECT_TRUE(a.batch->ready());
  // Once reduced, a batch takes no more either: the next op opens a new one.
  c.batch->reduce();
  std::optional<StagedTensor> d = batcher.stage({there(torch::full({3}, -2.0))}).front();
  EXPECT_NE(d->batch, c.batch);
  EXPECT_EQ(d->batch->statistics(d->member).min, -2.0);
  const std::weak_ptr<ReductionBatch> open = d->batch;
  d.reset();
  EXPECT_TRUE(open.expired()) << "the batcher does not keep a batch (nor its device memory) alive";
}

TEST_P(ReductionOnDevice, BatchedOverflowChecksEqualTheHostCheck) {
  torch::manual_seed(4);
  const at::Tensor specials = with_specials();
  const at::Tensor half = (torch::rand({256}) * 70000).to(torch::kHalf);
  const at::Tensor edge = torch::tensor({65504.0f, 65503.9f, -65504.5f, 1.0f});  // float16's largest and past it
  ReductionBatcher batcher(Reduction::Overflow);
  const std::vector<StagedTensor> first = batcher.stage({there(specials), there(half)});
  const StagedTensor second = batcher.stage({there(edge)}).front();
  for (const auto& [t, place, dtype] :
       {std::make_tuple(specials, first[0], DType::Float32), std::make_tuple(half, first[1], DType::Float16),
        std::make_tuple(edge, second, DType::Float32)}) {
    const OverflowCheck host = check_overflow(view_of(t, dtype));
    const OverflowCheck batched = place.batch->overflow(place.member);
    EXPECT_EQ(batched.nan_or_inf, host.nan_or_inf) << c10::toString(t.scalar_type());
    EXPECT_EQ(batched.beyond_fp16, host.beyond_fp16) << c10::toString(t.scalar_type());
  }
  EXPECT_EQ(second.batch->overflow(second.member).beyond_fp16, 1u);
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
