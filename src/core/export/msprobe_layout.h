// Any dump opdump reads, written in msprobe's layout (MindStudio Probe's "PyTorch data dump" document):
// {out}/step{N}/rank{R}/dump.json with every tensor's dtype, shape and statistics (Max, Min, Mean,
// Norm) per API call in execution order, construct.json (each call's parent module) and stack.json,
// so that msprobe's compare and graph visualization read opdump's dumps.
//
// Names: a record already named as msprobe names it (the module records of opdump's
// PrecisionDebugger, "Module.layer1.0.conv1.Conv2d.forward.0"; an msprobe dump's own) keeps its
// name; an op of a PyTorch dump becomes "Aten.{op}.{n}.{forward|backward}" (msprobe's prefix for
// ATen operators), an op of a CANN or MindSpore dump "Primitive.{op}.{n}.{...}", n counted per
// name and step in execution order.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "read/dump_index.h"
#include "util/progress.h"

namespace opdump {

struct MsprobeExport {
  size_t folders = 0;       // step{N}/rank{R} folders written
  size_t calls = 0;         // API or module calls (dump.json's "data" entries)
  size_t tensors = 0;       // tensors described
  size_t statistics_computed = 0;  // tensors whose statistics were computed from their values
  size_t without_statistics = 0;   // tensors whose dump had neither values nor these statistics
  std::vector<std::string> warnings;
};

// Writes `index` under `out_root` (created). The tensors' values are not copied: the result is a
// statistics dump (task "statistics"), its statistics computed from the values where the dump has
// them. Throws opdump::Error naming the file when one cannot be written; every file is written
// whole or not at all.
// `progress`: advanced by one per tensor (and its file's bytes where its values are read); may be null.
MsprobeExport export_msprobe_layout(const DumpIndex& index, const std::string& out_root, Progress* progress = nullptr);

// "Functional.conv2d.0.forward", "Module.conv1.Conv2d.forward.0", "Tensor.__add__.3.backward",
// "Module.fc.Linear.parameters_grad.0": a call named as msprobe names them.
bool is_msprobe_call_name(const std::string& name);

}  // namespace opdump
