// Finds the dump files below a path and tells their kind (npy, Ascend bin, statistic.csv).
#pragma once
#include <set>
#include <string>
#include <vector>

#include "util/path.h"  // folder_of, base_name: readers of this header use them on the files

namespace opdump {

// OpdebugRecord: CANN's overflow records (format/opdebug.h), bin or MindSpore's json.
// MsprobeDump: msprobe's dump.json (format/msprobe_dump.h); Pt: a torch.save file.
enum class DumpFileKind { Npy, Bin, StatisticCsv, OpdebugRecord, MsprobeDump, Pt, H5, Other };

struct DumpFile {
  std::string path;      // full path
  std::string relative;  // below the scanned root ("" for a single file)
  DumpFileKind kind;
};

// A file, or every file below a folder (sorted, skipping opdump's temporary files).
// Throws opdump::Error when the path does not exist.
std::vector<DumpFile> scan_dump(const std::string& path);
DumpFileKind classify(const std::string& path);
// The dump_tensor_data/ folders of the msprobe dump.json files among `files`: their tensors are
// read through their dump.json, not as files of their own.
std::set<std::string> msprobe_tensor_folders(const std::vector<DumpFile>& files);

}  // namespace opdump
