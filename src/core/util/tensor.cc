#include "util/tensor.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <new>

#include "opdump/error.h"

namespace opdump {

uint64_t shape_numel(const Shape& shape) {
  uint64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0) throw Error("negative dimension " + std::to_string(d) + " in shape " + shape_to_string(shape));
    if (d != 0 && n > UINT64_MAX / static_cast<uint64_t>(d))
      throw Error("shape " + shape_to_string(shape) + " has more than 2^64 elements");
    n *= static_cast<uint64_t>(d);
  }
  return n;
}

uint64_t checked_bytes(uint64_t numel, uint64_t item_size) {
  if (item_size != 0 && numel > UINT64_MAX / item_size)
    throw Error(std::to_string(numel) + " elements of " + std::to_string(item_size) + " bytes overflow 64 bits");
  return numel * item_size;
}

namespace {
uint64_t available_memory() {
  std::ifstream in("/proc/meminfo");
  std::string key;
  uint64_t kb = 0;
  std::string unit;
  while (in >> key >> kb >> unit)
    if (key == "MemAvailable:") return kb * 1024;
  const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGESIZE);
  return pages > 0 && page > 0 ? static_cast<uint64_t>(pages) * static_cast<uint64_t>(page) : UINT64_MAX;
}
}  // namespace

void check_allocation(uint64_t bytes, const std::string& file, const std::string& what) {
  const uint64_t limit = std::max<uint64_t>(available_memory(), uint64_t(64) << 20);
  if (bytes > limit)
    throw FormatError(file, what + " needs " + std::to_string(bytes) + " bytes, more than the " + std::to_string(limit) +
                                " bytes of memory available");
}

std::string shape_to_string(const Shape& shape) {
  std::string s = "(";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ',';
    s += std::to_string(shape[i]);
  }
  return s + ")";
}

std::string shape_to_dims(const Shape& shape) {
  if (shape.empty()) return "1";
  std::string s;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) s += 'x';
    s += std::to_string(shape[i]);
  }
  return s;
}

HeapBuffer::HeapBuffer(size_t size) : size_(size) {
  if (size < kMappedFrom) {
    bytes_ = new uint8_t[size];
    return;
  }
  // Populated up front: the buffer is about to be filled whole, and one call faults it in
  // faster than a page fault per 4 KiB.
  void* p = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
  if (p == MAP_FAILED) throw std::bad_alloc();
  bytes_ = static_cast<uint8_t*>(p);
  mapped_ = true;
}

HeapBuffer::HeapBuffer(const void* src, size_t size) : HeapBuffer(size) {
  if (size) std::memcpy(bytes_, src, size);
}

HeapBuffer::~HeapBuffer() {
  if (mapped_)
    ::munmap(bytes_, size_);
  else
    delete[] bytes_;
}

MappedFile::MappedFile(const std::string& path, bool populate) : path_(path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);  // a named pipe must not block: refused below
  if (fd < 0) throw IoError(path, "cannot open", errno);
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    int e = errno;
    ::close(fd);
    throw IoError(path, "cannot stat", e);
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    throw IoError(path, "not a regular file", 0);
  }
  size_ = static_cast<size_t>(st.st_size);
  if (size_ > 0) {
    data_ = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE | (populate ? MAP_POPULATE : 0), fd, 0);
    if (data_ == MAP_FAILED) {
      int e = errno;
      data_ = nullptr;
      ::close(fd);
      throw IoError(path, "cannot map", e);
    }
  }
  ::close(fd);
}

MappedFile::~MappedFile() {
  if (data_) ::munmap(data_, size_);
}

void MappedFile::will_need(size_t offset, size_t length) const {
  if (!data_ || offset >= size_) return;
  const size_t page = 4096;
  size_t start = offset & ~(page - 1);
  size_t end = std::min(size_, offset + length);
  ::madvise(static_cast<char*>(data_) + start, end - start, MADV_WILLNEED);
}

}  // namespace opdump
