// Long file names -> short generated names recorded in mapping.csv (the CANN offline-model dump guide).
#include <fcntl.h>
#include <unistd.h>
#include <xxhash.h>

#include <cerrno>
#include <cstdio>

#include "opdump/error.h"
#include "layout/layout.h"
#include "util/csv.h"
#include "writer/atomic_file.h"

namespace opdump {

namespace {

std::string hex_hash(std::string_view s) {
  char hash[17];
  std::snprintf(hash, sizeof hash, "%016llx", static_cast<unsigned long long>(XXH3_64bits(s.data(), s.size())));
  return hash;
}

}  // namespace

std::string shortened_file_name(const std::string& name, size_t max_bytes) {
  // The longest '.'-separated field is the op name (names are sanitized: they hold no '.').
  size_t best = 0, best_len = 0;
  for (size_t start = 0; start <= name.size();) {
    size_t dot = name.find('.', start);
    if (dot == std::string::npos) dot = name.size();
    if (dot - start > best_len) best = start, best_len = dot - start;
    start = dot + 1;
  }
  const std::string_view field = std::string_view(name).substr(best, best_len);
  const size_t rest = name.size() - best_len;
  if (rest + 17 + 8 <= max_bytes) {
    size_t keep = max_bytes - rest - 17;
    while (keep > 0 && (static_cast<unsigned char>(field[keep]) & 0xc0) == 0x80) --keep;  // a UTF-8 boundary
    return name.substr(0, best) + std::string(field.substr(0, keep)) + "~" + hex_hash(field) + name.substr(best + best_len);
  }
  const size_t dot = name.rfind('.');
  const std::string ext = dot != std::string::npos && name.size() - dot <= 8 ? name.substr(dot) : "";
  return hex_hash(name) + ext;
}

std::string NameMapper::map(const std::string& dir, const std::string& name) {
  if (name.size() <= kMaxNameBytes) return name;
  std::lock_guard<std::mutex> lock(mutex_);
  auto& known = by_dir_[dir];
  if (auto it = known.find(name); it != known.end()) return it->second;

  auto& taken = taken_[dir];
  const std::string base = shortened_file_name(name, kMaxNameBytes - 8);  // room for a collision suffix
  std::string generated = base;
  for (uint64_t n = 1; taken.count(generated); ++n) {
    const size_t tilde = base.find('~');  // keep the fields readers parse: the suffix joins the op name
    generated = tilde == std::string::npos ? std::to_string(n) + "_" + base
                                           : base.substr(0, tilde) + "_" + std::to_string(n) + base.substr(tilde);
  }

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
