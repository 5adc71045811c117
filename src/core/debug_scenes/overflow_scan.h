// `opdump overflow PATH`: finds the overflowing ops of an existing dump (npy, Ascend bin or
// statistic.csv, and CANN's Opdebug records of overflows no tensor shows) in execution order, and
// the root cause, offline.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "debug_scenes/debug_scenes.h"

namespace opdump {

struct OverflowScanOptions {
  bool check_fp16_range = false;
  std::vector<std::string> ignore_ops = default_overflow_ignore_ops();
};

struct OverflowScan {
  uint64_t ops = 0;         // ops found in the dump
  uint64_t tensors = 0;     // tensors checked
  uint64_t unreadable = 0;  // tensors whose data could not be decoded (skipped, with a warning)
  uint64_t records = 0;     // CANN Opdebug records read (format/opdebug.h)
  std::vector<OverflowEvent> events;  // overflowing ops: iteration, task id, rank
  std::optional<OverflowEvent> root_cause;
  std::vector<std::string> warnings;  // from reading the dump, and unreadable tensors
  // statistic.csv files without NaN/Inf count columns: only tensors with no finite element
  // ("null" statistics) can be seen as overflowing there.
  std::vector<std::string> statistics_without_counts;
};

// Throws opdump::Error when the path holds no dump (or none of its tensors can be read).
OverflowScan scan_overflow(const std::string& path, const OverflowScanOptions& options = {});

}  // namespace opdump
