// The observer's per-op context (src/torch/thread_state.h): the blocks torch asks for per op are
// reused on their thread, and those deleted on another thread are neither lost nor handed out twice.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <memory>
#include <set>
#include <thread>
#include <vector>

#include "thread_state.h"

using namespace opdump::pt::detail;

TEST(OpCtx, BlocksAreReusedOnTheirThreadAndStartClean) {
  auto first = std::make_unique<OpCtx>();
  first->name = "aten::add_";
  first->depth = 3;
  const void* block = first.get();
  first.reset();
  void* heap = ::operator new(sizeof(OpCtx));  // what the heap would hand out next for this size
  auto second = std::make_unique<OpCtx>();
  EXPECT_EQ(second.get(), block);  // the same block again, from the free list, not the heap
  EXPECT_NE(heap, block);
  ::operator delete(heap);
  EXPECT_TRUE(second->name.empty());
  EXPECT_EQ(second->depth, 0);
  EXPECT_FALSE(second->report);
}

TEST(OpCtx, NestedContextsGetDistinctBlocksAndOthersThreadsDeleteThem) {
  std::vector<std::unique_ptr<OpCtx>> nested;
  for (int i = 0; i < 300; ++i) nested.push_back(std::make_unique<OpCtx>());  // more than the free list keeps
  std::set<const void*> blocks;
  for (const auto& c : nested) blocks.insert(c.get());
  EXPECT_EQ(blocks.size(), nested.size());
  // Deleted on a thread that never made one (it has no free list): they go back to the heap.
  std::thread([&nested] { nested.clear(); }).join();
  std::vector<std::unique_ptr<OpCtx>> again;
  for (int i = 0; i < 300; ++i) again.push_back(std::make_unique<OpCtx>());
  std::set<const void*> distinct;
  for (const auto& c : again) distinct.insert(c.get());
  EXPECT_EQ(distinct.size(), again.size());
}

TEST(MarkCtx, BlocksAreReusedOnTheirThreadApartFromOpContexts) {
  auto mark = std::make_unique<MarkCtx>(RecordCtx::Kind::Nested);
  const void* block = mark.get();
  mark.reset();
  auto op = std::make_unique<OpCtx>();  // an OpCtx never takes a MarkCtx's (smaller) block
  EXPECT_NE(static_cast<const void*>(op.get()), block);
  auto again = std::make_unique<MarkCtx>(RecordCtx::Kind::Engine);
  EXPECT_EQ(static_cast<const void*>(again.get()), block);
  EXPECT_EQ(again->kind, RecordCtx::Kind::Engine);
  // Contexts alive at once (records nested in each other) never share a block.
  std::vector<std::unique_ptr<MarkCtx>> nested;
  for (int i = 0; i < 300; ++i) nested.push_back(std::make_unique<MarkCtx>(RecordCtx::Kind::Node));
  std::set<const void*> blocks;
  for (const auto& c : nested) blocks.insert(c.get());
  blocks.insert(again.get());
  EXPECT_EQ(blocks.size(), nested.size() + 1);
}
