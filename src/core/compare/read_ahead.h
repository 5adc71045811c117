// Reads the files of the rows ahead of compare's workers into the page cache, so that a dump
// larger than memory is read at the disk's speed while the workers compute: in row order, a few
// files in flight, at most a window of bytes ahead of the first row not yet taken (the page cache
// holds what is read ahead; nothing is kept in the process).
#pragma once
#include <atomic>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include "compare/compare.h"

namespace opdump::detail {

class ReadAhead {
 public:
  // `taken`: how many rows the workers have taken (they take rows in order). Files under
  // kReadWholeBelow are left alone: one read() each is already one request.
  ReadAhead(const std::vector<CompareRow>& rows, const std::atomic<size_t>& taken, unsigned streams,
            uint64_t window_bytes);
  ~ReadAhead();  // stops and joins
  ReadAhead(const ReadAhead&) = delete;
  ReadAhead& operator=(const ReadAhead&) = delete;

 private:
  void stream();

  struct File {
    std::string path;
    uint64_t bytes;
    size_t row;
  };
  std::vector<File> files_;     // in row order
  std::vector<uint64_t> ahead_;  // ahead_[r]: bytes of the files of rows before r
  const std::atomic<size_t>& taken_;
  const uint64_t window_;
  std::atomic<size_t> next_{0};
  std::atomic<bool> stop_{false};
  std::vector<std::thread> threads_;
};

}  // namespace opdump::detail
