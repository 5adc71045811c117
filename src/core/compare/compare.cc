// compare_dumps: index both dumps, pair their tensors (matching.h), compute the metrics in
// parallel, give verdicts, find the first divergence (origin.h).
#include <sys/stat.h>

#include <algorithm>
#include <atomic>
#include <future>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <mutex>
#include <optional>
#include <nlohmann/json.hpp>
#include <thread>

#include "matching.h"
#include "compare/compare.h"
#include "opdump/error.h"
#include "format/statistic_csv.h"
#include "origin.h"
#include "precision.h"
#include "read_ahead.h"
#include "util/file_read.h"
#include "util/thread_budget.h"

namespace opdump {

std::string_view to_string(Verdict v) {
  switch (v) {
    case Verdict::Pass: return "pass";
    case Verdict::Warning: return "warning";
    case Verdict::Error: return "error";
    case Verdict::NotCompared: return "not compared";
  }
  return "?";
}

Thresholds load_thresholds(const std::string& path) {
  std::string text;
  try {
    text = read_text_file(path, uint64_t(64) << 20);  // a few hundred bytes in practice
  } catch (const Error& e) {
    throw ConfigError("", std::string("cannot read the thresholds file: ") + e.what(), path);
  }
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    throw ConfigError("", std::string("invalid JSON: ") + e.what(), path);
  }
  if (!j.is_object()) throw ConfigError("", "must be a JSON object", path);
  Thresholds t;
  const std::pair<const char*, double*> fields[] = {
      {"error_cosine", &t.error_cosine},       {"error_max_abs", &t.error_max_abs},
      {"error_cosine_hard", &t.error_cosine_hard}, {"warning_cosine", &t.warning_cosine},
      {"warning_max_abs", &t.warning_max_abs},  {"warning_rel_euclidean", &t.warning_rel_euclidean},
      {"stats_error_rel", &t.stats_error_rel},
      {"stats_warning_rel", &t.stats_warning_rel}};
  for (auto it = j.begin(); it != j.end(); ++it) {
    bool known = false;
    for (const auto& [name, target] : fields)
      if (it.key() == name) {
        if (!it->is_number()) throw ConfigError(it.key(), "must be a number, not " + it->dump(), path);
        *target = it->get<double>();
        known = true;
      }
    if (!known) throw ConfigError(it.key(), "is not a threshold (see docs/compare.md)", path);
  }
  return t;
}

std::vector<std::pair<std::string, std::string>> load_mapping(const std::string& path) {
  std::string text;
  try {
    text = read_text_file(path);
  } catch (const Error& e) {
    throw ConfigError("", std::string("cannot read the mapping file: ") + e.what(), path);
  }
  std::string cleaned;
  for (size_t start = 0; start < text.size();) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    std::string line = text.substr(start, end - start);
    if (!line.empty() && line[0] != '#') cleaned += line + "\n";
    start = end + 1;
  }
  CsvTable t = parse_csv("target,reference\n" + cleaned, path);
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& r : t.rows) out.emplace_back(r[0], r[1]);
  return out;
}

namespace {

void judge(CompareRow& r, const Thresholds& t) {
  if (!r.compared) {
    if (r.verdict != Verdict::Error) r.verdict = Verdict::NotCompared;
    return;
  }
  if (r.verdict == Verdict::Error) return;  // decided while comparing (NaN/Inf counts)
  if (r.statistics_only) {
    double worst = 0;
    for (int i = 0; i < kStatCount; ++i)
      if (r.stat_compared[i]) worst = std::max(worst, std::isnan(r.stat_rel[i]) ? INFINITY : std::fabs(r.stat_rel[i]));
    r.verdict = worst > t.stats_error_rel ? Verdict::Error : worst > t.stats_warning_rel ? Verdict::Warning : Verdict::Pass;
    return;
  }
  const auto& m = r.metrics;
  if (std::isnan(m.cosine)) {
    r.verdict = Verdict::Error;
    r.reason = "one side is all zero";
  } else if (m.cosine < t.error_cosine_hard || (m.cosine < t.error_cosine && m.max_abs_err > t.error_max_abs)) {
    r.verdict = Verdict::Error;
  } else if ((m.cosine < t.warning_cosine && m.max_abs_err > t.warning_max_abs) ||
             m.rel_euclidean > t.warning_rel_euclidean) {
    r.verdict = Verdict::Warning;
  } else {
    r.verdict = Verdict::Pass;
  }
}

// Statistics of an entry: as dumped, or computed from its tensor.
RecordedStats stats_of(const DumpEntry& e) {
  if (e.stats) return *e.stats;
  return RecordedStats::of(compute_stats(load_entry(e).view()));
}

std::string counts_text(const RecordedStats& s) {
  return std::to_string(*s.nan) + " NaN, " + std::to_string(*s.pos_inf) + " +Inf, " + std::to_string(*s.neg_inf) + " -Inf";
}

// Statistics comparison (one side, or both, has no tensor data): the statistics both sides
// recorded, never one a side lacks.
void compare_statistics(CompareRow& r) {
  const RecordedStats a = stats_of(*r.target), b = stats_of(*r.reference);
  r.statistics_only = true;
  r.target_precision = r.target->dtype;
  r.reference_precision = r.reference->dtype;
  if (r.target->shape_known && r.reference->shape_known && r.target->shape != r.reference->shape) {
    r.verdict = Verdict::Error;
    r.reason = "shape mismatch: " + shape_to_string(r.target->shape) + " vs " + shape_to_string(r.reference->shape);
    return;
  }
  bool counts = false;
  if (a.has_nonfinite_counts() && b.has_nonfinite_counts()) {
    counts = true;
    if (*a.nan != *b.nan || *a.pos_inf != *b.pos_inf || *a.neg_inf != *b.neg_inf) {
      r.compared = true;
      r.verdict = Verdict::Error;
      r.reason = "NaN/Inf counts differ: " + counts_text(a) + " vs " + counts_text(b);
    }
  }
  if (a.no_finite != b.no_finite) {
    r.compared = true;
    r.verdict = Verdict::Error;
    r.reason = std::string(a.no_finite ? "the target" : "the reference") + " has no finite value, the other side has";
  }
  // Differences are relative to the reference value, or to its root mean square when that is
  // larger: a mean near zero (gradients) would otherwise turn noise into huge relative errors.
  double rms = 0;
  if (b.l2norm && b.count && *b.count > 0) rms = *b.l2norm / std::sqrt(static_cast<double>(*b.count));
  const std::optional<double>* av[kStatCount] = {&a.max, &a.min, &a.avg, &a.l2norm};
  const std::optional<double>* bv[kStatCount] = {&b.max, &b.min, &b.avg, &b.l2norm};
  bool any = false;
  for (int i = 0; i < kStatCount; ++i) {
    if (!*av[i] || !*bv[i]) continue;
    const double x = **av[i], y = **bv[i];
    const double scale = i == kStatL2Norm ? std::fabs(y) : std::max(std::fabs(y), rms);
    r.stat_compared[i] = true;
    r.stat_diff[i] = x - y;
    r.stat_rel[i] = x == y ? 0.0 : scale == 0 ? INFINITY : (x - y) / scale;
    any = true;
  }
  if (any || counts) {
    r.compared = true;
    return;
  }
  if (r.verdict != Verdict::Error) r.reason = "no statistic recorded on both sides (max, min, avg, l2norm)";
}

void compare_row(CompareRow& r, const CompareOptions& options, std::atomic<uint64_t>& bytes, ThreadBudget& budget) {
  const DumpEntry& t = *r.target;
  const DumpEntry& ref = *r.reference;
  if (!t.unreadable.empty() || !ref.unreadable.empty()) {
    r.reason = !t.unreadable.empty() ? "target: " + t.unreadable : "reference: " + ref.unreadable;
    return;
  }
  if (!t.placeholder.empty() || !ref.placeholder.empty()) {
    // Not a shape mismatch, and not a pass: one side (or both) holds no data for this slot.
    if (!t.placeholder.empty() && !ref.placeholder.empty())
      r.reason = "not dumped on either side: " + t.placeholder;
    else
      r.reason = !t.placeholder.empty() ? "not dumped on the target side: " + t.placeholder
                                        : "not dumped on the reference side: " + ref.placeholder;
    return;
  }
  if (t.source == DumpEntry::Source::Statistics || ref.source == DumpEntry::Source::Statistics) {
    compare_statistics(r);
    return;
  }
  if (t.shape != ref.shape) {
    r.verdict = Verdict::Error;
    r.reason = "shape mismatch: " + shape_to_string(t.shape) + " vs " + shape_to_string(ref.shape);
    return;
  }
  Tensor x, y;
  try {
    x = load_entry(t);
    y = load_entry(ref);
  } catch (const Error& e) {
    r.reason = e.what();  // unreadable data: not compared, the rest goes on
    return;
  }
  if (x.numel() == 0) {
    r.reason = "empty tensor";
    return;
  }
  if (dtype_is_complex(x.dtype) != dtype_is_complex(y.dtype)) {
    r.verdict = Verdict::Error;
    r.reason = "complex vs real";
    return;
  }
  r.target_precision = detail::held_precision(x.view());
  r.reference_precision = detail::held_precision(y.view());
  bool mismatch = false;
  MetricsOptions mo = options.metrics;
  mo.budget = &budget;
  r.metrics = compute_metrics(x.view(), y.view(), mo, &mismatch);
  bytes += x.nbytes() + y.nbytes();
  if (mismatch) {
    r.verdict = Verdict::Error;
    r.reason = "position of inf or nan do not match";
    return;
  }
  r.compared = true;
  if (x.dtype != y.dtype)
    r.reason = "dtype " + std::string(dtype_name(x.dtype)) + " vs " + std::string(dtype_name(y.dtype)) + " (compared in float64)";
}

// A failing row whose error is no more than its sides' coarser dtype rounds to.
void note_precision(CompareRow& r) {
  if (!r.failed() || !detail::within_rounding(r)) return;
  const double error = detail::row_error(r), floor = detail::precision_floor(r);
  r.within_precision = true;
  char text[160];
  std::snprintf(text, sizeof text, "within %s precision (relative error %.2g, %g eps: %.2g)",
                std::string(dtype_name(detail::row_precision(r))).c_str(), error,
                detail::kPrecisionFloorEps, floor);
  r.reason += (r.reason.empty() ? "" : "; ") + std::string(text);
}

bool is_folder(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

// A folder, or an .h5 file: a whole dump in one file (the torch_npu 1.5 dumper's).
bool is_whole_dump(const std::string& path) {
  return is_folder(path) || (path.size() > 3 && path.compare(path.size() - 3, 3, ".h5") == 0);
}

}  // namespace

CompareResult compare_dumps(const std::string& target, const std::string& reference, const CompareOptions& options) {
  if (is_whole_dump(target) != is_whole_dump(reference))
    throw Error(is_whole_dump(target)
                    ? target + " is a dump and " + reference + " one file of one: compare two files or two dumps (folders, .h5 files)"
                    : target + " is one file of a dump and " + reference + " a dump: compare two files or two dumps (folders, .h5 files)");
  CompareResult result;
  // The two sides are indexed at once: a dump of many small files spends most of its indexing
  // time waiting on the file system, one file after another.
  auto reference_index = std::async(std::launch::async, [&] { return index_dump(reference, options.ranks); });
  try {
    result.target = index_dump(target, options.ranks);
  } catch (...) {
    reference_index.wait();  // (its own error, if any, is the later one: the target's is reported)
    throw;
  }
  result.reference = reference_index.get();
  const auto& T = result.target.entries;
  const auto& R = result.reference.entries;
  std::string of_ranks;
  for (uint32_t r : options.ranks) of_ranks += (of_ranks.empty() ? " of rank " : ", ") + std::to_string(r);
  if (T.empty()) throw Error(target + ": no npy, bin, .h5 or statistic.csv files" + of_ranks + " to compare (is it a dump?)");
  if (R.empty()) throw Error(reference + ": no npy, bin, .h5 or statistic.csv files" + of_ranks + " to compare (is it a dump?)");
  for (const auto& w : result.target.warnings) result.notes.push_back("target: " + w);
  for (const auto& w : result.reference.warnings) result.notes.push_back("reference: " + w);

  detail::Pairing pairing = detail::pair_entries(result.target, result.reference, options);
  result.notes.insert(result.notes.end(), pairing.notes.begin(), pairing.notes.end());
  if (std::none_of(pairing.target_to_reference.begin(), pairing.target_to_reference.end(), [](int64_t j) { return j >= 0; }))
    throw Error("no tensor of " + target + " has a partner in " + reference +
                " (by rank, iteration and op name, nor by execution order and op type): are they dumps of the same "
                "model? Names that differ can be mapped with --mapping");

  for (size_t i = 0; i < T.size(); ++i) {
    CompareRow r;
    r.target = &T[i];
    const int64_t j = pairing.target_to_reference[i];
    r.reference = j >= 0 ? &R[static_cast<size_t>(j)] : nullptr;
    r.aligned = pairing.aligned[i];
    if (!r.reference) r.reason = "no matching tensor in the reference";
    result.rows.push_back(r);
  }
  for (size_t j = 0; j < R.size(); ++j)
    if (pairing.reference_to_target[j] < 0) {
      CompareRow r;
      r.reference = &R[j];
      r.reason = "no matching tensor in the target";
      result.rows.push_back(r);
    }

  // Metrics: rows spread over threads; each large tensor is split further inside compute_metrics.
  std::atomic<size_t> next{0}, done{0};
  std::atomic<uint64_t> bytes{0};
  std::mutex progress_mutex;
  const unsigned threads = options.threads ? options.threads : hardware_threads();
  // One budget for the row workers and the splits of large tensors inside them: each worker
  // holds one thread; a worker out of rows gives its thread to the large tensors still running.
  // Twice the workers: a worker spends part of its time reading files, and a large tensor's
  // splits keep its core busy meanwhile (32 MB tensors on 2 cores: one per core was 8% slower than
  // the unbounded nesting this replaced; two per core is as fast).
  ThreadBudget budget(2 * threads);
  // The files ahead are read into the page cache by one stream in row order (two streams and the
  // workers seeking between them measured slower here), at most 512 MB ahead of the workers.
  std::optional<detail::ReadAhead> read_ahead;
  read_ahead.emplace(result.rows, next, 1, uint64_t(512) << 20);
  auto worker = [&] {
    budget.take(1);
    struct Done {
      ThreadBudget& b;
      ~Done() { b.give_back(1); }
    } done_with_rows{budget};
    while (true) {
      const size_t i = next.fetch_add(1);
      if (i >= result.rows.size()) break;
      CompareRow& r = result.rows[i];
      if (r.target && r.reference) {
        try {
          compare_row(r, options, bytes, budget);
        } catch (const Error& e) {
          r.verdict = Verdict::Error;
          r.reason = e.what();
        }
      }
      judge(r, options.thresholds);
      note_precision(r);
      ++done;
      if (options.progress) {  // the counts read under the lock: a late caller never reports less than an earlier one
        std::lock_guard<std::mutex> lock(progress_mutex);
        options.progress(done.load(), result.rows.size(), bytes.load(std::memory_order_relaxed));
      }
    }
  };
  std::vector<std::thread> pool;
  for (unsigned t = 1; t < threads; ++t) pool.emplace_back(worker);
  worker();
  for (auto& th : pool) th.join();
  read_ahead.reset();
  result.bytes_compared = bytes.load();

  for (size_t i = 0; i < result.rows.size(); ++i) {
    CompareRow& r = result.rows[i];
    r.index = i;
    if (!r.target || !r.reference) ++result.unmatched;
    if (r.aligned) ++result.aligned;
    if (r.within_precision) ++result.within_precision;
    switch (r.verdict) {
      case Verdict::Pass: ++result.passed; break;
      case Verdict::Warning: ++result.warnings; break;
      case Verdict::Error: ++result.errors; break;
      case Verdict::NotCompared: ++result.not_compared; break;
    }
  }

  detail::find_first_divergence(result, options.cross_replay);

  // Histograms of |x - y| (one more pass over those tensors only) for the rows a reader looks at
  // first: from the first divergence on, in execution order. The largest errors alone would be
  // the optimizer's (tiny updates of tiny numbers), long after the cause.
  std::vector<size_t> shown;
  const auto differs = [](const CompareRow& r) { return r.compared && !r.statistics_only && r.metrics.rel_euclidean > 0; };
  const size_t from = result.first_divergence.found ? result.first_divergence.op.row : 0;
  for (size_t i = 0; i < result.rows.size() && shown.size() < options.histograms; ++i) {
    const CompareRow& r = result.rows[i];
    if (r.index >= from && r.verdict != Verdict::Pass && differs(r)) shown.push_back(i);
  }
  if (shown.empty()) {  // nothing failed: the largest differences
    for (size_t i = 0; i < result.rows.size(); ++i)
      if (differs(result.rows[i])) shown.push_back(i);
    std::sort(shown.begin(), shown.end(), [&](size_t a, size_t b) {
      return result.rows[a].metrics.rel_euclidean > result.rows[b].metrics.rel_euclidean;
    });
    if (shown.size() > options.histograms) shown.resize(options.histograms);
  }
  for (size_t i : shown) {
    CompareRow& r = result.rows[i];
    try {
      r.abs_err_histogram = abs_error_histogram(load_entry(*r.target).view(), load_entry(*r.reference).view(), threads);
    } catch (const Error&) {
      // the row keeps its metrics; only the histogram is missing
    }
  }
  return result;
}

}  // namespace opdump
