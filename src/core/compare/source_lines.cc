// The Python line an op was called from, as the adapter wrote it in graphs/*.ir (the first
// dumped iteration of each graph): "    : (full op name)  task N" then "    # In file f.py:L".
#include <dirent.h>

#include <sstream>
#include <string>

#include "compare/source_lines.h"
#include "layout/layout.h"
#include "opdump/error.h"
#include "util/file_read.h"

namespace opdump {
namespace {

std::string parent_of(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  return slash == std::string::npos || slash == 0 ? "" : path.substr(0, slash);
}

std::string search_ir(const std::string& graphs_dir, const std::string& key_name) {
  DIR* dir = ::opendir(graphs_dir.c_str());
  if (!dir) return "";
  std::string found;
  while (dirent* e = ::readdir(dir)) {
    const std::string name = e->d_name;
    if (name.size() < 4 || name.compare(name.size() - 3, 3, ".ir") != 0) continue;
    std::istringstream in;
    try {  // a graph file that is not a regular file is passed over
      in.str(read_text_file(graphs_dir + "/" + name));
    } catch (const Error&) {
      continue;
    }
    std::string line, op;
    while (found.empty() && std::getline(in, line)) {
      if (line.rfind("    : (", 0) == 0) {
        const size_t close = line.rfind(")  task ");
        op = close == std::string::npos ? "" : line.substr(7, close - 7);
      } else if (line.rfind("    # In file ", 0) == 0 && !op.empty() && sanitize_name(op) == key_name) {
        found = line.substr(14);
      }
    }
    if (!found.empty()) break;
  }
  ::closedir(dir);
  return found;
}

}  // namespace

std::string find_source_line(const DumpEntry& entry) {
  if (!entry.call_site.empty()) return entry.call_site;  // msprobe's stack.json
  // graphs/ sits in the run root, a few levels above the op's files.
  std::string dir = parent_of(entry.path);
  for (int up = 0; up < 6 && !dir.empty(); ++up, dir = parent_of(dir)) {
    const std::string s = search_ir(dir + "/graphs", entry.key_name);
    if (!s.empty()) return s;
  }
  return "";
}

}  // namespace opdump
