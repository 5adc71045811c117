// Lazy work that holds the statistics barrier's background thread until opened: what is queued behind
// it stays pending, so a test sees work not yet done without racing that thread.
#pragma once
#include <condition_variable>
#include <mutex>

#include "host_stats.h"

class Gate final : public opdump::pt::detail::LazyWork {
 public:
  explicit Gate(opdump::pt::detail::PendingWork& barrier) : LazyWork(barrier) {}
  void open() {
    std::lock_guard<std::mutex> lock(mutex_);
    open_ = true;
    cv_.notify_all();
  }

 private:
  void compute(opdump::pt::detail::ReleasedTensors&) override {
    std::unique_lock<std::mutex> lock(mutex_);
    cv_.wait(lock, [this] { return open_; });
  }
  std::mutex mutex_;
  std::condition_variable cv_;
  bool open_ = false;
};
