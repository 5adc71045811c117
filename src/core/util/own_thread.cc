// One flag per thread, in this library only: the adapter asks it of threads the core started.
#include "util/own_thread.h"

#if defined(__linux__)
#include <pthread.h>
#endif

namespace opdump {

namespace {
thread_local bool t_own_thread = false;
}  // namespace

void become_own_thread(const char* name) {
  t_own_thread = true;
#if defined(__linux__)
  ::pthread_setname_np(::pthread_self(), name);
#else
  (void)name;
#endif
}

bool on_own_thread() { return t_own_thread; }

}  // namespace opdump
