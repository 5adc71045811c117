#include <gtest/gtest.h>

#include <cstring>

#include "opdump/error.h"
#include "format/npy.h"
#include "stats/stats.h"
#include "test_util.h"

using namespace opdump;

TEST(Npy, HeaderIsAlignedVersion1) {
  std::string h = npy_header(DType::Float32, {2, 3});
  EXPECT_EQ(h.size() % 64, 0u);
  EXPECT_EQ(h[6], 1);
  EXPECT_EQ(h.back(), '\n');
  EXPECT_NE(h.find("'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }"), std::string::npos) << h;
  EXPECT_NE(npy_header(DType::Int64, {5}).find("'shape': (5,)"), std::string::npos);
  EXPECT_NE(npy_header(DType::Int64, {}).find("'shape': ()"), std::string::npos);
}

TEST(Npy, Version2And3HeadersAreRead) {
  // numpy writes 2.0 (4-byte header length) when a header exceeds 65535 bytes, 3.0 for utf8.
  test::TempDir dir;
  int16_t data[3] = {1, -2, 3};
  const std::string dict = "{'descr': '<i2', 'fortran_order': False, 'shape': (3,), }";
  for (char major : {2, 3}) {
    std::string h = std::string("\x93NUMPY", 6) + major + '\0';
    size_t len = (12 + dict.size() + 1 + 63) / 64 * 64 - 12;
    for (int b = 0; b < 4; ++b) h += static_cast<char>((len >> (8 * b)) & 0xff);
    h += dict;
    h.append(len - dict.size() - 1, ' ');
    h += '\n';
    test::write_text(dir / "v.npy", h + std::string(reinterpret_cast<char*>(data), 6));
    Tensor t = read_npy(dir / "v.npy");
    EXPECT_EQ(t.dtype, DType::Int16);
    EXPECT_EQ(static_cast<const int16_t*>(t.data)[1], -2);
  }
}

TEST(Npy, RoundTripEveryDType) {
  test::TempDir dir;
  for (int i = 0; i < kDTypeCount; ++i) {
    DType t = static_cast<DType>(i);
    const size_t n = 7;
    std::vector<uint8_t> bytes(n * dtype_size(t));
    for (size_t k = 0; k < bytes.size(); ++k) bytes[k] = static_cast<uint8_t>(k * 37 + i);
    if (t == DType::Bool)
      for (auto& b : bytes) b &= 1;
    TensorView v{bytes.data(), t, {n}};
    const std::string path = dir / (std::string(dtype_name(t)) + ".npy");
    write_npy(path, v);
    Tensor back = read_npy(path);
    EXPECT_EQ(back.shape, Shape{static_cast<int64_t>(n)});
    if (t == DType::BFloat16) {
      ASSERT_EQ(back.dtype, DType::Float32);
      const float* f = static_cast<const float*>(back.data);
      const uint16_t* src = reinterpret_cast<const uint16_t*>(bytes.data());
      for (size_t k = 0; k < n; ++k) {
        float expect = bf16_to_float(src[k]);
        EXPECT_EQ(std::memcmp(&f[k], &expect, 4), 0);
      }
    } else {
      ASSERT_EQ(back.dtype, t);
      EXPECT_EQ(std::memcmp(back.data, bytes.data(), bytes.size()), 0) << dtype_name(t);
    }
  }
}

TEST(Npy, MalformedFilesAreRejected) {
  test::TempDir dir;
  float data[6] = {1, 2, 3, 4, 5, 6};
  write_npy(dir / "ok.npy", TensorView{data, DType::Float32, {2, 3}});
  const std::string good = test::read_file(dir / "ok.npy");
  auto expect_error = [&](const std::string& name, const std::string& content, const std::string& needle) {
    test::write_text(dir / name, content);
    try {
      read_npy(dir / name);
      ADD_FAILURE() << name << " accepted";
    } catch (const FormatError& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(name), std::string::npos) << e.what();
    }
  };
  expect_error("magic.npy", "XNUMPY" + good.substr(6), "bad magic");
  expect_error("truncated.npy", good.substr(0, good.size() - 3), "truncated");
  expect_error("trailing.npy", good + "xx", "trailing");
  expect_error("short.npy", good.substr(0, 20), "truncated");
  std::string bad_descr = good;
  bad_descr.replace(bad_descr.find("<f4"), 3, "<x9");
  expect_error("descr.npy", bad_descr, "not a supported dtype");
  std::string big_endian = good;
  big_endian.replace(big_endian.find("<f4"), 3, ">f4");
  expect_error("endian.npy", big_endian, "big-endian");
  std::string fortran = good;
  fortran.replace(fortran.find("False"), 5, "True ");
  expect_error("fortran.npy", fortran, "fortran_order");
  std::string version = good;
  version[6] = 9;
  expect_error("version.npy", version, "unsupported npy version");
  // A shape declaring ~10^17 bytes: refused from the header alone (uses the padding spaces).
  std::string huge = good;
  const std::string bigger = "(999999999999, 99999), }";
  const size_t at = huge.find("(2, 3), }");
  huge.replace(at, bigger.size(), bigger);
  expect_error("huge.npy", huge, "needs");
  expect_error("empty.npy", "", "bad magic");
}

TEST(Npy, UnpaddedHeaderGivesAlignedData) {  // fuzzing finding: typed reads at odd addresses
  test::TempDir dir;
  std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }\n";  // not padded to 64
  std::string file = std::string("\x93NUMPY\x01\x00", 8);
  file += static_cast<char>(header.size() & 0xff);
  file += static_cast<char>(header.size() >> 8);
  file += header;
  const float v[2] = {1.5f, -2.0f};
  file.append(reinterpret_cast<const char*>(v), 8);
  test::write_text(dir / "odd.npy", file);
  Tensor t = read_npy(dir / "odd.npy");
  ASSERT_EQ(reinterpret_cast<uintptr_t>(t.data) % 4, 0u);
  EXPECT_EQ(static_cast<const float*>(t.data)[1], -2.0f);
  EXPECT_EQ(compute_stats(t.view()).max, 1.5);
}
