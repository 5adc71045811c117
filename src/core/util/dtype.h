// Element types opdump understands: the MindSpore Dump guide's list of dumpable types.
#pragma once
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace opdump {

enum class DType : uint8_t {
  Bool,
  Int8,
  Int16,
  Int32,
  Int64,
  UInt8,
  UInt16,
  UInt32,
  UInt64,
  Float16,
  BFloat16,
  Float32,
  Float64,
  Complex64,
  Complex128,
};

inline constexpr int kDTypeCount = 15;

size_t dtype_size(DType t);
// numpy-style name: "bool", "int8", ..., "bfloat16", "complex128".
std::string_view dtype_name(DType t);
std::optional<DType> dtype_from_name(std::string_view name);
bool dtype_is_float(DType t);    // float16, bfloat16, float32, float64
bool dtype_is_complex(DType t);  // complex64, complex128

// bfloat16 <-> float32 (bfloat16 is the upper half of a float32, rounded to nearest even).
inline float bf16_to_float(uint16_t v) {
  uint32_t bits = static_cast<uint32_t>(v) << 16;
  float f;
  __builtin_memcpy(&f, &bits, 4);
  return f;
}
float half_to_float(uint16_t v);
uint16_t float_to_half(float f);
uint16_t float_to_bf16(float f);

}  // namespace opdump
