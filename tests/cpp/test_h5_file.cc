// format/h5_file: the .h5 files of the torch_npu 1.5 dumper written and read back through HDF5's C
// library, every dtype exactly; hostile files read in a child process (isolated).
#include "format/h5_file.h"

#include <gtest/gtest.h>

#include <csignal>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <thread>

#include "opdump/error.h"
#include "test_util.h"

using namespace opdump;

TEST(H5File, EveryDtypeRoundTripsExactly) {
  test::TempDir dir;
  const std::string path = dir / "all.h5";
  const uint8_t raw[32] = {0x3c, 0x00, 0xc0, 0x7f, 0x80, 0xff, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09, 0x0a,
                           0x0b, 0x0c, 0x0d, 0x0e, 0x0f, 0x10, 0x11, 0x12, 0x13, 0x14, 0x15, 0x16, 0x17, 0x18, 0x19, 0x1a};
  {
    h5::Writer w(path);
    for (int i = 0; i < kDTypeCount; ++i) {
      const DType d = static_cast<DType>(i);
      const int64_t n = static_cast<int64_t>(16 / dtype_size(d));
      std::vector<uint8_t> bytes(raw, raw + 16);
      if (d == DType::Bool)
        for (auto& b : bytes) b &= 1;
      w.tensor("/op/1/input/" + std::string(dtype_name(d)), TensorView{bytes.data(), d, {n}}, {0, 0, {}, 0});
    }
    EXPECT_FALSE(std::filesystem::exists(path)) << "written under a temporary name until close()";
    w.close();
  }
  h5::Reader r(path);
  const auto names = r.members("/op/1/input");
  ASSERT_EQ(names.size(), static_cast<size_t>(kDTypeCount));
  EXPECT_EQ(names[0], "bool") << "creation order, not by name";
  for (int i = 0; i < kDTypeCount; ++i) {
    const DType d = static_cast<DType>(i);
    const std::string object = "/op/1/input/" + std::string(dtype_name(d));
    const h5::DatasetInfo info = r.info(object);
    ASSERT_TRUE(info.dtype) << object << ": " << info.unreadable;
    EXPECT_EQ(*info.dtype, d) << object;
    EXPECT_EQ(info.data_type, h5::data_type_code(d));
    EXPECT_EQ(h5::dtype_of_code(info.data_type), d);
    const Tensor t = r.tensor(object);
    ASSERT_EQ(t.nbytes(), 16u);
    std::vector<uint8_t> expected(raw, raw + 16);
    if (d == DType::Bool)
      for (auto& b : expected) b &= 1;
    EXPECT_EQ(std::memcmp(t.data, expected.data(), 16), 0) << object << " read back bit for bit";
  }
}

TEST(H5File, ArgumentsAttributesAndStrides) {
  test::TempDir dir;
  const std::string path = dir / "args.h5";
  const float values[6] = {1, 2, 3, 4, 5, 6};
  {
    h5::Writer w(path);
    w.tensor("/mm/3/input/self", TensorView{values, DType::Float32, {3, 2}}, {1, 0, {1, 3}, 2});
    w.ints("/mm/3/input/dims", {2, 3}, false, h5::ValueType::IntList);
    w.ints("/mm/3/input/flag", {1}, true, h5::ValueType::Bool, DType::Int8);
    w.real("/mm/3/input/alpha", 0.5, h5::ValueType::Scalar);
    w.text("/mm/3/input/mode", "floor", h5::ValueType::String);
    w.none("/mm/3/input/dtype");
    w.attr("/mm/3", "OpName", "Default/mm-op0");
    w.attr("/mm/3", "TaskId", int64_t(7));
    w.close();
  }
  h5::Reader r(path);
  const h5::DatasetInfo t = r.info("/mm/3/input/self");
  EXPECT_EQ(t.attrs.stride, (std::vector<int64_t>{1, 3}));
  EXPECT_EQ(t.attrs.storage_offset, 2);
  EXPECT_EQ(t.attrs.device_type, 1);
  EXPECT_EQ(t.shape, (Shape{3, 2}));
  EXPECT_EQ(r.ints("/mm/3/input/dims"), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(r.info("/mm/3/input/dims").type, h5::ValueType::IntList);
  EXPECT_EQ(r.ints("/mm/3/input/flag"), (std::vector<int64_t>{1}));
  EXPECT_EQ(r.reals("/mm/3/input/alpha"), (std::vector<double>{0.5}));
  EXPECT_EQ(r.text("/mm/3/input/mode"), "floor");
  EXPECT_TRUE(r.info("/mm/3/input/dtype").null);
  EXPECT_EQ(r.info("/mm/3/input/dtype").type, h5::ValueType::None);
  EXPECT_EQ(r.string_attr("/mm/3", "OpName"), "Default/mm-op0");
  EXPECT_EQ(r.int_attr("/mm/3", "TaskId"), 7);
  EXPECT_FALSE(r.string_attr("/mm/3", "Missing"));
  EXPECT_TRUE(r.is_group("/mm/3") && r.is_dataset("/mm/3/input/self") && !r.is_group("/nothing"));
  try {
    r.tensor("/mm/3/input/nothing");
    FAIL();
  } catch (const FormatError& e) {
    EXPECT_NE(std::string(e.what()).find(path + ": /mm/3/input/nothing: no such object"), std::string::npos) << e.what();
  }
}

TEST(H5File, AbandonedWriterLeavesNothing) {
  test::TempDir dir;
  { h5::Writer w(dir / "half.h5"); }
  EXPECT_TRUE(std::filesystem::is_empty(dir.path())) << "no file, no temporary";
}

TEST(H5File, NotAnH5FileIsAnErrorNamingIt) {
  test::TempDir dir;
  test::write_text(dir / "x.h5", "plain text, not HDF5");
  try {
    h5::Reader r(dir / "x.h5");
    FAIL();
  } catch (const FormatError& e) {
    EXPECT_EQ(e.file(), dir / "x.h5");
    EXPECT_NE(std::string(e.what()).find("not an HDF5 file"), std::string::npos);
  }
}

TEST(H5File, IsolatedReaderSurvivesWhatEndsItsChild) {
  EXPECT_EQ(h5::isolated("f.h5", [] { return std::string("result\0bytes", 12); }), std::string("result\0bytes", 12));
  try {  // a library's memory error in the child: an error naming the file here
    h5::isolated("crash.h5", []() -> std::string { std::raise(SIGSEGV); return ""; });
    FAIL();
  } catch (const FormatError& e) {
    EXPECT_EQ(e.file(), "crash.h5");
    EXPECT_NE(std::string(e.what()).find("HDF5's library failed reading it"), std::string::npos) << e.what();
  }
  try {  // an error the child's reader threw comes back with its message
    h5::isolated("bad.h5", []() -> std::string { throw FormatError("bad.h5", "/op/1: no such object"); });
    FAIL();
  } catch (const FormatError& e) {
    EXPECT_STREQ(e.what(), "bad.h5: /op/1: no such object");
  }
  ::setenv("OPDUMP_H5_READ_TIMEOUT", "1", 1);
  try {  // a library caught in a loop: the child is ended
    h5::isolated("loop.h5", []() -> std::string { for (;;) std::this_thread::sleep_for(std::chrono::seconds(1)); });
    FAIL();
  } catch (const FormatError& e) {
    EXPECT_NE(std::string(e.what()).find("made no progress reading it for 1 s"), std::string::npos) << e.what();
  }
  ::unsetenv("OPDUMP_H5_READ_TIMEOUT");
}
