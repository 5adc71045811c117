#include <gtest/gtest.h>
#include <sys/stat.h>

#include "format/ascend_bin.h"
#include "dumper/dumper.h"
#include "opdump/error.h"
#include "format/npy.h"
#include "dumper_fixtures.h"
#include "test_util.h"

using namespace opdump;
using test::ms_config;
using test::no_env;
using test::op;
using test::tensor_of;

TEST(Dumper, MindSporeSyncLayoutWithTensorsAndStatistics) {
  test::TempDir dir;
  DumpConfig c = parse_config(ms_config(dir.path(), R"(, "saved_data": "full")"), "t", no_env());
  {
    Dumper d(c, DumperOptions{3, 0, 0});
    for (uint64_t it = 0; it < 3; ++it) {
      if (!d.iteration_selected(it)) continue;
      d.dump_op(op("Conv2D", "Default/net/Conv2D-op1", 0, it), {tensor_of({1, 2}), tensor_of({3})}, {tensor_of({-1, 5})});
    }
    WriterReport r = d.finalize();
    EXPECT_TRUE(r.ok());
    EXPECT_EQ(d.counters().ops, 2u);
    EXPECT_EQ(d.counters().stat_rows, 6u);
  }
  const std::string iter0 = dir / "rank_3/Net/0/0";
  auto files = test::list_files(iter0);
  ASSERT_EQ(files.size(), 4u);  // 3 npy + statistic.csv
  EXPECT_EQ(files[0], "Conv2D.Default_net_Conv2D-op1.0.0.1000.input.0.DefaultFormat.npy");
  Tensor out = read_npy(iter0 + "/Conv2D.Default_net_Conv2D-op1.0.0.1000.output.0.DefaultFormat.npy");
  EXPECT_EQ(static_cast<const float*>(out.data)[1], 5.0f);
  CsvTable csv = read_csv(iter0 + "/statistic.csv");
  EXPECT_EQ(csv.rows.size(), 3u);
  EXPECT_TRUE(std::filesystem::exists(dir / "rank_3/Net/0/2"));
  EXPECT_FALSE(std::filesystem::exists(dir / "rank_3/Net/0/1"));
  EXPECT_EQ(test::read_file(dir / "rank_3/.dump_metadata/data_dump.json"), c.original_text);
}

// The bytes the statistics rows describe, and of them the bytes read to make them: all of a tensor whose
// statistics the dump computes, the adapter's count for statistics it hands over (none when it knew them).
TEST(Dumper, CountsTheBytesReadToSummarize) {
  test::TempDir dir;
  DumpConfig c = parse_config(ms_config(dir.path(), R"(, "saved_data": "statistic")"), "t", no_env());
  Dumper d(c, DumperOptions{0, 0, 0});
  auto handed = [](std::vector<float> values, bool known) {
    DumpTensor t = tensor_of(values);
    t.deferred_stats = std::make_shared<KnownStats>(compute_stats(t.view));
    t.bytes_read = known ? 0 : t.view.nbytes();
    return t;
  };
  d.dump_op(op("Mul", "Default/mul-op0", 0, 0), {tensor_of({1, 2, 3}), handed({4, 5}, true)}, {handed({6, 7, 8, 9}, false)});
  EXPECT_TRUE(d.finalize().ok());
  EXPECT_EQ(d.counters().stat_bytes, 36u);
  EXPECT_EQ(d.counters().stat_bytes_read, 28u);  // (the 8 bytes of remembered statistics unread)
  EXPECT_EQ(d.counters().stat_rows, 3u);
}

// Each op's folder is remembered per thread (op_folder): a dumper made where the last one was (the same
// stack slot here) must not be given that one's folders, and ops of alternating iterations each get theirs.
TEST(Dumper, EachDumperAndIterationGetsItsOwnFolder) {
  test::TempDir first, second;
  for (const test::TempDir* dir : {&first, &second}) {
    Dumper d(parse_config(ms_config(dir->path(), R"(, "saved_data": "statistic")"), "t", no_env()), DumperOptions{0, 0, 0});
    for (uint64_t it : {0, 1, 0, 1})
      d.dump_op(op("Conv2D", "Default/net/Conv2D-op1", 0, it), {tensor_of({1, 2})}, {tensor_of({-1, 5})});
    EXPECT_TRUE(d.finalize().ok());
  }
  for (const test::TempDir* dir : {&first, &second})
    for (const char* it : {"0", "1"}) {
      SCOPED_TRACE(dir->path() + " iteration " + it);
      EXPECT_EQ(read_csv(*dir / ("rank_0/Net/0/" + std::string(it) + "/statistic.csv")).rows.size(), 4u);
    }
}

TEST(Dumper, AclModelDumpSelectsModelsAndLayers) {
  test::TempDir dir;
  DumpConfig c = parse_config(R"({"dump": {"dump_path": ")" + dir.path() +
                                  R"J(", "dump_list": [{"model_name": "resnet"}, {"model_name": "bert", "layer": ["name-regex(.*attn.*)"]}],
                                  "dump_mode": "output"}})J",
                              "t", no_env());
  Dumper d(c, DumperOptions{0, 1, 1600000000});
  EXPECT_TRUE(d.op_selected("resnet", "conv1/aten::conv2d.0", "conv2d"));
  EXPECT_TRUE(d.op_selected("bert", "layer0/attn/aten::matmul.3", "matmul"));
  EXPECT_FALSE(d.op_selected("bert", "layer0/ffn/aten::matmul.4", "matmul"));
  EXPECT_FALSE(d.op_selected("gpt", "x", "matmul"));
  EXPECT_FALSE(d.op_selected("", "x", "add"));  // dump_op_switch off
  d.dump_op(op("MatMul", "layer0/attn/aten::matmul.3", 5, 7, "bert"), {tensor_of({1})}, {tensor_of({2})});
  d.finalize();
  const std::string folder = d.run_root() + "/bert/0/7";
  EXPECT_EQ(d.run_root(), dir.path() + "/" + dump_time_string(1600000000) + "/1");
  auto files = test::list_files(folder);
  ASSERT_EQ(files.size(), 1u);  // outputs only
  EXPECT_NE(files[0].find(".output.0."), std::string::npos);
}

TEST(Dumper, BinFilesForMindSporeAsync) {
  test::TempDir dir;
  DumpConfig c = parse_config(ms_config(dir.path(), "", "false"), "t", no_env());
  ASSERT_EQ(c.file_format, FileFormat::Bin);
  Dumper d(c, DumperOptions{0, 0, 1600000000});
  d.dump_op(op("Add", "Default/Add-op3", 9, 0, "graph"), {tensor_of({1, 2}), tensor_of({3, 4})}, {tensor_of({4, 6})});
  d.finalize();
  const std::string path = d.run_root() + "/graph/0/0/Add.Default_Add-op3.9.0.1009";
  BinDump b = read_ascend_bin(path);
  ASSERT_EQ(b.inputs.size(), 2u);
  ASSERT_EQ(b.outputs.size(), 1u);
  EXPECT_EQ(static_cast<const float*>(b.tensor(b.outputs[0]).data)[1], 6.0f);
  EXPECT_EQ(b.op_name, "Default/Add-op3");
}

TEST(Dumper, KernelsSelection) {
  test::TempDir dir;
  std::string text = ms_config(dir.path(), "");
  text.replace(text.find("\"dump_mode\": 0"), 14, "\"dump_mode\": 1");
  text.replace(text.find("\"kernels\": []"), 13, "\"kernels\": [\"conv\", \"name-regex(.*never.*)\"]");
  Dumper d(parse_config(text, "t", no_env()));
  EXPECT_TRUE(d.op_selected("", "Default/net/Conv2D-op1", ""));
  EXPECT_FALSE(d.op_selected("", "Default/net/ReLU-op2", ""));
}

TEST(Dumper, LongNamesAreMappedAndStayInside) {
  test::TempDir dir;
  Dumper d(parse_config(ms_config(dir.path(), ""), "t", no_env()));
  const std::string evil = "../../" + std::string(400, 'a') + "/\n\x01";
  d.dump_op(op("Op", evil, 0, 0), {}, {tensor_of({1})});
  d.finalize();
  auto files = test::list_files(dir.path());
  bool mapping = false;
  for (const auto& f : files) {
    EXPECT_EQ(f.find(".."), std::string::npos) << f;
    mapping |= f.find("mapping.csv") != std::string::npos;
  }
  EXPECT_TRUE(mapping);
}

TEST(Dumper, UnwritablePathIsAnErrorAtStart) {
  test::TempDir dir;
  const std::string ro = dir / "ro";
  ::mkdir(ro.c_str(), 0500);
  DumpConfig c = parse_config(R"({"dump": {"dump_path": ")" + ro + R"(/sub"}})", "t", no_env());
  if (::geteuid() == 0) {
    // root ignores permissions: use a path below a regular file instead
    test::write_text(dir / "file", "x");
    c.dump_path = dir / "file/sub";
  }
  EXPECT_THROW(Dumper d(c), Error);
}

TEST(Dumper, FinalizeWarnsAboutWhatWasProbablyAMistake) {
  test::TempDir dir;
  // a dump_list model that never ran, and one that did with a layer that matched nothing
  Dumper acl(parse_config(R"({"dump": {"dump_path": ")" + dir.path() +
                              R"(", "dump_list": [{"model_name": "resnt"}, {"model_name": "net", "layer": ["conv9"]}]}})",
                          "t", no_env()));
  EXPECT_TRUE(acl.op_selected("net", "Default/net-Net/conv1-Conv2d/conv2d-op0", "conv2d") == false);
  const auto warnings = acl.finalize(0).warnings;
  ASSERT_EQ(warnings.size(), 2u);
  EXPECT_NE(warnings[0].find("model_name \"resnt\" matched no model that ran"), std::string::npos) << warnings[0];
  EXPECT_NE(warnings[1].find("layer \"conv9\" of model \"net\" matched no operator"), std::string::npos) << warnings[1];

  // iterations after 0 asked for, but the run never left iteration 0
  std::string text = ms_config(dir / "ms", "");
  text.replace(text.find("\"0|2\""), 5, "\"2\"");
  Dumper ms(parse_config(text, "t", no_env()));
  const auto steps = ms.finalize(0).warnings;
  ASSERT_EQ(steps.size(), 1u);
  EXPECT_NE(steps[0].find("no iteration ended"), std::string::npos) << steps[0];
  Dumper stepped(parse_config(text, "t", no_env()));
  const auto nothing = stepped.finalize(5).warnings;  // iterations did end: only "nothing was dumped"
  ASSERT_EQ(nothing.size(), 1u);
  EXPECT_NE(nothing[0].find("nothing was dumped"), std::string::npos);

  Dumper used(parse_config(ms_config(dir / "used", ""), "t", no_env()));
  used.dump_op(op("Add", "Default/add-op0", 0, 0), {}, {tensor_of({1})});
  EXPECT_TRUE(used.finalize(3).warnings.empty());
}

// A kernel-level op whose children are the kernels gets no row, but the tensors it saw first keep their
// names: tensor_names.csv lists them beside the names that came with rows, each once.
TEST(Dumper, TensorsNamedWithoutARowAreListed) {
  test::TempDir dir;
  {
    Dumper d(parse_config(ms_config(dir.path(), R"(, "saved_data": "statistic")"), "t", no_env()), DumperOptions{0, 0, 0});
    d.name_tensors({{2, "parameter net.0.weight"}, {3, "parameter net.0.bias"}});
    d.record_execution(op("mkldnn_convolution", "Default/conv2d-op0/mkldnn_convolution-op0", 0, 0), {1, 2, 3}, {4}, "",
                       {{5, "buffer net.1.running_mean"}});
    d.name_tensors({});
    EXPECT_TRUE(d.finalize().ok());
  }
  CsvTable names = read_csv(dir / "rank_0/execution_order/tensor_names.csv");
  ASSERT_EQ(names.rows.size(), 3u);
  EXPECT_EQ(names.rows[0], (std::vector<std::string>{"2", "parameter net.0.weight"}));
  EXPECT_EQ(names.rows[1], (std::vector<std::string>{"3", "parameter net.0.bias"}));
  EXPECT_EQ(names.rows[2], (std::vector<std::string>{"5", "buffer net.1.running_mean"}));
  EXPECT_EQ(read_csv(dir / "rank_0/execution_order/ms_execution_order_graph_0.csv").rows.size(), 1u);
}

// Execution-order batches of consecutive iterations are queued as separate writer tasks; with several
// writer threads they used to run out of order (iterations listed 2 then 0 by a PyTorch test, and two
// threads could each find the csv missing and write its header twice).
TEST(Dumper, ExecutionOrderFilesListIterationsInTheOrderTheyRan) {
  test::TempDir dir;
  DumpConfig c = parse_config(ms_config(dir.path(), R"(, "saved_data": "statistic")"), "t", no_env());
  c.writer_threads = 4;
  const uint64_t iterations = 400;
  {
    Dumper d(c, DumperOptions{0, 0, 0});
    for (uint64_t it = 0; it < iterations; ++it)
      for (int k = 0; k < 2; ++k)
        d.record_execution(op("Add", "Default/Add-op" + std::to_string(k), k, it), {1, 2}, {3}, "", {});
    EXPECT_TRUE(d.finalize().ok());
  }
  std::string expected;
  for (uint64_t it = 0; it < iterations; ++it) expected += std::to_string(it) + "\n";
  EXPECT_EQ(test::read_file(dir / "rank_0/execution_order/ms_global_execution_order_graph_0.csv"), expected);
  CsvTable rows = read_csv(dir / "rank_0/execution_order/ms_execution_order_graph_0.csv");
  ASSERT_EQ(rows.rows.size(), 2 * iterations);  // one header: a second would be a row here
  for (size_t i = 0; i < rows.rows.size(); ++i) EXPECT_EQ(rows.rows[i][0], std::to_string(i / 2)) << "row " << i;
}
