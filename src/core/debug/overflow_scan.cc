// The offline overflow scan: every tensor of a dump checked like the online overflow mode.
#include "opdump/overflow_scan.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "opdump/compare.h"

namespace opdump {
namespace {

OverflowCheck check_entry(const DumpEntry& e) {
  if (e.source != DumpEntry::Source::Statistics) return check_overflow(load_entry(e).view());
  const TensorStats& s = *e.stats;
  OverflowCheck c;
  c.nan_or_inf = s.nan + s.neg_inf + s.pos_inf;
  if (!c.nan_or_inf && e.stats_null) c.nan_or_inf = std::max<uint64_t>(s.count, 1);
  if (!e.stats_null && std::max(std::fabs(s.max), std::fabs(s.min)) > 65504.0) c.beyond_fp16 = 1;  // at least one
  return c;
}

}  // namespace

OverflowScan scan_overflow(const std::string& path, const OverflowScanOptions& options) {
  OverflowScan scan;
  const std::vector<DumpEntry> entries = index_dump(path);
  OverflowTracker tracker;
  std::vector<std::string> stats_files;
  // Entries come sorted by group and execution order; one op's tensors are adjacent.
  for (size_t i = 0; i < entries.size();) {
    size_t j = i;
    while (j < entries.size() && entries[j].group == entries[i].group && entries[j].key_name == entries[i].key_name &&
           entries[j].order == entries[i].order)
      ++j;
    const DumpEntry& first = entries[i];
    if (scan.groups.empty() || scan.groups.back() != first.group) scan.groups.push_back(first.group);
    ++scan.ops;
    const bool ignored =
        std::find(options.ignore_ops.begin(), options.ignore_ops.end(), first.op_type) != options.ignore_ops.end();
    OverflowEvent event;
    bool fired = false;
    for (size_t k = i; k < j && !ignored; ++k) {
      const DumpEntry& e = entries[k];
      if (e.source == DumpEntry::Source::Statistics && !e.has_nonfinite_counts &&
          std::find(stats_files.begin(), stats_files.end(), e.path) == stats_files.end())
        stats_files.push_back(e.path);
      OverflowTensor t;
      t.io = e.io;
      t.slot = e.slot;
      t.dtype = e.dtype;
      t.shape = e.shape;
      t.check = check_entry(e);
      ++scan.tensors;
      const bool over = t.check.fired(options.check_fp16_range);
      if (e.io == IoKind::Input) event.inputs_finite &= !over;
      else fired |= over;
      event.tensors.push_back(std::move(t));
    }
    if (fired) {
      event.op = OpIdentity{first.op_type, first.op_name, first.order, 0, first.timestamp};
      event.iteration = scan.groups.size() - 1;
      event.folder = first.group;
      tracker.record(std::move(event));
    }
    i = j;
  }
  scan.events = tracker.events();
  scan.root_cause = tracker.root_cause();
  scan.statistics_without_counts = std::move(stats_files);
  return scan;
}

}  // namespace opdump
