#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <memory>
#include <thread>
#include <vector>

#include "writer/async_writer.h"
#include "writer/copy_pool.h"

using namespace opdump;

namespace {
constexpr size_t MiB = size_t(1) << 20;
}  // namespace

TEST(CopyPool, AFreedBlockIsReusedByTheNextCopyOfItsSize) {
  auto pool = CopyPool::create(64 * MiB);
  const void* first;
  {
    auto a = pool->allocate(MiB + 10, nullptr);
    first = a->data();
    std::memset(a->mutable_data(), 7, a->size());
    EXPECT_EQ(a->size(), MiB + 10);
  }
  EXPECT_EQ(pool->spare_bytes(), MiB + 4096);
  auto b = pool->allocate(MiB + 100, nullptr);  // same pages, rounded
  EXPECT_EQ(b->data(), first);
  EXPECT_EQ(pool->spare_bytes(), 0u);
  EXPECT_EQ(pool->mapped_bytes(), MiB + 4096);
  auto c = pool->allocate(MiB, nullptr);  // the only block is in use: a new one
  EXPECT_NE(c->data(), first);
  EXPECT_EQ(pool->mapped_bytes(), 2 * MiB + 4096);
}

TEST(CopyPool, SmallCopiesComeFromTheHeap) {
  auto pool = CopyPool::create(64 * MiB);
  { auto a = pool->allocate(1000, nullptr); std::memset(a->mutable_data(), 1, 1000); }
  EXPECT_EQ(pool->mapped_bytes(), 0u);
}

TEST(CopyPool, ABlockMuchLargerThanTheCopyIsNotTaken) {
  auto pool = CopyPool::create(64 * MiB);
  { auto big = pool->allocate(8 * MiB, nullptr); }
  auto small = pool->allocate(MiB, nullptr);  // would hold 8 MiB for 1
  EXPECT_EQ(pool->spare_bytes(), 8 * MiB);
  EXPECT_EQ(pool->mapped_bytes(), 9 * MiB);
  auto close = pool->allocate(7 * MiB, nullptr);  // within a quarter: taken
  EXPECT_EQ(pool->spare_bytes(), 0u);
}

// Spare blocks make room for a copy no spare block fits: mapped memory stays within the limit.
TEST(CopyPool, MappedMemoryStaysWithinTheLimit) {
  auto pool = CopyPool::create(4 * MiB);
  {
    std::vector<std::shared_ptr<CopyMemory>> held;
    for (int i = 0; i < 3; ++i) held.push_back(pool->allocate(MiB, nullptr));
  }
  EXPECT_EQ(pool->spare_bytes(), 3 * MiB);
  auto two = pool->allocate(2 * MiB, nullptr);
  EXPECT_EQ(pool->mapped_bytes(), 4 * MiB);  // one spare block unmapped for it
  EXPECT_EQ(pool->spare_bytes(), 2 * MiB);
  // Copies in use past the limit (copies of open ops): their blocks go back to the system.
  std::vector<std::shared_ptr<CopyMemory>> held;
  for (int i = 0; i < 5; ++i) held.push_back(pool->allocate(MiB, nullptr));
  EXPECT_EQ(pool->mapped_bytes(), 7 * MiB);
  held.clear();
  two.reset();
  EXPECT_EQ(pool->mapped_bytes(), 4 * MiB);
  EXPECT_EQ(pool->spare_bytes(), 4 * MiB);
}

TEST(CopyPool, SpareBlocksGoBackWhenIdleOrClosed) {
  auto pool = CopyPool::create(64 * MiB);
  { auto a = pool->allocate(2 * MiB, nullptr); }
  pool->trim(std::chrono::hours(1));  // in use a moment ago: kept
  EXPECT_EQ(pool->spare_bytes(), 2 * MiB);
  pool->trim(std::chrono::seconds(0));
  EXPECT_EQ(pool->mapped_bytes(), 0u);
  auto held = pool->allocate(2 * MiB, nullptr);
  pool->close();
  held.reset();  // after close a block is unmapped when freed
  EXPECT_EQ(pool->mapped_bytes(), 0u);
}

// Copies from the writer count as in flight until freed, outlive the writer safely, and the writer's
// threads give spare memory back after a second without copies.
TEST(CopyPool, WriterCopiesAreChargedAndGiveMemoryBackWhenIdle) {
  auto w = std::make_unique<AsyncWriter>(WriterOptions{1, 64 * MiB});
  auto copy = w->allocate_copy(3 * MiB);
  EXPECT_EQ(w->inflight_bytes(), 3 * MiB);
  EXPECT_TRUE(copy->charged());
  copy.reset();
  EXPECT_EQ(w->inflight_bytes(), 0u);
  EXPECT_EQ(w->spare_copy_bytes(), 3 * MiB);
  const auto start = std::chrono::steady_clock::now();
  while (w->spare_copy_bytes() != 0 && std::chrono::steady_clock::now() - start < std::chrono::seconds(10))
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ(w->spare_copy_bytes(), 0u) << "spare copy memory kept after the writer went idle";
  auto outlives = w->allocate_copy(2 * MiB);
  std::memset(outlives->mutable_data(), 3, outlives->size());
  w.reset();  // a copy held by an op still open when the dump is torn down
  outlives.reset();
}
