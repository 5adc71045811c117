// CANN's overflow records (Opdebug.Node_OpDebug.{task}.{stream}.{timestamp}): written in overflow
// mode beside the dump, one per overflow the hardware flagged, including overflows that saturate
// to the largest finite value and so never show as Inf in any tensor. Read as CANN writes them (a
// DumpData bin whose first output holds the records) and as MindSpore converts them
// ({name}.output.{slot}.json).
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "util/tensor.h"

namespace opdump {

// Where one unit recorded an overflow: the task that overflowed and the unit's status (0: none).
struct OpdebugSite {
  std::string unit;  // "AI Core", "DHA Atomic Add", "L2 Atomic Add"
  uint64_t model_id = 0, stream_id = 0, task_id = 0, task_type = 0;
  uint64_t status = 0;
};

struct OpdebugRecord {
  std::string path;
  std::vector<OpdebugSite> sites;  // AI Core first
  uint64_t kernel_code = 0, block_idx = 0;  // of the AI Core
  // The sites whose status says they overflowed.
  std::vector<OpdebugSite> overflowed() const;
};

// "Opdebug.Node_OpDebug." files.
bool is_opdebug_file(const std::string& path);
// Throws FormatError naming the file when it is neither form.
OpdebugRecord read_opdebug(const std::string& path);
// The same from bytes in memory (`name` in errors).
OpdebugRecord parse_opdebug_bin(std::shared_ptr<const Buffer> bytes, const std::string& name);
OpdebugRecord parse_opdebug_json(const char* text, size_t size, const std::string& name);

// The bytes of a record as CANN lays them out (for tests and for writing records).
std::string opdebug_payload(const OpdebugSite& ai_core, uint64_t kernel_code = 0, uint64_t block_idx = 0);

}  // namespace opdump
