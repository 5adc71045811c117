#include "util/fork.h"

#include <pthread.h>

#include <atomic>
#include <mutex>

namespace opdump {
namespace {
std::atomic<bool> g_forked_child{false};
}  // namespace

void watch_forks() {
  static std::once_flag registered;
  std::call_once(registered, [] { ::pthread_atfork(nullptr, nullptr, [] { g_forked_child.store(true); }); });
}

bool in_forked_child() { return g_forked_child.load(std::memory_order_relaxed); }

}  // namespace opdump
