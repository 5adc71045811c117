// Indexes a dump: every tensor of every npy/bin file and statistic.csv row, placed in its layout
// (run, rank, iteration) and execution order.
#include "read/dump_index.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cerrno>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <unordered_map>

#include "execution_order.h"
#include "format/ascend_bin.h"
#include "format/dump_files.h"
#include "format/msprobe_dump.h"
#include "format/torch_pt.h"
#include "read/h5_index.h"
#include "opdump/error.h"
#include "util/file_read.h"
#include "util/log.h"
#include "format/npy.h"
#include "format/placeholders_csv.h"
#include "format/statistic_csv.h"

namespace opdump {

std::string OriginalNames::of(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  const std::string folder = slash == std::string::npos ? "." : path.substr(0, slash);
  const std::string name = slash == std::string::npos ? path : path.substr(slash + 1);
  auto [it, fresh] = folders_.try_emplace(folder);
  if (fresh) {
    const std::string mapping = folder + "/mapping.csv";
    try {
      const std::string text = read_text_file_if_present(mapping);
      if (!text.empty())
        for (const auto& r : parse_csv("generated,original\n" + text, mapping).rows) it->second[r[0]] = r[1];
    } catch (const Error& e) {
      warnings.push_back(std::string(e.what()) + " (long names in that folder stay unresolved)");
    }
  }
  auto found = it->second.find(name);
  return found == it->second.end() ? name : found->second;
}

std::vector<uint32_t> DumpIndex::ranks() const {
  std::set<uint32_t> s;
  for (const auto& e : entries) s.insert(e.rank());
  return {s.begin(), s.end()};
}

std::vector<int64_t> DumpIndex::iterations() const {
  std::set<int64_t> s;
  for (const auto& e : entries) s.insert(e.iteration());
  return {s.begin(), s.end()};
}

namespace {

std::string absolute_folder(const std::string& path) {
  std::error_code ec;
  auto abs = std::filesystem::absolute(path, ec);
  return (ec ? std::filesystem::path(path) : abs).lexically_normal().string();
}

// A statistic.csv cell: nullopt when absent or empty; "null" marks a tensor without finite values.
std::optional<double> real_cell(const std::vector<std::string>& row, int column, bool* null_cell) {
  if (column < 0 || row[column].empty()) return std::nullopt;
  if (row[column] == "null") {
    *null_cell = true;
    return std::nullopt;
  }
  char* end = nullptr;
  const double v = std::strtod(row[column].c_str(), &end);
  if (end == row[column].c_str()) return std::nullopt;
  return v;
}

std::optional<uint64_t> count_cell(const std::vector<std::string>& row, int column) {
  if (column < 0 || row[column].empty()) return std::nullopt;
  char* end = nullptr;
  const uint64_t v = std::strtoull(row[column].c_str(), &end, 10);
  if (end == row[column].c_str()) return std::nullopt;
  return v;
}

// "(1,2)" or "[1, 2]" -> shape; false when it does not parse.
bool parse_shape(const std::string& cell, Shape* out) {
  Shape shape;
  std::string digits;
  bool any = false;
  for (char c : cell) {
    if (c >= '0' && c <= '9') {
      digits += c;
    } else if (c == ',' || c == ')' || c == ']') {
      if (!digits.empty()) shape.push_back(std::strtoll(digits.c_str(), nullptr, 10)), digits.clear(), any = true;
    } else if (c != '(' && c != '[' && c != ' ' && c != '"') {
      return false;
    }
  }
  if (!digits.empty()) shape.push_back(std::strtoll(digits.c_str(), nullptr, 10)), any = true;
  (void)any;
  *out = std::move(shape);
  return true;
}

// The matching key of one FFTS+ slice of an op: each slice pairs with the same slice on the other side.
std::string sliced(std::string key, const std::string& slice) { return slice.empty() ? key : key + "#sgt" + slice; }

class Indexer {
 public:
  Indexer(DumpIndex& index, const std::set<uint32_t>& ranks) : index_(index), ranks_(ranks) {}

  void add(const DumpFile& f) {
    Folder& folder = folder_for(folder_of(f.path));
    if (!ranks_.empty() && !ranks_.count(folder.where.rank)) return;
    switch (f.kind) {
      case DumpFileKind::Npy: index_npy(f, folder); break;
      case DumpFileKind::Bin: index_bin(f, folder); break;
      case DumpFileKind::StatisticCsv: index_statistics(f, folder); break;
      case DumpFileKind::OpdebugRecord: index_.opdebug_files.push_back(f.path); break;
      case DumpFileKind::MsprobeDump: index_msprobe(f, folder); break;
      case DumpFileKind::Pt: index_pt(f, folder); break;
      case DumpFileKind::H5: index_h5_dump(f.path, folder.where, index_.entries); break;
      case DumpFileKind::Other: break;
    }
  }

 private:
  struct Folder {
    DumpPosition where;
    Placeholders placeholders;
  };

  Folder& folder_for(const std::string& folder) {
    auto it = folders_.find(folder);
    if (it != folders_.end()) return it->second;
    Folder f{position_of(absolute_folder(folder)), {}};
    try {
      f.placeholders = read_placeholders(folder);
    } catch (const Error& e) {
      index_.warnings.push_back(std::string(e.what()) + " (its slots read as empty tensors)");
    }
    return folders_.emplace(folder, std::move(f)).first->second;
  }

  // Marks an entry the writer listed as a placeholder.
  static void placeholder(DumpEntry& e, const Folder& folder) {
    e.placeholder = placeholder_reason(folder.placeholders, e.op_name, e.order, e.io, e.slot);
  }

  void unreadable(DumpEntry& e, const std::string& why) {
    e.unreadable = why;
    e.shape_known = false;
    ++unreadable_;
    if (unreadable_ <= 3) index_.warnings.push_back(e.path + ": " + why + " (not compared)");
  }

  void index_npy(const DumpFile& f, const Folder& folder) {
    DumpEntry e;
    e.source = DumpEntry::Source::Npy;
    e.path = f.path;
    e.where = folder.where;
    const std::string name = names.of(f.path);
    ParsedDumpName p;
    if (parse_dump_file_name(name, &p) && p.has_io) {
      e.op_type = p.op.op_type;
      e.op_name = p.op.op_name;
      e.io = p.io;
      e.slot = p.slot;
      e.order = p.op.task_id;
      e.stream = p.op.stream_id;
      e.timestamp = p.op.timestamp;
    } else if (MsprobeFileName m; parse_msprobe_file_name(name, &m)) {
      msprobe_file(e, m);
    } else {
      e.op_name = name.size() > 4 ? name.substr(0, name.size() - 4) : name;
    }
    e.key_name = sliced(sanitize_name(e.op_name), p.slice);
    try {
      NpyHeader h = read_npy_header(f.path, kept_bytes_ < kKeptBytesLimit ? &e.file_bytes : nullptr);
      if (e.file_bytes) kept_bytes_ += e.file_bytes->size();
      e.dtype = h.dtype;
      e.shape = h.shape;
    } catch (const Error& err) {
      unreadable(e, err.what());
    }
    placeholder(e, folder);
    index_.entries.push_back(std::move(e));
  }

  void index_bin(const DumpFile& f, const Folder& folder) {
    const std::string name = names.of(f.path);
    ParsedDumpName p;
    const bool named = parse_dump_file_name(name, &p);
    DumpEntry proto;
    proto.source = DumpEntry::Source::Bin;
    proto.path = f.path;
    proto.where = folder.where;
    proto.op_type = named ? p.op.op_type : "";
    proto.op_name = named ? p.op.op_name : name;
    proto.order = named ? p.op.task_id : 0;
    proto.stream = named ? p.op.stream_id : 0;
    proto.timestamp = named ? p.op.timestamp : 0;
    BinDump d;
    try {
      d = read_ascend_bin(f.path);
    } catch (const Error& err) {
      proto.key_name = sanitize_name(proto.op_name);
      unreadable(proto, err.what());
      index_.entries.push_back(std::move(proto));
      return;
    }
    if (!d.op_name.empty()) proto.op_name = d.op_name;  // the header has the name unsanitized
    if (!named) proto.timestamp = d.dump_time;
    proto.key_name = sliced(sanitize_name(proto.op_name), p.slice);
    uint32_t index = 0;
    for (int pass = 0; pass < 2; ++pass) {
      const auto& list = pass == 0 ? d.inputs : d.outputs;
      for (size_t i = 0; i < list.size(); ++i, ++index) {
        DumpEntry e = proto;
        e.bin_index = index;
        e.io = pass == 0 ? IoKind::Input : IoKind::Output;
        e.slot = static_cast<uint32_t>(i);
        e.shape = list[i].shape;
        if (!dtype_of_bin_data_type(list[i].data_type, &e.dtype)) {
          unreadable(e, "data type " + bin_data_type_name(list[i].data_type) + " is not supported");
        } else {
          try {
            d.checked_size(list[i]);
          } catch (const Error& err) {
            unreadable(e, err.what());
          }
        }
        placeholder(e, folder);
        index_.entries.push_back(std::move(e));
      }
    }
  }

  void index_statistics(const DumpFile& f, const Folder& folder) {
    CsvTable t = read_csv(f.path);
    if (t.truncated_last_row)
      index_.warnings.push_back(f.path + ": its last row is incomplete (the writer was stopped mid-write); skipped");
    const int c_type = t.column("Op Type"), c_name = t.column("Op Name"), c_task = t.column("Task ID"),
              c_ts = t.column("Timestamp"), c_io = t.column("IO"), c_slot = t.column("Slot"),
              c_dtype = t.column("Data Type"), c_shape = t.column("Shape"), c_max = t.column("Max Value"),
              c_min = t.column("Min Value"), c_avg = t.column("Avg Value"), c_count = t.column("Count"),
              c_ninf = t.column("Negative Inf Count"), c_pinf = t.column("Positive Inf Count");
    int c_nan = t.column("NaN Count");
    if (c_nan < 0) c_nan = t.column("Nan Count");  // MindSpore's own spelling in some versions
    int c_l2 = t.column("L2Norm Value");
    if (c_l2 < 0) c_l2 = t.column("L2 Value");
    if (c_name < 0 || c_io < 0 || c_slot < 0)
      throw FormatError(f.path, "not a statistic.csv: it lacks the Op Name, IO or Slot column");
    for (const auto& row : t.rows) {
      DumpEntry e;
      e.source = DumpEntry::Source::Statistics;
      e.path = f.path;
      e.where = folder.where;
      e.op_type = c_type >= 0 ? row[c_type] : "";
      e.op_name = row[c_name];
      e.key_name = sanitize_name(e.op_name);
      e.io = row[c_io] == "input" ? IoKind::Input : IoKind::Output;
      e.slot = static_cast<uint32_t>(std::strtoul(row[c_slot].c_str(), nullptr, 10));
      e.order = c_task >= 0 ? std::strtoull(row[c_task].c_str(), nullptr, 10) : 0;
      e.timestamp = c_ts >= 0 ? std::strtoull(row[c_ts].c_str(), nullptr, 10) : 0;
      if (c_dtype >= 0)
        if (auto d = dtype_from_name(row[c_dtype])) e.dtype = *d;
      e.shape_known = c_shape >= 0 && parse_shape(row[c_shape], &e.shape);
      RecordedStats s;
      bool null_cell = false;
      s.max = real_cell(row, c_max, &null_cell);
      s.min = real_cell(row, c_min, &null_cell);
      s.avg = real_cell(row, c_avg, &null_cell);
      s.l2norm = real_cell(row, c_l2, &null_cell);
      s.no_finite = null_cell;
      s.count = count_cell(row, c_count);
      s.nan = count_cell(row, c_nan);
      s.neg_inf = count_cell(row, c_ninf);
      s.pos_inf = count_cell(row, c_pinf);
      e.stats = s;
      placeholder(e, folder);
      index_.entries.push_back(std::move(e));
    }
  }

  // An msprobe tensor file without its dump.json: what its name says (no statistics, no order).
  void msprobe_file(DumpEntry& e, const MsprobeFileName& m) {
    if (!lone_msprobe_files_++)
      index_.warnings.push_back(folder_of(e.path) + ": msprobe tensor files without their dump.json: no execution order "
                                "(ops are taken in name order, so a first divergence is only a guess) and no "
                                "module structure; keep dump.json beside dump_tensor_data/");
    e.msprobe = true;
    e.op_name = m.api;
    e.op_type = m.api_type;
    e.io = m.input ? IoKind::Input : IoKind::Output;
    e.slot = m.slot;
    e.gradient = m.backward;
  }

  // A torch.save file outside an msprobe dump.json's folder, named as msprobe names tensors (or
  // given by itself): read to learn its dtype and shape.
  void index_pt(const DumpFile& f, const Folder& folder) {
    DumpEntry e;
    e.source = DumpEntry::Source::Pt;
    e.path = f.path;
    e.where = folder.where;
    const std::string name = base_name(f.path);
    if (MsprobeFileName m; parse_msprobe_file_name(name, &m)) msprobe_file(e, m);
    else if (f.relative.empty()) e.op_name = name.substr(0, name.size() - 3);  // a file given by itself
    else return;  // a checkpoint or other .pt kept beside a dump is not one of its tensors
    e.key_name = sanitize_name(e.op_name);
    try {
      const Tensor t = read_torch_pt(f.path);
      e.dtype = t.dtype;
      e.shape = t.shape;
    } catch (const Error& err) {
      unreadable(e, err.what());
    }
    placeholder(e, folder);
    index_.entries.push_back(std::move(e));
  }

  // msprobe: one entry per tensor of dump.json, in its order; the values in dump_tensor_data/ when
  // the dump has them, else the statistics dump.json records.
  void index_msprobe(const DumpFile& f, const Folder& folder) {
    MsprobeDump d = read_msprobe_dump(f.path);
    if (!d.recognized) {
      index_.warnings.push_back(f.path + ": not an msprobe dump.json (no \"data\" object); skipped");
      return;
    }
    for (auto& w : d.warnings) index_.warnings.push_back(std::move(w));
    const std::string data_dir = folder_of(f.path) + "/dump_tensor_data/";
    size_t missing = 0;
    std::string missing_example;
    for (const MsprobeTensor& t : d.tensors) {
      DumpEntry e;
      e.msprobe = true;
      e.where = folder.where;
      e.op_type = t.api_type;
      e.op_name = t.api;
      e.key_name = sanitize_name(t.api);
      e.io = t.input ? IoKind::Input : IoKind::Output;
      e.slot = t.slot;
      e.order = t.order;
      e.gradient = t.backward;
      e.module = t.module;
      if (auto site = d.call_sites.find(t.api); site != d.call_sites.end()) e.call_site = site->second;
      e.shape = t.shape;
      if (t.dtype) e.dtype = *t.dtype;
      e.path = f.path;
      e.source = DumpEntry::Source::Statistics;
      e.stats = msprobe_statistics(t);
      if (!t.data_name.empty()) {
        const std::string file = data_dir + t.data_name;
        std::error_code ec;
        if (!std::filesystem::is_regular_file(file, ec)) {
          if (!missing++) missing_example = file;
        } else if (classify(file) == DumpFileKind::Npy) {
          e.source = DumpEntry::Source::Npy;
          e.path = file;
          try {
            const NpyHeader h = read_npy_header(file);
            e.dtype = h.dtype;
            e.shape = h.shape;
          } catch (const Error& err) {
            unreadable(e, err.what());
          }
        } else {
          e.source = DumpEntry::Source::Pt;
          e.path = file;
          if (!t.dtype) unreadable(e, "data type " + t.dtype_name + " is not supported");
        }
      }
      // (the statistics stay beside the values: compare's data-flow inference reads them)
      index_.entries.push_back(std::move(e));
    }
    if (missing)
      index_.warnings.push_back(f.path + ": " + std::to_string(missing) + " tensor files it lists are missing (e.g. " +
                                missing_example + "); their statistics from dump.json are used");
  }

  // msprobe records max, min, mean and the L2 norm over every element: NaN in max or min means the
  // tensor holds a NaN, an infinite max or min an infinity (counted as at least one).
  static RecordedStats msprobe_statistics(const MsprobeTensor& t) {
    RecordedStats s;
    const bool nan = (t.max && std::isnan(*t.max)) || (t.min && std::isnan(*t.min));
    auto finite = [](const std::optional<double>& v) { return v && std::isfinite(*v) ? v : std::nullopt; };
    s.max = finite(t.max);
    s.min = finite(t.min);
    s.avg = finite(t.mean);
    s.l2norm = finite(t.norm);
    try {
      s.count = shape_numel(t.shape);
    } catch (const Error&) {
    }
    if (t.max && t.min) {
      s.nan = nan ? 1 : 0;
      s.pos_inf = !nan && std::isinf(*t.max) && *t.max > 0 ? 1 : 0;
      s.neg_inf = !nan && std::isinf(*t.min) && *t.min < 0 ? 1 : 0;
    }
    return s;
  }

  DumpIndex& index_;
  // Small files read whole while indexing are kept up to this many bytes (a dump of 100,000
  // tensors of 1 KiB: 100 MB), so that compare opens each file once, as `cat` does.
  static constexpr uint64_t kKeptBytesLimit = uint64_t(256) << 20;
  uint64_t kept_bytes_ = 0;
 public:
  OriginalNames names;

 private:
  std::unordered_map<std::string, Folder> folders_;
  const std::set<uint32_t>& ranks_;
  size_t unreadable_ = 0;
  size_t lone_msprobe_files_ = 0;
};

bool numeric(const std::string& s) { return !s.empty() && std::all_of(s.begin(), s.end(), ::isdigit); }

// Several runs of one rank under the path (Ascend {time} folders, or rank folders in different
// places) would be mixed: an error that lists them.
void check_single_run(const std::string& path, const std::vector<DumpEntry>& entries) {
  std::map<uint32_t, std::set<std::string>> roots;
  for (const auto& e : entries)
    if (!e.where.run_root.empty()) roots[e.rank()].insert(e.where.run_root);
  for (const auto& [rank, set] : roots) {
    if (set.size() < 2) continue;
    std::string list;
    for (const auto& r : set) list += "\n  " + r;
    throw Error(path + " holds " + std::to_string(set.size()) + " runs of rank (device) " + std::to_string(rank) + ":" +
                list + "\ncompare one run: give its folder instead");
  }
}

}  // namespace

std::vector<uint32_t> dump_ranks(const std::string& path) {
  std::set<uint32_t> ranks;
  std::set<std::string> folders;
  for (const DumpFile& f : scan_dump(path))
    if (f.kind != DumpFileKind::Other && folders.insert(folder_of(f.path)).second)
      ranks.insert(position_of(absolute_folder(folder_of(f.path))).rank);
  return {ranks.begin(), ranks.end()};
}

DumpIndex index_dump(const std::string& path, const std::set<uint32_t>& ranks) {
  DumpIndex index;
  Indexer indexer(index, ranks);
  const std::vector<DumpFile> files = scan_dump(path);
  const std::set<std::string> msprobe_data = msprobe_tensor_folders(files);
  for (const DumpFile& f : files)
    if (msprobe_data.empty() || !msprobe_data.count(folder_of(f.path))) indexer.add(f);
  index.warnings.insert(index.warnings.end(), indexer.names.warnings.begin(), indexer.names.warnings.end());
  auto& out = index.entries;
  check_single_run(path, out);

  // Execution order files: data flow, and the iteration of files in folders without one.
  std::map<std::string, uint32_t> run_roots;
  for (const auto& e : out)
    if (!e.where.run_root.empty()) run_roots.emplace(e.where.run_root, e.rank());
  for (const auto& [root, rank] : run_roots) {
    ExecutionOrder order;
    if (read_execution_order(root, order, index.warnings)) index.order.emplace(rank, std::move(order));
  }
  for (auto& e : out) {
    if (!e.where.below.empty()) continue;
    auto it = index.order.find(e.rank());
    if (it == index.order.end()) continue;
    auto op = it->second.by_stamp.find({e.key_name, e.order, e.timestamp});
    if (op == it->second.by_stamp.end()) continue;
    const ExecutedOp& x = it->second.ops[op->second];
    if (e.where.iteration < 0) e.where.iteration = x.iteration;
    e.op_name = x.op_name;  // npy file names hold the name sanitized ('/' written '_')
  }

  // A full dump has both tensors and statistics: the tensors win.
  using TensorKey = std::tuple<uint32_t, int64_t, std::string, std::string, uint64_t, uint64_t, int, uint32_t>;
  auto key_of = [](const DumpEntry& e) {
    return TensorKey{e.rank(), e.iteration(), e.where.below, e.key_name, e.order, e.timestamp, int(e.io), e.slot};
  };
  std::set<TensorKey> has_tensor;
  for (const auto& e : out)
    if (e.source != DumpEntry::Source::Statistics) has_tensor.insert(key_of(e));
  out.erase(std::remove_if(out.begin(), out.end(),
                           [&](const DumpEntry& e) {
                             return e.source == DumpEntry::Source::Statistics && has_tensor.count(key_of(e));
                           }),
            out.end());

  std::stable_sort(out.begin(), out.end(), [](const DumpEntry& a, const DumpEntry& b) {
    if (a.iteration() != b.iteration()) return a.iteration() < b.iteration();
    if (a.rank() != b.rank()) return a.rank() < b.rank();
    if (a.where.below != b.where.below) {
      // numeric folders in numeric order
      if (numeric(a.where.below) && numeric(b.where.below) && a.where.below.size() != b.where.below.size())
        return a.where.below.size() < b.where.below.size();
      return a.where.below < b.where.below;
    }
    if (a.order != b.order) return a.order < b.order;
    if (a.timestamp != b.timestamp) return a.timestamp < b.timestamp;
    if (a.key_name != b.key_name) return a.key_name < b.key_name;
    if (a.io != b.io) return a.io == IoKind::Input;
    return a.slot < b.slot;
  });

  // Repeated names (an op listed twice in one iteration: threads running one model, or a dump
  // whose names are not unique) are told apart by their occurrence, in execution order.
  std::map<std::tuple<uint32_t, int64_t, std::string, std::string, int, uint32_t>, uint64_t> seen;
  size_t repeated = 0;
  std::string example;
  for (auto& e : out) {
    e.occurrence = seen[{e.rank(), e.iteration(), e.where.below, e.key_name, int(e.io), e.slot}]++;
    if (e.occurrence == 1 && e.iteration() >= 0) {
      if (!repeated) example = e.op_name;
      ++repeated;
    }
  }
  if (repeated)
    index.warnings.push_back(path + ": " + std::to_string(repeated) + " tensors appear more than once in one iteration (e.g. " +
                             example + "); they are paired by order of appearance");
  return index;
}

Tensor load_entry(const DumpEntry& e) {
  if (e.source == DumpEntry::Source::Statistics) throw Error(e.path + ": " + e.op_name + " has statistics only, no values");
  if (!e.unreadable.empty()) throw Error(e.unreadable);
  if (e.source == DumpEntry::Source::Npy) return e.file_bytes ? parse_npy(e.file_bytes, e.path) : read_npy(e.path);
  if (e.source == DumpEntry::Source::H5) return load_h5_entry(e);
  if (e.source == DumpEntry::Source::Pt) {
    Tensor t = read_torch_pt(e.path);
    if (t.dtype != e.dtype || t.shape != e.shape)
      throw FormatError(e.path, "holds a " + std::string(dtype_name(t.dtype)) + " " + shape_to_string(t.shape) +
                                    " tensor; dump.json says " + std::string(dtype_name(e.dtype)) + " " +
                                    shape_to_string(e.shape));
    return t;
  }
  BinDump d = read_ascend_bin(e.path);
  const size_t ni = d.inputs.size();
  return d.tensor(e.bin_index < ni ? d.inputs[e.bin_index] : d.outputs[e.bin_index - ni]);
}

}  // namespace opdump
