// Non-owning and owning views of tensor bytes, independent of any framework.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "util/dtype.h"
#include "opdump/api.h"

namespace opdump {

using Shape = std::vector<int64_t>;

// Elements in a shape; throws opdump::Error when the product overflows 64 bits or a dim is negative.
uint64_t shape_numel(const Shape& shape);
// numel * item_size; throws opdump::Error when it overflows 64 bits (a file can declare any shape).
uint64_t checked_bytes(uint64_t numel, uint64_t item_size);
// Memory a reader may allocate for what one file asks (the memory available to this process, from
// /proc/meminfo's MemAvailable, at least 64 MiB). Throws FormatError naming `file` when `bytes`
// exceeds it: a hostile or corrupt file must not exhaust memory.
void check_allocation(uint64_t bytes, const std::string& file, const std::string& what);
// "(1,2)" as statistic.csv writes it; "()" for a scalar.
std::string shape_to_string(const Shape& shape);
// "32x256x13x13" as converted file names write it; "1" for a scalar.
std::string shape_to_dims(const Shape& shape);

// Contiguous, row-major bytes of a tensor that someone else owns.
struct TensorView {
  const void* data = nullptr;
  DType dtype = DType::Float32;
  Shape shape;

  uint64_t numel() const { return shape_numel(shape); }
  uint64_t nbytes() const { return numel() * dtype_size(dtype); }
};

// Bytes that stay alive as long as someone holds the shared_ptr: a heap copy, an mmap of a
// file, or (in the adapters) a framework tensor. wait_ready() blocks until the bytes are valid
// (an asynchronous device-to-host copy has completed); host memory is always ready.
class Buffer {
 public:
  virtual ~Buffer() = default;
  virtual const void* data() const = 0;
  virtual size_t size() const = 0;
  virtual void wait_ready() const {}
  // Whether wait_ready() would return at once.
  virtual bool ready() const { return true; }
  // Whether these bytes were counted as in flight when they were allocated (AsyncWriter::charge), so
  // that the work writing them does not count them again.
  virtual bool charged() const { return false; }
};

// Bytes this process allocates (a file read into memory, a converted tensor; a dump's host copies
// come from its writer's CopyPool instead). Large ones are mapped pages of their own, unmapped when
// freed: glibc would keep freed large blocks in its heaps (its mmap threshold rises after each such
// free), and the process's memory would stay high long after they were used.
class OPDUMP_ADAPTER_API HeapBuffer final : public Buffer {
 public:
  explicit HeapBuffer(size_t size);
  HeapBuffer(const void* src, size_t size);
  ~HeapBuffer() override;
  HeapBuffer(const HeapBuffer&) = delete;
  HeapBuffer& operator=(const HeapBuffer&) = delete;
  const void* data() const override { return bytes_; }
  uint8_t* mutable_data() { return bytes_; }
  size_t size() const override { return size_; }
  // From this size on the bytes are mapped pages (below it, the syscalls would cost more than
  // what the heap keeps).
  static constexpr size_t kMappedFrom = size_t(64) << 10;

 private:
  uint8_t* bytes_ = nullptr;
  size_t size_;
  bool mapped_ = false;
};

// A window into bytes another buffer keeps alive (a record of an archive, a slice of a batch).
class ViewBuffer final : public Buffer {
 public:
  ViewBuffer(std::shared_ptr<const Buffer> owner, const void* data, size_t size)
      : owner_(std::move(owner)), data_(data), size_(size) {}
  const void* data() const override { return data_; }
  size_t size() const override { return size_; }
  void wait_ready() const override {
    if (owner_) owner_->wait_ready();
  }
  bool charged() const override { return owner_ && owner_->charged(); }

 private:
  std::shared_ptr<const Buffer> owner_;
  const void* data_;
  size_t size_;
};

// A read-only memory map of a whole file (empty files map to size 0).
class MappedFile final : public Buffer {
 public:
  // populate: fault the whole file in up front (one syscall instead of a page fault per 4 KiB;
  // for files that will be read entirely).
  explicit MappedFile(const std::string& path, bool populate = false);
  ~MappedFile() override;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  const void* data() const override { return data_; }
  size_t size() const override { return size_; }
  const std::string& path() const { return path_; }
  // Hints the kernel that the range will be read soon (sequential compare, conversion).
  void will_need(size_t offset, size_t length) const;

 private:
  std::string path_;
  void* data_ = nullptr;
  size_t size_ = 0;
};

// A tensor whose bytes live in a Buffer (e.g. a tensor read from an npy or bin file).
struct Tensor {
  DType dtype = DType::Float32;
  Shape shape;
  std::shared_ptr<const Buffer> buffer;  // keeps the bytes alive
  const void* data = nullptr;            // points inside buffer

  TensorView view() const { return TensorView{data, dtype, shape}; }
  uint64_t numel() const { return shape_numel(shape); }
  uint64_t nbytes() const { return numel() * dtype_size(dtype); }
};

}  // namespace opdump
