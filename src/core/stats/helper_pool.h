// Helper threads for splitting one large tensor's statistics or checks, owned by what computes them
// (a dump, the stats command) and handed out as its ParallelRunner: started on first use and kept
// (spawning threads per call would cost more than the work for tensors of a few MB), joined when the
// last holder lets go. One tensor at a time uses them; another one meanwhile is done on its own
// thread.
#pragma once
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "stats/stats.h"

namespace opdump {

class HelperPool : public std::enable_shared_from_this<HelperPool> {
 public:
  static std::shared_ptr<HelperPool> make() { return std::shared_ptr<HelperPool>(new HelperPool()); }
  ~HelperPool();
  HelperPool(const HelperPool&) = delete;
  HelperPool& operator=(const HelperPool&) = delete;

  // Runs jobs[1..] on helpers and jobs[0] on the caller, which then takes the jobs no helper has
  // started yet (a helper may not have been scheduled); returns when all are done.
  void run(std::vector<std::function<void()>>& jobs);
  // run() as a ParallelRunner that keeps the pool alive (statistics computed later, lazily, may
  // outlive the dump that asked for them).
  ParallelRunner runner();

 private:
  HelperPool() = default;
  void ensure_threads(size_t n);  // under mutex_

  std::mutex busy_;  // the tensor using the helpers
  std::mutex mutex_;
  std::condition_variable has_work_, done_;
  std::deque<std::function<void()>*> queue_;
  size_t pending_ = 0;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace opdump
