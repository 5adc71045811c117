// Internal to the reader: execution order files -> ExecutionOrder.
#pragma once
#include <string>
#include <vector>

#include "read/dump_index.h"

namespace opdump {

// Reads every opdump execution order file of a run root into `out` (sorted by iteration and task
// id). Returns false when there is none. Throws opdump::Error when one iteration was dumped twice
// into the folder (several runs under one path).
bool read_execution_order(const std::string& run_root, ExecutionOrder& out, std::vector<std::string>& warnings);

}  // namespace opdump
