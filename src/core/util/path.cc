#include "util/path.h"

#include <errno.h>
#include <sys/stat.h>

#include "opdump/error.h"

namespace opdump {

std::string folder_of(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

std::string base_name(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

std::string join_path(const std::string& root, std::string_view relative) {
  if (relative.empty()) return root;
  if (relative.front() == '/') throw Error("refusing absolute path \"" + std::string(relative) + "\" below " + root);
  std::string out = root;
  size_t start = 0;
  while (start <= relative.size()) {
    size_t slash = relative.find('/', start);
    if (slash == std::string_view::npos) slash = relative.size();
    std::string_view part = relative.substr(start, slash - start);
    if (part == ".." || part == "." || part.empty() || part.find('\0') != std::string_view::npos)
      throw Error("refusing path component \"" + std::string(part) + "\" in \"" + std::string(relative) +
                  "\" below " + root);
    if (out.empty() || out.back() != '/') out += '/';
    out.append(part);
    start = slash + 1;
  }
  return out;
}

void make_dirs(const std::string& path) {
  if (path.empty()) return;
  struct stat st;
  if (::stat(path.c_str(), &st) == 0) {
    if (!S_ISDIR(st.st_mode)) throw IoError(path, "exists and is not a folder", 0);
    return;
  }
  const size_t slash = path.find_last_of('/');
  if (slash != std::string::npos && slash > 0) make_dirs(path.substr(0, slash));
  if (::mkdir(path.c_str(), 0750) != 0 && errno != EEXIST) throw IoError(path, "cannot create folder", errno);
}

bool is_temporary_name(const std::string& file_name) { return file_name.rfind(kTemporaryPrefix, 0) == 0; }

}  // namespace opdump
