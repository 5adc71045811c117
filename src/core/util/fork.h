// After fork() the child (a DataLoader worker, say) has none of the parent's threads (writers, the
// statistics thread) and may hold locks they held: it never dumps and leaves them alone. One
// pthread_atfork hook per process, registered by the first object that needs to know.
#pragma once
#include "opdump/api.h"

namespace opdump {

// Registers the hook (once; later calls do nothing). Call before threads start.
OPDUMP_ADAPTER_API void watch_forks();
// True in a child forked after watch_forks().
OPDUMP_ADAPTER_API bool in_forked_child();

}  // namespace opdump
