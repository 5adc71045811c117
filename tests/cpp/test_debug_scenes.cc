// The framework-independent parts of the debug scenes: the overflow check on every float dtype,
// the root-cause tracker, the watcher's diff and selection, sampling, and the offline scan.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <thread>

#include "debug_scenes/debug_scenes.h"
#include "dumper/dumper.h"
#include "opdump/error.h"
#include "format/npy.h"
#include "debug_scenes/overflow_scan.h"
#include "stats/stats_kernels.h"
#include "dumper_fixtures.h"
#include "test_util.h"

using namespace opdump;
using test::no_env;

namespace {

template <typename T>
TensorView view_of(const std::vector<T>& v, DType dtype) {
  return TensorView{v.data(), dtype, {static_cast<int64_t>(v.size())}};
}

uint16_t f16_bits(float f) {  // exact for the values used here
  if (std::isnan(f)) return 0x7E00;
  if (std::isinf(f)) return f > 0 ? 0x7C00 : 0xFC00;
  if (f == 65504.0f) return 0x7BFF;
  if (f == -65504.0f) return 0xFBFF;
  if (f == 1.0f) return 0x3C00;
  if (f == 0.5f) return 0x3800;
  if (f == -3.0f) return 0xC200;
  if (f == 0.0f) return 0;
  ADD_FAILURE() << "no float16 pattern for " << f;
  return 0;
}

uint16_t bf16_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return static_cast<uint16_t>(u >> 16);
}

OverflowEvent event(uint64_t iteration, uint64_t task, bool inputs_finite) {
  OverflowEvent e;
  e.op = OpIdentity{"Op", "op" + std::to_string(task), task, 0, task};
  e.iteration = iteration;
  e.inputs_finite = inputs_finite;
  return e;
}

}  // namespace

TEST(OverflowCheck, Float32CountsNanInfAndValuesBeyondFloat16) {
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  std::vector<float> v = {0, 1, -65504, 65504, 65505, -1e30f, inf, -inf, nan, 3};
  OverflowCheck c = check_overflow(view_of(v, DType::Float32));
  EXPECT_EQ(c.nan_or_inf, 3u);
  EXPECT_EQ(c.beyond_fp16, 2u);  // 65505 and -1e30; 65504 still fits
  EXPECT_TRUE(c.fired(false));
  std::vector<float> fine = {0, 1, 65504};
  EXPECT_FALSE(check_overflow(view_of(fine, DType::Float32)).fired(true));
}

TEST(OverflowCheck, LongTensorsFindTheOneBadElementAnywhere) {
  std::vector<float> v(1'000'003, 0.5f);
  EXPECT_EQ(check_overflow(view_of(v, DType::Float32)).nan_or_inf, 0u);
  for (size_t at : {size_t{0}, size_t{16383}, size_t{16384}, v.size() - 1}) {
    std::vector<float> w = v;
    w[at] = std::numeric_limits<float>::quiet_NaN();
    EXPECT_EQ(check_overflow(view_of(w, DType::Float32)).nan_or_inf, 1u) << at;
  }
}

// The scan skips a chunk (16384 elements) whose largest |x| is within float16's range: a chunk whose
// largest value is exactly 65504 is clean, and a chunk past it is counted element by element.
TEST(OverflowCheck, ChunksAtTheLimitAreCleanAndOthersCountedExactly) {
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  std::vector<float> v(3 * 16384 + 5, 0.25f);
  v[100] = -65504;  // chunk 0: at the limit only
  for (size_t i = 0; i < 100; ++i) v[16384 + 3 * i] = i % 2 ? inf : -inf;  // chunk 1: 100 infinities
  for (size_t i = 0; i < 7; ++i) v[16384 + 1000 + i] = 70000;             // and 7 values beyond float16
  v[2 * 16384 + 9] = -nan;                                                 // chunk 2: a NaN with its sign set
  v[2 * 16384 + 10] = -1e30f;
  v.back() = nan;  // the short last chunk
  const OverflowCheck c = check_overflow(view_of(v, DType::Float32));
  EXPECT_EQ(c.nan_or_inf, 102u);
  EXPECT_EQ(c.beyond_fp16, 8u);
  std::vector<float> limit(16384 * 2, 65504);
  EXPECT_FALSE(check_overflow(view_of(limit, DType::Float32)).fired(true));
}

// A clean tensor's check carries its largest |x| exactly (the bound rules start from it); a tensor
// with anything counted, or a complex one, carries no bound.
TEST(OverflowCheck, CleanTensorsCarryTheirLargestMagnitude) {
  std::vector<float> v(40'000, 0.25f);
  v[30'000] = -1234.5f;
  v[7] = 1000.0f;
  EXPECT_EQ(check_overflow(view_of(v, DType::Float32)).max_abs, 1234.5);
  std::vector<double> d = {1, -65504, 3};
  EXPECT_EQ(check_overflow(view_of(d, DType::Float64)).max_abs, 65504.0);
  std::vector<uint16_t> h = {f16_bits(1), f16_bits(0)};
  EXPECT_EQ(check_overflow(view_of(h, DType::Float16)).max_abs, 1.0);
  h.push_back(f16_bits(-65504));  // float16's saturation is counted: no bound
  EXPECT_TRUE(std::isinf(check_overflow(view_of(h, DType::Float16)).max_abs));
  std::vector<uint16_t> b = {bf16_bits(-3.5f), bf16_bits(2.0f)};
  EXPECT_EQ(check_overflow(view_of(b, DType::BFloat16)).max_abs, 3.5);
  std::vector<float> zero(10, 0.0f);
  EXPECT_EQ(check_overflow(view_of(zero, DType::Float32)).max_abs, 0.0);
  v[39'999] = 70000;
  EXPECT_TRUE(std::isinf(check_overflow(view_of(v, DType::Float32)).max_abs));
  std::vector<float> z = {1, 2, 3, -4};
  EXPECT_TRUE(std::isinf(check_overflow(TensorView{z.data(), DType::Complex64, {2}}).max_abs));
  std::vector<int32_t> i = {1, 2};
  EXPECT_TRUE(std::isinf(check_overflow(view_of(i, DType::Int32)).max_abs));
}

static void run_on_threads(std::vector<std::function<void()>>& jobs) {
  std::vector<std::thread> threads;
  for (auto& job : jobs) threads.emplace_back(job);
  for (auto& t : threads) t.join();
}

TEST(OverflowCheck, SplitScanCountsLikeOnePass) {
  std::vector<float> v(3'000'001, 0.5f);
  const size_t bad[] = {0, 750'015, 750'016, 1'500'000, 2'999'999, v.size() - 1};
  for (size_t at : bad) v[at] = at % 2 ? std::numeric_limits<float>::infinity() : 1e6f;
  const OverflowCheck one = check_overflow(view_of(v, DType::Float32));
  for (unsigned parts : {2u, 3u, 4u}) {
    const OverflowCheck split = check_overflow(view_of(v, DType::Float32), &run_on_threads, parts, 1024);
    EXPECT_EQ(split.nan_or_inf, one.nan_or_inf) << parts;
    EXPECT_EQ(split.beyond_fp16, one.beyond_fp16) << parts;
  }
  std::vector<float> clean(3'000'001, 0.5f);
  clean[2'999'000] = -42.0f;  // in the last part
  for (unsigned parts : {2u, 3u, 4u})
    EXPECT_EQ(check_overflow(view_of(clean, DType::Float32), &run_on_threads, parts, 1024).max_abs, 42.0) << parts;
  EXPECT_EQ(one.nan_or_inf + one.beyond_fp16, 6u);
  std::vector<float> z(2'000'000, 1.0f);  // complex64: 1M elements, the last one's imaginary part NaN
  z.back() = std::numeric_limits<float>::quiet_NaN();
  TensorView zv{z.data(), DType::Complex64, {1'000'000}};
  EXPECT_EQ(check_overflow(zv, &run_on_threads, 3, 1024).nan_or_inf, 1u);
}

TEST(OverflowCheck, OtherFloatDtypes) {
  const double dinf = std::numeric_limits<double>::infinity();
  std::vector<double> d = {1, 65504, 65504.5, -dinf, std::nan("")};
  OverflowCheck cd = check_overflow(view_of(d, DType::Float64));
  EXPECT_EQ(cd.nan_or_inf, 2u);
  EXPECT_EQ(cd.beyond_fp16, 1u);

  // float16 itself: saturation at ±65504 is what the range check reports
  std::vector<uint16_t> h = {f16_bits(1), f16_bits(65504), f16_bits(-65504), f16_bits(INFINITY), f16_bits(NAN)};
  OverflowCheck ch = check_overflow(view_of(h, DType::Float16));
  EXPECT_EQ(ch.nan_or_inf, 2u);
  EXPECT_EQ(ch.beyond_fp16, 2u);

  // bfloat16: 65280 fits in float16, 65536 does not
  std::vector<uint16_t> b = {bf16_bits(65280), bf16_bits(65536), bf16_bits(-1e20f), bf16_bits(INFINITY)};
  OverflowCheck cb = check_overflow(view_of(b, DType::BFloat16));
  EXPECT_EQ(cb.nan_or_inf, 1u);
  EXPECT_EQ(cb.beyond_fp16, 2u);

  // complex64: either part counts
  std::vector<float> z = {1, NAN, INFINITY, 0, 1, 2};
  TensorView zv{z.data(), DType::Complex64, {3}};
  EXPECT_EQ(check_overflow(zv).nan_or_inf, 2u);

  // integers never overflow
  std::vector<int32_t> i = {INT32_MAX, INT32_MIN};
  EXPECT_FALSE(check_overflow(view_of(i, DType::Int32)).fired(true));
}

// Both builds of the range scan (the baseline one and the one this CPU runs) see an element in every
// lane of their vector loop and in the tail: the peak or the NaN is placed at each position of the first
// two cache lines, at a chunk's edges and last.
TEST(OverflowCheck, RangeScanSeesEveryLaneOfItsVectorLoop) {
  struct Case {
    DType dtype;
    size_t element;
    uint64_t background, peak, nan;  // bit patterns of 0.5, -3 and NaN
  };
  auto f32 = [](float f) {
    uint32_t u;
    std::memcpy(&u, &f, 4);
    return uint64_t{u};
  };
  auto f64 = [](double d) {
    uint64_t u;
    std::memcpy(&u, &d, 8);
    return u;
  };
  const Case cases[] = {{DType::Float32, 4, f32(0.5f), f32(-3.0f), f32(NAN)},
                        {DType::Float64, 8, f64(0.5), f64(-3.0), f64(NAN)},
                        {DType::BFloat16, 2, bf16_bits(0.5f), bf16_bits(-3.0f), bf16_bits(NAN)},
                        {DType::Float16, 2, f16_bits(0.5f), f16_bits(-3.0f), f16_bits(NAN)}};
  size_t builds = 0;
  const detail::KernelBuild* build = detail::runnable_kernel_builds(&builds);  // each build this CPU runs
  const size_t n = 16384 + 77;  // one whole chunk and a part
  for (const Case& c : cases) {
    std::vector<char> data(n * c.element);
    auto put = [&](size_t at, uint64_t bits) { std::memcpy(data.data() + at * c.element, &bits, c.element); };
    std::vector<size_t> positions;
    for (size_t at = 0; at < 2 * 64 / c.element; ++at) positions.push_back(at);
    for (size_t at : {size_t{16383}, size_t{16384}, size_t{16384 + 70}, n - 1}) positions.push_back(at);
    for (size_t b = 0; b < builds; ++b) {
      const detail::RangeScanKernel kernel = build[b].range_scan;
      for (size_t at : positions) {
        for (size_t i = 0; i < n; ++i) put(i, c.background);
        put(at, c.peak);
        uint64_t nonfinite = 9, beyond = 9;
        double largest = 0;
        kernel(data.data(), n, c.dtype, true, &nonfinite, &beyond, &largest);
        EXPECT_EQ(largest, 3.0) << dtype_name(c.dtype) << " at " << at;
        EXPECT_EQ(nonfinite + beyond, 0u) << dtype_name(c.dtype) << " at " << at;
        put(at, c.nan);
        kernel(data.data(), n, c.dtype, true, &nonfinite, &beyond, &largest);
        EXPECT_EQ(nonfinite, 1u) << dtype_name(c.dtype) << " at " << at;
      }
    }
  }
}

TEST(OverflowTracker, RootCauseIsTheFirstOpWithFiniteInputs) {
  OverflowTracker t;
  EXPECT_FALSE(t.root_cause().has_value());
  t.record(event(0, 7, false));
  t.record(event(0, 5, true));  // reported later (another thread) but ran earlier
  t.record(event(0, 9, true));
  t.record(event(0, 3, false));
  EXPECT_EQ(t.root_cause()->op.task_id, 5u);
  auto events = t.events();
  ASSERT_EQ(events.size(), 4u);
  EXPECT_EQ(events.front().op.task_id, 3u);  // execution order
  OverflowTracker later;
  later.record(event(2, 1, true));
  later.record(event(1, 8, true));
  EXPECT_EQ(later.root_cause()->iteration, 1u);
}

TEST(OverflowTracker, WithoutAnyFiniteInputsTheFirstOpIsNamed) {
  OverflowTracker t;
  t.record(event(0, 4, false));
  t.record(event(0, 2, false));
  EXPECT_EQ(t.root_cause()->op.task_id, 2u);
}

TEST(OverflowTracker, CapLimitsRecordsButNotTheRootCause) {
  OverflowTracker t(2);
  EXPECT_TRUE(t.record(event(0, 10, false)));
  EXPECT_TRUE(t.record(event(0, 11, false)));
  EXPECT_FALSE(t.record(event(0, 12, false)));
  EXPECT_FALSE(t.record(event(0, 4, true)));  // past the cap, but the true root cause
  EXPECT_FALSE(t.record(event(0, 6, true)));
  EXPECT_EQ(t.events().size(), 2u);
  EXPECT_EQ(t.total(), 5u);
  EXPECT_EQ(t.root_cause()->op.task_id, 4u);
}

TEST(OverflowRecord, OpdebugFileAndJson) {
  OverflowEvent e = event(3, 12, true);
  e.op.stream_id = 7;
  OverflowTensor t;
  t.io = IoKind::Output;
  t.check.nan_or_inf = 4;
  t.shape = {2, 2};
  e.tensors.push_back(t);
  EXPECT_EQ(opdebug_file_name(e.op), "Opdebug.Node_OpDebug.12.7.12.output.0.json");
  const std::string json = opdebug_json(e, false);
  EXPECT_NE(json.find("\"nan_or_inf\": 4"), std::string::npos);
  EXPECT_NE(json.find("\"iteration\": 3"), std::string::npos);
  EXPECT_NE(json.find("\"overflow\": true"), std::string::npos);
}

TEST(TensorDiff, CountsChangedElementsBitwise) {
  std::vector<float> a(10000, 1.0f), b = a;
  EXPECT_EQ(diff_tensors(view_of(a, DType::Float32), view_of(b, DType::Float32)).changed, 0u);
  b[4097] = 3.5f;
  b[9999] = -1.0f;
  TensorDiff d = diff_tensors(view_of(a, DType::Float32), view_of(b, DType::Float32));
  EXPECT_EQ(d.changed, 2u);
  EXPECT_EQ(d.first_changed, 4097u);
  EXPECT_DOUBLE_EQ(d.max_abs_diff, 2.5);
  std::vector<float> n1 = {NAN}, n2 = {NAN};
  EXPECT_EQ(diff_tensors(view_of(n1, DType::Float32), view_of(n2, DType::Float32)).changed, 0u);
  std::vector<float> shorter(3);
  EXPECT_THROW(diff_tensors(view_of(a, DType::Float32), view_of(shorter, DType::Float32)), Error);
}

TEST(Watcher, SelectionFollowsSeed004) {
  test::TempDir dir;
  auto config = [&](const std::string& entry) {
    return parse_config(R"({"dump": {"dump_path": ")" + dir.path() +
                            R"(", "dump_scene": "watcher", "dump_mode": "output", "dump_list": [)" + entry + "]}}",
                        "t", no_env());
  };
  Dumper with_layers(config(R"({"layer": ["mul_", "add"], "watcher_nodes": ["linear", "add"]})"));
  EXPECT_TRUE(with_layers.watched_op("Default/fc-Linear/linear-op0", "linear"));
  EXPECT_TRUE(with_layers.watch_layer_op("Default/mul_-op3", "mul_"));
  EXPECT_FALSE(with_layers.watch_layer_op("Default/relu-op2", "relu"));
  // in both lists: only watched
  EXPECT_TRUE(with_layers.watched_op("Default/add-op1", "add"));
  EXPECT_FALSE(with_layers.watch_layer_op("Default/add-op1", "add"));
  // selection for dumping is the watched ops
  EXPECT_TRUE(with_layers.op_selected("", "Default/fc-Linear/linear-op0", "linear"));
  EXPECT_FALSE(with_layers.op_selected("", "Default/relu-op2", "relu"));
  // collective ops are never layers (the CANN aclmdlSetDump reference: Hcom*)
  EXPECT_FALSE(with_layers.watch_layer_op("Default/HcomAllReduce-op4", "HcomAllReduce"));

  Dumper no_layers(config(R"({"watcher_nodes": ["linear"]})"));
  EXPECT_TRUE(no_layers.watch_layer_op("Default/relu-op2", "relu"));
  EXPECT_FALSE(no_layers.watch_layer_op("Default/fc-Linear/linear-op0", "linear"));
  EXPECT_FALSE(no_layers.watch_layer_op("Default/allreduce_-op9", "allreduce_"));
}

TEST(Sampling, TensorFilesHoldTheFirstSampleNumElements) {
  test::TempDir dir;
  DumpConfig c = parse_config(R"({"common_dump_settings": {"dump_mode": 0, "path": ")" + dir.path() +
                                  R"(", "net_name": "Net", "iteration": "all", "input_output": 2, "kernels": [],
                                  "support_device": [0], "op_debug_mode": 0, "saved_data": "full",
                                  "statistic_category": ["count", "max"]},
                                  "e2e_dump_settings": {"enable": true, "sample_mode": 1, "sample_num": 4}})",
                              "t", no_env());
  std::vector<float> big(10), small = {1, 2, 3};
  for (size_t i = 0; i < big.size(); ++i) big[i] = static_cast<float>(i);
  auto buf = std::make_shared<HeapBuffer>(big.data(), big.size() * 4);
  auto sbuf = std::make_shared<HeapBuffer>(small.data(), small.size() * 4);
  {
    Dumper d(c);
    OpRecord r;
    r.id = OpIdentity{"Add", "Default/Add-op0", 0, 0, 1};
    d.dump_op(r, {}, {data_tensor(TensorView{buf->data(), DType::Float32, {2, 5}}, buf),
                      data_tensor(TensorView{sbuf->data(), DType::Float32, {3}}, sbuf)});
    ASSERT_TRUE(d.finalize().ok());
  }
  const std::string folder = dir / "rank_0/Net/0/0";
  Tensor t0 = read_npy(folder + "/Add.Default_Add-op0.0.0.1.output.0.DefaultFormat.npy");
  ASSERT_EQ(t0.shape, (Shape{4}));
  EXPECT_EQ(std::memcmp(t0.view().data, big.data(), 16), 0);
  EXPECT_EQ(read_npy(folder + "/Add.Default_Add-op0.0.0.1.output.1.DefaultFormat.npy").shape, (Shape{3}));
  // statistics describe the whole tensor
  const std::string csv = test::read_file(folder + "/statistic.csv");
  EXPECT_NE(csv.find(",10,9"), std::string::npos) << csv;
}

TEST(OverflowScan, FindsTheRootCauseOfAnNpyDump) {
  test::TempDir dir;
  const float inf = std::numeric_limits<float>::infinity();
  auto write = [&](const std::string& name, std::vector<float> v) {
    write_npy(dir / name, TensorView{v.data(), DType::Float32, {static_cast<int64_t>(v.size())}});
  };
  write("Mul.mul-op0.0.0.10.input.0.DefaultFormat.npy", {1, 2});
  write("Mul.mul-op0.0.0.10.output.0.DefaultFormat.npy", {2, 4});
  write("Exp.exp-op1.1.0.11.input.0.DefaultFormat.npy", {2, 4});
  write("Exp.exp-op1.1.0.11.output.0.DefaultFormat.npy", {7, inf});
  write("Sub.sub-op2.2.0.12.input.0.DefaultFormat.npy", {7, inf});
  write("Sub.sub-op2.2.0.12.output.0.DefaultFormat.npy", {0, NAN});
  write("empty.empty-op3.3.0.13.output.0.DefaultFormat.npy", {NAN});  // uninitialised by design
  OverflowScan scan = scan_overflow(dir.path());
  EXPECT_EQ(scan.ops, 4u);
  ASSERT_EQ(scan.events.size(), 2u);
  EXPECT_EQ(scan.events[0].op.op_type, "Exp");
  EXPECT_FALSE(scan.events[1].inputs_finite);
  ASSERT_TRUE(scan.root_cause);
  EXPECT_EQ(scan.root_cause->op.op_name, "exp-op1");

  OverflowScanOptions all;
  all.ignore_ops.clear();
  EXPECT_EQ(scan_overflow(dir.path(), all).events.size(), 3u);
  OverflowScanOptions ranged;
  ranged.check_fp16_range = true;
  write("Mul.mul-op0.0.0.10.output.0.DefaultFormat.npy", {2, 1e6f});
  EXPECT_EQ(scan_overflow(dir.path(), ranged).root_cause->op.op_type, "Mul");
}
