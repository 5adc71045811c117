// The observer's per-thread state.
#include "thread_state.h"

namespace opdump::pt::detail {

ThreadState& state() {
  thread_local ThreadState s;
  return s;
}

namespace {
constexpr size_t kFreeOpCtxs = 256;  // more than ops nest; the rest go back to the heap
// Plain values, so that an OpCtx made or deleted while the thread's destructors run still finds
// out whether its free list is gone.
thread_local std::vector<void*>* t_free_op_ctxs = nullptr;
thread_local bool t_free_op_ctxs_gone = false;
struct FreeOpCtxs {
  std::vector<void*> blocks;
  ~FreeOpCtxs() {
    t_free_op_ctxs = nullptr;
    t_free_op_ctxs_gone = true;
    for (void* block : blocks) ::operator delete(block);
  }
};
std::vector<void*>* free_op_ctxs() {
  if (t_free_op_ctxs || t_free_op_ctxs_gone) return t_free_op_ctxs;
  thread_local FreeOpCtxs list;
  list.blocks.reserve(kFreeOpCtxs);
  t_free_op_ctxs = &list.blocks;
  return t_free_op_ctxs;
}
}  // namespace

void* OpCtx::operator new(size_t size) {
  std::vector<void*>* free = free_op_ctxs();
  if (size != sizeof(OpCtx) || !free || free->empty()) return ::operator new(size);
  void* block = free->back();
  free->pop_back();
  return block;
}

void OpCtx::operator delete(void* block) {
  std::vector<void*>* free = t_free_op_ctxs;
  if (free && free->size() < kFreeOpCtxs) free->push_back(block);
  else ::operator delete(block);
}

}  // namespace opdump::pt::detail
