#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <complex>
#include <limits>
#include <mutex>
#include <random>
#include <set>
#include <thread>

#include "opdump/error.h"
#include "stats/helper_pool.h"
#include "stats/stats.h"
#include "stats/stats_kernels.h"

using namespace opdump;

namespace {

struct Reference {
  uint64_t nan = 0, pinf = 0, ninf = 0, neg = 0, pos = 0, zero = 0, finite = 0;
  long double sum = 0, sq = 0;
  double mn = INFINITY, mx = -INFINITY;
};

template <typename T, typename Widen>
Reference reference(const std::vector<T>& v, Widen widen) {
  Reference r;
  for (const T& raw : v) {
    double x = widen(raw);
    if (std::isnan(x)) { ++r.nan; continue; }
    if (x < 0) ++r.neg;
    if (x > 0) ++r.pos;
    if (x == 0) ++r.zero;
    if (std::isinf(x)) { (x > 0 ? r.pinf : r.ninf)++; continue; }
    ++r.finite;
    r.sum += x;
    r.sq += static_cast<long double>(x) * x;
    r.mn = std::min(r.mn, x);
    r.mx = std::max(r.mx, x);
  }
  return r;
}

void expect_matches(const TensorStats& s, const Reference& r, double rel) {
  EXPECT_EQ(s.nan, r.nan);
  EXPECT_EQ(s.pos_inf, r.pinf);
  EXPECT_EQ(s.neg_inf, r.ninf);
  EXPECT_EQ(s.negative, r.neg);
  EXPECT_EQ(s.positive, r.pos);
  EXPECT_EQ(s.zero, r.zero);
  EXPECT_EQ(s.finite, r.finite);
  if (r.finite) {
    EXPECT_EQ(s.min, r.mn);
    EXPECT_EQ(s.max, r.mx);
    const double avg = static_cast<double>(r.sum / r.finite);
    EXPECT_NEAR(s.avg(), avg, rel * std::max(1.0, std::fabs(avg)) + 1e-9);
    const double l2 = std::sqrt(static_cast<double>(r.sq));
    EXPECT_NEAR(s.l2norm(), l2, rel * l2);
  }
}

std::vector<float> random_floats(size_t n, uint32_t seed, bool plant_specials) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.5f, 3.f);
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng);
  if (plant_specials && n > 100) {
    v[3] = NAN;
    v[17] = INFINITY;
    v[n - 1] = -INFINITY;
    v[n / 2] = 0.f;
    v[n / 3] = -0.f;
    v[n / 4] = NAN;
  }
  return v;
}

}  // namespace

TEST(Stats, Float32WithSpecialsAtEverySize) {
  for (size_t n : {0, 1, 5, 15, 16, 17, 4095, 4096, 4097, 100003}) {
    auto v = random_floats(n, static_cast<uint32_t>(n), true);
    TensorStats s = compute_stats(TensorView{v.data(), DType::Float32, {static_cast<int64_t>(n)}});
    EXPECT_EQ(s.count, n);
    expect_matches(s, reference(v, [](float x) { return static_cast<double>(x); }), 1e-6);
  }
}

// Every build of the kernels this CPU runs (baseline, AVX2) on the same data: exact counts and extremes,
// sums to rounding, at sizes around each build's lane widths and block length, with specials in the hot
// loop, in the tail and in the first lane. On this CI's CPUs both builds run.
TEST(Stats, EveryKernelBuildMatchesTheReference) {
  size_t count = 0;
  const detail::KernelBuild* builds = detail::runnable_kernel_builds(&count);
  ASSERT_GE(count, 1u);
  EXPECT_STREQ(builds[0].name, "baseline");
  EXPECT_EQ(builds[count - 1].compute, detail::best_stats_kernel());
  EXPECT_EQ(builds[count - 1].range_scan, detail::best_range_scan_kernel());
  for (size_t n : {1, 31, 32, 33, 63, 64, 65, 4095, 4096, 4097, 8192 + 40, 100003}) {
    for (bool specials : {false, true}) {
      auto v = random_floats(n, static_cast<uint32_t>(n) * 3 + specials, specials);
      if (specials && n > 40) v[n - 2] = NAN;
      std::vector<uint16_t> bf16(n), f16(n);
      for (size_t i = 0; i < n; ++i) {
        bf16[i] = float_to_bf16(v[i]);
        f16[i] = float_to_half(v[i]);
      }
      const struct {
        const void* data;
        DType dtype;
        Reference ref;
      } cases[] = {
          {v.data(), DType::Float32, reference(v, [](float x) { return static_cast<double>(x); })},
          {bf16.data(), DType::BFloat16, reference(bf16, [](uint16_t x) { return double(bf16_to_float(x)); })},
          {f16.data(), DType::Float16, reference(f16, [](uint16_t x) { return double(half_to_float(x)); })},
      };
      for (const auto& c : cases) {
        for (size_t b = 0; b < count; ++b) {
          SCOPED_TRACE(std::string(builds[b].name) + " " + std::string(dtype_name(c.dtype)) + " n=" + std::to_string(n) +
                       (specials ? " with specials" : ""));
          for (bool sign_counts : {true, false}) {
            detail::StatsPartial p;
            builds[b].compute(c.data, 0, n, c.dtype, sign_counts, &p);
            EXPECT_EQ(p.count, n);
            EXPECT_EQ(p.nan, c.ref.nan);
            EXPECT_EQ(p.pos_inf, c.ref.pinf);
            EXPECT_EQ(p.neg_inf, c.ref.ninf);
            EXPECT_EQ(p.finite, c.ref.finite);
            if (sign_counts) {
              EXPECT_EQ(p.negative, c.ref.neg);
              EXPECT_EQ(p.positive, c.ref.pos);
              EXPECT_EQ(p.zero, c.ref.zero);
            }
            ASSERT_EQ(p.have_minmax, c.ref.finite > 0);
            if (!p.have_minmax) continue;
            EXPECT_EQ(p.min, c.ref.mn);
            EXPECT_EQ(p.max, c.ref.mx);
            // (float lanes flushed into double every block: a sum's error is within eps * sqrt(n * sum of squares))
            const double scale = std::sqrt(static_cast<double>(c.ref.sq) * static_cast<double>(n));
            EXPECT_NEAR(p.sum, static_cast<double>(c.ref.sum), 1e-6 * std::max(1.0, scale));
            EXPECT_NEAR(p.sum_sq, static_cast<double>(c.ref.sq), 1e-6 * static_cast<double>(c.ref.sq));
          }
          uint64_t nonfinite = 0, beyond = 0;
          double largest = -1;
          builds[b].range_scan(c.data, n, c.dtype, false, &nonfinite, &beyond, &largest);
          EXPECT_EQ(nonfinite, c.ref.nan + c.ref.pinf + c.ref.ninf);
          EXPECT_EQ(beyond, 0u);
          if (!nonfinite) {
            EXPECT_EQ(largest, std::max(std::fabs(c.ref.mn), std::fabs(c.ref.mx)));
          }
        }
      }
    }
  }
}

// The kernels widen 16-bit floats in registers, two to a 32-bit lane: every bit pattern, each one
// filling whole vectors (32 copies: two blocks of lanes in either build), widens to the value the scalar
// conversion gives, with its sign, subnormals, infinities and NaN counted as such.
TEST(Stats, EveryKernelBuildWidensEverySixteenBitPattern) {
  size_t count = 0;
  const detail::KernelBuild* builds = detail::runnable_kernel_builds(&count);
  constexpr size_t kCopies = 32;
  for (DType dtype : {DType::BFloat16, DType::Float16}) {
    for (uint32_t bits = 0; bits < 65536; ++bits) {
      const std::vector<uint16_t> v(kCopies, static_cast<uint16_t>(bits));
      const float x = dtype == DType::BFloat16 ? bf16_to_float(v[0]) : half_to_float(v[0]);
      for (size_t b = 0; b < count; ++b) {
        detail::StatsPartial p;
        builds[b].compute(v.data(), 0, kCopies, dtype, true, &p);
        const auto where = [&] {
          return std::string(builds[b].name) + " " + std::string(dtype_name(dtype)) + " " + std::to_string(bits);
        };
        if (std::isnan(x)) {
          ASSERT_EQ(p.nan, kCopies) << where();
        } else if (std::isinf(x)) {
          ASSERT_EQ(x > 0 ? p.pos_inf : p.neg_inf, kCopies) << where();
        } else {
          ASSERT_EQ(p.finite, kCopies) << where();
          ASSERT_TRUE(p.have_minmax) << where();
          ASSERT_EQ(p.min, static_cast<double>(x)) << where();
          ASSERT_EQ(p.max, static_cast<double>(x)) << where();
          ASSERT_EQ(std::signbit(p.min), std::signbit(x)) << where();  // (-0 == +0 as values)
          ASSERT_EQ(p.sum, static_cast<double>(x) * kCopies) << where();
          ASSERT_EQ(p.negative, x < 0 ? kCopies : 0u) << where();
          ASSERT_EQ(p.positive, x > 0 ? kCopies : 0u) << where();
          ASSERT_EQ(p.zero, x == 0 ? kCopies : 0u) << where();
        }
      }
    }
  }
}

// Squares beyond float's range (|x| > 1.8e19) and sums near FLT_MAX overflow the float lanes of
// the hot loop; those blocks are redone in double, so nothing is lost.
TEST(Stats, Float32HugeFiniteValuesAreExact) {
  for (size_t n : {64, 4096, 4097, 20000}) {
    auto v = random_floats(n, static_cast<uint32_t>(n) + 7, false);
    v[n / 5] = 3e38f;
    v[n / 2] = -3.3e38f;
    v[n - 1] = 2e19f;
    if (n > 4100) v[4096 + 3] = NAN;  // a second block with a special
    TensorStats s = compute_stats(TensorView{v.data(), DType::Float32, {static_cast<int64_t>(n)}});
    expect_matches(s, reference(v, [](float x) { return static_cast<double>(x); }), 1e-6);
  }
}

TEST(Stats, ParallelEqualsSerial) {
  auto v = random_floats(3'000'001, 3, true);
  TensorView view{v.data(), DType::Float32, {3000001}};
  StatsOptions serial;
  serial.threads = 1;
  const std::shared_ptr<HelperPool> helpers = HelperPool::make();
  StatsOptions parallel;
  parallel.threads = 4;
  parallel.parallel_threshold_bytes = 1024;
  parallel.runner = helpers->runner();
  TensorStats a = compute_stats(view, serial), b = compute_stats(view, parallel);
  EXPECT_EQ(a.nan, b.nan);
  EXPECT_EQ(a.min, b.min);
  EXPECT_EQ(a.max, b.max);
  // Block boundaries differ, so the float-lane rounding differs slightly.
  EXPECT_NEAR(a.sum, b.sum, 1e-7 * std::fabs(a.sum) + 1e-6);
  EXPECT_NEAR(a.sum_sq, b.sum_sq, 1e-7 * a.sum_sq);
}

// A HelperPool runs all but the first job on its own threads and returns when all are done; without
// a runner every part runs on the calling thread.
TEST(Stats, HelperPoolRunsPartsOnItsThreadsAndNoRunnerRunsThemHere) {
  std::mutex m;
  std::set<std::thread::id> ran_on;
  std::atomic<int> done{0};
  const auto record = [&](uint64_t, uint64_t, unsigned) {
    std::lock_guard<std::mutex> lock(m);
    ran_on.insert(std::this_thread::get_id());
    ++done;
  };
  run_split(64 * 8, 4, ParallelRunner(), record);
  EXPECT_EQ(done.load(), 4);
  EXPECT_EQ(ran_on, std::set<std::thread::id>{std::this_thread::get_id()});
  ran_on.clear();
  done = 0;
  {
    const std::shared_ptr<HelperPool> helpers = HelperPool::make();
    const ParallelRunner runner = helpers->runner();
    std::atomic<int> started{0};
    run_split(64 * 8, 4, runner, [&](uint64_t b, uint64_t e, unsigned p) {
      ++started;  // no part ends before all have started: the caller cannot take a helper's part
      while (started.load() < 4) std::this_thread::yield();
      record(b, e, p);
    });
    EXPECT_EQ(done.load(), 4);
    EXPECT_EQ(ran_on.size(), 4u) << "each part on a thread of its own";
    EXPECT_EQ(ran_on.count(std::this_thread::get_id()), 1u) << "the caller takes the first part";
  }  // the runner and the pool go: its threads are joined (a hang here would fail the test by timeout)
}

// Parts no helper has started when the caller is done with its own are run by the caller: every
// part exactly once, and run() returns (short parts, many times: helpers often come too late).
TEST(Stats, HelperPoolCallerTakesThePartsNoHelperStarted) {
  const std::shared_ptr<HelperPool> helpers = HelperPool::make();
  const ParallelRunner runner = helpers->runner();
  int taken_by_caller = 0;
  for (int round = 0; round < 500; ++round) {
    std::vector<std::atomic<int>> runs(8);
    std::vector<std::thread::id> on(8);
    std::vector<std::function<void()>> jobs;
    for (size_t i = 0; i < runs.size(); ++i)
      jobs.push_back([&, i] {
        ++runs[i];
        on[i] = std::this_thread::get_id();
        const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(20);
        while (std::chrono::steady_clock::now() < until) {
        }  // long enough for helpers to wake up and take some parts meanwhile
      });
    runner(jobs);
    for (size_t i = 0; i < runs.size(); ++i) ASSERT_EQ(runs[i].load(), 1) << "part " << i << ", round " << round;
    for (size_t i = 1; i < runs.size(); ++i)
      taken_by_caller += on[i] == std::this_thread::get_id();
  }
  // (not asserted either way: whether a helper came too late depends on the scheduler)
  std::printf("parts the caller took from its helpers: %d of %d\n", taken_by_caller, 500 * 7);
}

namespace {
// An injected runner, as the torch adapter injects torch's intra-op threads: runs the jobs on
// threads of its own and counts what it was given.
std::atomic<int> g_runner_calls{0}, g_runner_jobs{0};
void counting_runner(std::vector<std::function<void()>>& jobs) {
  ++g_runner_calls;
  g_runner_jobs += static_cast<int>(jobs.size());
  std::vector<std::thread> threads;
  for (auto& job : jobs) threads.emplace_back(job);
  for (auto& t : threads) t.join();
}
}  // namespace

TEST(Stats, InjectedRunnerSplitsLargeTensorsOnly) {
  auto v = random_floats(3'000'001, 5, true);
  StatsOptions serial;
  serial.threads = 1;
  StatsOptions injected;
  injected.threads = 3;
  injected.runner = &counting_runner;
  injected.parallel_threshold_bytes = size_t(1) << 20;
  g_runner_calls = g_runner_jobs = 0;
  TensorView small{v.data(), DType::Float32, {100'000}};  // 400 KB: below the threshold
  TensorStats s = compute_stats(small, injected);
  EXPECT_EQ(g_runner_calls.load(), 0);
  EXPECT_EQ(s.max, compute_stats(small, serial).max);
  TensorView large{v.data(), DType::Float32, {3000001}};
  TensorStats a = compute_stats(large, serial), b = compute_stats(large, injected);
  EXPECT_EQ(g_runner_calls.load(), 1);
  EXPECT_EQ(g_runner_jobs.load(), 3);
  EXPECT_EQ(a.nan, b.nan);
  EXPECT_EQ(a.pos_inf + a.neg_inf, b.pos_inf + b.neg_inf);
  EXPECT_EQ(a.negative, b.negative);
  EXPECT_EQ(a.min, b.min);
  EXPECT_EQ(a.max, b.max);
  EXPECT_NEAR(a.sum_sq, b.sum_sq, 1e-7 * a.sum_sq);
}

TEST(Stats, AccurateOn100MillionElements) {
  // Values near 1 make a naive float32 sum drift badly (it stalls at 2^24); ours must not.
  const size_t n = 100'000'000;
  std::vector<float> v(n);
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> d(0.9f, 1.1f);
  for (auto& x : v) x = d(rng);
  TensorStats s = compute_stats(TensorView{v.data(), DType::Float32, {static_cast<int64_t>(n)}});
  long double sum = 0, sq = 0;
  for (float x : v) {
    sum += x;
    sq += static_cast<long double>(x) * x;
  }
  EXPECT_NEAR(s.avg(), static_cast<double>(sum / n), 1e-6);
  EXPECT_NEAR(s.l2norm(), std::sqrt(static_cast<double>(sq)), 1e-6 * std::sqrt(static_cast<double>(sq)));
}

TEST(Stats, AccurateOn100MillionBFloat16Elements) {
  const size_t n = 100'000'000;
  std::vector<uint16_t> v(n);
  std::mt19937 rng(12);
  std::uniform_real_distribution<float> d(-1.0f, 3.0f);
  for (auto& x : v) x = float_to_bf16(d(rng));
  TensorStats s = compute_stats(TensorView{v.data(), DType::BFloat16, {static_cast<int64_t>(n)}});
  long double sum = 0, sq = 0;
  for (uint16_t b : v) {
    const long double x = bf16_to_float(b);
    sum += x;
    sq += x * x;
  }
  EXPECT_NEAR(s.avg(), static_cast<double>(sum / n), 1e-6);
  EXPECT_NEAR(s.l2norm(), std::sqrt(static_cast<double>(sq)), 1e-6 * std::sqrt(static_cast<double>(sq)));
}

TEST(Stats, BFloat16AndFloat16) {
  auto f = random_floats(10007, 5, true);
  std::vector<uint16_t> bf(f.size()), hf(f.size());
  for (size_t i = 0; i < f.size(); ++i) {
    bf[i] = float_to_bf16(f[i]);
    hf[i] = float_to_half(f[i]);
  }
  hf[100] = 0x0001;  // smallest subnormal
  hf[101] = 0x8400;  // -smallest normal
  hf[102] = 0x7bff;  // 65504
  TensorStats sb = compute_stats(TensorView{bf.data(), DType::BFloat16, {10007}});
  expect_matches(sb, reference(bf, [](uint16_t x) { return static_cast<double>(bf16_to_float(x)); }), 1e-6);
  TensorStats sh = compute_stats(TensorView{hf.data(), DType::Float16, {10007}});
  expect_matches(sh, reference(hf, [](uint16_t x) { return static_cast<double>(half_to_float(x)); }), 1e-6);
  EXPECT_EQ(sh.max, 65504.0);
}

// Without sign counts (the default categories ask for none) every other statistic is the same, bit
// for bit, and the result says its counts were not taken; the stats cache serves it only to
// requests that do not ask for them.
TEST(Stats, WithoutSignCountsTheOtherStatisticsAreUnchanged) {
  StatsOptions without;
  without.sign_counts = false;
  auto check = [&](const void* data, DType dtype, int64_t n) {
    const TensorStats all = compute_stats(TensorView{data, dtype, {n}});
    const TensorStats some = compute_stats(TensorView{data, dtype, {n}}, without);
    EXPECT_TRUE(all.sign_counts);
    EXPECT_FALSE(some.sign_counts);
    EXPECT_EQ(some.count, all.count);
    EXPECT_EQ(some.nan, all.nan);
    EXPECT_EQ(some.pos_inf, all.pos_inf);
    EXPECT_EQ(some.neg_inf, all.neg_inf);
    EXPECT_EQ(some.finite, all.finite);
    EXPECT_EQ(some.min, all.min);
    EXPECT_EQ(some.max, all.max);
    EXPECT_EQ(some.sum, all.sum);
    EXPECT_EQ(some.sum_sq, all.sum_sq);
    EXPECT_GT(all.negative + all.positive, 0u);
    EXPECT_EQ(some.cell(StatCategory::Max, dtype), all.cell(StatCategory::Max, dtype));
    EXPECT_THROW(some.cell(StatCategory::ZeroCount, dtype), Error);  // never a count it did not take
  };
  for (size_t n : {1, 17, 4097, 100003}) {
    auto f = random_floats(n, static_cast<uint32_t>(n) + 11, true);
    if (n == 1) f[0] = -2.f;
    check(f.data(), DType::Float32, static_cast<int64_t>(n));
    std::vector<uint16_t> bf(n), hf(n);
    for (size_t i = 0; i < n; ++i) {
      bf[i] = float_to_bf16(f[i]);
      hf[i] = float_to_half(f[i]);
    }
    check(bf.data(), DType::BFloat16, static_cast<int64_t>(n));
    check(hf.data(), DType::Float16, static_cast<int64_t>(n));
  }
}

TEST(Stats, OptionsFollowTheCategoriesAndContentAnswersOnlyWhatItHolds) {
  const StatsOptions plain = stats_options_for(default_stat_categories());
  EXPECT_FALSE(plain.sign_counts || plain.md5 || plain.xxhash);
  for (StatCategory c : {StatCategory::NegativeZeroCount, StatCategory::PositiveZeroCount, StatCategory::ZeroCount})
    EXPECT_TRUE(stats_options_for({StatCategory::Max, c}).sign_counts) << stat_category_key(c);
  EXPECT_FALSE(stats_options_for({StatCategory::Count, StatCategory::NanCount}).sign_counts);
  const StatsOptions hashed = stats_options_for({StatCategory::Md5, StatCategory::XxHash});
  EXPECT_TRUE(hashed.md5 && hashed.xxhash);

  const StatsOptions counted = stats_options_for(all_stat_categories());
  EXPECT_TRUE(StatsContent::of(counted).answers(plain));
  EXPECT_FALSE(StatsContent::of(plain).answers(counted));
  StatsOptions md5_only;
  md5_only.md5 = true;
  md5_only.sign_counts = false;
  EXPECT_FALSE(StatsContent::of(plain).answers(md5_only));
  // What a pass holds follows from its result too: a constant's statistics have counts, no hash.
  const float one = 1.f;
  const TensorStats constant = constant_stats(TensorView{&one, DType::Float32, {1}}, 8);
  EXPECT_TRUE(StatsContent::of(constant).answers(stats_options_for({StatCategory::ZeroCount})));
  EXPECT_FALSE(StatsContent::of(constant).answers(md5_only));
  std::vector<float> v(64, 1.f);
  EXPECT_TRUE(StatsContent::of(compute_stats(TensorView{v.data(), DType::Float32, {64}}, md5_only)).answers(md5_only));
}

TEST(Stats, HalfConversionIsExactForEveryValue) {
  for (uint32_t h = 0; h < 65536; ++h) {
    const float f = half_to_float(static_cast<uint16_t>(h));
    if (std::isnan(f)) continue;
    EXPECT_EQ(float_to_half(f), h) << h;
  }
}

TEST(Stats, Float64) {
  std::vector<double> v = {1.5, -2.25, NAN, INFINITY, 0.0, 1e150, -1e-300};
  TensorStats s = compute_stats(TensorView{v.data(), DType::Float64, {7}});
  expect_matches(s, reference(v, [](double x) { return x; }), 1e-12);
}

TEST(Stats, IntegersAreExact) {
  std::vector<int64_t> v = {INT64_MIN, -5, 0, 7, INT64_MAX, 0};
  TensorStats s = compute_stats(TensorView{v.data(), DType::Int64, {6}});
  EXPECT_EQ(s.cell(StatCategory::Max, DType::Int64), "9223372036854775807");
  EXPECT_EQ(s.cell(StatCategory::Min, DType::Int64), "-9223372036854775808");
  EXPECT_EQ(s.zero, 2u);
  EXPECT_EQ(s.negative, 2u);
  EXPECT_EQ(s.positive, 2u);
  std::vector<uint64_t> u = {UINT64_MAX, 3};
  TensorStats su = compute_stats(TensorView{u.data(), DType::UInt64, {2}});
  EXPECT_EQ(su.cell(StatCategory::Max, DType::UInt64), "18446744073709551615");
  std::vector<int8_t> small = {-128, 127, 1, 0};
  TensorStats s8 = compute_stats(TensorView{small.data(), DType::Int8, {4}});
  EXPECT_EQ(s8.avg(), 0.0);
  EXPECT_EQ(s8.cell(StatCategory::Min, DType::Int8), "-128");
  std::vector<uint8_t> b = {1, 0, 1, 1};
  TensorStats sb = compute_stats(TensorView{b.data(), DType::Bool, {4}});
  EXPECT_EQ(sb.cell(StatCategory::Max, DType::Bool), "1");
  EXPECT_EQ(sb.avg(), 0.75);
}

TEST(Stats, ComplexUsesMagnitude) {
  std::vector<std::complex<float>> v = {{3, 4}, {0, 0}, {NAN, 1}, {INFINITY, 0}};
  TensorStats s = compute_stats(TensorView{v.data(), DType::Complex64, {4}});
  EXPECT_EQ(s.max, 5.0);
  EXPECT_EQ(s.min, 0.0);
  EXPECT_EQ(s.nan, 1u);
  EXPECT_EQ(s.pos_inf, 1u);
  EXPECT_EQ(s.zero, 1u);
  EXPECT_EQ(s.l2norm(), 5.0);
}

TEST(Stats, AllNonFiniteGivesNull) {
  std::vector<float> v = {NAN, INFINITY, -INFINITY};
  TensorStats s = compute_stats(TensorView{v.data(), DType::Float32, {3}});
  for (auto c : {StatCategory::Max, StatCategory::Min, StatCategory::Avg, StatCategory::L2Norm})
    EXPECT_EQ(s.cell(c, DType::Float32), "null");
  EXPECT_EQ(s.cell(StatCategory::NanCount, DType::Float32), "1");
  TensorStats empty = compute_stats(TensorView{v.data(), DType::Float32, {0}});
  EXPECT_EQ(empty.cell(StatCategory::Max, DType::Float32), "null");
  EXPECT_EQ(empty.cell(StatCategory::Count, DType::Float32), "0");
}

TEST(Stats, CellsAreShortestRoundTrip) {
  std::vector<float> v = {0.1f, -0.3f};
  TensorStats s = compute_stats(TensorView{v.data(), DType::Float32, {2}});
  EXPECT_EQ(s.cell(StatCategory::Max, DType::Float32), "0.1");
  EXPECT_EQ(s.cell(StatCategory::Min, DType::Float32), "-0.3");
}

TEST(Stats, Hashes) {
  EXPECT_EQ(md5_hex("abc", 3), "900150983cd24fb0d6963f7d28e17f72");
  EXPECT_EQ(xxhash_hex("", 0).size(), 16u);
  std::vector<float> v = {1, 2, 3};
  StatsOptions o;
  o.md5 = o.xxhash = true;
  TensorStats s = compute_stats(TensorView{v.data(), DType::Float32, {3}}, o);
  EXPECT_EQ(s.md5, md5_hex(v.data(), 12));
  EXPECT_EQ(s.xxhash, xxhash_hex(v.data(), 12));
}

TEST(Stats, CategoryKeysAndLabels) {
  EXPECT_EQ(stat_category_from_key("negative zero count"), StatCategory::NegativeZeroCount);
  EXPECT_EQ(stat_category_label(StatCategory::L2Norm), "L2Norm Value");
  EXPECT_FALSE(stat_category_from_key("median").has_value());
}

// A tensor just filled with one value (zero_, fill_) is summarized from one element.
TEST(Stats, ConstantStatsEqualAPassOverTheFilledTensor) {
  const size_t n = 10007;
  for (float value : {0.f, -0.f, 3.5f, -2.25f, NAN, INFINITY, -INFINITY, 1e30f}) {
    std::vector<float> v(n, value);
    TensorStats full = compute_stats(TensorView{v.data(), DType::Float32, {static_cast<int64_t>(n)}});
    TensorStats fast = constant_stats(TensorView{v.data(), DType::Float32, {1}}, n);
    EXPECT_EQ(fast.count, full.count);
    EXPECT_EQ(fast.nan, full.nan);
    EXPECT_EQ(fast.pos_inf, full.pos_inf);
    EXPECT_EQ(fast.neg_inf, full.neg_inf);
    EXPECT_EQ(fast.negative, full.negative);
    EXPECT_EQ(fast.positive, full.positive);
    EXPECT_EQ(fast.zero, full.zero);
    EXPECT_EQ(fast.finite, full.finite);
    if (full.has_finite()) {
      EXPECT_EQ(fast.min, full.min);
      EXPECT_EQ(fast.max, full.max);
      EXPECT_DOUBLE_EQ(fast.avg(), static_cast<double>(value));
      EXPECT_NEAR(fast.l2norm(), full.l2norm(), 1e-6 * full.l2norm());
    }
    for (StatCategory c : all_stat_categories()) {
      if (c != StatCategory::Md5 && c != StatCategory::XxHash && c != StatCategory::Avg && c != StatCategory::L2Norm) {
        EXPECT_EQ(fast.cell(c, DType::Float32), full.cell(c, DType::Float32));
      }
    }
  }
  std::vector<int64_t> ints(99, -7);
  TensorStats i = constant_stats(TensorView{ints.data(), DType::Int64, {1}}, ints.size());
  EXPECT_EQ(i.int_min, -7);
  EXPECT_EQ(i.int_max, -7);
  EXPECT_EQ(i.negative, 99u);
  EXPECT_THROW(constant_stats(TensorView{ints.data(), DType::Int64, {2}}, 2), Error);
}
