// Helpers shared by the C++ tests.
#pragma once
#include <ftw.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace opdump::test {

// A fresh folder under /tmp, removed at the end of the test.
class TempDir {
 public:
  TempDir() {
    std::string tmpl = "/tmp/opdump-test-XXXXXX";
    path_ = ::mkdtemp(tmpl.data());
  }
  // Removed with POSIX calls, not std::filesystem::remove_all: PyTorch's pip wheels (2.5 and later) export
  // the libstdc++ they link statically (pytorch/pytorch#133437), so a libtorch program's remove_all binds to
  // libtorch's copy, which crashes with torch 2.11 (a null call inside it, seen on the lent GPU machine).
  ~TempDir() {
    ::nftw(
        path_.c_str(), [](const char* p, const struct stat*, int, struct FTW*) { return ::remove(p); }, 16,
        FTW_DEPTH | FTW_PHYS);
  }
  const std::string& path() const { return path_; }
  std::string operator/(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

inline std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

inline void write_text(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

// Every regular file below a folder (relative paths, sorted).
inline std::vector<std::string> list_files(const std::string& root) {
  std::vector<std::string> out;
  for (auto& e : std::filesystem::recursive_directory_iterator(root))
    if (e.is_regular_file()) out.push_back(std::filesystem::relative(e.path(), root).string());
  std::sort(out.begin(), out.end());
  return out;
}

// No file opdump writes under a temporary name is left in `dir`.
inline bool no_temporary_files(const std::string& dir) {
  for (const auto& f : list_files(dir))
    if (f.find(".opdump-tmp.") != std::string::npos) return false;
  return true;
}

}  // namespace opdump::test
