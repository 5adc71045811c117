/* Start and stop marks for callgrind (valgrind's instruction and cache simulator), called through ctypes by
 * bench/cache_profile.py around the steps it counts: every run counts the same steps, and neither the
 * interpreter's start nor the model's warm-up. Outside valgrind the client requests do nothing. */
#include <valgrind/callgrind.h>

__attribute__((visibility("default"))) void opdump_callgrind_start(void) {
  CALLGRIND_ZERO_STATS;
  CALLGRIND_START_INSTRUMENTATION;
}

__attribute__((visibility("default"))) void opdump_callgrind_stop(void) {
  CALLGRIND_STOP_INSTRUMENTATION;
  CALLGRIND_DUMP_STATS;
}
