// The accuracy analyzer: compares two dumps operator by operator and finds the first operator
// where the numbers part (the "Model Accuracy Analyzer" of seeds 000 and 004).
#pragma once
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "opdump/layout.h"
#include "opdump/stats.h"
#include "opdump/tensor.h"

namespace opdump {

// ---- one tensor of a dump -------------------------------------------------------------------

struct DumpEntry {
  std::string op_type;
  std::string op_name;   // as in the file name (sanitized) or statistic.csv (original)
  std::string key_name;  // sanitized op name: the matching key
  std::string group;     // iteration folder (relative path of the folder below the dump root)
  IoKind io = IoKind::Output;
  uint32_t slot = 0;
  uint64_t order = 0;  // execution order within the group (task id, then timestamp)
  uint64_t timestamp = 0;
  // Where the values are: an npy file, one tensor of a bin file, or statistics only.
  enum class Source { Npy, Bin, Statistics } source = Source::Npy;
  std::string path;
  uint32_t bin_index = 0;  // inputs first, then outputs
  DType dtype = DType::Float32;
  Shape shape;
  std::optional<TensorStats> stats;  // statistics-only dumps
  bool has_nonfinite_counts = false;  // statistics with NaN and Inf count columns
  bool stats_null = false;            // statistics of a tensor without any finite element
};

// Every tensor of a dump folder (or a single file), sorted by group and execution order.
std::vector<DumpEntry> index_dump(const std::string& path);
// The values of an npy or bin entry (throws opdump::Error for statistics-only entries).
Tensor load_entry(const DumpEntry& e);

// ---- metrics --------------------------------------------------------------------------------

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
  double one_thousandth_ratio = 0;   // fraction with |x-y| / (|y| + eps) < 0.001
  double five_thousandths_ratio = 0;  // ... < 0.005
  double sqnr_db = 0;
  uint64_t nan_inf_same_position = 0;  // elements set to 0 on both sides before the metrics
};

struct MetricsOptions {
  bool kl_divergence = false;
  unsigned threads = 0;  // inside one large tensor (0 = all cores)
};

// x = data under test, y = reference. Shapes must have the same element count; non-finite
// values must be at the same positions (else *mismatch is set and nothing is computed).
TensorMetrics compute_metrics(const TensorView& x, const TensorView& y, const MetricsOptions& options,
                              bool* nan_position_mismatch);

// Values [begin, begin + n) of a tensor as float64 (complex: interleaved real and imaginary).
void widen_values(const TensorView& v, size_t begin, size_t n, double* out);

// ---- comparison -----------------------------------------------------------------------------

enum class Verdict { Pass, Warning, Error, NotCompared };
std::string_view to_string(Verdict v);

// Thresholds of the verdicts (defaults documented in docs/compare.md; a JSON file overrides).
struct Thresholds {
  double error_cosine = 0.99;        // error when cosine < this and max abs err > error_max_abs
  double error_max_abs = 0.001;
  double error_cosine_hard = 0.9;    // error when cosine < this whatever the absolute error
  double warning_cosine = 0.999;     // warning when cosine < this and max abs err > warning_max_abs
  double warning_max_abs = 1e-4;
  double warning_rel_euclidean = 1e-4;  // or when the relative euclidean distance exceeds this
  double stats_error_rel = 0.05;     // statistics-only rows: relative difference of max/min/avg/l2norm
  double stats_warning_rel = 0.005;
};
Thresholds load_thresholds(const std::string& json_path);

struct CompareRow {
  size_t index = 0;
  const DumpEntry* target = nullptr;  // nullptr: only in the reference
  const DumpEntry* reference = nullptr;
  bool aligned = false;  // matched by execution order and op type, not by name
  bool compared = false;
  TensorMetrics metrics;
  // statistics-only comparison: target minus reference of max, min, avg, l2norm
  bool statistics_only = false;
  double stat_diff[4] = {0, 0, 0, 0};
  double stat_rel[4] = {0, 0, 0, 0};
  Verdict verdict = Verdict::NotCompared;
  std::string reason;  // why not compared, or what failed
  // For the worst rows only (the HTML report's histograms): counts of |x - y| per decade,
  // bin 0 = exactly 0, bin k = [1e(k-14), 1e(k-13)) for k = 1..25, bin 26 = larger.
  std::vector<uint64_t> abs_err_histogram;
};

struct FirstDivergence {
  bool found = false;
  std::string group;
  std::string op_type;
  std::string op_name;
  bool backward = false;
  bool inputs_agree = true;  // false: its inputs already differ (the runs parted earlier)
  size_t row = 0;            // first output row that failed
  std::string source;        // "file.py:line" the op was called from, when the dump recorded it
};

struct CompareOptions {
  MetricsOptions metrics;
  Thresholds thresholds;
  bool align_unmatched = true;  // order/type alignment for names that differ
  size_t histograms = 5;         // rows with the largest relative error that get a histogram
  // Target name -> reference name rules: exact names or name-regex(...) with \1 substitutions.
  std::vector<std::pair<std::string, std::string>> mapping;
  unsigned threads = 0;
  std::function<void(size_t done, size_t total)> progress;
};

struct CompareResult {
  std::vector<DumpEntry> target_entries, reference_entries;
  std::vector<CompareRow> rows;  // in target execution order; reference-only rows at the end
  FirstDivergence first_divergence;
  size_t passed = 0, warnings = 0, errors = 0, not_compared = 0, unmatched = 0, aligned = 0;
  uint64_t bytes_compared = 0;
};

CompareResult compare_dumps(const std::string& target, const std::string& reference, const CompareOptions& options);

// The Python line an op of a dump was called from (graphs/*.ir of its run), or "".
std::string find_source_line(const DumpEntry& entry);

// Loads a mapping file: one "target_name,reference_name" per line (csv), '#' comments.
std::vector<std::pair<std::string, std::string>> load_mapping(const std::string& path);

// Reports.
void write_compare_csv(const CompareResult& result, const std::string& path);
// rows_per_sheet: 0 = 1,048,500 (a smaller value is for tests).
void write_compare_xlsx(const CompareResult& result, const std::string& path, uint32_t rows_per_sheet = 0);
void write_compare_html(const CompareResult& result, const std::string& path, const std::string& title);

}  // namespace opdump
