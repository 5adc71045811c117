// Element types opdump understands: the MindSpore Dump guide's list of dumpable types.
#pragma once
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

#include "opdump/api.h"

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
OPDUMP_ADAPTER_API std::string_view dtype_name(DType t);
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
// 8-bit floats of Ascend dumps (CANN's DT_FLOAT8_E5M2, DT_FLOAT8_E4M3FN, DT_FLOAT8_E8M0, DT_HIFLOAT8),
// decoded exactly: each value is representable in float32.
float float8_e5m2_to_float(uint8_t v);    // IEEE-like: 5 exponent bits (bias 15), 2 mantissa, Inf and NaN
float float8_e4m3fn_to_float(uint8_t v);  // 4 exponent bits (bias 7), 3 mantissa, NaN only (S.1111.111)
float float8_e8m0_to_float(uint8_t v);    // 2^(v-127): a scale; 0xFF is NaN
// HiFloat8 ("Ascend HiFloat8 Format for Deep Learning", arXiv 2409.16626): sign, a prefix-coded dot
// field giving the exponent width D, a sign-magnitude exponent with an implicit leading 1, then
// 5-D mantissa bits (3 for D <= 1); dot 0000 is the denormal 2^(M-23); 0x00 zero, 0x80 NaN, 0x6F/0xEF +-Inf.
float hifloat8_to_float(uint8_t v);
uint16_t float_to_half(float f);
uint16_t float_to_bf16(float f);

}  // namespace opdump
