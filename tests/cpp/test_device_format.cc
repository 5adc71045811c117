#include <gtest/gtest.h>

#include <cstring>
#include <numeric>

#include "format/ascend_bin.h"
#include "format/device_format.h"
#include "opdump/error.h"
#include "test_util.h"

using namespace opdump;

namespace {

Tensor iota_tensor(DType dtype, Shape shape) {
  Tensor t;
  t.dtype = dtype;
  t.shape = std::move(shape);
  auto buf = std::make_shared<HeapBuffer>(t.nbytes());
  for (size_t i = 0; i < t.nbytes(); ++i) buf->mutable_data()[i] = static_cast<uint8_t>(i * 7 + 3);
  t.buffer = buf;
  t.data = buf->data();
  return t;
}

bool same(const Tensor& a, const Tensor& b) {
  return a.shape == b.shape && a.dtype == b.dtype && std::memcmp(a.data, b.data, a.nbytes()) == 0;
}

}  // namespace

TEST(DeviceFormat, RoundTripsThroughEveryFormat) {
  for (Shape nchw : {Shape{2, 3, 4, 5}, Shape{1, 17, 3, 3}, Shape{33, 20, 1, 2}}) {
    for (int32_t f : {1, 3, 4, 16}) {
      Tensor host = iota_tensor(DType::Float32, nchw);
      Tensor dev = to_device_format(host, f);
      Tensor back = to_host_format(dev, f, nchw, "t");
      EXPECT_TRUE(same(host, back)) << "format " << f << " shape " << shape_to_string(nchw);
    }
  }
  for (Shape mn : {Shape{5, 7}, Shape{16, 16}, Shape{3, 33, 18}}) {
    Tensor host = iota_tensor(DType::Float16, mn);
    Tensor dev = to_device_format(host, 29);
    EXPECT_EQ(dev.shape.size(), mn.size() + 2);
    EXPECT_TRUE(same(host, to_host_format(dev, 29, mn, "t"))) << shape_to_string(mn);
  }
  // 8-bit types use 32-wide blocks
  Tensor i8 = iota_tensor(DType::Int8, {2, 40, 3, 3});
  Tensor dev = to_device_format(i8, 3, 32);
  EXPECT_EQ(dev.shape, (Shape{2, 2, 3, 3, 32}));
  EXPECT_TRUE(same(i8, to_host_format(dev, 3, i8.shape, "t")));
}

TEST(DeviceFormat, ElementPositionsFollowTheDocumentedLayout) {
  // NC1HWC0: channel c lives at c1 = c / C0, c0 = c % C0; padding channels are zero.
  Tensor host = iota_tensor(DType::Float32, {1, 18, 2, 2});
  Tensor dev = to_device_format(host, 3);
  ASSERT_EQ(dev.shape, (Shape{1, 2, 2, 2, 16}));
  const float* h = static_cast<const float*>(host.data);
  const float* d = static_cast<const float*>(dev.data);
  // element (0, 17, 1, 0): c1 = 1, c0 = 1
  EXPECT_EQ(std::memcmp(&d[((1 * 2 + 1) * 2 + 0) * 16 + 1], &h[(17 * 2 + 1) * 2 + 0], 4), 0);
  EXPECT_EQ(d[((1 * 2 + 0) * 2 + 0) * 16 + 5], 0.0f);  // channel 21 is padding
  // FRACTAL_NZ: (m, n) at [n / N0][m / M0][m % M0][n % N0]
  Tensor mat = iota_tensor(DType::Float32, {20, 18});
  Tensor nz = to_device_format(mat, 29);
  ASSERT_EQ(nz.shape, (Shape{2, 2, 16, 16}));
  const float* m = static_cast<const float*>(mat.data);
  const float* z = static_cast<const float*>(nz.data);
  EXPECT_EQ(std::memcmp(&z[((1 * 2 + 1) * 16 + 3) * 16 + 1], &m[19 * 18 + 17], 4), 0);
}

TEST(DeviceFormat, WrongShapesAreErrors) {
  Tensor dev = to_device_format(iota_tensor(DType::Float32, {1, 18, 2, 2}), 3);
  EXPECT_THROW(to_host_format(dev, 3, {1, 40, 2, 2}, "x"), FormatError);
  EXPECT_THROW(to_host_format(dev, 3, {1, 18, 2}, "x"), FormatError);
  EXPECT_THROW(to_host_format(dev, 7, {1, 18, 2, 2}, "x"), FormatError);
}

TEST(DeviceFormat, BinFileWithOriginalShapeConverts) {
  test::TempDir dir;
  Tensor host = iota_tensor(DType::Float32, {2, 20, 3, 3});
  Tensor dev = to_device_format(host, 4);
  write_ascend_bin(dir / "Conv2D.w.0.0.1", "w", 1, {{dev.view(), 4, host.shape}}, {});
  BinDump d = read_ascend_bin(dir / "Conv2D.w.0.0.1");
  ASSERT_EQ(d.inputs.size(), 1u);
  EXPECT_EQ(d.inputs[0].format, 4);
  EXPECT_EQ(d.inputs[0].original_shape, host.shape);
  EXPECT_TRUE(same(host, to_host_format(d.tensor(d.inputs[0]), 4, d.inputs[0].original_shape, "w")));
}
