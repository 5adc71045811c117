// torch.save files read without PyTorch: archives made here with minizip and pickles written
// opcode by opcode as torch.save writes them (files saved by PyTorch itself are read back against
// torch.load in tests/python/test_msprobe_input.py).
#include <gtest/gtest.h>
#include <minizip/zip.h>

#include <cstring>
#include <string>
#include <vector>

#include "format/torch_pt.h"
#include "opdump/error.h"
#include "test_util.h"

namespace opdump {
namespace {

using test::TempDir;

std::string unicode(const std::string& s) {
  std::string out = "X";
  const uint32_t n = static_cast<uint32_t>(s.size());
  out.append(reinterpret_cast<const char*>(&n), 4);
  return out + s;
}

std::string int1(int64_t v) {
  if (v >= 0 && v < 256) return std::string("K") + static_cast<char>(v);
  std::string out = "\x8a\x08";  // LONG1 of 8 bytes, little-endian
  for (int i = 0; i < 8; ++i) out += static_cast<char>((static_cast<uint64_t>(v) >> (8 * i)) & 0xff);
  return out;
}
std::string memo(int n) { return std::string("q") + static_cast<char>(n); }  // BINPUT

std::string int_tuple(const std::vector<int64_t>& v) {
  std::string out = "(";
  for (int64_t x : v) out += int1(x);
  return out + "t";
}

struct Pickle {
  std::string storage = "FloatStorage";
  int numel = 6, offset = 0;
  std::vector<int64_t> sizes = {2, 3}, strides = {3, 1};
  std::string rebuild = "torch._utils\n_rebuild_tensor_v2\n";

  std::string bytes() const {
    return std::string("\x80\x02") + "c" + rebuild + memo(0) + "((" + unicode("storage") + memo(1) + "ctorch\n" +
           storage + "\n" + memo(2) + unicode("0") + unicode("cpu") + int1(numel) + "t" + memo(3) + "Q" + int1(offset) +
           int_tuple(sizes) + int_tuple(strides) + "\x89" + "ccollections\nOrderedDict\n)Rt" + memo(4) + "R.";
  }
};

// A zip with the records torch.save writes (stored, uncompressed).
void write_pt(const std::string& path, const std::string& pickle, const std::string& data, int method = 0,
              const std::string& byteorder = "little") {
  zipFile z = zipOpen64(path.c_str(), 0);
  ASSERT_NE(z, nullptr);
  auto add = [&](const std::string& name, const std::string& bytes) {
    ASSERT_EQ(zipOpenNewFileInZip64(z, name.c_str(), nullptr, nullptr, 0, nullptr, 0, nullptr, method,
                                    method ? 6 : 0, 0),
              ZIP_OK);
    ASSERT_EQ(zipWriteInFileInZip(z, bytes.data(), static_cast<unsigned>(bytes.size())), ZIP_OK);
    ASSERT_EQ(zipCloseFileInZip(z), ZIP_OK);
  };
  add("t/data.pkl", pickle);
  if (!byteorder.empty()) add("t/byteorder", byteorder);
  add("t/data/0", data);
  add("t/version", "3\n");
  ASSERT_EQ(zipClose(z, nullptr), ZIP_OK);
}

std::string floats(const std::vector<float>& v) {
  return std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(float));
}

TEST(TorchPt, ReadsAContiguousTensorInPlace) {
  TempDir dir;
  write_pt(dir / "a.pt", Pickle{}.bytes(), floats({0, 1, 2, 3, 4, 5}));
  const Tensor t = read_torch_pt(dir / "a.pt");
  EXPECT_EQ(t.dtype, DType::Float32);
  EXPECT_EQ(t.shape, (Shape{2, 3}));
  const float* v = static_cast<const float*>(t.data);
  for (int i = 0; i < 6; ++i) EXPECT_EQ(v[i], float(i));
}

TEST(TorchPt, ReadsAViewWithOffsetAndStrides) {
  TempDir dir;
  Pickle p;  // x = arange(12).reshape(3, 4)[:, 1:3]: offset 1, sizes (3, 2), strides (4, 1)
  p.numel = 12;
  p.offset = 1;
  p.sizes = {3, 2};
  p.strides = {4, 1};
  std::vector<float> all(12);
  for (int i = 0; i < 12; ++i) all[i] = float(i);
  write_pt(dir / "v.pt", p.bytes(), floats(all));
  const Tensor t = read_torch_pt(dir / "v.pt");
  EXPECT_EQ(t.shape, (Shape{3, 2}));
  const float* v = static_cast<const float*>(t.data);
  const float expected[] = {1, 2, 5, 6, 9, 10};
  for (int i = 0; i < 6; ++i) EXPECT_EQ(v[i], expected[i]) << i;
}

TEST(TorchPt, StorageTypesGiveDtypes) {
  TempDir dir;
  Pickle p;
  p.storage = "BFloat16Storage";
  p.numel = 2;
  p.sizes = {2};
  p.strides = {1};
  write_pt(dir / "b.pt", p.bytes(), std::string("\x80\x3f\x00\x40", 4));  // bf16 1.0, 2.0
  const Tensor t = read_torch_pt(dir / "b.pt");
  EXPECT_EQ(t.dtype, DType::BFloat16);
  EXPECT_EQ(bf16_to_float(static_cast<const uint16_t*>(t.data)[0]), 1.0f);
  EXPECT_EQ(bf16_to_float(static_cast<const uint16_t*>(t.data)[1]), 2.0f);
}

// Each malformed or hostile file is refused with its name and the reason.
class TorchPtRefusal : public ::testing::Test {
 protected:
  void refused(const std::string& name, const std::string& pickle, const std::string& data, const char* why,
               int method = 0, const std::string& byteorder = "little") {
    write_pt(dir_ / name, pickle, data, method, byteorder);
    try {
      read_torch_pt(dir_ / name);
      ADD_FAILURE() << name << " was accepted";
    } catch (const FormatError& e) {
      EXPECT_NE(std::string(e.what()).find(dir_ / name), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(why), std::string::npos) << e.what();
    }
  }
  TempDir dir_;
  const std::string one_ = floats({1.5f});
};

TEST_F(TorchPtRefusal, WhatIsNotOneSafeTensor) {
  TempDir& dir = dir_;
  const std::string six = floats({0, 1, 2, 3, 4, 5});
  Pickle evil;
  evil.rebuild = "os\nsystem\n";
  refused("evil.pt", evil.bytes(), six, "refuses to call os.system");
  Pickle small;
  small.numel = 60;
  refused("small.pt", small.bytes(), six, "less than its 60 elements");
  Pickle past;
  past.offset = 3;
  refused("past.pt", past.bytes(), six, "past the end of its storage");
  Pickle unknown;
  unknown.storage = "QInt8Storage";
  refused("unknown.pt", unknown.bytes(), six, "storage type torch.QInt8Storage is not supported");
  refused("cut.pt", Pickle{}.bytes().substr(0, 40), six, "data.pkl: ends early");
  refused("list.pt", std::string("\x80\x02]") + memo(0) + ".", six, "holds a list, not one tensor");
  refused("opcode.pt", std::string("\x80\x02i", 3), six, "pickle opcode 0x69");
  refused("deflated.pt", Pickle{}.bytes(), six, "is compressed", Z_DEFLATED);
  refused("big.pt", Pickle{}.bytes(), six, "big-endian", 0, "big");

  test::write_text(dir / "plain.pt", "not a zip at all");
  EXPECT_THROW(read_torch_pt(dir / "plain.pt"), FormatError);
  test::write_text(dir / "legacy.pt", std::string("\x80\x02\x8a\x0a", 4));
  try {
    read_torch_pt(dir / "legacy.pt");
    ADD_FAILURE();
  } catch (const FormatError& e) {
    EXPECT_NE(std::string(e.what()).find("legacy format"), std::string::npos) << e.what();
  }
}

// Hostile files: sizes that wrap or exceed memory, nesting a level per byte, memo recalls that
// double a value per few bytes, marks without end. Each is a clear FormatError naming the file.
TEST_F(TorchPtRefusal, StrideZeroViewsOfHugeSizes) {
  Pickle wraps;  // 2^62 floats of stride 0: 2^64 bytes, which wrap to 0
  wraps.numel = 1;
  wraps.sizes = {int64_t(1) << 62};
  wraps.strides = {0};
  refused("wraps.pt", wraps.bytes(), one_, "overflow");
  Pickle huge;  // 2^40 floats of stride 0: 4 TiB asked of the memory
  huge.numel = 1;
  huge.sizes = {int64_t(1) << 40};
  huge.strides = {0};
  refused("huge.pt", huge.bytes(), one_, "memory available");
  Pickle fine;  // a real expanded tensor: 1000 copies of one element
  fine.numel = 1;
  fine.sizes = {1000};
  fine.strides = {0};
  write_pt(dir_ / "fine.pt", fine.bytes(), one_);
  const Tensor t = read_torch_pt(dir_ / "fine.pt");
  ASSERT_EQ(t.shape, Shape{1000});
  for (int i = 0; i < 1000; ++i) ASSERT_EQ(static_cast<const float*>(t.data)[i], 1.5f);
}

TEST_F(TorchPtRefusal, NestingIsBounded) {
  // TUPLE1 a million times: a tuple in a tuple in a tuple...
  refused("tuples.pt", std::string("\x80\x02)") + std::string(1000000, '\x85') + ".", "", "nests containers");
  // lists appended into lists
  refused("lists.pt", "\x80\x02" + std::string(50000, ']') + std::string(49999, 'a') + ".", "", "nests containers");
}

TEST_F(TorchPtRefusal, MemoRecallsCannotDoubleWithoutEnd) {
  std::string p = "\x80\x02)" + memo(0);
  for (int i = 0; i < 48; ++i) p += std::string("h\x00h\x00\x86", 5) + memo(0);  // t = (t, t), 48 times
  refused("doubling.pt", p + ".", "", "builds more than");
}

TEST_F(TorchPtRefusal, MarksAreBounded) {
  refused("marks.pt", "\x80\x02" + std::string(100000, '(') + ".", "", "open marks");
}

}  // namespace
}  // namespace opdump
