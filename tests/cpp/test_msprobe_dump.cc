// msprobe's dump.json, construct.json and stack.json, in the shapes msprobe's data dump documents
// give them, and their place in a dump index.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include "export/msprobe_layout.h"
#include "format/msprobe_dump.h"
#include "format/npy.h"
#include "opdump/error.h"
#include "read/dump_index.h"
#include "test_util.h"

namespace opdump {
namespace {

using test::TempDir;

const char* kDump = R"({
 "task": "statistics", "level": "mix", "framework": "pytorch", "dump_data_dir": null,
 "data": {
  "Functional.batch_norm.0.forward": {
   "input_args": [
    {"type": "torch.Tensor", "dtype": "torch.float32", "shape": [2, 3], "Max": 1.5, "Min": -1.0, "Mean": 0.25, "Norm": 2.0},
    {"type": "torch.Tensor", "dtype": "torch.float32", "shape": [3], "Max": 0.1, "Min": 0.0, "Mean": 0.05, "Norm": 0.1},
    {"type": "torch.Tensor", "dtype": "torch.float32", "shape": [3], "Max": 1.1, "Min": 1.0, "Mean": 1.05, "Norm": 1.8},
    {"type": "torch.Tensor", "dtype": "torch.float32", "shape": [3], "Max": 1.0, "Min": 1.0, "Mean": 1.0, "Norm": 1.7},
    null, {"type": "bool", "value": false}, {"type": "float", "value": 0.1}],
   "input_kwargs": {"bias": {"type": "torch.Tensor", "dtype": "torch.float32", "shape": [3], "Max": 0.0, "Min": 0.0, "Mean": 0.0, "Norm": 0.0}},
   "output": [{"type": "torch.Tensor", "dtype": "torch.float32", "shape": [2, 3], "Max": NaN, "Min": -Infinity, "Mean": NaN, "Norm": NaN}]
  },
  "Tensor.__iadd__.0.forward": {
   "input_args": [{"dtype": "torch.bfloat16", "shape": [2], "Max": 1, "Min": 1, "Mean": 1, "Norm": 1.4},
                  [{"dtype": "Float32", "shape": [2], "Max": "Infinity", "Min": 0, "Mean": 1, "Norm": 1}]],
   "input_kwargs": {},
   "output": [[{"dtype": "torch.float8_e4m3fn", "shape": [2]}, {"dtype": "torch.int64", "shape": []}]]
  },
  "Module.layer1.0.bn1.BatchNorm2d.forward.0": {"input_args": [], "input_kwargs": {}, "output": []},
  "Functional.batch_norm.0.backward": {
   "input": [{"dtype": "torch.float32", "shape": [2, 3], "Max": 1, "Min": 0, "Mean": 0.5, "Norm": 1}],
   "output": [{"dtype": "torch.float32", "shape": [2, 3], "Max": 2, "Min": 0, "Mean": 1, "Norm": 2}]
  }
 }
})";

TEST(MsprobeDump, ReadsTensorsInExecutionOrderWithAtenSlots) {
  const MsprobeDump d = parse_msprobe_dump(
      kDump, R"({"Functional.batch_norm.0.forward": "Module.layer1.0.bn1.BatchNorm2d.forward.0", "Tensor.__iadd__.0.forward": null})",
      R"J({"0": [["Functional.batch_norm.0.forward", "Functional.batch_norm.0.backward"],
                ["File /usr/lib/python3/dist-packages/torch/nn/modules/batchnorm.py, line 171, in forward, \n return F.batch_norm(",
                 "File /home/u/train.py, line 42, in forward, \n y = self.bn1(x)"]]})J",
      "d/dump.json");
  EXPECT_TRUE(d.recognized);
  EXPECT_EQ(d.task, "statistics");
  EXPECT_EQ(d.level, "mix");
  ASSERT_EQ(d.tensors.size(), 12u);
  // F.batch_norm(input, running_mean, running_var, weight, bias=...): slots in aten's order
  // (input, weight, bias, running_mean, running_var), the keyword bias included.
  const auto& bn = d.tensors;
  EXPECT_EQ(bn[0].argument, "input.0");
  EXPECT_EQ(bn[1].argument, "input.3");  // weight
  EXPECT_EQ(bn[2].argument, "input.bias");
  EXPECT_EQ(bn[3].argument, "input.1");  // running_mean
  EXPECT_EQ(bn[4].argument, "input.2");  // running_var
  for (uint32_t i = 0; i < 5; ++i) {
    EXPECT_TRUE(bn[i].input);
    EXPECT_EQ(bn[i].slot, i);
    EXPECT_EQ(bn[i].api_type, "batch_norm");
    EXPECT_EQ(bn[i].module, "layer1.0.bn1");
    EXPECT_EQ(bn[i].order, 0u);
  }
  EXPECT_DOUBLE_EQ(*bn[0].max, 1.5);
  EXPECT_DOUBLE_EQ(*bn[0].mean, 0.25);
  EXPECT_FALSE(bn[5].input);
  EXPECT_EQ(bn[5].argument, "output.0");
  EXPECT_TRUE(std::isnan(*bn[5].max));  // Python's bare NaN and -Infinity
  EXPECT_EQ(*bn[5].min, -INFINITY);

  // Tensor.__iadd__ is aten's add_; nested lists flatten in order; dtypes of both frameworks.
  EXPECT_EQ(d.tensors[6].api_type, "add_");
  EXPECT_EQ(d.tensors[6].dtype, DType::BFloat16);
  EXPECT_EQ(d.tensors[7].argument, "input.1.0");
  EXPECT_EQ(d.tensors[7].dtype, DType::Float32);
  EXPECT_EQ(*d.tensors[7].max, INFINITY);
  EXPECT_EQ(d.tensors[8].argument, "output.0.0");
  EXPECT_FALSE(d.tensors[8].dtype.has_value());  // float8: named, not a dtype opdump decodes
  EXPECT_EQ(d.tensors[8].dtype_name, "torch.float8_e4m3fn");
  EXPECT_EQ(d.tensors[9].dtype, DType::Int64);
  EXPECT_EQ(d.tensors[9].shape, Shape{});
  EXPECT_EQ(d.tensors[9].slot, 1u);
  EXPECT_TRUE(d.tensors[6].module.empty());

  // backward: input are the gradients of the outputs
  EXPECT_TRUE(d.tensors[10].backward && d.tensors[10].input);
  EXPECT_TRUE(d.tensors[11].backward && !d.tensors[11].input);
  EXPECT_EQ(d.tensors[11].order, 3u);

  // the user's line, not the framework's
  EXPECT_EQ(d.call_sites.at("Functional.batch_norm.0.forward"), "/home/u/train.py:42");
  EXPECT_EQ(d.call_sites.at("Functional.batch_norm.0.backward"), "/home/u/train.py:42");
}

// The forward API calls replay rebuilds aten calls from: Python arguments as recorded, keywords in
// the file's order, and each call's own tensors; modules and backward APIs are not calls.
TEST(MsprobeDump, ForwardCallsWithTheirArguments) {
  const MsprobeCalls c = parse_msprobe_calls(kDump, "d/dump.json");
  ASSERT_TRUE(c.dump.recognized);
  ASSERT_EQ(c.calls.size(), 2u);
  const MsprobeCall& bn = c.calls[0];
  EXPECT_EQ(bn.api, "Functional.batch_norm.0.forward");
  EXPECT_EQ(bn.prefix, "Functional");
  EXPECT_EQ(bn.api_type, "batch_norm");
  ASSERT_EQ(bn.args.size(), 7u);
  EXPECT_TRUE(bn.args[4].is_null());
  EXPECT_EQ(bn.args[6]["value"], 0.1);
  EXPECT_FALSE(bn.args[0].contains("\x01order"));  // the reader's key order stays inside it
  ASSERT_EQ(bn.kwargs.size(), 1u);
  EXPECT_EQ(bn.kwargs[0].first, "bias");
  ASSERT_EQ(bn.tensors.size(), 6u);  // five inputs and the output
  EXPECT_EQ(bn.tensors[2]->argument, "input.bias");
  EXPECT_EQ(bn.tensors[2]->slot, 2u);
  EXPECT_EQ(c.calls[1].api_type, "add_");
  EXPECT_TRUE(c.calls[1].args[1].is_array());
  EXPECT_EQ(c.calls[1].tensors.size(), 4u);
  EXPECT_FALSE(parse_msprobe_calls(R"({"task": "tensor"})", "x/dump.json").dump.recognized);
  EXPECT_THROW(parse_msprobe_calls("{\"data\": {", "x/dump.json"), FormatError);
}

TEST(MsprobeDump, OlderStackFormatAndApiTypes) {
  const MsprobeDump d = parse_msprobe_dump(
      R"({"data": {"Torch.matmul.0.forward": {"input_args": [], "output": []}}})", "",
      R"J({"Torch.matmul.0.forward": ["File /w/model.py, line 7, in f, \n z = torch.matmul(a, b)"]})J", "d/dump.json");
  EXPECT_EQ(d.call_sites.at("Torch.matmul.0.forward"), "/w/model.py:7");
  EXPECT_EQ(msprobe_api_type("Functional", "cross_entropy"), "cross_entropy_loss");
  EXPECT_EQ(msprobe_api_type("Tensor", "__rmul__"), "mul");
  EXPECT_EQ(msprobe_api_type("Tensor", "__getitem__"), "getitem");
  EXPECT_EQ(msprobe_api_type("NPU", "npu_fusion_attention"), "npu_fusion_attention");
}

TEST(MsprobeDump, TensorFileNames) {
  MsprobeFileName m;
  ASSERT_TRUE(parse_msprobe_file_name("Functional.relu.0.forward.input.0.pt", &m));
  EXPECT_EQ(m.api, "Functional.relu.0.forward");
  EXPECT_EQ(m.api_type, "relu");
  EXPECT_TRUE(m.input && !m.backward);
  EXPECT_EQ(m.slot, 0u);
  ASSERT_TRUE(parse_msprobe_file_name("Module.layer1.0.conv1.Conv2d.backward.0.output.2.npy", &m));
  EXPECT_EQ(m.api, "Module.layer1.0.conv1.Conv2d.backward.0");
  EXPECT_EQ(m.api_type, "module:Conv2d");
  EXPECT_TRUE(!m.input && m.backward);
  EXPECT_EQ(m.slot, 2u);
  ASSERT_TRUE(parse_msprobe_file_name("Functional.batch_norm.3.forward.input.bias.pt", &m));
  EXPECT_EQ(m.slot, 2u);  // aten::batch_norm(input, weight, bias, ...)
  ASSERT_TRUE(parse_msprobe_file_name("Tensor.__add__.1.forward.input.alpha.pt", &m));
  EXPECT_GE(m.slot, 1000u);
  ASSERT_TRUE(parse_msprobe_file_name("Cell.network.conv1.Conv2d.forward.0.output.0.npy", &m));  // MindSpore
  EXPECT_EQ(m.api_type, "module:Conv2d");
  EXPECT_FALSE(parse_msprobe_file_name("conv2d.Default_net.1.0.12.output.0.DefaultFormat.npy", &m));
  EXPECT_FALSE(parse_msprobe_file_name("input.0.pt", &m));
  EXPECT_FALSE(parse_msprobe_file_name("Functional.relu.0.sideways.input.0.pt", &m));
}

TEST(MsprobeDump, MalformedContentNamesFileAndEntry) {
  auto refused = [](const std::string& text, const char* why) {
    try {
      parse_msprobe_dump(text, "", "", "run/step0/rank0/dump.json");
      ADD_FAILURE() << text;
    } catch (const FormatError& e) {
      EXPECT_NE(std::string(e.what()).find("run/step0/rank0/dump.json"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(why), std::string::npos) << e.what();
    }
  };
  refused(R"({"data": {"Functional.relu.0.forward": {"output": [{"dtype": "torch.float32", "shape": [2, -1]}]}}})",
          "Functional.relu.0.forward output.0: shape [2,-1] is not a list of sizes");
  refused(R"({"data": {"Functional.relu.0.forward": {"output": [{"dtype": "torch.float32", "shape": 3}]}}})",
          "shape is not a list");
  refused(R"({"data": {"Functional.relu.0.forward": 5}})", "data.Functional.relu.0.forward is not an object");
  refused(R"({"data": {"A.b.0.forward": {"output": [{"dtype": "torch.float32", "shape": [1], "data_name": "../x.pt"}]}}})",
          "is not a file name");
  refused(R"({"data": {)", "not valid JSON");
  std::string deep = R"({"data": {"A.b.0.forward": {"output": )";
  for (int i = 0; i < 40; ++i) deep += "[";
  for (int i = 0; i < 40; ++i) deep += "]";
  refused(deep + "}}}", "nested too deep");
  // A shape nested a million deep: refused while parsing, never printed whole or recursed into.
  std::string deeper = R"({"data": {"A.b.0.forward": {"output": [{"dtype": "torch.float32", "shape": )";
  deeper += std::string(1000000, '[') + std::string(1000000, ']') + "}]}}}";
  refused(deeper, "nested more than 64 deep");
  // A long shape with a bad size: the message shows its start, not all of it.
  std::string wide = R"({"data": {"A.b.0.forward": {"output": [{"dtype": "torch.float32", "shape": [-1)";
  for (int i = 0; i < 100000; ++i) wide += ",1";
  try {
    parse_msprobe_dump(wide + "]}]}}}", "", "", "dump.json");
    ADD_FAILURE();
  } catch (const FormatError& e) {
    EXPECT_LT(std::string(e.what()).size(), 300u) << std::string(e.what()).substr(0, 300);
  }
  // A config someone named dump.json is valid JSON without "data": not msprobe's, not an error here.
  EXPECT_FALSE(parse_msprobe_dump(R"({"common_dump_settings": {}})", "", "", "dump.json").recognized);
}

TEST(MsprobeDump, IndexedByStepAndRankWithTheirTensorFiles) {
  TempDir dir;
  const std::string folder = dir / "dump/step3/rank1";
  std::filesystem::create_directories(folder + "/dump_tensor_data");
  test::write_text(folder + "/dump.json", R"({"task": "tensor", "data": {
    "Functional.relu.0.forward": {
      "input_args": [{"dtype": "Float32", "shape": [2], "Max": 1, "Min": -1, "Mean": 0, "Norm": 1.4,
                      "data_name": "Functional.relu.0.forward.input.0.npy"}],
      "output": [{"dtype": "Float32", "shape": [2], "Max": 1, "Min": 0, "Mean": 0.5, "Norm": 1,
                  "data_name": "Functional.relu.0.forward.output.0.npy"}]}}})");
  const float in[] = {1, -1}, out[] = {1, 0};
  write_npy(folder + "/dump_tensor_data/Functional.relu.0.forward.input.0.npy", TensorView{in, DType::Float32, {2}});
  // the output's file is missing: its statistics stand in, with a warning

  const DumpIndex index = index_dump(dir / "dump");
  ASSERT_EQ(index.entries.size(), 2u);  // the npy file is dump.json's, not a tensor of its own
  const DumpEntry& a = index.entries[0];
  EXPECT_TRUE(a.msprobe);
  EXPECT_EQ(a.rank(), 1u);
  EXPECT_EQ(a.iteration(), 3);
  EXPECT_EQ(a.source, DumpEntry::Source::Npy);
  EXPECT_EQ(a.op_type, "relu");
  EXPECT_EQ(a.op_name, "Functional.relu.0.forward");
  const Tensor t = load_entry(a);
  EXPECT_EQ(static_cast<const float*>(t.data)[1], -1.0f);
  const DumpEntry& b = index.entries[1];
  EXPECT_EQ(b.source, DumpEntry::Source::Statistics);
  EXPECT_DOUBLE_EQ(*b.stats->avg, 0.5);
  EXPECT_EQ(*b.stats->nan, 0u);
  ASSERT_EQ(index.warnings.size(), 1u);
  EXPECT_NE(index.warnings[0].find("1 tensor files it lists are missing"), std::string::npos) << index.warnings[0];
  EXPECT_EQ(dump_ranks(dir / "dump"), std::vector<uint32_t>{1});
  (void)out;

  // proc{PID} folders (no rank known) are rank 0
  EXPECT_EQ(position_of("/x/dump/step0/proc4242").rank, 0u);
  EXPECT_EQ(position_of("/x/dump/step7/proc4242").iteration, 7);
}

// The names opdump's msprobe export keeps (export/msprobe_layout.h): msprobe's own, not scoped op names.
TEST(MsprobeDump, CallNamesAsMsprobeWritesThem) {
  for (const char* name : {"Functional.conv2d.0.forward", "Tensor.__add__.3.backward", "Aten.add_.12.forward",
                           "Module.layer1.0.conv1.Conv2d.forward.0", "Module.fc.Linear.parameters_grad.0",
                           "Module.fc.Linear.backward.2"})
    EXPECT_TRUE(is_msprobe_call_name(name)) << name;
  for (const char* name : {"Default/net-Net/conv-Conv2d/conv2d-op0", "conv2d", "Functional.conv2d.forward",
                           "Functional.conv2d.0.forward.input.0", "functional.conv2d.0.forward", "Module.forward.0x"})
    EXPECT_FALSE(is_msprobe_call_name(name)) << name;
}

}  // namespace
}  // namespace opdump
