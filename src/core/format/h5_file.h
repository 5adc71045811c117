// `.h5` files as the torch_npu 1.5 dumper wrote them (the PyTorch 1.5.0 accuracy comparison guide),
// through Debian's HDF5 C library: typed datasets with int32 attributes, groups per op. Writing is
// atomic (a temporary file renamed by close()); reading checks every object it is given, so a
// corrupt or hostile file is an opdump::FormatError naming the file and the object, never a crash.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "util/tensor.h"

namespace opdump::h5 {

// The dataset attribute "Type": what a dataset holds. The 1.5 dumper's codes, and opdump's own for
// what 1.5 dropped (strings, None, devices, generators, float and bool lists, complex numbers).
enum class ValueType : int32_t {
  Tensor = 0,
  IntVector = 2,
  Int = 3,
  Bool = 4,
  Double = 5,
  OptionalDouble = 6,
  Scalar = 7,
  OptionalInt = 9,
  OptionalScalar = 10,
  SizeT = 13,
  ScalarType = 14,
  Pair = 15,
  IntList = 16,
  OptionalMemoryFormat = 17,
  TensorOptions = 18,
  // opdump's additions
  String = 100,
  None = 101,
  Device = 102,
  Generator = 103,
  DoubleList = 104,
  BoolList = 105,
  Complex = 106,
  Unsupported = 107,  // a value opdump cannot store (its kind in the string data)
};

// The attribute "DataType": ONNX TensorProto numbers, as the 1.5 dumper used (float 1 ... double 11),
// extended to the types 1.5 lacked (bfloat16 16, complex 14/15, unsigned 4/12/13).
int32_t data_type_code(DType t);
std::optional<DType> dtype_of_code(int32_t code);

// A tensor dataset's attributes beyond its type and shape.
struct TensorAttrs {
  int32_t device_type = 0;  // c10::DeviceType (CPU 0, CUDA 1, ...)
  int32_t format_type = 0;  // ACL format (NCHW 0 off the device)
  std::vector<int64_t> stride;  // the tensor's own strides (empty: contiguous)
  int64_t storage_offset = 0;
};

// Creates `path` (through a temporary file; an existing file is replaced by close()). Thread-safe;
// the bytes of large tensors are written by the calling threads side by side, past the page cache
// with `bypass_page_cache` (as npy files are with direct_io), the file's structure by HDF5.
class Writer {
 public:
  explicit Writer(std::string path, bool bypass_page_cache = false);
  ~Writer();  // without close(): the temporary file is removed, `path` untouched
  Writer(const Writer&) = delete;
  Writer& operator=(const Writer&) = delete;

  // Groups along `path` are created as needed, tracking creation order (readers list arguments in
  // the order the op has them).
  void tensor(const std::string& path, const TensorView& v, const TensorAttrs& attrs);
  // `element`: Int64, Int32 or Int8 (bools, as the 1.5 dumper stored them).
  void ints(const std::string& path, const std::vector<int64_t>& values, bool scalar, ValueType type,
            DType element = DType::Int64);
  void real(const std::string& path, double number, ValueType type);
  void reals(const std::string& path, const std::vector<double>& values, ValueType type);
  void text(const std::string& path, const std::string& text, ValueType type);
  void none(const std::string& path);  // an empty dataset: the argument was None
  // An attribute of a group or dataset (a group is created when missing).
  void attr(const std::string& object, const std::string& name, const std::string& value);
  void attr(const std::string& object, const std::string& name, int64_t value);
  const std::string& path() const { return path_; }
  // Flushes, closes and renames into place. Throws opdump::Error naming the file.
  void close();

 private:
  void write_tensor_attrs(int64_t dataset, const TensorView& v, const TensorAttrs& attrs);
  void value(const std::string& path, int64_t file_type, int64_t space, int64_t mem_type, const void* data,
             ValueType type);
  struct Handles;
  std::string path_, temp_;
  std::unique_ptr<Handles> h_;
};

// One dataset as a reader sees it.
struct DatasetInfo {
  ValueType type = ValueType::Tensor;
  std::optional<DType> dtype;  // tensors: the element type ("" unreadable: see `unreadable`)
  Shape shape;
  bool null = false;           // a dataset without data (None)
  std::string unreadable;      // why the values cannot be read ("" when they can)
  TensorAttrs attrs;
  int32_t data_type = -1;      // the DataType attribute as stored (-1: none)
};

class Reader {
 public:
  // Throws FormatError naming `path` when it is not a readable HDF5 file.
  explicit Reader(std::string path);
  ~Reader();
  Reader(const Reader&) = delete;
  Reader& operator=(const Reader&) = delete;

  const std::string& path() const { return path_; }
  // Names of a group's members, in creation order where the file tracked it, else by name.
  std::vector<std::string> members(const std::string& group) const;
  bool is_group(const std::string& object) const;
  bool is_dataset(const std::string& object) const;
  DatasetInfo info(const std::string& dataset) const;
  Tensor tensor(const std::string& dataset) const;
  std::vector<int64_t> ints(const std::string& dataset) const;
  std::vector<double> reals(const std::string& dataset) const;
  std::string text(const std::string& dataset) const;
  std::optional<std::string> string_attr(const std::string& object, const std::string& name) const;
  std::optional<int64_t> int_attr(const std::string& object, const std::string& name) const;

 private:
  struct Handles;
  std::string path_;
  std::unique_ptr<Handles> h_;
};

// Runs `work` in a child process and returns what it returned. HDF5's C library has memory errors
// on hostile files (fuzzing 1.10.8 finds heap overflows within seconds), which no check of ours can
// prevent: readers of untrusted files run it apart, so that such a file ends the child, not the
// caller. A child that ends abnormally is a FormatError naming `file`; an opdump::Error thrown by
// `work` comes back as a FormatError with its message.
std::string isolated(const std::string& file, const std::function<std::string()>& work);

// Whether `path` starts with HDF5's signature (at offset 0; user blocks are not looked for).
bool is_h5_file(const std::string& path);

}  // namespace opdump::h5
