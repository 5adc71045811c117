// Long file names -> short generated names recorded in mapping.csv (seed 002).
#include <fcntl.h>
#include <unistd.h>
#include <xxhash.h>

#include <cerrno>
#include <cstdio>

#include "opdump/error.h"
#include "opdump/layout.h"
#include "opdump/statistic_csv.h"
#include "opdump/writer.h"

namespace opdump {

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
  append_to_file(dir + "/mapping.csv", csv_escape(generated) + "," + csv_escape(name) + "\n");
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
