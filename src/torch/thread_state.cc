// The observer's per-thread state.
#include "thread_state.h"

namespace opdump::pt::detail {

ThreadState& state() {
  thread_local ThreadState s;
  return s;
}

namespace {
// The blocks of contexts torch deleted on this thread, by size, for the next ones made here: an
// op's OpCtx, and the MarkCtx of each record nested in it (three records in four), would be a
// malloc and a free each.
constexpr size_t kFreeBlocks = 256;  // per size: more than records nest; the rest go back to the heap
struct FreeBlocks {
  std::vector<void*> op_ctxs, mark_ctxs;
  ~FreeBlocks();
};
// Plain values, so that a context made or deleted while the thread's destructors run still finds
// out whether its free lists are gone.
thread_local FreeBlocks* t_free_blocks = nullptr;
thread_local bool t_free_blocks_gone = false;
FreeBlocks::~FreeBlocks() {
  t_free_blocks = nullptr;
  t_free_blocks_gone = true;
  for (const auto* blocks : {&op_ctxs, &mark_ctxs})
    for (void* block : *blocks) ::operator delete(block);
}
FreeBlocks* free_blocks() {
  if (t_free_blocks || t_free_blocks_gone) return t_free_blocks;
  thread_local FreeBlocks lists;
  lists.op_ctxs.reserve(kFreeBlocks);
  lists.mark_ctxs.reserve(kFreeBlocks);
  t_free_blocks = &lists;
  return t_free_blocks;
}

template <typename Ctx>
std::vector<void*>* blocks_of(FreeBlocks* lists);
template <>
std::vector<void*>* blocks_of<OpCtx>(FreeBlocks* lists) { return lists ? &lists->op_ctxs : nullptr; }
template <>
std::vector<void*>* blocks_of<MarkCtx>(FreeBlocks* lists) { return lists ? &lists->mark_ctxs : nullptr; }

template <typename Ctx>
void* take_block(size_t size) {
  std::vector<void*>* free = blocks_of<Ctx>(free_blocks());
  if (size != sizeof(Ctx) || !free || free->empty()) return ::operator new(size);
  void* block = free->back();
  free->pop_back();
  return block;
}

template <typename Ctx>
void give_block(void* block) {
  std::vector<void*>* free = blocks_of<Ctx>(t_free_blocks);
  if (free && free->size() < kFreeBlocks) free->push_back(block);
  else ::operator delete(block);
}
}  // namespace

void* OpCtx::operator new(size_t size) { return take_block<OpCtx>(size); }
void OpCtx::operator delete(void* block) { give_block<OpCtx>(block); }
void* MarkCtx::operator new(size_t size) { return take_block<MarkCtx>(size); }
void MarkCtx::operator delete(void* block) { give_block<MarkCtx>(block); }

}  // namespace opdump::pt::detail
