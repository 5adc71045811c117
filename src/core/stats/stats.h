// Tensor statistics: every statistic_category of MindSpore's dump (the MindSpore Dump guide) plus a fast hash.
#pragma once
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "util/tensor.h"
#include "opdump/api.h"

namespace opdump {

enum class StatCategory : uint8_t {
  Max,
  Min,
  Avg,
  Count,
  NegativeZeroCount,  // the MindSpore Dump guide: elements < 0
  PositiveZeroCount,  // the MindSpore Dump guide: elements > 0
  NanCount,
  NegativeInfCount,
  PositiveInfCount,
  ZeroCount,
  L2Norm,
  Md5,
  XxHash,  // opdump extra: XXH3-64 of the raw bytes, ~50x faster than md5
};

// Config spelling ("max", "negative zero count", "xxhash"...) and statistic.csv column label.
std::string_view stat_category_key(StatCategory c);
std::string_view stat_category_label(StatCategory c);
std::optional<StatCategory> stat_category_from_key(std::string_view key);
const std::vector<StatCategory>& default_stat_categories();  // max, min, l2norm
const std::vector<StatCategory>& all_stat_categories();

// Results of one pass over a tensor. For complex tensors the ordered statistics (max, min,
// avg, l2norm, <0, >0) use |z|; NaN/Inf counts look at either part. Bool counts as 0/1.
struct TensorStats {
  uint64_t count = 0;
  uint64_t negative = 0;  // < 0
  uint64_t positive = 0;  // > 0
  uint64_t zero = 0;
  uint64_t nan = 0;
  uint64_t neg_inf = 0;
  uint64_t pos_inf = 0;
  uint64_t finite = 0;  // elements that are neither NaN nor Inf
  double max = 0;       // over finite elements; meaningless when finite == 0
  double min = 0;
  double sum = 0;      // over finite elements
  double sum_sq = 0;   // over finite elements
  int64_t int_max = 0, int_min = 0;    // exact extremes of signed integer and bool tensors
  uint64_t uint_max = 0, uint_min = 0; // exact extremes of unsigned integer tensors
  std::string md5;     // hex, when asked for
  std::string xxhash;  // hex, when asked for
  bool sign_counts = true;  // negative, positive and zero were counted (StatsOptions::sign_counts)

  bool has_finite() const { return finite > 0; }
  double avg() const { return finite ? sum / static_cast<double>(finite) : 0.0; }
  double l2norm() const;
  // The statistic.csv cell for a category: numbers, or "null" when every element is NaN/Inf.
  std::string cell(StatCategory c, DType dtype) const;
  // cell(c, dtype) appended to `out` (a writer formats every row of a dump: no string per cell). Never
  // holds a comma, quote or line break, so it needs no CSV quoting.
  void append_cell(std::string& out, StatCategory c, DType dtype) const;
};

// Runs every job and returns when all are done, some of them on other threads: a framework's
// own worker pool, injected by its adapter, so that splitting a tensor does not start threads
// that compete with the framework's for the cores, or the HelperPool (stats/helper_pool.h) of
// what computes the statistics (a dump, the stats command).
using ParallelRunner = std::function<void(std::vector<std::function<void()>>& jobs)>;

// Calls part(begin, end, index) for `parts` pieces of [0, n), each a whole number of 64 elements
// (the last one shorter), through `runner` (empty: one after the other on the calling thread).
void run_split(uint64_t n, unsigned parts, const ParallelRunner& runner,
               const std::function<void(uint64_t begin, uint64_t end, unsigned index)>& part);

struct StatsOptions {
  bool md5 = false;
  bool xxhash = false;
  // Count elements < 0, > 0 and == 0 (the categories negative zero count, positive zero count and
  // zero count). A float pass without them reads cached data about 40% faster (memory no faster);
  // the default categories (max, min, l2norm) need none.
  bool sign_counts = true;
  // Threads for one large tensor (0 = hardware concurrency), through `runner` (empty: the
  // calling thread alone). Tensors below parallel_threshold_bytes are done on the calling thread.
  unsigned threads = 0;
  size_t parallel_threshold_bytes = size_t(8) << 20;
  ParallelRunner runner;
};

OPDUMP_ADAPTER_API TensorStats compute_stats(const TensorView& view, const StatsOptions& options = {});

// What a pass computed beyond what every pass does (its hashes, its sign counts): statistics kept
// for reuse answer a later request only when they hold all it asks for.
struct StatsContent {
  bool md5 = false, xxhash = false, sign_counts = false;
  static StatsContent of(const StatsOptions& options) { return {options.md5, options.xxhash, options.sign_counts}; }
  static StatsContent of(const TensorStats& stats) { return {!stats.md5.empty(), !stats.xxhash.empty(), stats.sign_counts}; }
  bool answers(const StatsOptions& wanted) const {
    return (md5 || !wanted.md5) && (xxhash || !wanted.xxhash) && (sign_counts || !wanted.sign_counts);
  }
};

// The options a dump's statistic_category list asks a pass for.
StatsOptions stats_options_for(const std::vector<StatCategory>& categories);

// Statistics of `count` elements that all equal the one `element` views (a tensor just
// filled with a constant: zero_, fill_), without reading them. Hashes are left empty: callers
// that need md5 or xxhash summarize the data.
OPDUMP_ADAPTER_API TensorStats constant_stats(const TensorView& element, uint64_t count);

// Hex digests of raw bytes.
std::string md5_hex(const void* data, size_t size);
std::string xxhash_hex(const void* data, size_t size);

}  // namespace opdump
