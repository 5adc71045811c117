// The statistics barrier (src/torch/host_stats.h): work reported in order whichever thread computes
// it, and the write barrier forcing the work on a storage before it is written.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <atomic>
#include <cmath>
#include <mutex>
#include <vector>

#include "gate_work.h"
#include "host_stats.h"

using namespace opdump::pt::detail;

namespace {

struct Log {
  std::mutex mutex;
  std::vector<int> order;
  void add(int id) {
    std::lock_guard<std::mutex> lock(mutex);
    order.push_back(id);
  }
};

// An overflow check in miniature: in order, and it "fires", so it reports after older work.
class Finding final : public LazyWork {
 public:
  Finding(PendingWork& barrier, Log& log, int id, at::Tensor t) : LazyWork(barrier), log_(log), id_(id), t_(std::move(t)) {}
  bool in_order() const override { return true; }

 private:
  void compute(ReleasedTensors& release) override {
    barrier().run_earlier(*this);
    log_.add(id_);
    release.push_back(std::move(t_));
  }
  Log& log_;
  int id_;
  at::Tensor t_;
};

const c10::StorageImpl* storage(const at::Tensor& t) { return t.storage().unsafeGetStorageImpl(); }

TEST(PendingWork, WorkForcedOutOfOrderReportsAfterOlderWork) {
  PendingWork barrier;
  barrier.set_placement(opdump::HostWork::Background);
  Log log;
  auto gate = std::make_shared<Gate>(barrier);
  barrier.add({}, gate);  // the background thread waits here: only the write barrier computes
  std::vector<at::Tensor> tensors;
  std::vector<std::shared_ptr<Finding>> works;
  for (int i = 0; i < 5; ++i) {
    tensors.push_back(torch::ones({4}));
    works.push_back(std::make_shared<Finding>(barrier, log, i, tensors.back()));
    barrier.add({storage(tensors.back())}, works.back());
  }
  // An op about to write tensor 3 in place forces its work first: 0, 1 and 2 report before it.
  barrier.force(storage(tensors[3]));
  EXPECT_TRUE(works[3]->done());
  EXPECT_FALSE(works[4]->done());
  {
    std::lock_guard<std::mutex> lock(log.mutex);
    EXPECT_EQ(log.order, (std::vector<int>{0, 1, 2, 3}));
  }
  gate->open();
  barrier.force_all();
  std::lock_guard<std::mutex> lock(log.mutex);
  EXPECT_EQ(log.order, (std::vector<int>{0, 1, 2, 3, 4}));
}

TEST(PendingWork, ForcingAStorageDoesOnlyItsOwnWorkWhenNothingIsInOrder) {
  PendingWork barrier;
  barrier.set_placement(opdump::HostWork::Background);
  auto gate = std::make_shared<Gate>(barrier);
  barrier.add({}, gate);
  at::Tensor a = torch::ones({8}), b = torch::ones({8});
  auto stats_a = std::make_shared<LazyStats>(barrier, a, opdump::DType::Float32, opdump::StatsOptions{});
  auto stats_b = std::make_shared<LazyStats>(barrier, b, opdump::DType::Float32, opdump::StatsOptions{});
  barrier.add({storage(a)}, stats_a);
  barrier.add({storage(b)}, stats_b);
  barrier.force(storage(b));
  EXPECT_TRUE(stats_b->done());
  EXPECT_FALSE(stats_a->done());
  EXPECT_EQ(stats_b->get().count, 8u);
  gate->open();
  barrier.force_all();
  EXPECT_TRUE(stats_a->done());
}

// Entries of dead tensors are dropped between iterations: a new tensor, even at a dead one's
// address, gets its own statistics.
TEST(StatsCache, TensorsAfterDeadOnesGetTheirOwnStatistics) {
  PendingWork barrier;
  barrier.set_placement(opdump::HostWork::Inline);
  StatsCache cache;
  for (int round = 0; round < 3; ++round) {
    std::vector<at::Tensor> live;
    for (int i = 0; i < 50; ++i) {
      live.push_back(torch::full({16}, static_cast<float>(round * 100 + i)));
      auto stats = cache.lookup_or_add(live.back(), opdump::DType::Float32, opdump::StatsOptions{}, /*now=*/true, barrier);
      EXPECT_EQ(stats->get().max, round * 100 + i);
    }
    // Seen again unchanged: the remembered statistics; written in place: summarized anew.
    EXPECT_EQ(cache.lookup_or_add(live[7], opdump::DType::Float32, {}, true, barrier)->get().max, round * 100 + 7);
    live[7].add_(1000);
    EXPECT_EQ(cache.lookup_or_add(live[7], opdump::DType::Float32, {}, true, barrier)->get().max, round * 100 + 1007);
    cache.forget(live[8].unsafeGetTensorImpl());
    live.clear();
    barrier.releases().release();  // summarized tensors are held until a training thread lets them go
    cache.drop_dead();
    EXPECT_TRUE(cache.empty());
  }
}

// Dropping dead entries from the middle of the table (each erase moves the entries after it back)
// keeps every live tensor's statistics, the very ones remembered, and drops every dead one's.
TEST(StatsCache, DroppingDeadEntriesKeepsEveryLiveOne) {
  PendingWork barrier;
  barrier.set_placement(opdump::HostWork::Inline);
  StatsCache cache;
  std::vector<at::Tensor> kept;
  std::vector<std::shared_ptr<LazyStats>> remembered;
  {
    std::vector<at::Tensor> dying;
    for (int i = 0; i < 2000; ++i) {
      at::Tensor t = torch::full({8}, static_cast<float>(i));
      auto stats = cache.lookup_or_add(t, opdump::DType::Float32, opdump::StatsOptions{}, /*now=*/true, barrier);
      // (runs of dead and live neighbours, not one pattern)
      if ((i / 3 + i % 5) % 2) {
        kept.push_back(t);
        remembered.push_back(stats);
      } else {
        dying.push_back(t);
      }
    }
    barrier.releases().release();
  }
  cache.drop_dead();
  ASSERT_FALSE(kept.empty());
  for (size_t k = 0; k < kept.size(); ++k)
    EXPECT_EQ(cache.lookup_or_add(kept[k], opdump::DType::Float32, {}, true, barrier), remembered[k]) << k;
  kept.clear();
  remembered.clear();
  barrier.releases().release();
  cache.drop_dead();
  EXPECT_TRUE(cache.empty());
}

// Thousands of pending works on storages that come and go: the barrier prunes done entries every
// 4096 additions and reuses their nodes; each force still does exactly its storage's work.
TEST(PendingWork, ForcesTheRightWorkAcrossPrunesAndReusedEntries) {
  PendingWork barrier;
  barrier.set_placement(opdump::HostWork::Background);
  auto gate = std::make_shared<Gate>(barrier);
  barrier.add({}, gate);  // only the write barrier computes until the end
  std::vector<at::Tensor> kept;
  std::vector<std::shared_ptr<LazyStats>> works;
  for (int i = 0; i < 10000; ++i) {
    at::Tensor t = torch::full({4}, static_cast<float>(i));
    auto stats = std::make_shared<LazyStats>(barrier, t, opdump::DType::Float32, opdump::StatsOptions{});
    barrier.add(storage(t), stats);
    if (i % 2 == 0) {
      barrier.force(storage(t));
      ASSERT_TRUE(stats->done()) << i;
      EXPECT_EQ(stats->get().max, i);
    } else {
      kept.push_back(t);
      works.push_back(stats);
    }
  }
  for (const auto& w : works) EXPECT_FALSE(w->done());
  barrier.force(storage(kept[1234]));
  EXPECT_TRUE(works[1234]->done());
  EXPECT_FALSE(works[1233]->done());
  EXPECT_FALSE(works[1235]->done());
  gate->open();
  barrier.force_all();
  for (size_t k = 0; k < works.size(); ++k) EXPECT_EQ(works[k]->get().max, static_cast<double>(2 * k + 1)) << k;
}

}  // namespace

// A gradient accumulated into a zeroed tensor: the sum holds the added tensor's values (each -0 as
// +0) and takes that tensor's statistics instead of a second pass over its own memory.
TEST(StatsCache, ASumIntoZerosTakesTheAddedTensorsStatistics) {
  PendingWork barrier;
  barrier.set_placement(opdump::HostWork::Background);
  StatsCache cache;
  const opdump::DType f32 = opdump::DType::Float32;
  at::Tensor grad = torch::ones({4096});
  at::Tensor fresh = torch::rand({4096});
  fresh.narrow(0, 0, 8).fill_(-0.0);  // its least elements are zeros, -0 among them
  auto fresh_stats = cache.lookup_or_add(fresh, f32, {}, /*now=*/false, barrier);

  EXPECT_FALSE(cache.holds_zeros(grad));
  grad.zero_();
  cache.remember_filled(grad, f32, barrier);
  EXPECT_TRUE(cache.holds_zeros(grad));
  grad.add_(fresh);
  EXPECT_FALSE(cache.holds_zeros(grad));  // written since: no longer known
  cache.forget(grad.unsafeGetTensorImpl());
  cache.share(grad, fresh, barrier);
  auto sum_stats = cache.lookup_or_add(grad, f32, {}, /*now=*/false, barrier);
  grad.data_ptr<float>()[100] = 1e6f;  // written unseen after the lookup: the statistics are fresh's, not a pass over grad
  const opdump::TensorStats s = sum_stats->get();
  const opdump::TensorStats f = fresh_stats->get();
  EXPECT_EQ(s.max, f.max);
  EXPECT_EQ(s.sum, f.sum);
  EXPECT_EQ(s.zero, 8u);
  EXPECT_EQ(s.min, 0.0);
  EXPECT_FALSE(std::signbit(s.min));  // grad holds +0 where fresh held -0

  // Filled with -0, or of another shape (a broadcast sum): nothing is shared.
  at::Tensor negative = torch::ones({4096});
  negative.fill_(-0.0);
  cache.remember_filled(negative, f32, barrier);
  EXPECT_FALSE(cache.holds_zeros(negative));
  at::Tensor wide = torch::zeros({4, 4096});
  wide.add_(fresh);
  cache.share(wide, fresh, barrier);
  EXPECT_EQ(cache.lookup_or_add(wide, f32, {}, true, barrier)->get().count, 4u * 4096);  // summarized itself
  barrier.force_all();
  barrier.releases().release();
}

// A tensor returned under another object by detach (as autograd hands a parameter its gradient) takes the
// statistics remembered for its source, the very ones, until either is written in place; another view of
// the memory (other strides) or a copy has its own.
TEST(StatsCache, ADetachedTensorTakesItsSourcesStatistics) {
  PendingWork barrier;
  barrier.set_placement(opdump::HostWork::Inline);
  StatsCache cache;
  const opdump::DType f32 = opdump::DType::Float32;
  at::Tensor grad = torch::rand({64, 32});
  auto stats = cache.lookup_or_add(grad, f32, {}, /*now=*/true, barrier);
  at::Tensor handed = grad.detach();
  at::Tensor transposed = grad.t();
  at::Tensor copy = grad.clone();
  for (const at::Tensor* other : {&handed, &transposed, &copy}) cache.alias(grad, *other);
  bool made = true;
  EXPECT_EQ(cache.lookup_or_add(handed, f32, {}, true, barrier, &made), stats);
  EXPECT_FALSE(made);
  EXPECT_NE(cache.lookup_or_add(transposed, f32, {}, true, barrier, &made), stats);
  EXPECT_TRUE(made);
  EXPECT_NE(cache.lookup_or_add(copy, f32, {}, true, barrier), stats);
  // Written through the source: the detached tensor shares its version counter, and is summarized anew.
  const double before = stats->get().max;
  grad.add_(10);
  auto after = cache.lookup_or_add(handed, f32, {}, true, barrier);
  EXPECT_NE(after, stats);
  EXPECT_EQ(after->get().max, static_cast<double>(static_cast<float>(before + 10)));
  // A tensor detached from one whose remembered statistics are stale takes none.
  at::Tensor stale = torch::rand({16});
  cache.lookup_or_add(stale, f32, {}, true, barrier);
  stale.mul_(2);  // (written unseen by the cache: its entry is of the version before)
  at::Tensor from_stale = stale.detach();
  cache.alias(stale, from_stale);
  cache.lookup_or_add(from_stale, f32, {}, true, barrier, &made);
  EXPECT_TRUE(made);
  barrier.releases().release();
}
