// A large tensor's pass split over torch's intra-op threads (src/torch/intra_op_split.h): the
// parts run on more than the calling thread, and give the statistics of one pass.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <mutex>
#include <set>
#include <thread>

#include "intra_op_split.h"
#include "util/own_thread.h"

using namespace opdump;
using namespace opdump::pt::detail;

namespace {

// Torch's intra-op thread count for the test's duration.
class IntraOpThreads {
 public:
  explicit IntraOpThreads(int n) : before_(at::get_num_threads()) { at::set_num_threads(n); }
  ~IntraOpThreads() { at::set_num_threads(before_); }

 private:
  int before_;
};

// Whether the split reaches other threads in this build (a failure where it should and does not).
bool split_reaches_other_threads() {
  if (intra_op_threads_reachable()) return true;
#ifndef __SANITIZE_THREAD__  // the one build that leaves OpenMP out (CMakeLists.txt)
  ADD_FAILURE() << "at::parallel_for as compiled into the adapter runs on one thread";
#endif
  return false;
}

}  // namespace

TEST(IntraOpSplit, PartsRunOnTorchsIntraOpThreads) {
  if (!split_reaches_other_threads()) GTEST_SKIP() << "this build splits on one thread (ThreadSanitizer)";
  IntraOpThreads two(2);
  const IntraOpSplit split = intra_op_split();
  ASSERT_TRUE(split.runner);
  ASSERT_EQ(split.parts, 2u);
  std::mutex mutex;
  std::set<std::thread::id> ran_on;
  std::vector<std::function<void()>> jobs;
  for (int i = 0; i < 2; ++i)
    jobs.emplace_back([&] {  // torch hands each thread its own share of the jobs, however fast the other
      std::lock_guard<std::mutex> lock(mutex);
      ran_on.insert(std::this_thread::get_id());
    });
  split.runner(jobs);
  EXPECT_EQ(ran_on.size(), 2u);
  EXPECT_EQ(ran_on.count(std::this_thread::get_id()), 1u);
}

TEST(IntraOpSplit, NoSplitWithOneThreadOrInsideAParallelRegion) {
  {
    IntraOpThreads one(1);
    EXPECT_FALSE(intra_op_split().runner);
  }
  if (!split_reaches_other_threads()) GTEST_SKIP() << "this build splits on one thread (ThreadSanitizer)";
  IntraOpThreads two(2);
  bool inner_split = true;
  at::parallel_for(0, 2, 1, [&](int64_t begin, int64_t) {
    if (begin == 0) inner_split = static_cast<bool>(intra_op_split().runner);
  });
  EXPECT_FALSE(inner_split);
}

// A writer or the statistics thread that summarizes a tensor does it alone: a parallel region entered
// there would start an OpenMP team of its own beside the training's (util/own_thread.h).
TEST(IntraOpSplit, NoSplitOnOpdumpsOwnThreads) {
  if (!split_reaches_other_threads()) GTEST_SKIP() << "this build splits on one thread (ThreadSanitizer)";
  IntraOpThreads two(2);
  bool own_split = true, other_split = false;
  std::thread([&] {
    become_own_thread("opdump-test");
    own_split = static_cast<bool>(intra_op_split().runner);
  }).join();
  std::thread([&] { other_split = static_cast<bool>(intra_op_split().runner); }).join();  // a training thread
  EXPECT_FALSE(own_split);
  EXPECT_TRUE(other_split);
  EXPECT_FALSE(on_own_thread());
}

TEST(IntraOpSplit, SplitStatisticsAreThoseOfOnePass) {
  IntraOpThreads two(2);
  const at::Tensor t = torch::randn({1 << 21}, torch::TensorOptions().dtype(torch::kFloat32));
  t[12345] = -7.5f;
  t[(1 << 21) - 3] = 9.25f;
  const TensorView view{t.data_ptr(), DType::Float32, Shape{1 << 21}};
  StatsOptions serial;
  serial.sign_counts = true;
  const TensorStats a = compute_stats(view, serial), b = compute_stats(view, intra_op_split().applied_to(serial));
  EXPECT_EQ(b.count, a.count);
  EXPECT_EQ(b.min, -7.5);
  EXPECT_EQ(b.max, 9.25);
  EXPECT_EQ(b.negative, a.negative);
  EXPECT_EQ(b.positive, a.positive);
  EXPECT_EQ(b.zero, a.zero);
  EXPECT_NEAR(b.sum, a.sum, 1e-9 * a.sum_sq);  // parts summed apart round apart
  EXPECT_NEAR(b.sum_sq, a.sum_sq, 1e-9 * a.sum_sq);
}
