// File and folder names of the CANN and MindSpore layouts.
#include <sys/stat.h>

#include <cerrno>
#include <chrono>
#include <ctime>
#include <cstdio>
#include <vector>

#include <xxhash.h>

#include "opdump/error.h"
#include "layout/layout.h"

namespace opdump {
namespace {

// Length of a valid UTF-8 sequence starting at s[i], or 0 when invalid.
size_t utf8_sequence_length(std::string_view s, size_t i) {
  const unsigned char c = static_cast<unsigned char>(s[i]);
  size_t len;
  if (c < 0x80) return 1;
  if ((c & 0xe0) == 0xc0 && c >= 0xc2) len = 2;
  else if ((c & 0xf0) == 0xe0) len = 3;
  else if ((c & 0xf8) == 0xf0 && c <= 0xf4) len = 4;
  else return 0;
  if (i + len > s.size()) return 0;
  for (size_t k = 1; k < len; ++k)
    if ((static_cast<unsigned char>(s[i + k]) & 0xc0) != 0x80) return 0;
  return len;
}

}  // namespace

std::string sanitize_name(std::string_view name) {
  std::string out;
  out.reserve(name.size());
  for (size_t i = 0; i < name.size();) {
    const unsigned char c = static_cast<unsigned char>(name[i]);
    size_t len = utf8_sequence_length(name, i);
    if (len == 0) {  // invalid UTF-8 byte
      out += '_';
      ++i;
      continue;
    }
    if (len == 1) {
      const bool replace = c == '.' || c == '/' || c == '\\' || c == ' ' || c < 0x20 || c == 0x7f;
      out += replace ? '_' : static_cast<char>(c);
    } else {
      out.append(name.substr(i, len));
    }
    i += len;
  }
  if (out.empty()) out = "_";
  return out;
}

std::string folder_name(std::string_view name) {
  std::string out = sanitize_name(name);
  constexpr size_t kMaxBytes = 200;  // under NAME_MAX (255) with room for the hash
  if (out.size() <= kMaxBytes) return out;
  size_t cut = 180;
  while (cut > 0 && (static_cast<unsigned char>(out[cut]) & 0xc0) == 0x80) --cut;  // a UTF-8 boundary
  char hash[18];
  std::snprintf(hash, sizeof hash, "~%016llx", static_cast<unsigned long long>(XXH3_64bits(name.data(), name.size())));
  return out.substr(0, cut) + hash;
}

std::string dump_time_string(int64_t unix_seconds) {
  std::time_t t = static_cast<std::time_t>(unix_seconds);
  std::tm tm{};
  localtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y%m%d%H%M%S", &tm);
  return buf;
}

uint64_t now_microseconds() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::microseconds>(
                                   std::chrono::system_clock::now().time_since_epoch())
                                   .count());
}

std::string_view to_string(IoKind io) { return io == IoKind::Input ? "input" : "output"; }

std::string ascend_file_name(const OpIdentity& op) {
  return sanitize_name(op.op_type) + '.' + sanitize_name(op.op_name) + '.' + std::to_string(op.task_id) +
         '.' + std::to_string(op.stream_id) + '.' + std::to_string(op.timestamp);
}

std::string mindspore_file_name(const OpIdentity& op, IoKind io, uint32_t slot, std::string_view format) {
  return ascend_file_name(op) + '.' + std::string(to_string(io)) + '.' + std::to_string(slot) + '.' +
         sanitize_name(format) + ".npy";
}

namespace {

std::vector<std::string_view> split_dots(std::string_view s) {
  std::vector<std::string_view> parts;
  size_t start = 0;
  while (true) {
    size_t dot = s.find('.', start);
    parts.push_back(s.substr(start, dot == std::string_view::npos ? std::string_view::npos : dot - start));
    if (dot == std::string_view::npos) break;
    start = dot + 1;
  }
  return parts;
}


}  // namespace

namespace {

// {op_type}.{op_name}.{task_id}[.{stream_id}].{timestamp}[.{FFTS+ fields}] from the first n parts.
bool parse_op_fields(const std::vector<std::string_view>& parts, size_t n, ParsedDumpName* p) {
  if (n == 4) {  // no stream id
    p->op.stream_id = 0;
    if (!parse_decimal(parts[2], &p->op.task_id) || !parse_decimal(parts[3], &p->op.timestamp)) return false;
  } else if (n >= 5 && n <= 9) {
    if (!parse_decimal(parts[2], &p->op.task_id) || !parse_decimal(parts[3], &p->op.stream_id) || !parse_decimal(parts[4], &p->op.timestamp))
      return false;
    for (size_t i = 5; i < n; ++i) {
      uint64_t field;
      if (!parse_decimal(parts[i], &field)) return false;
      if (!p->slice.empty()) p->slice += '.';
      p->slice += parts[i];
    }
  } else {
    return false;
  }
  p->op.op_type = std::string(parts[0]);
  p->op.op_name = std::string(parts[1]);
  return true;
}

}  // namespace

bool parse_dump_file_name(std::string_view name, ParsedDumpName* out) {
  auto parts = split_dots(name);
  ParsedDumpName p;
  size_t op_fields = parts.size();
  if (parts.size() >= 8 && parts.back() == "npy") {
    // ...{io}.{slot}.{format}.npy, or ...{io}.{slot}.{format}.{dtype}.npy (newer MindSpore)
    const size_t io = parts[parts.size() - 4] == "input" || parts[parts.size() - 4] == "output" ? parts.size() - 4
                                                                                                : parts.size() - 5;
    if (parts[io] != "input" && parts[io] != "output") return false;
    uint64_t slot;
    if (!parse_decimal(parts[io + 1], &slot) || slot > UINT32_MAX) return false;
    p.has_io = true;
    p.io = parts[io] == "input" ? IoKind::Input : IoKind::Output;
    p.slot = static_cast<uint32_t>(slot);
    p.format = std::string(parts[io + 2]);
    op_fields = io;
  }
  if (!parse_op_fields(parts, op_fields, &p)) return false;
  *out = std::move(p);
  return true;
}

bool parse_decimal(std::string_view s, uint64_t* out) {
  if (s.empty() || s.size() > 19) return false;
  uint64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + static_cast<uint64_t>(c - '0');
  }
  *out = v;
  return true;
}

}  // namespace opdump
