// Ascend "bin" dump files: reader and writer.
#include "format/ascend_bin.h"

#include "util/file_read.h"

#include <cstring>

#include "dump_data.pb.h"
#include "opdump/error.h"
#include "writer/atomic_file.h"

namespace opdump {
namespace {

namespace pb = toolkit::dumpdata;

constexpr uint64_t kMaxHeaderBytes = uint64_t(256) << 20;

// Stored narrower than the type they are read as (decoded when a tensor is read).
enum class Narrow { None, Complex32, HiFloat8, Float8E5M2, Float8E4M3FN, Float8E8M0 };

struct BinTypeEntry {
  int32_t code;
  const char* name;
  bool has_dtype;
  DType dtype;  // for the narrow types below, the type they are decoded to
  Narrow narrow = Narrow::None;
};

constexpr BinTypeEntry kBinTypes[] = {
    {0, "UNDEFINED", false, DType::Float32},   {1, "FLOAT", true, DType::Float32},
    {2, "FLOAT16", true, DType::Float16},      {3, "INT8", true, DType::Int8},
    {4, "UINT8", true, DType::UInt8},          {5, "INT16", true, DType::Int16},
    {6, "UINT16", true, DType::UInt16},        {7, "INT32", true, DType::Int32},
    {8, "INT64", true, DType::Int64},          {9, "UINT32", true, DType::UInt32},
    {10, "UINT64", true, DType::UInt64},       {11, "BOOL", true, DType::Bool},
    {12, "DOUBLE", true, DType::Float64},      {13, "STRING", false, DType::Float32},
    {14, "DUAL_SUB_INT8", false, DType::Int8}, {15, "DUAL_SUB_UINT8", false, DType::UInt8},
    {16, "COMPLEX64", true, DType::Complex64}, {17, "COMPLEX128", true, DType::Complex128},
    {18, "QINT8", false, DType::Int8},         {19, "QINT16", false, DType::Int16},
    {20, "QINT32", false, DType::Int32},       {21, "QUINT8", false, DType::UInt8},
    {22, "QUINT16", false, DType::UInt16},     {23, "RESOURCE", false, DType::Float32},
    {24, "STRING_REF", false, DType::Float32}, {25, "DUAL", false, DType::Float32},
    {26, "VARIANT", false, DType::Float32},    {27, "BF16", true, DType::BFloat16},
    {28, "INT4", false, DType::Int8},          {29, "UINT1", false, DType::UInt8},
    {30, "INT2", false, DType::Int8},          {31, "UINT2", false, DType::UInt8},
    // Newer CANN (dump_task.proto): decoded to complex64 / float32 when read; sub-byte floats are not.
    {32, "COMPLEX32", true, DType::Complex64, Narrow::Complex32},
    {33, "HIFLOAT8", true, DType::Float32, Narrow::HiFloat8},
    {34, "FLOAT8_E5M2", true, DType::Float32, Narrow::Float8E5M2},
    {35, "FLOAT8_E4M3FN", true, DType::Float32, Narrow::Float8E4M3FN},
    {36, "FLOAT8_E8M0", true, DType::Float32, Narrow::Float8E8M0},
    {37, "FLOAT6_E3M2", false, DType::Float32},  {38, "FLOAT6_E2M3", false, DType::Float32},
    {39, "FLOAT4_E2M1", false, DType::Float32},  {40, "FLOAT4_E1M2", false, DType::Float32},
    {41, "HIFLOAT4", false, DType::Float32},     {42, "HIFLOAT4_SCALE", false, DType::Float32},
};

const BinTypeEntry* entry_of(int32_t code) {
  for (const auto& e : kBinTypes)
    if (e.code == code) return &e;
  return nullptr;
}

// Bytes per stored element of a narrow type.
uint64_t stored_size(Narrow n) { return n == Narrow::Complex32 ? 4 : 1; }

// The stored elements of a narrow type, widened into `out` (float32, or complex64 pairs).
void decode_narrow(Narrow n, const uint8_t* in, uint64_t count, void* out) {
  float* f = static_cast<float*>(out);
  switch (n) {
    case Narrow::Complex32: {
      const uint16_t* h = reinterpret_cast<const uint16_t*>(in);  // real, imaginary float16 pairs
      for (uint64_t i = 0; i < 2 * count; ++i) {
        uint16_t v;
        std::memcpy(&v, h + i, 2);
        f[i] = half_to_float(v);
      }
      break;
    }
    case Narrow::HiFloat8: for (uint64_t i = 0; i < count; ++i) f[i] = hifloat8_to_float(in[i]); break;
    case Narrow::Float8E5M2: for (uint64_t i = 0; i < count; ++i) f[i] = float8_e5m2_to_float(in[i]); break;
    case Narrow::Float8E4M3FN: for (uint64_t i = 0; i < count; ++i) f[i] = float8_e4m3fn_to_float(in[i]); break;
    case Narrow::Float8E8M0: for (uint64_t i = 0; i < count; ++i) f[i] = float8_e8m0_to_float(in[i]); break;
    case Narrow::None: break;
  }
}

Shape to_shape(const pb::Shape& s) {
  Shape out;
  out.reserve(static_cast<size_t>(s.dim_size()));
  for (uint64_t d : s.dim()) {
    if (d > static_cast<uint64_t>(INT64_MAX)) throw Error("dimension " + std::to_string(d) + " is too large");
    out.push_back(static_cast<int64_t>(d));
  }
  return out;
}

void fill_shape(pb::Shape* s, const Shape& shape) {
  for (int64_t d : shape) s->add_dim(static_cast<uint64_t>(d));
}

// Assigns consecutive offsets to items, checking each against the file size.
struct OffsetCursor {
  uint64_t next;
  uint64_t file_size;
  const std::string& path;
  uint64_t take(uint64_t size, const std::string& what) {
    if (size > file_size || next > file_size - size)
      throw FormatError(path, what + " declares " + std::to_string(size) + " bytes at offset " +
                                  std::to_string(next) + ", beyond the file size " + std::to_string(file_size));
    uint64_t at = next;
    next += size;
    return at;
  }
};

}  // namespace

std::string bin_format_name(int32_t format) {
  switch (format) {
    case 0: return "NCHW";
    case 1: return "NHWC";
    case 2: return "ND";
    case 3: return "NC1HWC0";
    case 4: return "FRACTAL_Z";
    case 5: return "NC1C0HWPAD";
    case 6: return "NHWC1C0";
    case 7: return "FSR_NCHW";
    case 8: return "FRACTAL_DECONV";
    case 9: return "C1HWNC0";
    case 12: return "NC1HWC0_C04";
    case 13: return "FRACTAL_Z_C04";
    case 14: return "CHWN";
    case 16: return "HWCN";
    case 25: return "C1HWNCoC0";
    case 26: return "MD";
    case 27: return "NDHWC";
    case 28: return "FRACTAL_ZZ";
    case 29: return "FRACTAL_NZ";
    case 30: return "NCDHW";
    case 31: return "DHWCN";
    case 32: return "NDC1HWC0";
    case 33: return "FRACTAL_Z_3D";
    case 34: return "CN";
    case 35: return "NC";
    case 40: return "RESERVED";
    case 47: return "NCL";
    case 49: return "C1HWC0";
  }
  return "FORMAT_" + std::to_string(format);
}

int32_t bin_data_type_of(DType t) {
  for (const auto& e : kBinTypes)
    if (e.has_dtype && e.narrow == Narrow::None && e.dtype == t) return e.code;
  return -1;
}

bool dtype_of_bin_data_type(int32_t code, DType* out) {
  for (const auto& e : kBinTypes)
    if (e.code == code && e.has_dtype) {
      *out = e.dtype;
      return true;
    }
  return false;
}

std::string bin_data_type_name(int32_t code) {
  for (const auto& e : kBinTypes)
    if (e.code == code) return std::string("DT_") + e.name;
  return "DT_" + std::to_string(code);
}

uint64_t BinDump::checked_size(const BinTensor& t) const {
  DType dtype;
  if (!dtype_of_bin_data_type(t.data_type, &dtype))
    throw FormatError(path, "data type " + bin_data_type_name(t.data_type) + " cannot be converted to an array");
  const Narrow narrow = entry_of(t.data_type)->narrow;
  uint64_t need, numel;
  try {  // a shape of 2^62 elements must not wrap around to the declared size
    numel = shape_numel(t.shape);
    need = checked_bytes(numel, narrow == Narrow::None ? dtype_size(dtype) : stored_size(narrow));
  } catch (const FormatError&) {
    throw;
  } catch (const Error& e) {
    throw FormatError(path, e.what());
  }
  if (need != t.size)
    throw FormatError(path, "tensor of shape " + shape_to_string(t.shape) + " and type " + bin_data_type_name(t.data_type) +
                                " needs " + std::to_string(need) + " bytes but declares " + std::to_string(t.size));
  return numel;
}

Tensor BinDump::tensor(const BinTensor& t) const {
  DType dtype;
  if (!dtype_of_bin_data_type(t.data_type, &dtype))
    throw FormatError(path, "data type " + bin_data_type_name(t.data_type) + " cannot be converted to an array");
  const Narrow narrow = entry_of(t.data_type)->narrow;
  Tensor out;
  out.dtype = dtype;
  out.shape = t.shape;
  const uint64_t numel = checked_size(t);
  const char* data = static_cast<const char*>(file->data()) + t.offset;
  if (narrow != Narrow::None) {  // widened to a type every reader computes with
    const uint64_t wide_bytes = checked_bytes(numel, dtype_size(dtype));  // at most twice the stored bytes
    check_allocation(wide_bytes, path, "widening a " + bin_data_type_name(t.data_type) + " tensor");
    auto wide = std::make_shared<HeapBuffer>(static_cast<size_t>(wide_bytes));
    decode_narrow(narrow, reinterpret_cast<const uint8_t*>(data), numel, wide->mutable_data());
    out.data = wide->data();
    out.buffer = std::move(wide);
    return out;
  }
  // The header length is arbitrary, so data may sit at any address; kernels read typed values,
  // which must be aligned: such tensors are copied.
  if (reinterpret_cast<uintptr_t>(data) % dtype_size(dtype) != 0) {
    auto copy = std::make_shared<HeapBuffer>(data, t.size);
    out.data = copy->data();
    out.buffer = std::move(copy);
    return out;
  }
  out.buffer = file;
  out.data = data;
  return out;
}

BinDump read_ascend_bin(const std::string& path) { return parse_ascend_bin(read_file(path), path); }

namespace {

// The header's length from the first 8 bytes, checked against the file's size.
uint64_t header_length(const void* first8, uint64_t file_size, const std::string& path) {
  if (file_size < 8) throw FormatError(path, "too short for an Ascend bin dump (" + std::to_string(file_size) + " bytes)");
  uint64_t header_len = 0;
  std::memcpy(&header_len, first8, 8);  // little-endian hosts only (x86, arm)
  if (header_len > file_size - 8 || header_len > kMaxHeaderBytes)
    throw FormatError(path, "header length " + std::to_string(header_len) + " exceeds the file size " +
                                std::to_string(file_size) + " (not an Ascend bin dump, or truncated)");
  return header_len;
}

// The DumpData header at `header` (header_len bytes), its tensors placed in a file of file_size bytes.
BinDump parse_header(const char* header, uint64_t header_len, uint64_t file_size, const std::string& path) {
  pb::DumpData msg;
  if (!msg.ParseFromArray(header, static_cast<int>(header_len)))
    throw FormatError(path, "the DumpData header does not parse as protobuf");
  BinDump dump;
  dump.path = path;
  dump.version = msg.version();
  dump.op_name = msg.op_name();
  dump.dump_time = msg.dump_time();
  OffsetCursor cursor{8 + header_len, file_size, path};
  try {
    for (int i = 0; i < msg.input_size(); ++i) {
      const auto& in = msg.input(i);
      BinTensor t{in.data_type(), in.format(), to_shape(in.shape()), to_shape(in.original_shape()), 0, in.size()};
      t.offset = cursor.take(t.size, "input " + std::to_string(i));
      dump.inputs.push_back(std::move(t));
    }
    for (int i = 0; i < msg.output_size(); ++i) {
      const auto& out = msg.output(i);
      BinTensor t{out.data_type(), out.format(), to_shape(out.shape()), to_shape(out.original_shape()), 0, out.size()};
      t.offset = cursor.take(t.size, "output " + std::to_string(i));
      dump.outputs.push_back(std::move(t));
    }
    for (int i = 0; i < msg.buffer_size(); ++i) {
      BinBuffer b{msg.buffer(i).buffer_type(), 0, msg.buffer(i).size()};
      b.offset = cursor.take(b.size, "buffer " + std::to_string(i));
      dump.buffers.push_back(b);
    }
    for (int i = 0; i < msg.space_size(); ++i) {
      BinBuffer b{msg.space(i).type(), 0, msg.space(i).size()};
      b.offset = cursor.take(b.size, "workspace " + std::to_string(i));
      dump.workspaces.push_back(b);
    }
  } catch (const FormatError&) {
    throw;
  } catch (const Error& e) {
    throw FormatError(path, e.what());
  }
  return dump;
}

}  // namespace

BinDump parse_ascend_bin(std::shared_ptr<const Buffer> file, const std::string& path) {
  const uint64_t header_len = header_length(file->data(), file->size(), path);
  BinDump dump = parse_header(static_cast<const char*>(file->data()) + 8, header_len, file->size(), path);
  dump.file = std::move(file);
  return dump;
}

bool looks_like_ascend_bin(const std::string& path) {
  // From the header alone: a file of unknown type is not read whole to find out what it is.
  constexpr uint64_t kLargestHeaderLooked = uint64_t(16) << 20;
  try {
    uint64_t size = 0;
    const std::string first = read_file_prefix(path, 8, &size);
    const uint64_t header_len = header_length(first.data(), size, path);
    if (header_len > kLargestHeaderLooked) return false;
    const std::string head = read_file_prefix(path, static_cast<size_t>(8 + header_len), &size);
    if (head.size() != 8 + header_len) return false;
    parse_header(head.data() + 8, header_len, size, path);
    return true;
  } catch (const Error&) {
    return false;
  }
}

std::string ascend_bin_header(const std::string& op_name, uint64_t dump_time_us,
                              const std::vector<BinWriteTensor>& inputs,
                              const std::vector<BinWriteTensor>& outputs) {
  pb::DumpData msg;
  msg.set_version("2.0");
  msg.set_dump_time(dump_time_us);
  msg.set_op_name(op_name);
  // OpInput and OpOutput have the same setters for these fields.
  auto fill = [](auto* m, const BinWriteTensor& t) {
    m->set_data_type(bin_data_type_of(t.view.dtype));
    m->set_format(t.format);
    fill_shape(m->mutable_shape(), t.view.shape);
    if (!t.original_shape.empty()) fill_shape(m->mutable_original_shape(), t.original_shape);
    m->set_size(t.view.nbytes());
  };
  for (const auto& t : inputs) fill(msg.add_input(), t);
  for (const auto& t : outputs) fill(msg.add_output(), t);
  std::string body;
  msg.SerializeToString(&body);
  uint64_t len = body.size();
  std::string header(8, '\0');
  std::memcpy(header.data(), &len, 8);
  return header + body;
}

void write_ascend_bin(const std::string& path, const std::string& op_name, uint64_t dump_time_us,
                      const std::vector<BinWriteTensor>& inputs, const std::vector<BinWriteTensor>& outputs) {
  const std::string header = ascend_bin_header(op_name, dump_time_us, inputs, outputs);
  const auto payload = ascend_bin_payload(inputs, outputs);
  write_file_atomic(path, header.data(), header.size(), payload->data(), payload->size());
}

std::shared_ptr<HeapBuffer> ascend_bin_payload(const std::vector<BinWriteTensor>& inputs,
                                               const std::vector<BinWriteTensor>& outputs) {
  uint64_t total = 0;
  for (const auto* list : {&inputs, &outputs})
    for (const auto& t : *list) total += t.view.nbytes();
  auto payload = std::make_shared<HeapBuffer>(total);
  uint64_t at = 0;
  for (const auto* list : {&inputs, &outputs})
    for (const auto& t : *list) {
      if (t.view.nbytes()) std::memcpy(payload->mutable_data() + at, t.view.data, t.view.nbytes());
      at += t.view.nbytes();
    }
  return payload;
}

}  // namespace opdump
