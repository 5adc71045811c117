// Long file names -> short generated names recorded in mapping.csv (seed 002).
#include <fcntl.h>
#include <unistd.h>
#include <xxhash.h>

#include <cerrno>
#include <cstdio>

#include "opdump/error.h"
#include "opdump/layout.h"
#include "opdump/statistic_csv.h"

namespace opdump {
namespace {

void append_line(const std::string& path, const std::string& line) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0640);
  if (fd < 0) throw IoError(path, "cannot open", errno);
  off_t before = ::lseek(fd, 0, SEEK_END);
  ssize_t n = ::write(fd, line.data(), line.size());
  int err = errno;
  if (n != static_cast<ssize_t>(line.size())) {
    if (n > 0 && before >= 0 && ::ftruncate(fd, before) != 0) { /* best effort: keep rows whole */ }
    ::close(fd);
    throw IoError(path, "cannot append mapping row", n < 0 ? err : ENOSPC);
  }
  ::close(fd);
}

}  // namespace

std::string NameMapper::map(const std::string& dir, const std::string& name) {
  if (name.size() <= kMaxNameBytes) return name;
  std::lock_guard<std::mutex> lock(mutex_);
  auto& known = by_dir_[dir];
  if (auto it = known.find(name); it != known.end()) return it->second;

  const size_t dot = name.rfind('.');
  const std::string ext = dot != std::string::npos && name.size() - dot <= 8 ? name.substr(dot) : "";
  char hash[17];
  std::snprintf(hash, sizeof hash, "%016llx",
                static_cast<unsigned long long>(XXH3_64bits(name.data(), name.size())));
  auto& taken = taken_[dir];
  std::string generated = std::string(hash) + ext;
  for (uint64_t n = 1; taken.count(generated); ++n) generated = std::string(hash) + "_" + std::to_string(n) + ext;

  // The row goes in before the file exists, so that any file present has its mapping.
  append_line(dir + "/mapping.csv", csv_escape(generated) + "," + csv_escape(name) + "\n");
  taken.emplace(generated, name);
  known.emplace(name, generated);
  ++replaced_;
  return generated;
}

uint64_t NameMapper::replaced() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return replaced_;
}

}  // namespace opdump
