#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <tuple>

#include "format/ascend_bin.h"
#include "opdump/error.h"
#include "test_util.h"

using namespace opdump;

namespace {

// Appends a protobuf varint.
void varint(std::string& s, uint64_t v) {
  while (v >= 0x80) {
    s += static_cast<char>((v & 0x7f) | 0x80);
    v >>= 7;
  }
  s += static_cast<char>(v);
}

}  // namespace

TEST(AscendBin, RoundTrip) {
  test::TempDir dir;
  std::vector<float> x(2 * 3 * 4 * 4);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i) * 0.5f;
  std::vector<uint16_t> w(5, 0x3c00);  // float16 ones
  std::vector<int64_t> idx = {3, -1, 7};
  write_ascend_bin(dir / "Conv2D.op.1.2.3", "Default/Conv2D-op1", 1234567,
                   {{TensorView{x.data(), DType::Float32, {2, 3, 4, 4}}, 0, {}},
                    {TensorView{w.data(), DType::Float16, {5}}, 2, {}}},
                   {{TensorView{idx.data(), DType::Int64, {3}}, 2, {}}});
  BinDump d = read_ascend_bin(dir / "Conv2D.op.1.2.3");
  EXPECT_EQ(d.op_name, "Default/Conv2D-op1");
  EXPECT_EQ(d.dump_time, 1234567u);
  ASSERT_EQ(d.inputs.size(), 2u);
  ASSERT_EQ(d.outputs.size(), 1u);
  EXPECT_EQ(d.inputs[0].format, 0);
  EXPECT_EQ(bin_format_name(d.inputs[0].format), "NCHW");
  Tensor t0 = d.tensor(d.inputs[0]);
  EXPECT_EQ(t0.dtype, DType::Float32);
  EXPECT_EQ(t0.shape, (Shape{2, 3, 4, 4}));
  EXPECT_EQ(std::memcmp(t0.data, x.data(), x.size() * 4), 0);
  Tensor t1 = d.tensor(d.inputs[1]);
  EXPECT_EQ(t1.dtype, DType::Float16);
  EXPECT_EQ(std::memcmp(t1.data, w.data(), 10), 0);
  Tensor o = d.tensor(d.outputs[0]);
  EXPECT_EQ(o.dtype, DType::Int64);
  EXPECT_EQ(std::memcmp(o.data, idx.data(), 24), 0);
  EXPECT_TRUE(looks_like_ascend_bin(dir / "Conv2D.op.1.2.3"));
}

TEST(AscendBin, EveryRepresentableDTypeMapsBothWays) {
  for (int i = 0; i < kDTypeCount; ++i) {
    DType t = static_cast<DType>(i);
    int32_t code = bin_data_type_of(t);
    ASSERT_GT(code, 0) << dtype_name(t);
    DType back;
    ASSERT_TRUE(dtype_of_bin_data_type(code, &back));
    EXPECT_EQ(back, t);
  }
  EXPECT_EQ(bin_data_type_of(DType::BFloat16), 27);
  DType dummy;
  EXPECT_FALSE(dtype_of_bin_data_type(13, &dummy));  // string
}

TEST(AscendBin, UnknownFieldsAreSkipped) {
  test::TempDir dir;
  float v[2] = {1.5f, -2.5f};
  std::string header = ascend_bin_header("op", 5, {}, {{TensorView{v, DType::Float32, {2}}, 2, {}}});
  std::string body = header.substr(8);
  // field 99 (varint) and field 100 (length-delimited): a newer CANN's additions
  varint(body, (99 << 3) | 0);
  varint(body, 42);
  varint(body, (100 << 3) | 2);
  varint(body, 3);
  body += "abc";
  uint64_t len = body.size();
  std::string file(8, '\0');
  std::memcpy(file.data(), &len, 8);
  file += body;
  file.append(reinterpret_cast<const char*>(v), 8);
  test::write_text(dir / "f", file);
  BinDump d = read_ascend_bin(dir / "f");
  ASSERT_EQ(d.outputs.size(), 1u);
  EXPECT_EQ(static_cast<const float*>(d.tensor(d.outputs[0]).data)[1], -2.5f);
}

TEST(AscendBin, BadFilesAreRejectedBeforeAllocation) {
  test::TempDir dir;
  float v[4] = {1, 2, 3, 4};
  write_ascend_bin(dir / "good", "op", 1, {}, {{TensorView{v, DType::Float32, {4}}, 2, {}}});
  const std::string good = test::read_file(dir / "good");
  auto expect_error = [&](const std::string& name, const std::string& content, const std::string& needle) {
    test::write_text(dir / name, content);
    try {
      BinDump d = read_ascend_bin(dir / name);
      for (auto& t : d.outputs) d.tensor(t);
      ADD_FAILURE() << name << " accepted";
    } catch (const FormatError& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  expect_error("tiny", "abc", "too short");
  expect_error("truncated", good.substr(0, good.size() - 1), "beyond the file size");
  std::string huge_len = good;
  uint64_t big = uint64_t(1) << 62;
  std::memcpy(huge_len.data(), &big, 8);
  expect_error("huge_header", huge_len, "exceeds the file size");
  // A header declaring an output of 2^60 bytes.
  std::string body = ascend_bin_header("op", 1, {}, {{TensorView{v, DType::Float32, {4}}, 2, {}}}).substr(8);
  body += std::string("\x1a\x04\x30\x80\x80\x80", 6);  // output{ size = ... } truncated varint
  std::string f(8, '\0');
  uint64_t l = body.size();
  std::memcpy(f.data(), &l, 8);
  expect_error("garbage_header", f + body, "does not parse");
}

TEST(AscendBin, SizeMustMatchShape) {
  test::TempDir dir;
  // Build by hand: an output declaring shape (3) float32 but size 16.
  std::string body;
  std::string out;
  varint(out, (1 << 3) | 0);  // data_type
  varint(out, 1);
  std::string shape;
  varint(shape, (1 << 3) | 0);
  varint(shape, 3);
  varint(out, (3 << 3) | 2);
  varint(out, shape.size());
  out += shape;
  varint(out, (6 << 3) | 0);  // size
  varint(out, 16);
  varint(body, (3 << 3) | 2);
  varint(body, out.size());
  body += out;
  std::string f(8, '\0');
  uint64_t l = body.size();
  std::memcpy(f.data(), &l, 8);
  f += body + std::string(16, '\0');
  test::write_text(dir / "m", f);
  BinDump d = read_ascend_bin(dir / "m");
  ASSERT_EQ(d.outputs.size(), 1u);
  EXPECT_THROW(d.tensor(d.outputs[0]), FormatError);
}

namespace {

// A bin file of outputs given as (data type code, shape, raw bytes), built field by field as CANN writes it.
std::string bin_of(const std::vector<std::tuple<int32_t, Shape, std::string>>& outputs) {
  std::string body, data;
  for (const auto& [code, shape, bytes] : outputs) {
    std::string out, dims;
    varint(out, (1 << 3) | 0);
    varint(out, static_cast<uint64_t>(code));
    for (int64_t d : shape) {
      varint(dims, (1 << 3) | 0);
      varint(dims, static_cast<uint64_t>(d));
    }
    varint(out, (3 << 3) | 2);
    varint(out, dims.size());
    out += dims;
    varint(out, (6 << 3) | 0);
    varint(out, bytes.size());
    varint(body, (3 << 3) | 2);
    varint(body, out.size());
    body += out;
    data += bytes;
  }
  std::string f(8, '\0');
  const uint64_t l = body.size();
  std::memcpy(f.data(), &l, 8);
  return f + body + data;
}

std::string bytes_of(std::initializer_list<uint8_t> b) { return std::string(b.begin(), b.end()); }

}  // namespace

TEST(AscendBin, EightBitFloatsDecodeExactly) {
  // float8 e5m2 is float16's top byte
  EXPECT_EQ(float8_e5m2_to_float(0x3C), 1.0f);
  EXPECT_EQ(float8_e5m2_to_float(0xC0), -2.0f);
  EXPECT_EQ(float8_e5m2_to_float(0x7B), 57344.0f);  // largest finite
  EXPECT_TRUE(std::isinf(float8_e5m2_to_float(0x7C)));
  EXPECT_TRUE(std::isnan(float8_e5m2_to_float(0x7E)));
  EXPECT_EQ(float8_e5m2_to_float(0x01), std::ldexp(1.0f, -16));  // smallest subnormal
  // float8 e4m3fn: no infinity, one NaN per sign
  EXPECT_EQ(float8_e4m3fn_to_float(0x38), 1.0f);
  EXPECT_EQ(float8_e4m3fn_to_float(0x7E), 448.0f);
  EXPECT_EQ(float8_e4m3fn_to_float(0xFE), -448.0f);
  EXPECT_TRUE(std::isnan(float8_e4m3fn_to_float(0x7F)));
  EXPECT_TRUE(std::isnan(float8_e4m3fn_to_float(0xFF)));
  EXPECT_EQ(float8_e4m3fn_to_float(0x01), std::ldexp(1.0f, -9));
  EXPECT_EQ(float8_e4m3fn_to_float(0x78), 256.0f);  // exponent 15 is a number here
  // e8m0: a power of two
  EXPECT_EQ(float8_e8m0_to_float(127), 1.0f);
  EXPECT_EQ(float8_e8m0_to_float(130), 8.0f);
  EXPECT_TRUE(std::isnan(float8_e8m0_to_float(0xFF)));
  // HiFloat8: every dot width
  EXPECT_EQ(hifloat8_to_float(0x00), 0.0f);
  EXPECT_TRUE(std::isnan(hifloat8_to_float(0x80)));
  EXPECT_TRUE(std::isinf(hifloat8_to_float(0x6F)) && hifloat8_to_float(0xEF) < 0);
  EXPECT_EQ(hifloat8_to_float(0x08), 1.0f);                  // dot 0001: 2^0 x 1.000
  EXPECT_EQ(hifloat8_to_float(0x0D), 1.625f);                // 2^0 x 1.101
  EXPECT_EQ(hifloat8_to_float(0x10), 2.0f);                  // dot 001, exponent +1
  EXPECT_EQ(hifloat8_to_float(0x1C), 0.75f);                 // dot 001, exponent -1, mantissa .100
  EXPECT_EQ(hifloat8_to_float(0x28), 8.0f);                  // dot 01, exponent +3
  EXPECT_EQ(hifloat8_to_float(0x30), 0.25f);                 // dot 01, exponent -2
  EXPECT_EQ(hifloat8_to_float(0x4C), 128.0f);                // dot 10, exponent +7
  EXPECT_EQ(hifloat8_to_float(0x6E), 32768.0f);              // dot 11, exponent +15: the largest (mantissa .1 is Inf)
  EXPECT_EQ(hifloat8_to_float(0x7F), std::ldexp(1.5f, -15)); // dot 11, exponent -15, mantissa .1
  EXPECT_EQ(hifloat8_to_float(0x01), std::ldexp(1.0f, -22)); // denormal 2^(1-23)
  EXPECT_EQ(hifloat8_to_float(0x87), -std::ldexp(1.0f, -16));
  // every HiFloat8 code but NaN is a distinct value, ordered by magnitude within a sign
  std::vector<float> positive;
  for (int v = 0; v < 0x80; ++v) positive.push_back(hifloat8_to_float(static_cast<uint8_t>(v)));
  std::vector<float> sorted = positive;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_EQ(std::adjacent_find(sorted.begin(), sorted.end()), sorted.end());
}

TEST(AscendBin, NarrowTypesAreReadAsFloat32OrComplex64) {
  test::TempDir dir;
  const uint16_t c32[4] = {0x3C00, 0xC000, 0x3800, 0x0000};  // (1 - 2j), (0.5 + 0j)
  std::string complex32(reinterpret_cast<const char*>(c32), 8);
  test::write_text(dir / "Cast.op.1.0.5", bin_of({{34, {3}, bytes_of({0x3C, 0xC0, 0x7C})},
                                                  {35, {2}, bytes_of({0x38, 0x7E})},
                                                  {33, {2, 1}, bytes_of({0x08, 0x30})},
                                                  {32, {2}, complex32},
                                                  {39, {4}, bytes_of({0x12, 0x34})}}));
  BinDump d = read_ascend_bin(dir / "Cast.op.1.0.5");
  ASSERT_EQ(d.outputs.size(), 5u);
  EXPECT_EQ(bin_data_type_name(d.outputs[0].data_type), "DT_FLOAT8_E5M2");
  Tensor e5 = d.tensor(d.outputs[0]);
  ASSERT_EQ(e5.dtype, DType::Float32);
  const float* f = static_cast<const float*>(e5.data);
  EXPECT_EQ(f[0], 1.0f);
  EXPECT_EQ(f[1], -2.0f);
  EXPECT_TRUE(std::isinf(f[2]));
  Tensor e4 = d.tensor(d.outputs[1]);
  EXPECT_EQ(static_cast<const float*>(e4.data)[1], 448.0f);
  Tensor hif8 = d.tensor(d.outputs[2]);
  EXPECT_EQ(hif8.shape, (Shape{2, 1}));
  EXPECT_EQ(static_cast<const float*>(hif8.data)[1], 0.25f);
  Tensor c = d.tensor(d.outputs[3]);
  ASSERT_EQ(c.dtype, DType::Complex64);
  const float* cf = static_cast<const float*>(c.data);
  EXPECT_EQ(cf[0], 1.0f);
  EXPECT_EQ(cf[1], -2.0f);
  EXPECT_EQ(cf[2], 0.5f);
  // a 4-bit float is named and refused for that tensor alone
  try {
    d.tensor(d.outputs[4]);
    ADD_FAILURE() << "float4 decoded";
  } catch (const FormatError& e) {
    EXPECT_NE(std::string(e.what()).find("DT_FLOAT4_E2M1"), std::string::npos) << e.what();
  }
  // the reverse mapping never picks a narrow type for float32 or complex64
  EXPECT_EQ(bin_data_type_of(DType::Float32), 1);
  EXPECT_EQ(bin_data_type_of(DType::Complex64), 16);
}

// Products of a shape and an element size that wrap around 64 bits must not pass for the declared
// size (a 2^62-element FLOAT tensor "needs" 0 bytes, a 2^62+1-element COMPLEX32 tensor 4).
TEST(AscendBin, ShapesWhoseByteCountWrapsAreRejected) {
  test::TempDir dir;
  const int64_t huge = int64_t(1) << 62;
  for (const auto& [name, code, shape, bytes] :
       {std::tuple<std::string, int32_t, Shape, std::string>{"float_zero", 1, {huge}, ""},
        {"complex32_four", 32, {huge + 1}, std::string(4, '\0')},
        {"two_dims", 1, {int64_t(1) << 31, int64_t(1) << 31}, ""}}) {
    test::write_text(dir / name, bin_of({{code, shape, bytes}}));
    BinDump d = read_ascend_bin(dir / name);  // the header alone is fine
    ASSERT_EQ(d.outputs.size(), 1u);
    try {
      d.tensor(d.outputs[0]);
      ADD_FAILURE() << name << " accepted";
    } catch (const FormatError& e) {
      EXPECT_NE(std::string(e.what()).find(dir / name), std::string::npos) << e.what();
    }
    EXPECT_THROW(d.checked_size(d.outputs[0]), FormatError) << name;
  }
}
