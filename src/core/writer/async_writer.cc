// The bounded asynchronous writer.
#include <chrono>
#include <exception>

#include "opdump/error.h"
#include "util/log.h"
#include "util/own_thread.h"
#include "writer/async_writer.h"

namespace opdump {

namespace {
// Spare copy memory goes back to the system after this long without a copy (a dump paused between
// dumped iterations, or finished).
constexpr auto kSpareCopiesKeptFor = std::chrono::seconds(1);
}  // namespace

AsyncWriter::AsyncWriter(WriterOptions options) : options_(options) {
  if (options_.threads == 0) options_.threads = 1;
  if (options_.max_inflight_bytes == 0) options_.max_inflight_bytes = 1;
  copies_ = CopyPool::create(options_.max_inflight_bytes);
  for (unsigned i = 0; i < options_.threads; ++i) threads_.emplace_back([this] { worker_loop(); });
}

AsyncWriter::~AsyncWriter() {
  drain();
  {
    std::lock_guard<std::mutex> lock(mutex_);
    shutdown_ = true;
  }
  has_work_.notify_all();
  for (auto& t : threads_) t.join();
  copies_->close();  // copies still held (an op open at teardown) are unmapped when freed
}

void AsyncWriter::run(uint64_t bytes, std::function<void()> task) {
  std::unique_lock<std::mutex> lock(mutex_);
  admit(lock, bytes);
  queue_.push_back(Job{bytes, std::move(task)});
  lock.unlock();
  has_work_.notify_one();
}

// At the cap the caller waits. Nothing queued or being written means nothing will free room: then the
// caller goes on (a single job larger than the cap runs alone; copies charged by open ops may fill it).
void AsyncWriter::admit(std::unique_lock<std::mutex>& lock, uint64_t bytes) {
  Budget& b = *budget_;
  b.has_room.wait(lock, [&] {
    return (queue_.empty() && active_ == 0) || b.inflight + bytes <= options_.max_inflight_bytes;
  });
  b.add(bytes);
}

std::shared_ptr<CopyMemory> AsyncWriter::allocate_copy(size_t bytes) { return copies_->allocate(bytes, charge(bytes)); }

std::shared_ptr<const void> AsyncWriter::charge(uint64_t bytes) {
  {
    std::unique_lock<std::mutex> lock(mutex_);
    admit(lock, bytes);
  }
  std::weak_ptr<Budget> weak = budget_;
  static const char kToken = 0;  // never read: the token only needs to be non-null
  return std::shared_ptr<const void>(&kToken, [weak, bytes](const void*) {
    if (auto b = weak.lock()) {
      {
        std::lock_guard<std::mutex> lock(b->mutex);
        b->inflight -= bytes;
      }
      b->has_room.notify_all();
    }
  });
}

void AsyncWriter::write_file(std::string path, std::string header, std::shared_ptr<const Buffer> payload) {
  const uint64_t bytes = header.size() + (payload ? payload->size() : 0);
  if (tensor_writes_stopped()) {
    record_lost(1, bytes, "");
    return;
  }
  const uint64_t held = payload && payload->charged() ? header.size() : bytes;
  run(held, [this, path = std::move(path), header = std::move(header), payload = std::move(payload)] {
    if (payload && !tensor_writes_stopped()) payload->wait_ready();
    write_now(path, header.data(), header.size(), payload ? payload->data() : nullptr, payload ? payload->size() : 0);
  });
}

void AsyncWriter::write_now(const std::string& path, const void* header, size_t header_size, const void* payload,
                            size_t payload_size) {
  const uint64_t bytes = header_size + payload_size;
  if (tensor_writes_stopped()) {
    record_lost(1, bytes, "");
    return;
  }
  try {
    write_file_atomic(path, header, header_size, payload, payload_size, options_.page_cache);
    record_written(1, bytes);
  } catch (const Error& e) {
    record_lost(1, bytes, e.what());
  }
}

void AsyncWriter::record_lost(uint64_t files, uint64_t bytes, const std::string& error) {
  bool first = false;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    report_.files_lost += files;
    report_.bytes_lost += bytes;
    if (!error.empty() && report_.first_error.empty()) {
      report_.first_error = error;
      first = true;
    }
  }
  if (!error.empty()) stopped_.store(true);
  if (first) log_error("tensor writing stopped after a write error; training goes on: " + error);
}

void AsyncWriter::record_problem(const std::string& error) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    ++report_.tasks_failed;
    if (report_.first_error.empty()) report_.first_error = error;
  }
  log_error(error);
}

void AsyncWriter::record_written(uint64_t files, uint64_t bytes) {
  std::lock_guard<std::mutex> lock(mutex_);
  report_.files_written += files;
  report_.bytes_written += bytes;
}

void AsyncWriter::worker_loop() {
  become_own_thread("opdump-writer");
  std::unique_lock<std::mutex> lock(mutex_);
  while (true) {
    if (!has_work_.wait_for(lock, kSpareCopiesKeptFor, [&] { return shutdown_ || !queue_.empty(); })) {
      lock.unlock();
      copies_->trim(kSpareCopiesKeptFor);
      lock.lock();
      continue;
    }
    if (queue_.empty()) return;  // shutdown with nothing left
    Job job = std::move(queue_.front());
    queue_.pop_front();
    ++active_;
    lock.unlock();
    std::string failure;
    try {
      job.work();
    } catch (const std::exception& e) {
      failure = e.what();
    } catch (...) {
      failure = "unknown exception";
    }
    job.work = nullptr;  // release payloads before accounting their memory as free
    if (!failure.empty()) log_error("writer task failed: " + failure);
    lock.lock();
    if (!failure.empty()) {
      ++report_.tasks_failed;
      if (report_.first_error.empty()) report_.first_error = failure;
    }
    budget_->inflight -= job.bytes;
    --active_;
    budget_->has_room.notify_all();
    if (queue_.empty() && active_ == 0) idle_.notify_all();
  }
}

void AsyncWriter::drain() {
  std::unique_lock<std::mutex> lock(mutex_);
  idle_.wait(lock, [&] { return queue_.empty() && active_ == 0; });
}

WriterReport AsyncWriter::report() const {
  std::lock_guard<std::mutex> lock(mutex_);
  WriterReport r = report_;
  r.peak_inflight_bytes = budget_->peak;
  return r;
}

uint64_t AsyncWriter::inflight_bytes() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return budget_->inflight;
}

}  // namespace opdump
