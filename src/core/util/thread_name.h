// Names opdump's threads as `top -H`, `ps -L`, perf and gdb show them, so that a user can tell
// them from the framework's.
#pragma once
#if defined(__linux__)
#include <pthread.h>
#endif

namespace opdump {

// Linux keeps the first 15 characters.
inline void name_this_thread(const char* name) {
#if defined(__linux__)
  ::pthread_setname_np(::pthread_self(), name);
#else
  (void)name;
#endif
}

}  // namespace opdump
