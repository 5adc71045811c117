// Overflow detection: the per-tensor check, Opdebug records, and the root-cause tracker.
#include <algorithm>
#include <nlohmann/json.hpp>

#include "debug_scenes/debug_scenes.h"
#include "stats/stats_kernels.h"
#include "select/op_kinds.h"

namespace opdump {

bool dtype_can_overflow(DType dtype) {
  switch (dtype) {
    case DType::Float16:
    case DType::BFloat16:
    case DType::Float32:
    case DType::Float64:
    case DType::Complex64:
    case DType::Complex128: return true;
    default: return false;
  }
}

OverflowCheck check_overflow(const TensorView& t, ParallelRunner runner, unsigned parts, size_t split_from_bytes) {
  OverflowCheck c;
  if (!t.data || !dtype_can_overflow(t.dtype)) return c;
  const detail::RangeScanKernel scan = detail::best_range_scan_kernel();
  const size_t n = static_cast<size_t>(t.numel()), element = dtype_size(t.dtype);
  double largest = 0;
  if (!runner || parts <= 1 || n * element < split_from_bytes || n < size_t(parts) * 4096) {
    scan(t.data, n, t.dtype, /*saturating_limit=*/true, &c.nan_or_inf, &c.beyond_fp16, &largest);
  } else {
    std::vector<OverflowCheck> counts(parts);
    std::vector<double> largest_of(parts, 0.0);
    run_split(n, parts, runner, [&](uint64_t b, uint64_t e, unsigned p) {
      scan(static_cast<const char*>(t.data) + b * element, e - b, t.dtype, /*saturating_limit=*/true,
           &counts[p].nan_or_inf, &counts[p].beyond_fp16, &largest_of[p]);
    });
    for (unsigned p = 0; p < parts; ++p) {
      c.nan_or_inf += counts[p].nan_or_inf;
      c.beyond_fp16 += counts[p].beyond_fp16;
      largest = std::max(largest, largest_of[p]);
    }
  }
  // A complex tensor's parts bound nothing the bound rules use (a product mixes them).
  if (c.clean() && !dtype_is_complex(t.dtype)) c.max_abs = largest;
  return c;
}

std::string opdebug_file_name(const OpIdentity& op) {
  return "Opdebug.Node_OpDebug." + std::to_string(op.task_id) + "." + std::to_string(op.stream_id) + "." +
         std::to_string(op.timestamp) + ".output.0.json";
}

namespace {

nlohmann::json event_json(const OverflowEvent& e, bool fp16_range) {
  nlohmann::json tensors = nlohmann::json::array();
  for (const OverflowTensor& t : e.tensors) {
    tensors.push_back({{"io", std::string(to_string(t.io))},
                       {"slot", t.slot},
                       {"dtype", std::string(dtype_name(t.dtype))},
                       {"shape", t.shape},
                       {"nan_or_inf", t.check.nan_or_inf},
                       {"beyond_fp16", t.check.beyond_fp16},
                       {"overflow", t.check.fired(fp16_range)},
                       {"overwritten_in_place", t.overwritten_in_place}});
  }
  return {{"op_type", e.op.op_type},
          {"op_name", e.op.op_name},
          {"model_name", e.model_name},
          {"rank", e.rank},
          {"iteration", e.iteration},
          {"task_id", e.op.task_id},
          {"stream_id", e.op.stream_id},
          {"timestamp", e.op.timestamp},
          {"inputs_finite", e.inputs_finite},
          {"check", fp16_range ? "nan_inf_and_fp16_range" : "nan_inf"},
          {"tensors", tensors},
          {"folder", e.folder},
          {"recorded", e.recorded}};
}

bool before(const OverflowEvent& a, const OverflowEvent& b) {
  return std::tie(a.iteration, a.op.task_id, a.rank) < std::tie(b.iteration, b.op.task_id, b.rank);
}

}  // namespace

std::string opdebug_json(const OverflowEvent& event, bool fp16_range) {
  return event_json(event, fp16_range).dump(2) + "\n";
}

bool OverflowTracker::record(OverflowEvent event) {
  std::lock_guard<std::mutex> lock(mutex_);
  ++total_;
  // Past the cap only events that may become the root cause are kept (a bounded list).
  const bool within = cap_ == 0 || events_.size() < cap_;
  if (within) {
    events_.push_back(std::move(event));
  } else if (event.inputs_finite) {
    auto earlier = std::find_if(events_.begin(), events_.end(), [&](const OverflowEvent& e) {
      return e.inputs_finite && !before(event, e);
    });
    if (earlier == events_.end()) late_roots_.push_back(std::move(event));
    if (late_roots_.size() > 1) {
      std::sort(late_roots_.begin(), late_roots_.end(), before);
      late_roots_.resize(1);
    }
  }
  return within;
}

std::optional<OverflowEvent> OverflowTracker::root_cause() const {
  std::lock_guard<std::mutex> lock(mutex_);
  const OverflowEvent* best = nullptr;
  const OverflowEvent* first = nullptr;
  for (const auto* list : {&events_, &late_roots_})
    for (const OverflowEvent& e : *list) {
      if (!first || before(e, *first)) first = &e;
      if (e.inputs_finite && (!best || before(e, *best))) best = &e;
    }
  if (best) return *best;
  if (first) return *first;
  return std::nullopt;
}

std::vector<OverflowEvent> OverflowTracker::events() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<OverflowEvent> out = events_;
  std::stable_sort(out.begin(), out.end(), before);
  return out;
}

uint64_t OverflowTracker::total() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return total_;
}

std::string overflow_summary_json(const std::vector<OverflowEvent>& events, const std::optional<OverflowEvent>& root,
                                  bool fp16_range) {
  nlohmann::json j;
  j["overflow_ops"] = events.size();
  j["root_cause"] = root ? event_json(*root, fp16_range) : nlohmann::json(nullptr);
  j["ops"] = nlohmann::json::array();
  for (const OverflowEvent& e : events) j["ops"].push_back(event_json(e, fp16_range));
  return j.dump(2) + "\n";
}

std::string describe_overflow(const OverflowEvent& e, bool fp16_range) {
  std::string out = e.op.op_name + " (" + e.op.op_type + ", rank " + std::to_string(e.rank) + ", iteration " +
                    std::to_string(e.iteration) + ", task " +
                    std::to_string(e.op.task_id) + "):";
  for (const OverflowTensor& t : e.tensors) {
    const bool beyond = fp16_range && t.check.beyond_fp16;
    if (!t.check.nan_or_inf && !beyond) continue;
    out += " " + std::string(to_string(t.io)) + "." + std::to_string(t.slot) + " ";
    if (t.check.nan_or_inf) out += std::to_string(t.check.nan_or_inf) + " NaN/Inf";
    if (t.check.nan_or_inf && beyond) out += ", ";
    if (beyond) out += std::to_string(t.check.beyond_fp16) + " beyond float16";
    out += ";";
  }
  if (out.back() == ';') out.pop_back();
  out += e.inputs_finite ? " (inputs finite)" : " (inputs already overflowed)";
  return out;
}

const std::vector<std::string>& default_overflow_ignore_ops() { return op_kinds::overflow_ignored_by_default(); }

}  // namespace opdump
