// compare_dumps: index both dumps, match their tensors (by name, then by execution order and
// op type), compute the metrics in parallel, give verdicts, find the first divergence.
#include <re2/re2.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <cmath>
#include <fstream>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>

#include "opdump/ascend_bin.h"
#include "opdump/compare.h"
#include "opdump/error.h"
#include "opdump/npy.h"
#include "opdump/statistic_csv.h"

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
  std::ifstream in(path);
  if (!in) throw ConfigError("", "cannot read the thresholds file", path);
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(in);
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
  std::ifstream in(path);
  if (!in) throw ConfigError("", "cannot read the mapping file", path);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
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

Tensor load_entry(const DumpEntry& e) {
  if (e.source == DumpEntry::Source::Statistics) throw Error(e.path + ": " + e.op_name + " has statistics only, no values");
  if (e.source == DumpEntry::Source::Npy) return read_npy(e.path, /*populate=*/true);
  BinDump d = read_ascend_bin(e.path);
  const size_t ni = d.inputs.size();
  return d.tensor(e.bin_index < ni ? d.inputs[e.bin_index] : d.outputs[e.bin_index - ni]);
}

namespace {

using Key = std::tuple<std::string, std::string, int, uint32_t>;  // group, name, io, slot

Key key_of(const DumpEntry& e, const std::string& name) { return {e.group, name, int(e.io), e.slot}; }

// Target name -> reference name, per the mapping rules (exact names or name-regex(...)).
class NameMapping {
 public:
  explicit NameMapping(const std::vector<std::pair<std::string, std::string>>& rules) {
    for (const auto& [from, to] : rules) {
      const std::string prefix = "name-regex(";
      if (from.rfind(prefix, 0) == 0 && from.back() == ')') {
        auto re = std::make_unique<RE2>(from.substr(prefix.size(), from.size() - prefix.size() - 1));
        if (!re->ok()) throw ConfigError("mapping", "\"" + from + "\" is not a valid regular expression: " + re->error());
        regex_.emplace_back(std::move(re), to);
      } else {
        exact_[sanitize_name(from)] = sanitize_name(to);
      }
    }
  }
  std::string map(const std::string& name) const {
    if (auto it = exact_.find(name); it != exact_.end()) return it->second;
    for (const auto& [re, rewrite] : regex_) {
      std::string out;
      if (RE2::FullMatch(name, *re) && RE2::Extract(name, *re, rewrite, &out)) return out;
    }
    return name;
  }

 private:
  std::map<std::string, std::string> exact_;
  std::vector<std::pair<std::unique_ptr<RE2>, std::string>> regex_;
};

// The op type used for alignment: backend prefixes and suffixes removed, so that the kernels one
// device runs line up with another's (mkldnn_convolution / cudnn_convolution -> convolution).
std::string alignment_type(const std::string& type) {
  static const char* prefixes[] = {"mkldnn_", "cudnn_", "miopen_", "_nnpack_", "thnn_", "slow_", "_slow_", "npu_", "xpu_", "_mps_"};
  static const char* suffixes[] = {"_cpu", "_cuda", "_npu", "_mkldnn", "_cudnn"};
  std::string t = type;
  for (const char* p : prefixes)
    if (t.rfind(p, 0) == 0) t = t.substr(std::strlen(p));
  for (const char* x : suffixes) {
    const size_t n = std::strlen(x);
    if (t.size() > n && t.compare(t.size() - n, n, x) == 0) t.resize(t.size() - n);
  }
  return t;
}

// Ops of one group in execution order: (name, type) of entries not matched by name.
struct OpSeq {
  std::vector<std::string> names, types;
};

// Longest common subsequence of op types; returns index pairs. Falls back to a greedy in-order
// match when the table would be too large.
std::vector<std::pair<size_t, size_t>> align(const OpSeq& a, const OpSeq& b) {
  const size_t n = a.names.size(), m = b.names.size();
  std::vector<std::pair<size_t, size_t>> out;
  if (n == 0 || m == 0) return out;
  if (n * m > 50'000'000) {
    size_t j = 0;
    for (size_t i = 0; i < n && j < m; ++i) {
      size_t k = j;
      while (k < m && b.types[k] != a.types[i]) ++k;
      if (k < m) {
        out.emplace_back(i, k);
        j = k + 1;
      }
    }
    return out;
  }
  std::vector<uint32_t> dp((n + 1) * (m + 1), 0);
  auto at = [&](size_t i, size_t j) -> uint32_t& { return dp[i * (m + 1) + j]; };
  for (size_t i = n; i-- > 0;)
    for (size_t j = m; j-- > 0;)
      at(i, j) = a.types[i] == b.types[j] ? at(i + 1, j + 1) + 1 : std::max(at(i + 1, j), at(i, j + 1));
  for (size_t i = 0, j = 0; i < n && j < m;) {
    if (a.types[i] == b.types[j]) {
      out.emplace_back(i, j);
      ++i;
      ++j;
    } else if (at(i + 1, j) >= at(i, j + 1)) {
      ++i;
    } else {
      ++j;
    }
  }
  return out;
}

std::vector<uint64_t> abs_error_histogram(const Tensor& x, const Tensor& y) {
  std::vector<uint64_t> bins(27, 0);
  const uint64_t n = x.numel() * (dtype_is_complex(x.dtype) ? 2 : 1);
  std::vector<double> bx(4096), by(4096);
  for (uint64_t b = 0; b < n; b += bx.size()) {
    const size_t m = static_cast<size_t>(std::min<uint64_t>(bx.size(), n - b));
    widen_values(x.view(), b, m, bx.data());
    widen_values(y.view(), b, m, by.data());
    for (size_t i = 0; i < m; ++i) {
      const double d = std::fabs(bx[i] - by[i]);
      if (!std::isfinite(d)) continue;
      if (d == 0) {
        ++bins[0];
        continue;
      }
      const int k = static_cast<int>(std::floor(std::log10(d))) + 14;
      ++bins[static_cast<size_t>(std::clamp(k, 1, 26))];
    }
  }
  return bins;
}

void judge(CompareRow& r, const Thresholds& t) {
  if (!r.compared) {
    if (r.verdict != Verdict::Error) r.verdict = Verdict::NotCompared;
    return;
  }
  if (r.statistics_only) {
    double worst = 0;
    for (double v : r.stat_rel) worst = std::max(worst, std::isnan(v) ? INFINITY : std::fabs(v));
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
TensorStats stats_of(const DumpEntry& e) {
  if (e.stats) return *e.stats;
  return compute_stats(load_entry(e).view());
}

// Statistics-only comparison (one side, or both, has no tensor data): max, min, avg, l2norm.
void compare_statistics(CompareRow& r) {
  const TensorStats a = stats_of(*r.target), b = stats_of(*r.reference);
  const double av[4] = {a.max, a.min, a.avg(), a.l2norm()};
  const double bv[4] = {b.max, b.min, b.avg(), b.l2norm()};
  for (int i = 0; i < 4; ++i) {
    r.stat_diff[i] = av[i] - bv[i];
    r.stat_rel[i] = bv[i] == 0 ? (av[i] == 0 ? 0.0 : INFINITY) : (av[i] - bv[i]) / std::fabs(bv[i]);
  }
  r.statistics_only = true;
  r.compared = true;
}

void compare_row(CompareRow& r, const CompareOptions& options, std::atomic<uint64_t>& bytes) {
  const DumpEntry& t = *r.target;
  const DumpEntry& ref = *r.reference;
  if (t.source == DumpEntry::Source::Statistics || ref.source == DumpEntry::Source::Statistics) {
    compare_statistics(r);
    return;
  }
  if (t.shape != ref.shape) {
    r.verdict = Verdict::Error;
    r.reason = "shape mismatch: " + shape_to_string(t.shape) + " vs " + shape_to_string(ref.shape);
    return;
  }
  Tensor x = load_entry(t), y = load_entry(ref);
  if (x.numel() == 0) {
    r.reason = "empty tensor";
    return;
  }
  if (dtype_is_complex(x.dtype) != dtype_is_complex(y.dtype)) {
    r.verdict = Verdict::Error;
    r.reason = "complex vs real";
    return;
  }
  bool mismatch = false;
  MetricsOptions mo = options.metrics;
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

}  // namespace

CompareResult compare_dumps(const std::string& target, const std::string& reference, const CompareOptions& options) {
  CompareResult result;
  result.target_entries = index_dump(target);
  result.reference_entries = index_dump(reference);
  const auto& T = result.target_entries;
  const auto& R = result.reference_entries;
  if (T.empty()) throw Error(target + ": no npy, bin or statistic.csv files to compare");
  if (R.empty()) throw Error(reference + ": no npy, bin or statistic.csv files to compare");
  NameMapping mapping(options.mapping);

  std::vector<int64_t> match_t(T.size(), -1), match_r(R.size(), -1);
  std::vector<bool> aligned_t(T.size(), false);
  if (T.size() == 1 && R.size() == 1) {  // two single files: compare them whatever their names
    match_t[0] = 0;
    match_r[0] = 0;
  } else {
    std::map<Key, size_t> by_key;
    for (size_t j = 0; j < R.size(); ++j) by_key.emplace(key_of(R[j], R[j].key_name), j);
    for (size_t i = 0; i < T.size(); ++i) {
      auto it = by_key.find(key_of(T[i], mapping.map(T[i].key_name)));
      if (it != by_key.end() && match_r[it->second] < 0) {
        match_t[i] = static_cast<int64_t>(it->second);
        match_r[it->second] = static_cast<int64_t>(i);
      }
    }
    if (options.align_unmatched) {
      // Per group: the ops left unmatched on both sides, aligned by execution order and type.
      std::map<std::string, std::pair<OpSeq, OpSeq>> groups;
      std::map<std::pair<std::string, std::string>, std::vector<size_t>> t_tensors, r_tensors;
      auto collect = [&](const std::vector<DumpEntry>& entries, const std::vector<int64_t>& match, bool target,
                         std::map<std::pair<std::string, std::string>, std::vector<size_t>>& tensors) {
        for (size_t i = 0; i < entries.size(); ++i) {
          if (match[i] >= 0) continue;
          auto& v = tensors[{entries[i].group, entries[i].key_name}];
          if (v.empty()) {
            OpSeq& seq = target ? groups[entries[i].group].first : groups[entries[i].group].second;
            seq.names.push_back(entries[i].key_name);
            seq.types.push_back(alignment_type(entries[i].op_type));
          }
          v.push_back(i);
        }
      };
      collect(T, match_t, true, t_tensors);
      collect(R, match_r, false, r_tensors);
      for (auto& [group, seqs] : groups) {
        for (auto [a, b] : align(seqs.first, seqs.second)) {
          const auto& ti = t_tensors[{group, seqs.first.names[a]}];
          const auto& rj = r_tensors[{group, seqs.second.names[b]}];
          for (size_t i : ti)
            for (size_t j : rj)
              if (match_r[j] < 0 && T[i].io == R[j].io && T[i].slot == R[j].slot) {
                match_t[i] = static_cast<int64_t>(j);
                match_r[j] = static_cast<int64_t>(i);
                aligned_t[i] = true;
                break;
              }
        }
      }
    }
  }

  for (size_t i = 0; i < T.size(); ++i) {
    CompareRow r;
    r.target = &T[i];
    r.reference = match_t[i] >= 0 ? &R[static_cast<size_t>(match_t[i])] : nullptr;
    r.aligned = aligned_t[i];
    if (!r.reference) r.reason = "no matching tensor in the reference";
    result.rows.push_back(r);
  }
  for (size_t j = 0; j < R.size(); ++j)
    if (match_r[j] < 0) {
      CompareRow r;
      r.reference = &R[j];
      r.reason = "no matching tensor in the target";
      result.rows.push_back(r);
    }

  // Metrics: rows spread over threads; each large tensor is split further inside compute_metrics.
  std::atomic<size_t> next{0}, done{0};
  std::atomic<uint64_t> bytes{0};
  std::mutex progress_mutex;
  const unsigned threads = options.threads ? options.threads : std::max(1u, std::thread::hardware_concurrency());
  auto worker = [&] {
    while (true) {
      const size_t i = next.fetch_add(1);
      if (i >= result.rows.size()) break;
      CompareRow& r = result.rows[i];
      if (r.target && r.reference) {
        try {
          compare_row(r, options, bytes);
        } catch (const Error& e) {
          r.verdict = Verdict::Error;
          r.reason = e.what();
        }
      }
      judge(r, options.thresholds);
      const size_t d = ++done;
      if (options.progress) {
        std::lock_guard<std::mutex> lock(progress_mutex);
        options.progress(d, result.rows.size());
      }
    }
  };
  std::vector<std::thread> pool;
  for (unsigned t = 1; t < threads; ++t) pool.emplace_back(worker);
  worker();
  for (auto& th : pool) th.join();
  result.bytes_compared = bytes.load();

  for (size_t i = 0; i < result.rows.size(); ++i) {
    CompareRow& r = result.rows[i];
    r.index = i;
    if (!r.target || !r.reference) ++result.unmatched;
    if (r.aligned) ++result.aligned;
    switch (r.verdict) {
      case Verdict::Pass: ++result.passed; break;
      case Verdict::Warning: ++result.warnings; break;
      case Verdict::Error: ++result.errors; break;
      case Verdict::NotCompared: ++result.not_compared; break;
    }
  }

  // Histograms of |x - y| for the worst rows (one more pass over those tensors only).
  std::vector<size_t> worst;
  for (size_t i = 0; i < result.rows.size(); ++i)
    if (result.rows[i].compared && !result.rows[i].statistics_only && result.rows[i].metrics.rel_euclidean > 0)
      worst.push_back(i);
  std::sort(worst.begin(), worst.end(), [&](size_t a, size_t b) {
    return result.rows[a].metrics.rel_euclidean > result.rows[b].metrics.rel_euclidean;
  });
  if (worst.size() > options.histograms) worst.resize(options.histograms);
  for (size_t i : worst) {
    CompareRow& r = result.rows[i];
    try {
      r.abs_err_histogram = abs_error_histogram(load_entry(*r.target), load_entry(*r.reference));
    } catch (const Error&) {
      // the row keeps its metrics; only the histogram is missing
    }
  }

  // First divergence: the earliest op (target execution order) whose compared inputs all pass
  // and one of whose outputs does not (warning or error). When every failing op already has a
  // failing input (the runs parted before the dumped iterations), the earliest failing op.
  for (bool require_inputs : {true, false}) {
    size_t i = 0;
    while (i < result.rows.size() && !result.first_divergence.found) {
      const CompareRow& head = result.rows[i];
      if (!head.target) break;
      size_t j = i;
      bool inputs_ok = true;
      int failing_output = -1;
      while (j < result.rows.size() && result.rows[j].target && result.rows[j].target->group == head.target->group &&
             result.rows[j].target->key_name == head.target->key_name) {
        const CompareRow& r = result.rows[j];
        const bool failed = r.verdict == Verdict::Error || r.verdict == Verdict::Warning;
        if (r.target->io == IoKind::Input && failed) inputs_ok = false;
        if (r.target->io == IoKind::Output && failed && failing_output < 0) failing_output = static_cast<int>(j);
        ++j;
      }
      if ((inputs_ok || !require_inputs) && failing_output >= 0) {
        auto& f = result.first_divergence;
        f.found = true;
        f.inputs_agree = inputs_ok;
        f.group = head.target->group;
        f.op_type = head.target->op_type;
        f.op_name = head.target->op_name;
        f.backward = head.target->key_name.rfind("Gradients", 0) == 0;
        f.row = static_cast<size_t>(failing_output);
        f.source = find_source_line(*head.target);
      }
      i = j;
    }
    if (result.first_divergence.found) break;
  }
  return result;
}

}  // namespace opdump
