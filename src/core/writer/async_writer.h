// The asynchronous writer: callers hand over work (a file to write, statistics to compute)
// and go on; worker threads do it. Memory in flight is capped: at the cap the caller waits. In
// flight counts queued work and copies charged before they are queued (an op's input copies wait
// for its outputs, and nested ops each hold their own).
// Files appear whole (atomic_file.h), large ones written past the page cache if the options say
// so. After a write error (disk full...) tensor writing stops, every later tensor is counted as
// lost, and the report says so; small records (statistic.csv rows, mapping.csv) keep going while
// they fit.
#pragma once
#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "opdump/report.h"
#include "writer/atomic_file.h"
#include "writer/copy_pool.h"
#include "util/tensor.h"

namespace opdump {

struct WriterOptions {
  unsigned threads = 2;
  uint64_t max_inflight_bytes = uint64_t(512) << 20;
  PageCache page_cache = PageCache::Use;  // how written files meet the disk (atomic_file.h)
};

class AsyncWriter {
 public:
  explicit AsyncWriter(WriterOptions options = {});
  ~AsyncWriter();  // drains
  AsyncWriter(const AsyncWriter&) = delete;
  AsyncWriter& operator=(const AsyncWriter&) = delete;

  // Queues a file: `header` bytes then the bytes of `payload` (kept alive until written).
  void write_file(std::string path, std::string header, std::shared_ptr<const Buffer> payload);
  // Queues arbitrary work accounting for `bytes` of memory in flight. Exceptions thrown by the
  // task are counted and logged.
  void run(uint64_t bytes, std::function<void()> task);
  // Counts `bytes` a caller is about to fill for a later write as in flight until the returned token
  // is dropped (keep it with the bytes). Waits for room while queued work can still free some;
  // with nothing queued (the copies of open ops fill the cap) it goes on, since waiting could not end.
  std::shared_ptr<const void> charge(uint64_t bytes);
  // Memory for a host copy of `bytes` to write later, charged as above; its pages are reused by later
  // copies (copy_pool.h) and go back to the system after a second without copies.
  std::shared_ptr<CopyMemory> allocate_copy(size_t bytes);

  // For tasks that build a file's bytes themselves: writes it now (on the task's thread) unless
  // tensor writing has stopped, and counts it as written or lost.
  void write_now(const std::string& path, const void* header, size_t header_size, const void* payload,
                 size_t payload_size);
  // Marks tensor writing as failed (used by tasks that write their own files).
  void record_lost(uint64_t files, uint64_t bytes, const std::string& error);
  void record_written(uint64_t files, uint64_t bytes);
  // Notes a problem for the report without stopping anything (e.g. a folder deleted mid-run).
  void record_problem(const std::string& error);
  bool tensor_writes_stopped() const { return stopped_.load(std::memory_order_relaxed); }

  void drain();  // waits until everything queued so far is done
  WriterReport report() const;
  uint64_t inflight_bytes() const;
  uint64_t spare_copy_bytes() const { return copies_->spare_bytes(); }  // copy memory kept for reuse

 private:
  struct Job {
    uint64_t bytes;
    std::function<void()> work;
  };
  // The accounting of memory in flight, shared with the charge tokens: a copy may outlive the writer
  // (an op still open when a dump is torn down).
  struct Budget {
    std::mutex mutex;  // guards everything below and the writer's queue
    std::condition_variable has_room;
    uint64_t inflight = 0;  // queued and charged bytes
    uint64_t peak = 0;
    void add(uint64_t bytes) {
      inflight += bytes;
      peak = std::max(peak, inflight);
    }
  };
  void worker_loop();
  void admit(std::unique_lock<std::mutex>& lock, uint64_t bytes);  // counts `bytes` once there is room

  WriterOptions options_;
  std::shared_ptr<Budget> budget_ = std::make_shared<Budget>();
  std::shared_ptr<CopyPool> copies_;
  std::mutex& mutex_ = budget_->mutex;
  std::condition_variable has_work_;
  std::condition_variable idle_;
  std::deque<Job> queue_;
  uint64_t active_ = 0;
  bool shutdown_ = false;
  std::atomic<bool> stopped_{false};
  WriterReport report_;
  std::vector<std::thread> threads_;
};

}  // namespace opdump
