#include "format/dump_files.h"

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "format/ascend_bin.h"
#include "opdump/error.h"
#include "util/log.h"

namespace fs = std::filesystem;

namespace opdump {

std::set<std::string> msprobe_tensor_folders(const std::vector<DumpFile>& files) {
  std::set<std::string> folders;
  for (const DumpFile& f : files)
    if (f.kind == DumpFileKind::MsprobeDump) folders.insert(folder_of(f.path) + "/dump_tensor_data");
  return folders;
}

DumpFileKind classify(const std::string& path) {
  const std::string name = base_name(path);
  auto ends_with = [&](const char* s) {
    const size_t n = std::char_traits<char>::length(s);
    return name.size() >= n && name.compare(name.size() - n, n, s) == 0;
  };
  if (name.rfind("Opdebug.Node_OpDebug.", 0) == 0) return DumpFileKind::OpdebugRecord;
  if (ends_with(".npy")) return DumpFileKind::Npy;
  if (name == "statistic.csv") return DumpFileKind::StatisticCsv;
  if (name == "dump.json") return DumpFileKind::MsprobeDump;
  if (ends_with(".pt")) return DumpFileKind::Pt;
  if (ends_with(".h5")) return DumpFileKind::H5;
  if (ends_with(".csv") || ends_with(".json") || ends_with(".txt") || ends_with(".ir") || ends_with(".pb"))
    return DumpFileKind::Other;
  return looks_like_ascend_bin(path) ? DumpFileKind::Bin : DumpFileKind::Other;
}

std::vector<DumpFile> scan_dump(const std::string& path) {
  std::error_code ec;
  auto status = fs::status(path, ec);
  if (ec || !fs::exists(status)) throw Error(path + ": no such file or folder");
  std::vector<DumpFile> out;
  if (!fs::is_directory(status)) {
    out.push_back({path, "", classify(path)});
    return out;
  }
  // Links are followed only where they stay inside the dump: a dump received from elsewhere may
  // hold links to /dev/zero or to the reader's own files. (Folder links are not followed at all:
  // the iterator does not descend into them.)
  std::string root;
  size_t left = 0;
  for (auto it = fs::recursive_directory_iterator(path, fs::directory_options::skip_permission_denied, ec);
       it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (ec) throw Error(path + ": cannot list: " + ec.message());
    if (it->is_symlink(ec)) {
      if (root.empty()) root = fs::canonical(path, ec).string() + "/";
      const std::string target = fs::canonical(it->path(), ec).string();
      if (ec || target.compare(0, root.size(), root) != 0) {
        if (left++ < 3) log_warning(it->path().string() + ": a link out of the dump folder; not read");
        ec.clear();
        continue;
      }
    }
    if (!it->is_regular_file(ec)) continue;
    const std::string p = it->path().string();
    if (is_temporary_name(base_name(p))) continue;
    // Lexically: the iterator's paths start with `path` (fs::relative would resolve symlinks with a
    // readlink per path component, a third of the time of indexing a dump of many small files).
    out.push_back({p, it->path().lexically_relative(path).string(), classify(p)});
  }
  if (left > 3) log_warning(std::to_string(left) + " links out of " + path + " were not read");
  std::sort(out.begin(), out.end(), [](const DumpFile& a, const DumpFile& b) { return a.path < b.path; });
  return out;
}

}  // namespace opdump
