// Reads a dump back: every tensor of every npy file, Ascend bin file and statistic.csv row, placed
// in its layout (run, rank, iteration) and execution order, with the data flow the execution order
// files record. One reader for compare, overflow, stats and convert.
//
// Layouts (the deepest marker in a file's folder path decides):
//   MindSpore / opdump:  .../rank_{R}/{net}/{graph}/{iteration}/file
//   msprobe:             .../step{N}/rank{R}/dump.json (proc{PID}: rank 0), tensors in dump_tensor_data/
//   Ascend (CANN):       .../{YYYYMMDDHHMMSS}/{device}/{model}/{model_id}/{data_index}/file
//                        .../{YYYYMMDDHHMMSS}/{device}/file  (single-operator dump: no iteration)
//   anything else:       rank 0; the folder's last component is the iteration when it is a number
// Names longer than the file-name limit are resolved through the folder's mapping.csv.
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "layout/layout.h"
#include "stats/recorded_stats.h"
#include "stats/stats.h"
#include "util/tensor.h"
#include "opdump/api.h"

namespace opdump {

// Where a dump folder sits in its layout.
struct DumpPosition {
  std::string run_root;  // the folder holding execution_order/ and graphs/ ("" when none)
  std::string run;       // the Ascend {time} folder ("" in other layouts)
  uint32_t rank = 0;     // rank_{R}, or the Ascend device id
  int64_t iteration = -1;  // -1: the folder has no iteration (single-operator dumps, plain folders)
  // Folders below the layout's own ("watcher/after_task_3", "constants"): kept apart in matching.
  std::string below;
};
// `folder`: an absolute, normalized folder path.
DumpPosition position_of(const std::string& folder);

// The names dump files had before they were shortened to fit the file-name limit: the
// mapping.csv of each folder (opdump's and MindSpore's), read once per folder.
class OriginalNames {
 public:
  // The original name of the file at `path` (its own name when it was not shortened).
  std::string of(const std::string& path);
  // Problems reading a mapping.csv (the names of that folder stay as they are).
  std::vector<std::string> warnings;

 private:
  std::map<std::string, std::map<std::string, std::string>> folders_;
};

// One tensor of a dump.
struct DumpEntry {
  std::string op_type;
  std::string op_name;   // the op's full name (statistic.csv, or the file name resolved through mapping.csv)
  std::string key_name;  // sanitized op name: the matching key
  DumpPosition where;
  IoKind io = IoKind::Output;
  uint32_t slot = 0;
  uint64_t order = 0;  // task id: execution index within the iteration
  uint64_t stream = 0;  // the device stream its name records (0 when none)
  uint64_t timestamp = 0;
  uint64_t occurrence = 0;  // earlier entries of the same rank, iteration, op, io and slot (repeated names)
  // Where the values are: an npy file, one tensor of a bin file, or statistics only.
  enum class Source { Npy, Bin, Pt, H5, Statistics } source = Source::Npy;
  std::string path;
  std::string object;      // H5: the dataset's path in the file
  uint32_t bin_index = 0;  // inputs first, then outputs
  DType dtype = DType::Float32;
  Shape shape;
  bool shape_known = true;
  std::optional<RecordedStats> stats;  // statistics-only entries
  std::string unreadable;              // why the values cannot be decoded ("" when they can)
  std::string placeholder;             // the dump holds no data for this slot, and why (placeholders.csv)
  // A small npy file's bytes, read whole while indexing (within a budget): compare reads its
  // values from here instead of opening the file a second time.
  std::shared_ptr<const Buffer> file_bytes;
  // Entries of msprobe's dump.json: a gradient (its *.backward APIs), the parent module's path from
  // construct.json ("layer1.0.conv1"; "" when unknown) and the user's line from stack.json.
  bool msprobe = false;
  bool gradient = false;
  std::string module;
  std::string call_site;

  uint32_t rank() const { return where.rank; }
  int64_t iteration() const { return where.iteration; }
  bool backward() const { return gradient || key_name.rfind("Gradients", 0) == 0; }

};

// One op of an execution order file (execution_order/ms_execution_order_graph_{g}.csv): every op
// of the configured level, dumped or not, with the ids of the tensors it read and wrote (one id
// per storage; 0 = no tensor in that slot).
struct ExecutedOp {
  int64_t iteration = 0;
  uint64_t task_id = 0;
  std::string op_type;
  std::string op_name;
  std::string key_name;  // sanitized op name
  std::vector<uint64_t> inputs, outputs;
  uint64_t timestamp = 0;  // the op's dump file names carry the same
};

// The execution order of one rank of one side, in execution order.
struct ExecutionOrder {
  std::vector<ExecutedOp> ops;
  // ops index by (iteration, key name, occurrence within the iteration).
  std::map<std::tuple<int64_t, std::string, uint64_t>, size_t> by_name;
  // What tensors no op produced are (execution_order/tensor_names.csv): "parameter net.fc.weight".
  std::map<uint64_t, std::string> tensor_names;
  // ops index by (key name, task id, timestamp): places files of folders without an iteration.
  std::map<std::tuple<std::string, uint64_t, uint64_t>, size_t> by_stamp;
  const ExecutedOp* find(int64_t iteration, const std::string& key_name, uint64_t occurrence = 0) const;
};

struct DumpIndex {
  std::vector<DumpEntry> entries;  // sorted by iteration, rank, execution order, io, slot
  std::map<uint32_t, ExecutionOrder> order;  // by rank, where the dump has execution order files
  std::vector<std::string> opdebug_files;     // CANN's overflow records (format/opdebug.h), read by the overflow scan
  std::vector<std::string> warnings;
  std::vector<uint32_t> ranks() const;
  std::vector<int64_t> iterations() const;
};

// Every tensor of a dump folder (or a single file). Throws opdump::Error for a path that does not
// exist and for a folder holding several runs of one rank (naming them). `ranks`: only these ranks
// (their files alone are read; empty: every rank).
DumpIndex index_dump(const std::string& path, const std::set<uint32_t>& ranks = {});
// The ranks (Ascend: devices) a dump holds files of, from its folders alone (no file is read).
std::vector<uint32_t> dump_ranks(const std::string& path);
// The values of an npy or bin entry (throws opdump::Error for statistics-only or unreadable entries).
OPDUMP_ADAPTER_API Tensor load_entry(const DumpEntry& e);

}  // namespace opdump
