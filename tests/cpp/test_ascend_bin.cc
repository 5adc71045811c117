#include <gtest/gtest.h>

#include <cstring>

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
