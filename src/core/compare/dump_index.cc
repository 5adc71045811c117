// Indexes a dump: every tensor of every npy/bin file and statistic.csv row, with its op,
// input/output slot, iteration folder and execution order.
#include <algorithm>
#include <map>

#include "opdump/ascend_bin.h"
#include "opdump/compare.h"
#include "opdump/log.h"
#include "opdump/dump_files.h"
#include "opdump/error.h"
#include "opdump/npy.h"
#include "opdump/statistic_csv.h"

namespace opdump {
namespace {

std::string folder_of(const std::string& relative) {
  const size_t slash = relative.find_last_of('/');
  return slash == std::string::npos ? "" : relative.substr(0, slash);
}

// The matching group of a folder: its last component (the iteration or data index), so that
// runs with other time stamps, net names or ranks still line up.
std::string group_of(const std::string& folder) {
  const size_t slash = folder.find_last_of('/');
  return slash == std::string::npos ? folder : folder.substr(slash + 1);
}

double cell_number(const std::vector<std::string>& row, int column, bool* ok) {
  if (column < 0 || row[column] == "null" || row[column].empty()) {
    *ok = false;
    return 0;
  }
  try {
    return std::stod(row[column]);
  } catch (...) {
    *ok = false;
    return 0;
  }
}

void index_npy(const DumpFile& f, std::vector<DumpEntry>& out) {
  MappedFile file(f.path);
  NpyHeader h = parse_npy_header(file.data(), file.size(), f.path);
  DumpEntry e;
  e.source = DumpEntry::Source::Npy;
  e.path = f.path;
  e.dtype = h.dtype;
  e.shape = h.shape;
  e.group = group_of(folder_of(f.relative));
  ParsedDumpName p;
  const std::string name = base_name(f.path);
  if (parse_dump_file_name(name, &p) && p.has_io) {
    e.op_type = p.op.op_type;
    e.op_name = p.op.op_name;
    e.io = p.io;
    e.slot = p.slot;
    e.order = p.op.task_id;
    e.timestamp = p.op.timestamp;
  } else {
    e.op_name = name.substr(0, name.size() - 4);
    e.op_type = "";
  }
  e.key_name = sanitize_name(e.op_name);
  out.push_back(std::move(e));
}

void index_bin(const DumpFile& f, std::vector<DumpEntry>& out) {
  BinDump d = read_ascend_bin(f.path);
  ParsedDumpName p;
  const std::string name = base_name(f.path);
  const bool named = parse_dump_file_name(name, &p);
  uint32_t index = 0;
  for (int pass = 0; pass < 2; ++pass) {
    const auto& list = pass == 0 ? d.inputs : d.outputs;
    for (size_t i = 0; i < list.size(); ++i, ++index) {
      DumpEntry e;
      e.source = DumpEntry::Source::Bin;
      e.path = f.path;
      e.bin_index = index;
      e.io = pass == 0 ? IoKind::Input : IoKind::Output;
      e.slot = static_cast<uint32_t>(i);
      e.shape = list[i].shape;
      if (!dtype_of_bin_data_type(list[i].data_type, &e.dtype)) e.dtype = DType::UInt8;
      e.group = group_of(folder_of(f.relative));
      e.op_type = named ? p.op.op_type : "";
      e.op_name = named ? p.op.op_name : name;
      e.order = named ? p.op.task_id : 0;
      e.timestamp = named ? p.op.timestamp : d.dump_time;
      e.key_name = sanitize_name(e.op_name);
      out.push_back(std::move(e));
    }
  }
}

void index_statistics(const DumpFile& f, std::vector<DumpEntry>& out) {
  CsvTable t = read_csv(f.path);
  if (t.truncated_last_row) log_warning(f.path + ": its last row is incomplete (the writer was stopped mid-write); skipped");
  const int c_type = t.column("Op Type"), c_name = t.column("Op Name"), c_task = t.column("Task ID"),
            c_ts = t.column("Timestamp"), c_io = t.column("IO"), c_slot = t.column("Slot"),
            c_dtype = t.column("Data Type"), c_max = t.column("Max Value"), c_min = t.column("Min Value"),
            c_avg = t.column("Avg Value"), c_l2 = t.column("L2Norm Value"), c_count = t.column("Count"),
            c_nan = t.column("NaN Count"), c_ninf = t.column("Negative Inf Count"),
            c_pinf = t.column("Positive Inf Count");
  if (c_name < 0 || c_io < 0 || c_slot < 0)
    throw FormatError(f.path, "not a statistic.csv: it lacks the Op Name, IO or Slot column");
  for (const auto& row : t.rows) {
    DumpEntry e;
    e.source = DumpEntry::Source::Statistics;
    e.path = f.path;
    e.op_type = c_type >= 0 ? row[c_type] : "";
    e.op_name = row[c_name];
    e.key_name = sanitize_name(e.op_name);
    e.io = row[c_io] == "input" ? IoKind::Input : IoKind::Output;
    e.slot = static_cast<uint32_t>(std::strtoul(row[c_slot].c_str(), nullptr, 10));
    e.order = c_task >= 0 ? std::strtoull(row[c_task].c_str(), nullptr, 10) : 0;
    e.timestamp = c_ts >= 0 ? std::strtoull(row[c_ts].c_str(), nullptr, 10) : 0;
    if (c_dtype >= 0)
      if (auto d = dtype_from_name(row[c_dtype])) e.dtype = *d;
    e.group = group_of(folder_of(f.relative));
    TensorStats s;
    bool ok = true;
    s.max = cell_number(row, c_max, &ok);
    s.min = cell_number(row, c_min, &ok);
    const double avg = cell_number(row, c_avg, &ok);
    const double l2 = cell_number(row, c_l2, &ok);
    s.count = c_count >= 0 ? std::strtoull(row[c_count].c_str(), nullptr, 10) : 1;
    s.finite = ok ? std::max<uint64_t>(s.count, 1) : 0;
    s.sum = avg * static_cast<double>(s.finite);
    s.sum_sq = l2 * l2;
    auto count = [&](int c) { return c >= 0 ? std::strtoull(row[c].c_str(), nullptr, 10) : 0; };
    s.nan = count(c_nan);
    s.neg_inf = count(c_ninf);
    s.pos_inf = count(c_pinf);
    e.has_nonfinite_counts = c_nan >= 0 && c_ninf >= 0 && c_pinf >= 0;
    for (int c : {c_max, c_min, c_avg, c_l2}) e.stats_null |= c >= 0 && row[c] == "null";
    e.stats = s;
    out.push_back(std::move(e));
  }
}

}  // namespace

std::vector<DumpEntry> index_dump(const std::string& path) {
  std::vector<DumpEntry> out;
  for (const DumpFile& f : scan_dump(path)) {
    switch (f.kind) {
      case DumpFileKind::Npy: index_npy(f, out); break;
      case DumpFileKind::Bin: index_bin(f, out); break;
      case DumpFileKind::StatisticCsv: index_statistics(f, out); break;
      case DumpFileKind::Other: break;
    }
  }
  // A full dump has both tensors and statistics: the tensors win.
  std::map<std::tuple<std::string, std::string, int, uint32_t>, bool> has_tensor;
  for (const auto& e : out)
    if (e.source != DumpEntry::Source::Statistics) has_tensor[{e.group, e.key_name, int(e.io), e.slot}] = true;
  out.erase(std::remove_if(out.begin(), out.end(),
                           [&](const DumpEntry& e) {
                             return e.source == DumpEntry::Source::Statistics &&
                                    has_tensor.count({e.group, e.key_name, int(e.io), e.slot});
                           }),
            out.end());
  std::stable_sort(out.begin(), out.end(), [](const DumpEntry& a, const DumpEntry& b) {
    if (a.group != b.group) {
      // numeric groups in numeric order
      const bool an = !a.group.empty() && std::all_of(a.group.begin(), a.group.end(), ::isdigit);
      const bool bn = !b.group.empty() && std::all_of(b.group.begin(), b.group.end(), ::isdigit);
      if (an && bn && a.group.size() != b.group.size()) return a.group.size() < b.group.size();
      return a.group < b.group;
    }
    if (a.order != b.order) return a.order < b.order;
    if (a.timestamp != b.timestamp) return a.timestamp < b.timestamp;
    if (a.key_name != b.key_name) return a.key_name < b.key_name;
    if (a.io != b.io) return a.io == IoKind::Input;
    return a.slot < b.slot;
  });
  return out;
}

}  // namespace opdump
