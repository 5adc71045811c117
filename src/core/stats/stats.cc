// Statistics: category names, the parallel driver over the kernels, and the csv cells.
#include "stats/stats.h"

#include <fmt/compile.h>
#include <fmt/format.h>
#include <openssl/evp.h>
#include <xxhash.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <vector>

#include "opdump/error.h"
#include "stats_kernels.h"
#include "util/append_number.h"
#include "util/cpu_features.h"
#include "util/thread_budget.h"

namespace opdump {
namespace detail {

void merge(StatsPartial& into, const StatsPartial& from) {
  if (from.count == 0) return;
  const bool first_minmax = !into.have_minmax;
  if (from.have_minmax) {
    if (first_minmax) {
      into.min = from.min;
      into.max = from.max;
      into.imin = from.imin;
      into.imax = from.imax;
      into.umin = from.umin;
      into.umax = from.umax;
    } else {
      into.min = std::min(into.min, from.min);
      into.max = std::max(into.max, from.max);
      into.imin = std::min(into.imin, from.imin);
      into.imax = std::max(into.imax, from.imax);
      into.umin = std::min(into.umin, from.umin);
      into.umax = std::max(into.umax, from.umax);
    }
    into.have_minmax = true;
  }
  into.count += from.count;
  into.negative += from.negative;
  into.positive += from.positive;
  into.zero += from.zero;
  into.nan += from.nan;
  into.neg_inf += from.neg_inf;
  into.pos_inf += from.pos_inf;
  into.finite += from.finite;
  into.sum += from.sum;
  into.sum_sq += from.sum_sq;
}

const KernelBuild* runnable_kernel_builds(size_t* count) {
  // Listed once: the CPU's features cannot change while the process runs.
  static const std::vector<KernelBuild> builds = [] {
    std::vector<KernelBuild> b{{"baseline", &k_baseline::compute, &k_baseline::range_scan}};
#if defined(__x86_64__) && defined(OPDUMP_HAVE_AVX2_KERNELS)
    if (cpu_runs_avx2_kernels()) b.push_back({"avx2", &k_avx2::compute, &k_avx2::range_scan});
#endif
    return b;
  }();
  *count = builds.size();
  return builds.data();
}

StatsKernel best_stats_kernel() {
  size_t n = 0;
  return runnable_kernel_builds(&n)[n - 1].compute;
}

RangeScanKernel best_range_scan_kernel() {
  size_t n = 0;
  return runnable_kernel_builds(&n)[n - 1].range_scan;
}

}  // namespace detail

namespace {

struct CategoryInfo {
  StatCategory c;
  const char* key;
  const char* label;
};

constexpr CategoryInfo kCategories[] = {
    {StatCategory::Max, "max", "Max Value"},
    {StatCategory::Min, "min", "Min Value"},
    {StatCategory::Avg, "avg", "Avg Value"},
    {StatCategory::Count, "count", "Count"},
    {StatCategory::NegativeZeroCount, "negative zero count", "Negative Zero Count"},
    {StatCategory::PositiveZeroCount, "positive zero count", "Positive Zero Count"},
    {StatCategory::NanCount, "nan count", "NaN Count"},
    {StatCategory::NegativeInfCount, "negative inf count", "Negative Inf Count"},
    {StatCategory::PositiveInfCount, "positive inf count", "Positive Inf Count"},
    {StatCategory::ZeroCount, "zero count", "Zero Count"},
    {StatCategory::L2Norm, "l2norm", "L2Norm Value"},
    {StatCategory::Md5, "md5", "MD5"},
    {StatCategory::XxHash, "xxhash", "XXH3"},
};

bool is_signed_int(DType t) {
  return t == DType::Bool || t == DType::Int8 || t == DType::Int16 || t == DType::Int32 || t == DType::Int64;
}
bool is_unsigned_int(DType t) {
  return t == DType::UInt8 || t == DType::UInt16 || t == DType::UInt32 || t == DType::UInt64;
}

// The shortest text that reads back to `v`.
template <typename Float>
void append_shortest(std::string& out, Float v) {
  // Into a buffer, then appended once: fmt's back-inserter into a std::string resizes it (and fills
  // the new bytes) for every piece it writes, a third of the writer's time per row.
  char digits[64];  // (the shortest form of a float or double is at most 24 characters)
  const char* end = fmt::format_to(digits, FMT_COMPILE("{}"), v);
  out.append(digits, static_cast<size_t>(end - digits));
}

// A value in the tensor's own precision (float32's unless the tensor is float64 or complex128).
void append_value(std::string& out, double v, DType dtype) {
  if (std::isnan(v)) out += "nan";
  else if (std::isinf(v)) out += v > 0 ? "inf" : "-inf";
  else if (dtype == DType::Float64 || dtype == DType::Complex128) append_shortest(out, v);
  else append_shortest(out, static_cast<float>(v));
}

}  // namespace

std::string_view stat_category_key(StatCategory c) { return kCategories[static_cast<int>(c)].key; }
std::string_view stat_category_label(StatCategory c) { return kCategories[static_cast<int>(c)].label; }

std::optional<StatCategory> stat_category_from_key(std::string_view key) {
  for (const auto& i : kCategories)
    if (key == i.key) return i.c;
  return std::nullopt;
}

const std::vector<StatCategory>& default_stat_categories() {
  static const std::vector<StatCategory> d = {StatCategory::Max, StatCategory::Min, StatCategory::L2Norm};
  return d;
}

const std::vector<StatCategory>& all_stat_categories() {
  static const std::vector<StatCategory> all = [] {
    std::vector<StatCategory> v;
    for (const auto& i : kCategories) v.push_back(i.c);
    return v;
  }();
  return all;
}

double TensorStats::l2norm() const { return std::sqrt(sum_sq); }

std::string TensorStats::cell(StatCategory c, DType dtype) const {
  std::string out;
  append_cell(out, c, dtype);
  return out;
}

void TensorStats::append_cell(std::string& out, StatCategory c, DType dtype) const {
  const bool integer = is_signed_int(dtype) || is_unsigned_int(dtype);
  if (!sign_counts &&
      (c == StatCategory::NegativeZeroCount || c == StatCategory::PositiveZeroCount || c == StatCategory::ZeroCount))
    throw Error(std::string("statistic.csv: \"") + std::string(stat_category_key(c)) +
                "\" asked of statistics computed without sign counts (StatsOptions::sign_counts)");
  const bool is_max = c == StatCategory::Max;
  switch (c) {
    case StatCategory::Max:
    case StatCategory::Min:
      if (!has_finite()) out += "null";
      else if (!integer) append_value(out, is_max ? max : min, dtype);
      else if (is_signed_int(dtype)) append_number(out, is_max ? int_max : int_min);
      else append_number(out, is_max ? uint_max : uint_min);
      return;
    case StatCategory::Avg:
      if (has_finite()) append_shortest(out, avg());
      else out += "null";
      return;
    case StatCategory::L2Norm:
      if (has_finite()) append_shortest(out, l2norm());
      else out += "null";
      return;
    case StatCategory::Count: return append_number(out, count);
    case StatCategory::NegativeZeroCount: return append_number(out, negative);
    case StatCategory::PositiveZeroCount: return append_number(out, positive);
    case StatCategory::NanCount: return append_number(out, nan);
    case StatCategory::NegativeInfCount: return append_number(out, neg_inf);
    case StatCategory::PositiveInfCount: return append_number(out, pos_inf);
    case StatCategory::ZeroCount: return append_number(out, zero);
    case StatCategory::Md5: out += md5; return;
    case StatCategory::XxHash: out += xxhash; return;
  }
}

std::string md5_hex(const void* data, size_t size) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  if (EVP_Digest(data, size, digest, &len, EVP_md5(), nullptr) != 1) throw Error("OpenSSL MD5 failed");
  std::string hex;
  hex.reserve(len * 2);
  for (unsigned i = 0; i < len; ++i) hex += fmt::format("{:02x}", digest[i]);
  return hex;
}

std::string xxhash_hex(const void* data, size_t size) {
  return fmt::format("{:016x}", static_cast<unsigned long long>(XXH3_64bits(data, size)));
}

void run_split(uint64_t n, unsigned parts, const ParallelRunner& runner,
               const std::function<void(uint64_t begin, uint64_t end, unsigned index)>& part) {
  std::vector<std::function<void()>> jobs;
  const uint64_t per = part_length(n, parts, 64);
  for (unsigned p = 0; p < parts; ++p) {
    const uint64_t b = std::min<uint64_t>(n, per * p), e = std::min<uint64_t>(n, per * (p + 1));
    jobs.emplace_back([&part, b, e, p] { part(b, e, p); });
  }
  if (runner) {
    runner(jobs);
  } else {
    for (auto& j : jobs) j();
  }
}

TensorStats compute_stats(const TensorView& view, const StatsOptions& options) {
  const uint64_t n = view.numel();
  const size_t bytes = n * dtype_size(view.dtype);
  detail::StatsKernel kernel = detail::best_stats_kernel();
  detail::StatsPartial total;
  unsigned threads = options.threads ? options.threads : hardware_threads();
  if (!options.runner || bytes < options.parallel_threshold_bytes || threads <= 1 || n < 4096) {
    kernel(view.data, 0, n, view.dtype, options.sign_counts, &total);
  } else {
    threads = static_cast<unsigned>(std::min<uint64_t>(threads, n / 4096));
    std::vector<detail::StatsPartial> parts(threads);
    run_split(n, threads, options.runner,
              [&](uint64_t b, uint64_t e, unsigned t) {
                kernel(view.data, b, e, view.dtype, options.sign_counts, &parts[t]);
              });
    for (const auto& p : parts) detail::merge(total, p);
  }
  TensorStats s;
  s.count = n;
  s.negative = total.negative;
  s.positive = total.positive;
  s.zero = total.zero;
  s.nan = total.nan;
  s.neg_inf = total.neg_inf;
  s.pos_inf = total.pos_inf;
  s.finite = total.finite;
  s.max = total.max;
  s.min = total.min;
  s.sum = total.sum;
  s.sum_sq = total.sum_sq;
  s.int_max = total.imax;
  s.int_min = total.imin;
  s.uint_max = total.umax;
  s.uint_min = total.umin;
  s.sign_counts = options.sign_counts;
  if (options.md5) s.md5 = md5_hex(view.data, bytes);
  if (options.xxhash) s.xxhash = xxhash_hex(view.data, bytes);
  return s;
}

StatsOptions stats_options_for(const std::vector<StatCategory>& categories) {
  auto asks = [&](StatCategory c) { return std::find(categories.begin(), categories.end(), c) != categories.end(); };
  StatsOptions so;
  so.md5 = asks(StatCategory::Md5);
  so.xxhash = asks(StatCategory::XxHash);
  so.sign_counts =
      asks(StatCategory::NegativeZeroCount) || asks(StatCategory::PositiveZeroCount) || asks(StatCategory::ZeroCount);
  return so;
}

TensorStats constant_stats(const TensorView& element, uint64_t count) {
  if (element.numel() != 1) throw Error("constant_stats: the element view must hold exactly one element");
  TensorStats s = compute_stats(element);
  s.count = count;
  for (uint64_t* c : {&s.negative, &s.positive, &s.zero, &s.nan, &s.neg_inf, &s.pos_inf, &s.finite}) *c *= count;
  s.sum *= static_cast<double>(count);
  s.sum_sq *= static_cast<double>(count);
  return s;
}

}  // namespace opdump
