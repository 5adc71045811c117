#include "format/opdebug.h"

#include <cstring>
#include <nlohmann/json.hpp>

#include "format/ascend_bin.h"
#include "format/dump_files.h"
#include "opdump/error.h"
#include "util/file_read.h"

namespace opdump {
namespace {

// The layout of the records (little-endian uint64 fields): DHA atomic add info (128 bytes), L2
// atomic add info (128), AI Core info (256), each {model_id, stream_id, task_id, task_type,
// pc_start, para_base}; then the DHA status (256), the L2 status (256), and the AI Core's
// {kernel_code, block_idx, status}.
constexpr size_t kDhaInfo = 0, kL2Info = 128, kAiCoreInfo = 256, kDhaStatus = 512, kL2Status = 768, kAiCoreStatus = 1024;
constexpr size_t kRecordBytes = kAiCoreStatus + 3 * 8;

uint64_t u64(const unsigned char* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

void put_u64(std::string& s, size_t at, uint64_t v) {
  for (int i = 0; i < 8; ++i) s[at + i] = static_cast<char>((v >> (8 * i)) & 0xff);
}

OpdebugSite site_at(const unsigned char* p, const char* unit, uint64_t status) {
  OpdebugSite s;
  s.unit = unit;
  s.model_id = u64(p);
  s.stream_id = u64(p + 8);
  s.task_id = u64(p + 16);
  s.task_type = u64(p + 24);
  s.status = status;
  return s;
}

}  // namespace

OpdebugRecord parse_opdebug_bin(std::shared_ptr<const Buffer> bytes, const std::string& path) {
  BinDump d = parse_ascend_bin(std::move(bytes), path);
  if (d.outputs.empty()) throw FormatError(path, "an Opdebug record with no output holding the overflow status");
  const BinTensor& t = d.outputs[0];
  if (t.size < kRecordBytes)
    throw FormatError(path, "an Opdebug record of " + std::to_string(t.size) + " bytes; CANN's hold " +
                                std::to_string(kRecordBytes) + " or more");
  const auto* p = static_cast<const unsigned char*>(d.file->data()) + t.offset;
  OpdebugRecord r;
  r.path = path;
  r.kernel_code = u64(p + kAiCoreStatus);
  r.block_idx = u64(p + kAiCoreStatus + 8);
  r.sites.push_back(site_at(p + kAiCoreInfo, "AI Core", u64(p + kAiCoreStatus + 16)));
  r.sites.push_back(site_at(p + kDhaInfo, "DHA Atomic Add", u64(p + kDhaStatus)));
  r.sites.push_back(site_at(p + kL2Info, "L2 Atomic Add", u64(p + kL2Status)));
  return r;
}

OpdebugRecord parse_opdebug_json(const char* text, size_t size, const std::string& path) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text, text + size);
  } catch (const nlohmann::json::exception& e) {
    throw FormatError(path, std::string("an Opdebug record that is not JSON: ") + e.what());
  }
  OpdebugRecord r;
  r.path = path;
  for (const char* unit : {"AI Core", "DHA Atomic Add", "L2 Atomic Add"}) {
    if (!j.is_object() || !j.contains(unit) || !j[unit].is_object()) continue;
    const nlohmann::json& u = j[unit];
    auto number = [&](const char* key) -> uint64_t {
      if (!u.contains(key)) return 0;
      if (u[key].is_number_unsigned()) return u[key].get<uint64_t>();
      if (u[key].is_string()) return std::strtoull(u[key].get<std::string>().c_str(), nullptr, 0);  // "0x4"
      throw FormatError(path, std::string(unit) + "." + key + " is not a number");
    };
    OpdebugSite s;
    s.unit = unit;
    s.model_id = number("model_id");
    s.stream_id = number("stream_id");
    s.task_id = number("task_id");
    s.task_type = number("task_type");
    s.status = number("status");
    if (s.unit == "AI Core") {
      r.kernel_code = number("kernel_code");
      r.block_idx = number("block_idx");
    }
    r.sites.push_back(s);
  }
  if (r.sites.empty()) throw FormatError(path, "an Opdebug record without \"AI Core\", \"DHA Atomic Add\" or \"L2 Atomic Add\"");
  return r;
}

std::vector<OpdebugSite> OpdebugRecord::overflowed() const {
  std::vector<OpdebugSite> out;
  for (const auto& s : sites)
    if (s.status != 0) out.push_back(s);
  return out;
}

bool is_opdebug_file(const std::string& path) { return base_name(path).rfind("Opdebug.Node_OpDebug.", 0) == 0; }

OpdebugRecord read_opdebug(const std::string& path) {
  const std::string name = base_name(path);
  const auto bytes = read_file(path);
  if (name.size() > 5 && name.compare(name.size() - 5, 5, ".json") == 0)
    return parse_opdebug_json(static_cast<const char*>(bytes->data()), bytes->size(), path);
  return parse_opdebug_bin(bytes, path);
}

std::string opdebug_payload(const OpdebugSite& ai_core, uint64_t kernel_code, uint64_t block_idx) {
  std::string s(kRecordBytes, '\0');
  put_u64(s, kAiCoreInfo, ai_core.model_id);
  put_u64(s, kAiCoreInfo + 8, ai_core.stream_id);
  put_u64(s, kAiCoreInfo + 16, ai_core.task_id);
  put_u64(s, kAiCoreInfo + 24, ai_core.task_type);
  put_u64(s, kAiCoreStatus, kernel_code);
  put_u64(s, kAiCoreStatus + 8, block_idx);
  put_u64(s, kAiCoreStatus + 16, ai_core.status);
  return s;
}

}  // namespace opdump
