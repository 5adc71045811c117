// numpy .npy reader and writer.
#include "format/npy.h"

#include "util/file_read.h"

#include <cstring>
#include <limits>

#include "opdump/error.h"
#include "writer/atomic_file.h"

namespace opdump {
namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr size_t kMagicSize = 6;
constexpr size_t kMaxHeaderBytes = size_t(16) << 20;  // far beyond any real header

const char* descr_of(DType t) {
  switch (t) {
    case DType::Bool: return "|b1";
    case DType::Int8: return "|i1";
    case DType::Int16: return "<i2";
    case DType::Int32: return "<i4";
    case DType::Int64: return "<i8";
    case DType::UInt8: return "|u1";
    case DType::UInt16: return "<u2";
    case DType::UInt32: return "<u4";
    case DType::UInt64: return "<u8";
    case DType::Float16: return "<f2";
    case DType::BFloat16: return "<f4";  // stored as float32
    case DType::Float32: return "<f4";
    case DType::Float64: return "<f8";
    case DType::Complex64: return "<c8";
    case DType::Complex128: return "<c16";
  }
  return "";
}

// Parses numpy's descr ("<f4", "|b1", "=i8"...) into a DType.
bool dtype_from_descr(std::string descr, DType* out, std::string* why) {
  if (descr.size() < 2) {
    *why = "descr '" + descr + "' is too short";
    return false;
  }
  char order = descr[0];
  if (order == '>') {
    *why = "big-endian data (descr '" + descr + "') is not supported";
    return false;
  }
  if (order != '<' && order != '|' && order != '=') {
    *why = "descr '" + descr + "' has no byte-order character";
    return false;
  }
  std::string code = descr.substr(1);
  static const struct { const char* code; DType t; } table[] = {
      {"b1", DType::Bool},     {"?", DType::Bool},       {"i1", DType::Int8},   {"i2", DType::Int16},
      {"i4", DType::Int32},    {"i8", DType::Int64},     {"u1", DType::UInt8},  {"u2", DType::UInt16},
      {"u4", DType::UInt32},   {"u8", DType::UInt64},    {"f2", DType::Float16}, {"f4", DType::Float32},
      {"f8", DType::Float64},  {"c8", DType::Complex64}, {"c16", DType::Complex128},
  };
  for (const auto& e : table)
    if (code == e.code) {
      *out = e.t;
      return true;
    }
  *why = "descr '" + descr + "' is not a supported dtype";
  return false;
}

// A tiny parser for the Python dict literal of an npy header.
class HeaderParser {
 public:
  HeaderParser(std::string_view text, const std::string& name) : s_(text), name_(name) {}

  void parse(NpyHeader* h) {
    bool have_descr = false, have_order = false, have_shape = false;
    expect('{');
    while (true) {
      skip_ws();
      if (peek() == '}') {
        ++i_;
        break;
      }
      std::string key = parse_string();
      expect(':');
      if (key == "descr") {
        std::string descr = parse_string();
        std::string why;
        if (!dtype_from_descr(descr, &h->dtype, &why)) fail(why);
        have_descr = true;
      } else if (key == "fortran_order") {
        skip_ws();
        if (s_.substr(i_, 5) == "False") {
          i_ += 5;
        } else if (s_.substr(i_, 4) == "True") {
          fail("fortran_order True is not supported (save with numpy.ascontiguousarray)");
        } else {
          fail("fortran_order must be True or False");
        }
        have_order = true;
      } else if (key == "shape") {
        h->shape = parse_shape();
        have_shape = true;
      } else {
        fail("unexpected key '" + key + "' in header");
      }
      skip_ws();
      if (peek() == ',') {
        ++i_;
        continue;
      }
      expect('}');
      break;
    }
    if (!have_descr || !have_order || !have_shape) fail("header lacks descr, fortran_order or shape");
  }

 private:
  [[noreturn]] void fail(const std::string& why) { throw FormatError(name_, "malformed npy header: " + why); }
  char peek() const { return i_ < s_.size() ? s_[i_] : '\0'; }
  void skip_ws() {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\t' || s_[i_] == '\n')) ++i_;
  }
  void expect(char c) {
    skip_ws();
    if (peek() != c) fail(std::string("expected '") + c + "' at offset " + std::to_string(i_));
    ++i_;
  }
  std::string parse_string() {
    skip_ws();
    char q = peek();
    if (q != '\'' && q != '"') fail("expected a quoted string at offset " + std::to_string(i_));
    size_t end = s_.find(q, i_ + 1);
    if (end == std::string_view::npos) fail("unterminated string");
    std::string out(s_.substr(i_ + 1, end - i_ - 1));
    i_ = end + 1;
    return out;
  }
  Shape parse_shape() {
    expect('(');
    Shape shape;
    while (true) {
      skip_ws();
      if (peek() == ')') {
        ++i_;
        break;
      }
      if (!std::isdigit(static_cast<unsigned char>(peek()))) fail("shape holds a non-number");
      uint64_t v = 0;
      while (std::isdigit(static_cast<unsigned char>(peek()))) {
        uint64_t d = static_cast<uint64_t>(peek() - '0');
        if (v > (static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) - d) / 10) fail("dimension too large");
        v = v * 10 + d;
        ++i_;
      }
      if (peek() == 'L') ++i_;  // Python 2 longs
      shape.push_back(static_cast<int64_t>(v));
      if (shape.size() > 64) fail("more than 64 dimensions");
      skip_ws();
      if (peek() == ',') {
        ++i_;
        continue;
      }
      expect(')');
      break;
    }
    return shape;
  }

  std::string_view s_;
  const std::string& name_;
  size_t i_ = 0;
};

}  // namespace

DType npy_storage_dtype(DType t) { return t == DType::BFloat16 ? DType::Float32 : t; }

std::string npy_header(DType stored, const Shape& shape) {
  std::string dict = "{'descr': '";
  dict += descr_of(stored);
  dict += "', 'fortran_order': False, 'shape': (";
  for (size_t i = 0; i < shape.size(); ++i) {
    dict += std::to_string(shape[i]);
    dict += (shape.size() == 1 || i + 1 < shape.size()) ? "," : "";
    if (i + 1 < shape.size()) dict += ' ';
  }
  dict += "), }";
  // Version 1.0 has a 2-byte length; use 2.0 (4 bytes) when the header would not fit.
  size_t prefix = kMagicSize + 2 + 2;
  int major = 1;
  size_t total = prefix + dict.size() + 1;
  size_t padded = (total + 63) / 64 * 64;
  if (padded - prefix > 65535) {
    major = 2;
    prefix = kMagicSize + 2 + 4;
    total = prefix + dict.size() + 1;
    padded = (total + 63) / 64 * 64;
  }
  const size_t header_len = padded - prefix;
  std::string out(kMagic, kMagicSize);
  out += static_cast<char>(major);
  out += '\0';
  for (int b = 0; b < (major == 1 ? 2 : 4); ++b) out += static_cast<char>((header_len >> (8 * b)) & 0xff);
  out += dict;
  out.append(padded - out.size() - 1, ' ');
  out += '\n';
  return out;
}

size_t npy_payload_size(const TensorView& view) {
  return view.numel() * dtype_size(npy_storage_dtype(view.dtype));
}

void npy_encode_payload(const TensorView& view, void* out) {
  const uint64_t n = view.numel();
  if (view.dtype == DType::BFloat16) {
    const uint16_t* src = static_cast<const uint16_t*>(view.data);
    uint32_t* dst = static_cast<uint32_t*>(out);
    for (uint64_t i = 0; i < n; ++i) dst[i] = static_cast<uint32_t>(src[i]) << 16;
  } else if (n) {
    std::memcpy(out, view.data, n * dtype_size(view.dtype));
  }
}

NpyHeader parse_npy_header(const void* bytes, size_t size, const std::string& name, uint64_t file_size) {
  if (file_size == UINT64_MAX) file_size = size;
  const auto* p = static_cast<const unsigned char*>(bytes);
  if (size < kMagicSize + 4 || std::memcmp(p, kMagic, kMagicSize) != 0)
    throw FormatError(name, "not an npy file (bad magic)");
  NpyHeader h;
  h.major_version = p[6];
  size_t header_len, prefix;
  if (h.major_version == 1) {
    header_len = p[8] | (p[9] << 8);
    prefix = 10;
  } else if (h.major_version == 2 || h.major_version == 3) {
    if (size < 12) throw FormatError(name, "truncated npy header");
    header_len = static_cast<size_t>(p[8]) | (static_cast<size_t>(p[9]) << 8) |
                 (static_cast<size_t>(p[10]) << 16) | (static_cast<size_t>(p[11]) << 24);
    prefix = 12;
  } else {
    throw FormatError(name, "unsupported npy version " + std::to_string(h.major_version) + "." +
                                std::to_string(p[7]));
  }
  if (header_len > kMaxHeaderBytes) throw FormatError(name, "npy header length " + std::to_string(header_len) + " is implausible");
  if (prefix + header_len > size)
    throw FormatError(name, "truncated: header needs " + std::to_string(prefix + header_len) + " bytes, file has " +
                                std::to_string(std::min<uint64_t>(size, file_size)));
  HeaderParser(std::string_view(reinterpret_cast<const char*>(p + prefix), header_len), name).parse(&h);
  h.data_offset = prefix + header_len;
  uint64_t numel;
  try {
    numel = shape_numel(h.shape);
  } catch (const Error& e) {
    throw FormatError(name, e.what());
  }
  const uint64_t elem = dtype_size(h.dtype);
  if (numel > UINT64_MAX / elem) throw FormatError(name, "shape " + shape_to_string(h.shape) + " is too large");
  const uint64_t need = numel * elem;
  const uint64_t have = file_size - h.data_offset;
  if (need != have)
    throw FormatError(name, "shape " + shape_to_string(h.shape) + " of " + std::string(dtype_name(h.dtype)) +
                                " needs " + std::to_string(need) + " data bytes, file has " + std::to_string(have) +
                                (need > have ? " (truncated)" : " (trailing bytes)"));
  return h;
}

void write_npy(const std::string& path, const TensorView& view) {
  const std::string header = npy_header(npy_storage_dtype(view.dtype), view.shape);
  if (view.dtype == DType::BFloat16) {
    HeapBuffer converted(npy_payload_size(view));
    npy_encode_payload(view, converted.mutable_data());
    write_file_atomic(path, header.data(), header.size(), converted.data(), converted.size());
  } else {
    write_file_atomic(path, header.data(), header.size(), view.data, view.nbytes());
  }
}

Tensor read_npy(const std::string& path) { return parse_npy(read_file(path), path); }

NpyHeader read_npy_header(const std::string& path, std::shared_ptr<const Buffer>* whole) {
  uint64_t file_size = 0;
  std::string bytes = read_file_prefix(path, 4096, &file_size);
  // A header longer than the first 4 KiB (a very high-rank shape): read up to its end.
  if (bytes.size() >= 12 && bytes.size() < file_size) {
    const auto* p = reinterpret_cast<const unsigned char*>(bytes.data());
    const uint64_t len = p[6] == 1 ? 10 + (p[8] | (p[9] << 8))
                                   : 12 + (uint64_t(p[8]) | uint64_t(p[9]) << 8 | uint64_t(p[10]) << 16 | uint64_t(p[11]) << 24);
    if (len > bytes.size() && len <= kMaxHeaderBytes + 12) bytes = read_file_prefix(path, static_cast<size_t>(len), &file_size);
  }
  NpyHeader h = parse_npy_header(bytes.data(), bytes.size(), path, file_size);
  if (whole && bytes.size() == file_size) *whole = std::make_shared<HeapBuffer>(bytes.data(), bytes.size());
  return h;
}

Tensor parse_npy(std::shared_ptr<const Buffer> file, const std::string& path) {
  NpyHeader h = parse_npy_header(file->data(), file->size(), path);
  Tensor t;
  t.dtype = h.dtype;
  t.shape = h.shape;
  t.data = static_cast<const char*>(file->data()) + h.data_offset;
  if (reinterpret_cast<uintptr_t>(t.data) % dtype_size(h.dtype) != 0) {
    // A header whose length is not padded as numpy pads it: typed reads need aligned data.
    auto copy = std::make_shared<HeapBuffer>(t.data, static_cast<size_t>(t.nbytes()));
    t.data = copy->data();
    t.buffer = std::move(copy);
    return t;
  }
  t.buffer = std::move(file);
  return t;
}

}  // namespace opdump
