// opdump's own threads (writers, the statistics thread, split helpers): named, so that `top -H`,
// `ps -L`, perf and gdb tell them from the framework's, and known, so that the adapter never splits
// work over the framework's intra-op threads from one of them. An OpenMP parallel region entered from a writer thread
// starts a second OpenMP team beside the training's: more spinning threads than cores, and torch's
// own workers then sleep between parallel regions, slowing every later step, dumped or not.
#pragma once
#include "opdump/api.h"

namespace opdump {

// Names the calling thread (Linux keeps the first 15 characters) and marks it as opdump's.
OPDUMP_ADAPTER_API void become_own_thread(const char* name);
// Whether the calling thread is one of opdump's (become_own_thread ran on it).
OPDUMP_ADAPTER_API bool on_own_thread();

}  // namespace opdump
