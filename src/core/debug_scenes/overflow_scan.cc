// The offline overflow scan: every tensor of a dump checked like the online overflow mode.
#include "debug_scenes/overflow_scan.h"

#include <algorithm>
#include <cmath>

#include "read/dump_index.h"
#include "opdump/error.h"

namespace opdump {
namespace {

OverflowCheck check_entry(const DumpEntry& e) {
  if (e.source != DumpEntry::Source::Statistics) return check_overflow(load_entry(e).view());
  const RecordedStats& s = *e.stats;
  OverflowCheck c;
  c.nan_or_inf = s.nan.value_or(0) + s.neg_inf.value_or(0) + s.pos_inf.value_or(0);
  if (!c.nan_or_inf && s.no_finite) c.nan_or_inf = std::max<uint64_t>(s.count.value_or(1), 1);
  if (!s.no_finite && std::max(std::fabs(s.max.value_or(0)), std::fabs(s.min.value_or(0))) > 65504.0)
    c.beyond_fp16 = 1;  // at least one
  return c;
}

bool same_op(const DumpEntry& a, const DumpEntry& b) {
  return a.rank() == b.rank() && a.iteration() == b.iteration() && a.where.below == b.where.below &&
         a.key_name == b.key_name && a.order == b.order && a.timestamp == b.timestamp;
}

}  // namespace

OverflowScan scan_overflow(const std::string& path, const OverflowScanOptions& options) {
  OverflowScan scan;
  const DumpIndex index = index_dump(path);
  const std::vector<DumpEntry>& entries = index.entries;
  if (entries.empty()) throw Error(path + ": no npy, bin or statistic.csv files to scan (is it a dump?)");
  scan.warnings = index.warnings;
  OverflowTracker tracker;
  // Entries come sorted by iteration, rank and execution order; one op's tensors are adjacent.
  for (size_t i = 0; i < entries.size();) {
    size_t j = i;
    while (j < entries.size() && same_op(entries[j], entries[i])) ++j;
    const DumpEntry& first = entries[i];
    ++scan.ops;
    const bool ignored =
        std::find(options.ignore_ops.begin(), options.ignore_ops.end(), first.op_type) != options.ignore_ops.end();
    OverflowEvent event;
    bool fired = false;
    for (size_t k = i; k < j && !ignored; ++k) {
      const DumpEntry& e = entries[k];
      if (e.source == DumpEntry::Source::Statistics && !e.stats->has_nonfinite_counts() &&
          std::find(scan.statistics_without_counts.begin(), scan.statistics_without_counts.end(), e.path) ==
              scan.statistics_without_counts.end())
        scan.statistics_without_counts.push_back(e.path);
      OverflowTensor t;
      t.io = e.io;
      t.slot = e.slot;
      t.dtype = e.dtype;
      t.shape = e.shape;
      try {
        t.check = check_entry(e);
      } catch (const Error& err) {  // an undecodable tensor is reported and skipped, never the end of the scan
        ++scan.unreadable;
        if (scan.unreadable <= 3) scan.warnings.push_back(std::string(err.what()) + " (not checked)");
        continue;
      }
      ++scan.tensors;
      const bool over = t.check.fired(options.check_fp16_range);
      if (e.io == IoKind::Input) event.inputs_finite &= !over;
      else fired |= over;
      event.tensors.push_back(std::move(t));
    }
    if (fired) {
      event.op = OpIdentity{first.op_type, first.op_name, first.order, 0, first.timestamp};
      event.rank = first.rank();
      event.iteration = first.iteration() >= 0 ? static_cast<uint64_t>(first.iteration()) : 0;
      const size_t slash = first.path.find_last_of('/');
      event.folder = slash == std::string::npos ? "." : first.path.substr(0, slash);
      tracker.record(std::move(event));
    }
    i = j;
  }
  if (scan.tensors == 0 && scan.unreadable > 0)
    throw Error(path + ": none of its " + std::to_string(scan.unreadable) + " tensors could be read");
  scan.events = tracker.events();
  scan.root_cause = tracker.root_cause();
  return scan;
}

}  // namespace opdump
