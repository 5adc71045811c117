// The accuracy analyzer: compares two dumps operator by operator and finds the first operator
// where the numbers part (the "Model Accuracy Analyzer" of the CANN Data Dump guide and aclmdlSetDump reference).
// The tensor metrics are in metrics.h, the origin search in origin.h, the report writers in reports.h.
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "compare/metrics.h"
#include "read/dump_index.h"
#include "layout/layout.h"
#include "stats/stats.h"
#include "util/tensor.h"

namespace opdump {

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
  double stats_warning_rel = 1e-4;  // as sensitive as warning_rel_euclidean: statistics are all such a dump has
};
Thresholds load_thresholds(const std::string& json_path);

// What the statistics of a row say (one side, or both, holds statistics only).
enum StatIndex { kStatMax, kStatMin, kStatAvg, kStatL2Norm, kStatCount };

struct CompareRow {
  size_t index = 0;
  const DumpEntry* target = nullptr;  // nullptr: only in the reference
  const DumpEntry* reference = nullptr;
  bool aligned = false;  // matched by execution order and op type, not by name
  bool compared = false;
  TensorMetrics metrics;
  // statistics-only comparison: target minus reference of max, min, avg, l2norm, for those
  // both sides recorded (stat_compared); the others are "not compared", never 0.
  bool statistics_only = false;
  bool stat_compared[kStatCount] = {false, false, false, false};
  double stat_diff[kStatCount] = {0, 0, 0, 0};
  double stat_rel[kStatCount] = {0, 0, 0, 0};
  Verdict verdict = Verdict::NotCompared;
  std::string reason;  // why not compared, or what failed
  // The precision each side's values hold (bfloat16 data a dump widened to float32 counts as
  // bfloat16), and whether a failing row's error is no more than the coarser one's rounding
  // (docs/compare.md, "Across stacks").
  DType target_precision = DType::Float32, reference_precision = DType::Float32;
  bool within_precision = false;
  // For the first failing rows only (the HTML report's histograms): counts of |x - y| per decade,
  // bin 0 = exactly 0, bin k = [1e(k-14), 1e(k-13)) for k = 1..25, bin 26 = larger.
  std::vector<uint64_t> abs_err_histogram;

  const DumpEntry& entry() const { return target ? *target : *reference; }
  bool failed() const { return verdict == Verdict::Error || verdict == Verdict::Warning; }
};

// One op the first divergence names, or one it reaches.
struct DivergentOp {
  uint32_t rank = 0;
  int64_t iteration = -1;
  std::string op_type;
  std::string op_name;
  bool backward = false;
  uint64_t order = 0;  // execution index in its iteration (orders first divergences of several compares)
  size_t row = 0;  // its first failing output row (the op's first row when it has none)
};

// The origin of a divergence: the first op (iteration by iteration, forward before backward, on
// whichever rank) whose output differs while every input produced by an earlier dumped op
// matches (docs/compare.md).
struct FirstDivergence {
  enum class Kind {
    Output,      // this op's output differs while its inputs from dumped ops match
    ExtraOp,     // an op only the target ran, whose output feeds the divergence
    MissingOp,   // an op only the reference ran
  };
  bool found = false;
  Kind kind = Kind::Output;
  DivergentOp op;
  bool data_flow = false;    // decided from the execution order's tensor ids (else by order alone)
  bool inputs_agree = true;  // false: its inputs already differ (the runs parted before the dumped data)
  std::string cause;         // one sentence: which input or output, and what it is
  std::string neighbours;    // extra/missing ops: "between A and B"
  std::string source;        // "file.py:line" the op was called from, when the dump recorded it
  std::vector<DivergentOp> reaches;  // the first failing ops it feeds (data flow), in order
};

// Cross-replay (docs/compare.md, "Across stacks"): the reference side's op, with its recorded
// arguments, re-run on the target's dumped inputs in high precision, and the target's outputs
// judged against it: whether the target computed that op right on what it was given, whatever its
// inputs carry from earlier ops. It needs ATen, so the adapter side provides it (opdump_replay).
struct CrossCheck {
  bool strays = false;  // some output of the target strays from the re-run beyond its dtype's standard
  std::string detail;   // what the re-run found ("output 0: ... (bfloat16 standard ...)")
};
// Called with the target op's tensors by slot and one tensor of the reference op (its args file
// lies beside it); nullopt when the op cannot be re-run (no recorded arguments, an unsupported op).
using CrossReplay = std::function<std::optional<CrossCheck>(const std::map<uint32_t, const DumpEntry*>& target_inputs,
                                                            const std::map<uint32_t, const DumpEntry*>& target_outputs,
                                                            const DumpEntry& reference)>;

struct CompareOptions {
  MetricsOptions metrics;
  Thresholds thresholds;
  bool align_unmatched = true;  // order/type alignment for names that differ
  size_t histograms = 5;         // rows that get a histogram: the first failing ones from the first divergence on
  // Target name -> reference name rules: exact names or name-regex(...) with \1 substitutions.
  std::vector<std::pair<std::string, std::string>> mapping;
  unsigned threads = 0;
  // Only these ranks of both dumps (empty: all). A multi-node compare gives each process the ranks
  // whose files are on its node.
  std::set<uint32_t> ranks;
  // Called as rows are done (from the worker threads, one at a time): rows done of `total`, bytes read so far.
  std::function<void(size_t done, size_t total, uint64_t bytes)> progress;
  CrossReplay cross_replay;  // empty: the first divergence is judged from the error's growth alone
};

struct CompareResult {
  DumpIndex target, reference;
  std::vector<CompareRow> rows;  // in target execution order; reference-only rows at the end
  FirstDivergence first_divergence;
  size_t passed = 0, warnings = 0, errors = 0, not_compared = 0, unmatched = 0, aligned = 0;
  size_t within_precision = 0;  // warning and error rows whose error their dtypes' rounding explains
  // Without a first divergence while rows differ: the precision the two sides agree to ("outputs
  // agree to bfloat16 precision: ..."); "" otherwise.
  std::string precision;
  uint64_t bytes_compared = 0;
  std::vector<std::string> notes;  // how the sides were paired (ranks, iterations), warnings of the readers
};

CompareResult compare_dumps(const std::string& target, const std::string& reference, const CompareOptions& options);

// Loads a mapping file: one "target_name,reference_name" per line (csv), '#' comments.
std::vector<std::pair<std::string, std::string>> load_mapping(const std::string& path);

}  // namespace opdump
