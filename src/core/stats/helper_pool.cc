#include "stats/helper_pool.h"

#include "util/own_thread.h"

namespace opdump {

HelperPool::~HelperPool() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  has_work_.notify_all();
  for (std::thread& t : threads_) t.join();
}

ParallelRunner HelperPool::runner() {
  return [pool = shared_from_this()](std::vector<std::function<void()>>& jobs) { pool->run(jobs); };
}

void HelperPool::run(std::vector<std::function<void()>>& jobs) {
  if (jobs.empty()) return;
  std::unique_lock<std::mutex> busy(busy_, std::try_to_lock);
  if (!busy.owns_lock()) {  // another tensor is using the helpers: do it here
    for (auto& j : jobs) j();
    return;
  }
  std::unique_lock<std::mutex> lock(mutex_);
  ensure_threads(jobs.size() - 1);
  pending_ = jobs.size() - 1;
  for (size_t i = 1; i < jobs.size(); ++i) queue_.push_back(&jobs[i]);
  lock.unlock();
  has_work_.notify_all();
  jobs[0]();
  lock.lock();
  while (!queue_.empty()) {  // (only this call's jobs are queued: busy_)
    std::function<void()>* job = queue_.front();
    queue_.pop_front();
    lock.unlock();
    (*job)();
    lock.lock();
    --pending_;
  }
  done_.wait(lock, [&] { return pending_ == 0; });
}

void HelperPool::ensure_threads(size_t n) {
  while (threads_.size() < n) {
    threads_.emplace_back([this] {
      become_own_thread("opdump-split");
      std::unique_lock<std::mutex> lock(mutex_);
      while (true) {
        has_work_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
        if (queue_.empty()) return;  // stopping
        std::function<void()>* job = queue_.front();
        queue_.pop_front();
        lock.unlock();
        (*job)();
        lock.lock();
        if (--pending_ == 0) done_.notify_all();
      }
    });
  }
}

}  // namespace opdump
