// The Ascend "bin" dump file: u64 header length, a toolkit.dumpdata.DumpData protobuf header,
// then the raw bytes of every input, output, buffer and workspace item.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "util/tensor.h"

namespace opdump {

// OutputFormat values that matter for conversion (see docs/formats.md).
enum class BinFormat : int32_t {
  NCHW = 0,
  NHWC = 1,
  ND = 2,
  NC1HWC0 = 3,
  FRACTAL_Z = 4,
  HWCN = 16,
  FRACTAL_NZ = 29,
};
std::string bin_format_name(int32_t format);

struct BinTensor {
  int32_t data_type = 0;  // OutputDataType enum value as stored
  int32_t format = 2;     // OutputFormat enum value as stored
  Shape shape;            // stored (device) shape
  Shape original_shape;   // logical shape when present
  uint64_t offset = 0;    // of the data inside the file
  uint64_t size = 0;      // bytes
};

struct BinBuffer {
  int32_t buffer_type = 0;
  uint64_t offset = 0;
  uint64_t size = 0;
};

struct BinDump {
  std::string version;
  std::string op_name;
  uint64_t dump_time = 0;  // microseconds
  std::vector<BinTensor> inputs;
  std::vector<BinTensor> outputs;
  std::vector<BinBuffer> buffers;
  std::vector<BinBuffer> workspaces;
  std::shared_ptr<const Buffer> file;
  std::string path;

  // The bytes of one tensor as a Tensor of the stored shape; throws FormatError for data types
  // opdump cannot represent (string, quantized, int4...) or a size that does not match the shape.
  Tensor tensor(const BinTensor& t) const;
  // The element count of `t` after checking that its shape and type need exactly the bytes it
  // declares (products that wrap around included). Throws FormatError naming the file.
  uint64_t checked_size(const BinTensor& t) const;
};

// OutputDataType <-> DType. Returns -1 / nullopt-like false when there is no equivalent.
int32_t bin_data_type_of(DType t);
bool dtype_of_bin_data_type(int32_t data_type, DType* out);
std::string bin_data_type_name(int32_t data_type);

// Reads and validates a bin file: every size is checked against the file size before anything
// is allocated; unknown protobuf fields are skipped.
BinDump read_ascend_bin(const std::string& path);
// The same from bytes in memory; `name` appears in errors.
BinDump parse_ascend_bin(std::shared_ptr<const Buffer> bytes, const std::string& name);
// True when the first bytes look like a bin dump (a plausible header length and protobuf).
bool looks_like_ascend_bin(const std::string& path);

struct BinWriteTensor {
  TensorView view;
  int32_t format = 2;  // ND
  Shape original_shape;
};
// Writes a bin file (through a temporary name, renamed when complete).
void write_ascend_bin(const std::string& path, const std::string& op_name, uint64_t dump_time_us,
                      const std::vector<BinWriteTensor>& inputs, const std::vector<BinWriteTensor>& outputs);
// The data part of a bin file: the tensors' bytes back to back, inputs first.
std::shared_ptr<HeapBuffer> ascend_bin_payload(const std::vector<BinWriteTensor>& inputs,
                                               const std::vector<BinWriteTensor>& outputs);
// Encodes the 8-byte length and the protobuf header for the given tensors (data follows).
std::string ascend_bin_header(const std::string& op_name, uint64_t dump_time_us,
                              const std::vector<BinWriteTensor>& inputs,
                              const std::vector<BinWriteTensor>& outputs);

}  // namespace opdump
