// dumper/h5_dump and read/h5_index: a Dumper configured with opdump.h5_file writes the ops it is given
// in the torch_npu 1.5 dumper's layout, named by their arguments, and the dump index reads them back.
#include "dumper/h5_dump.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>

#include "dumper/dumper.h"
#include "dumper_fixtures.h"
#include "format/h5_file.h"
#include "opdump/error.h"
#include "read/dump_index.h"
#include "test_util.h"

using namespace opdump;
using test::no_env;
using test::op;
using test::tensor_of;

namespace {
DumpConfig h5_config(const test::TempDir& dir) {
  return parse_config(R"({"dump": {"dump_path": ")" + dir.path() + R"(/aux", "dump_list": [], "dump_op_switch": "on",
                          "dump_mode": "all"}, "opdump": {"h5_file": ")" + dir.path() + R"(/run.h5"}})",
                      "t", no_env());
}
}  // namespace

TEST(H5Dump, OpsNamedByTheirArgumentsAndReadBack) {
  test::TempDir dir;
  const DumpConfig c = h5_config(dir);
  ASSERT_EQ(c.file_format, FileFormat::H5);
  {
    Dumper d(c);
    OpRecord add = op("add", "Default/add-op0", 0, 0);
    add.sequence = 1;
    add.arguments = R"({"operator": "aten::add", "overload": "Tensor", "arguments": [
        {"name": "self", "type": "Tensor", "value": {"tensor": 0, "dtype": "Float", "stride": [1], "offset": 0}},
        {"name": "other", "type": "Tensor", "value": {"tensor": 1, "dtype": "Float"}},
        {"name": "alpha", "type": "Scalar", "value": 2}],
        "returns": [{"name": "", "type": "Tensor"}]})";
    d.dump_op(add, {tensor_of({1, 2}), tensor_of({3, 4})}, {tensor_of({7, 10})});
    OpRecord cat = op("cat", "Default/cat-op1", 1, 0);
    cat.sequence = 2;
    cat.arguments = R"({"operator": "aten::cat", "overload": "", "arguments": [
        {"name": "tensors", "type": "Tensor[]", "value": {"tensors": [0, 1], "dtypes": ["Float", "Float"]}},
        {"name": "dim", "type": "int", "value": 0}, {"name": "note", "type": "str?", "value": null}],
        "returns": [{"name": "", "type": "Tensor"}]})";
    d.dump_op(cat, {tensor_of({1}), placeholder_tensor("undefined tensor", false)}, {tensor_of({1})});
    OpRecord plain = op("relu", "Default/relu-op2", 2, 0);  // a runtime that records no arguments
    d.dump_op(plain, {tensor_of({-1})}, {tensor_of({0})});
    EXPECT_TRUE(d.finalize().ok());
  }
  h5::Reader r(dir / "run.h5");
  auto ops = r.members("/");  // in the order writer threads got to them
  std::sort(ops.begin(), ops.end());
  EXPECT_EQ(ops, (std::vector<std::string>{"add_Tensor", "cat", "relu"}));
  EXPECT_EQ(r.members("/add_Tensor/1/input"), (std::vector<std::string>{"self", "other", "alpha"}));
  EXPECT_EQ(r.info("/add_Tensor/1/input/alpha").type, h5::ValueType::Scalar);
  EXPECT_EQ(r.ints("/add_Tensor/1/input/alpha"), (std::vector<int64_t>{2}));
  EXPECT_EQ(r.info("/add_Tensor/1/input/self").attrs.stride, (std::vector<int64_t>{1}));
  EXPECT_EQ(r.string_attr("/add_Tensor/1", "OpName"), "Default/add-op0");
  EXPECT_TRUE(r.is_dataset("/add_Tensor/1/output/result"));
  EXPECT_EQ(r.members("/cat/2/input/tensors"), (std::vector<std::string>{"tensors_0", "tensors_1"}));
  EXPECT_EQ(r.string_attr("/cat/2/input/tensors/tensors_1", "Placeholder"), "undefined tensor");
  EXPECT_EQ(r.info("/cat/2/input/note").type, h5::ValueType::None);
  EXPECT_EQ(r.members("/relu"), (std::vector<std::string>{"1"})) << "numbered apart when it has no sequence";
  EXPECT_TRUE(r.is_dataset("/relu/1/input/input_0"));

  const DumpIndex index = index_dump(dir / "run.h5");
  ASSERT_EQ(index.entries.size(), 8u);  // tensors only (3 + 3 + 2); alpha and dim are arguments
  const DumpEntry& other = index.entries[1];
  EXPECT_EQ(other.op_name, "Default/add-op0");
  EXPECT_EQ(other.io, IoKind::Input);
  EXPECT_EQ(other.slot, 1u);
  EXPECT_EQ(other.object, "/add_Tensor/1/input/other");
  const Tensor t = load_entry(other);
  EXPECT_EQ(static_cast<const float*>(t.data)[1], 4.0f);
  EXPECT_EQ(index.entries[4].placeholder, "undefined tensor");
  EXPECT_EQ(index.entries[4].slot, 1u);
}

TEST(H5Dump, TheFileNeedsTensorDumps) {
  test::TempDir dir;
  try {
    parse_config(R"({"dump": {"dump_path": ")" + dir.path() + R"(", "dump_list": [], "dump_op_switch": "on",
                     "dump_data": "stats"}, "opdump": {"h5_file": "x.h5"}})", "t", no_env());
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("opdump.h5_file"), std::string::npos) << e.what();
  }
}
