// The offline overflow scan: every tensor of a dump checked like the online overflow mode.
#include "debug_scenes/overflow_scan.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <tuple>

#include "format/dump_files.h"
#include "format/opdebug.h"
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

std::string hex(uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

// The overflows CANN's Opdebug records flagged, by (folder, task id, stream id) of the task that
// overflowed; each with what to say about it.
using RecordedOverflows = std::map<std::tuple<std::string, uint64_t, uint64_t>, std::string>;

RecordedOverflows read_records(const DumpIndex& index, OverflowScan& scan) {
  RecordedOverflows out;
  for (const std::string& path : index.opdebug_files) {
    OpdebugRecord r;
    try {
      r = read_opdebug(path);
    } catch (const Error& e) {
      scan.warnings.push_back(std::string(e.what()) + " (not read)");
      continue;
    }
    ++scan.records;
    for (const OpdebugSite& s : r.overflowed()) {
      std::string& text = out[{folder_of(path), s.task_id, s.stream_id}];
      if (!text.empty()) text += "; ";
      text += s.unit + " status " + hex(s.status) + " in " + path.substr(path.find_last_of('/') + 1);
    }
  }
  return out;
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
  if (entries.empty() && index.opdebug_files.empty())
    throw Error(path + ": no npy, bin, statistic.csv or Opdebug files to scan (is it a dump?)");
  scan.warnings = index.warnings;
  OverflowTracker tracker;
  RecordedOverflows recorded = read_records(index, scan);
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
    const auto record = recorded.find({folder_of(first.path), first.order, first.stream});
    if (record != recorded.end()) {  // the hardware saw it, whatever the tensors show
      event.recorded = record->second;
      fired = !ignored;
      recorded.erase(record);
    }
    if (fired) {
      event.op = OpIdentity{first.op_type, first.op_name, first.order, first.stream, first.timestamp};
      event.rank = first.rank();
      event.iteration = first.iteration() >= 0 ? static_cast<uint64_t>(first.iteration()) : 0;
      event.folder = folder_of(first.path);
      tracker.record(std::move(event));
    }
    i = j;
  }
  // Records of tasks whose files are not in the dump (an op outside dump_list, say): still overflows.
  for (const auto& [where, text] : recorded) {
    const auto& [folder, task, stream] = where;
    OverflowEvent event;
    event.op = OpIdentity{"", "task " + std::to_string(task) + " of stream " + std::to_string(stream) + " (not dumped)",
                          task, stream, 0};
    event.folder = folder;
    for (const DumpEntry& e : entries)  // the rank and iteration of its folder
      if (folder_of(e.path) == folder) {
        event.rank = e.rank();
        event.iteration = e.iteration() >= 0 ? static_cast<uint64_t>(e.iteration()) : 0;
        break;
      }
    event.recorded = text;
    tracker.record(std::move(event));
  }
  if (scan.tensors == 0 && scan.unreadable > 0)
    throw Error(path + ": none of its " + std::to_string(scan.unreadable) + " tensors could be read");
  scan.events = tracker.events();
  scan.root_cause = tracker.root_cause();
  return scan;
}

}  // namespace opdump
