// The observer's per-thread state.
#include "thread_state.h"

namespace opdump::pt::detail {

ThreadState& state() {
  thread_local ThreadState s;
  return s;
}

}  // namespace opdump::pt::detail
