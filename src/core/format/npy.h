// numpy .npy files: version 1.0 headers (2.0 when the header exceeds 65535 bytes), little-endian,
// C order. bfloat16 is stored as float32, as MindSpore does (numpy has no bfloat16).
#pragma once
#include <string>

#include "util/tensor.h"

namespace opdump {

struct NpyHeader {
  DType dtype = DType::Float32;
  Shape shape;
  size_t data_offset = 0;  // bytes before the data
  int major_version = 1;
};

// The dtype a tensor of type t is stored as in npy (bfloat16 -> float32, others unchanged).
DType npy_storage_dtype(DType t);

// The complete header (magic .. '\n') for data of the given stored dtype and shape.
std::string npy_header(DType stored, const Shape& shape);

// Writes bytes of `view` as the payload of an npy file into `out`, converting bfloat16 to
// float32. Returns the number of payload bytes written.
size_t npy_payload_size(const TensorView& view);
void npy_encode_payload(const TensorView& view, void* out);

// Parses an npy header from the first `size` bytes of a file; `name` is used in errors.
// Checks magic, version, dict syntax, dtype, shape and that the data fills the file exactly;
// `file_size` is the whole file's size when `bytes` holds only its beginning.
NpyHeader parse_npy_header(const void* bytes, size_t size, const std::string& name, uint64_t file_size = UINT64_MAX);
// The header of an npy file, reading only its beginning (indexing a dump of many files). When
// that beginning is the whole file and `whole` is given, *whole gets its bytes (parse_npy reads
// them later without opening the file again).
NpyHeader read_npy_header(const std::string& path, std::shared_ptr<const Buffer>* whole = nullptr);

// Writes a complete npy file (through a temporary name, renamed when complete).
void write_npy(const std::string& path, const TensorView& view);
// Reads an npy file (see read_file: small files read, large ones mapped). Throws FormatError on
// malformed files.
Tensor read_npy(const std::string& path);
// The same from bytes in memory; `name` appears in errors.
Tensor parse_npy(std::shared_ptr<const Buffer> bytes, const std::string& name);

}  // namespace opdump
