// `opdump overflow PATH`: finds the overflowing ops of an existing dump (npy, Ascend bin or
// statistic.csv) in execution order, and the root cause, offline.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "opdump/debug_scenes.h"

namespace opdump {

struct OverflowScanOptions {
  bool check_fp16_range = false;
  std::vector<std::string> ignore_ops = default_overflow_ignore_ops();
};

struct OverflowScan {
  uint64_t ops = 0;      // ops found in the dump
  uint64_t tensors = 0;  // tensors checked
  std::vector<OverflowEvent> events;  // overflowing ops: group order, then task id
  std::optional<OverflowEvent> root_cause;
  std::vector<std::string> groups;  // iteration folders in order; OverflowEvent::iteration indexes them
  // statistic.csv files without NaN/Inf count columns: only tensors with no finite element
  // ("null" statistics) can be seen as overflowing there.
  std::vector<std::string> statistics_without_counts;
};

OverflowScan scan_overflow(const std::string& path, const OverflowScanOptions& options = {});

}  // namespace opdump
