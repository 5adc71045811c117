// Where an op of a dump was called from in the user's Python code: its run's graphs/*.ir records it.
#pragma once
#include <string>

#include "read/dump_index.h"

namespace opdump {

// "file.py:42" for an op of a dump (graphs/*.ir of its run), or "".
std::string find_source_line(const DumpEntry& entry);

}  // namespace opdump
