#include "compare/read_ahead.h"

#include <fcntl.h>
#include <unistd.h>

#include <chrono>

#include "util/file_read.h"

namespace opdump::detail {

ReadAhead::ReadAhead(const std::vector<CompareRow>& rows, const std::atomic<size_t>& taken, unsigned streams,
                     uint64_t window_bytes)
    : taken_(taken), window_(window_bytes) {
  ahead_.assign(rows.size() + 1, 0);
  for (size_t r = 0; r < rows.size(); ++r) {
    ahead_[r + 1] = ahead_[r];
    if (!rows[r].target || !rows[r].reference) continue;
    for (const DumpEntry* e : {rows[r].target, rows[r].reference}) {
      if (e->source == DumpEntry::Source::Statistics || !e->unreadable.empty() || !e->shape_known) continue;
      const uint64_t bytes = shape_numel(e->shape) * dtype_size(e->dtype);
      if (bytes < kReadWholeBelow) continue;
      if (!files_.empty() && files_.back().path == e->path) continue;  // a bin file's next tensor
      files_.push_back(File{e->path, bytes, r});
      ahead_[r + 1] += bytes;
    }
  }
  if (files_.empty()) return;
  for (unsigned i = 0; i < streams; ++i) threads_.emplace_back([this] { stream(); });
}

ReadAhead::~ReadAhead() {
  stop_.store(true);
  for (auto& t : threads_) t.join();
}

void ReadAhead::stream() {
  constexpr uint64_t kChunk = uint64_t(8) << 20;  // requests the size of a large read-ahead window
  while (!stop_.load(std::memory_order_relaxed)) {
    const size_t f = next_.fetch_add(1);
    if (f >= files_.size()) return;
    const File& file = files_[f];
    // Not more than the window ahead of the workers: what is read must still be cached when needed.
    while (!stop_.load(std::memory_order_relaxed)) {
      const size_t taken = std::min(taken_.load(std::memory_order_relaxed), ahead_.size() - 1);
      if (ahead_[file.row + 1] <= ahead_[taken] + window_) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    if (file.row + 1 <= taken_.load(std::memory_order_relaxed)) continue;  // the workers are there already
    const int fd = ::open(file.path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) continue;  // a hint only: the worker reports the error
    for (uint64_t at = 0; at < file.bytes + 4096 && !stop_.load(std::memory_order_relaxed); at += kChunk)
      if (::readahead(fd, static_cast<off64_t>(at), kChunk) != 0) break;
    ::close(fd);
  }
}

}  // namespace opdump::detail
