// Reading dumps back (include/opdump/dump_index.h): layouts, long names, execution order, runs.
#include <gtest/gtest.h>

#include <filesystem>

#include "dump_builder.h"
#include "read/dump_index.h"
#include "opdump/error.h"
#include "layout/layout.h"
#include "format/npy.h"
#include "test_util.h"

using namespace opdump;

TEST(DumpPosition, Layouts) {
  DumpPosition ms = position_of("/data/d/rank_3/net/0/7");
  EXPECT_EQ(ms.rank, 3u);
  EXPECT_EQ(ms.iteration, 7);
  EXPECT_EQ(ms.run_root, "/data/d/rank_3");
  EXPECT_EQ(ms.below, "");
  DumpPosition ascend = position_of("/data/d/20261122101010/1/resnet/0/4");
  EXPECT_EQ(ascend.run, "20261122101010");
  EXPECT_EQ(ascend.rank, 1u);
  EXPECT_EQ(ascend.iteration, 4);
  EXPECT_EQ(ascend.run_root, "/data/d/20261122101010/1");
  DumpPosition single = position_of("/data/d/20261122101010/0");  // single-operator dump: no iteration
  EXPECT_EQ(single.iteration, -1);
  EXPECT_EQ(single.run_root, "/data/d/20261122101010/0");
  // the deepest marker wins: a user's folder named like a rank above an Ascend dump
  DumpPosition nested = position_of("/home/rank_9/dump/20261122101010/2/net/1/0");
  EXPECT_EQ(nested.rank, 2u);
  EXPECT_EQ(nested.iteration, 0);
  // folders below the iteration are kept apart
  DumpPosition watcher = position_of("/d/rank_0/net/0/1/watcher/after_task_5");
  EXPECT_EQ(watcher.iteration, 1);
  EXPECT_EQ(watcher.below, "watcher/after_task_5");
  DumpPosition plain = position_of("/tmp/mine/12");
  EXPECT_EQ(plain.rank, 0u);
  EXPECT_EQ(plain.iteration, 12);
  EXPECT_EQ(plain.run_root, "");
}

TEST(DumpIndex, RanksIterationsAndOriginalNames) {
  test::TempDir dir;
  for (uint32_t rank : {0u, 1u})
    for (int64_t it : {0, 1})
      test::write_dump(dir.path(), rank, it,
                       {{"conv2d", "Default/net-Net/conv1-Conv2d/conv2d-op0", {{1, 2}}, {{3, 4}}, {1}, {2}}});
  DumpIndex index = index_dump(dir.path());
  ASSERT_EQ(index.entries.size(), 8u);
  EXPECT_EQ(index.ranks(), (std::vector<uint32_t>{0, 1}));
  EXPECT_EQ(index.iterations(), (std::vector<int64_t>{0, 1}));
  // sorted by iteration, then rank; the name comes back with its '/' (from the execution order)
  EXPECT_EQ(index.entries[0].iteration(), 0);
  EXPECT_EQ(index.entries[0].rank(), 0u);
  EXPECT_EQ(index.entries[2].rank(), 1u);
  EXPECT_EQ(index.entries[0].op_name, "Default/net-Net/conv1-Conv2d/conv2d-op0");
  EXPECT_EQ(index.entries[0].key_name, "Default_net-Net_conv1-Conv2d_conv2d-op0");
  ASSERT_EQ(index.order.size(), 2u);
  EXPECT_EQ(index.order.at(1).ops.size(), 2u);
  EXPECT_EQ(index.order.at(1).ops[0].outputs, (std::vector<uint64_t>{2}));
}

TEST(DumpIndex, LongNamesResolvedThroughMappingCsv) {
  test::TempDir dir;
  const std::string folder = dir / "rank_0/net/0/0";
  std::filesystem::create_directories(folder);
  const std::string op = "Gradients/" + std::string(240, 'a') + "/conv2d-op0";
  const std::string name = mindspore_file_name(OpIdentity{"conv2d", op, 3, 0, 77}, IoKind::Output, 0);
  NameMapper mapper;
  const std::string shortened = mapper.map(folder, name);
  ASSERT_NE(shortened, name);
  ASSERT_LE(shortened.size(), 255u);
  const float v[2] = {1, 2};
  write_npy(folder + "/" + shortened, TensorView{v, DType::Float32, {2}});
  DumpIndex index = index_dump(dir.path());
  ASSERT_EQ(index.entries.size(), 1u);
  EXPECT_EQ(index.entries[0].key_name, sanitize_name(op));
  EXPECT_EQ(index.entries[0].order, 3u);
  EXPECT_EQ(index.entries[0].io, IoKind::Output);
  EXPECT_TRUE(index.entries[0].backward());
  // without mapping.csv the shortened name still parses, and the same op gets the same name in every run
  std::filesystem::remove(folder + "/mapping.csv");
  DumpIndex bare = index_dump(dir.path());
  EXPECT_EQ(bare.entries[0].order, 3u);
  NameMapper other_run;
  std::filesystem::create_directories(dir / "elsewhere");
  EXPECT_EQ(other_run.map(dir / "elsewhere", name), shortened);
}

TEST(DumpIndex, SeveralRunsOfOneRankAreAnErrorNamingThem) {
  test::TempDir dir;
  const float v[1] = {1};
  for (const char* run : {"20261122101010", "20261122101530"}) {
    std::filesystem::create_directories(dir / (std::string(run) + "/0"));
    write_npy(dir / (std::string(run) + "/0/Add.Default_add-op0.0.0.5.output.0.DefaultFormat.npy"),
              TensorView{v, DType::Float32, {1}});
  }
  try {
    index_dump(dir.path());
    FAIL() << "several runs were mixed";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("2 runs of rank (device) 0"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("20261122101530"), std::string::npos) << e.what();
  }
  // one of them is fine
  EXPECT_EQ(index_dump(dir / "20261122101010").entries.size(), 1u);
}

TEST(DumpIndex, AnIterationDumpedTwiceIntoOneFolderIsAnError) {
  test::TempDir dir;
  const std::vector<test::OpSpec> ops = {{"add", "Default/add-op0", {}, {{1}}, {}, {1}}};
  test::write_dump(dir.path(), 0, 0, ops);
  test::write_dump(dir.path(), 0, 0, ops);  // a second run into the same path appends its order
  try {
    index_dump(dir.path());
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("iteration 0 was dumped more than once"), std::string::npos) << e.what();
  }
}

TEST(DumpIndex, SingleOperatorFilesGetTheirIterationFromTheExecutionOrder) {
  test::TempDir dir;
  const std::string root = dir / "20261122101010/0";
  std::filesystem::create_directories(root + "/execution_order");
  const float v[1] = {1};
  // the same op outside any model in iterations 1 and 2: identical names and task ids, other timestamps
  for (int it : {1, 2})
    write_npy(root + "/" + mindspore_file_name(OpIdentity{"mul", "Default/mul-op0", 4, 0, 500u + it}, IoKind::Output, 0),
              TensorView{v, DType::Float32, {1}});
  test::write_text(root + "/execution_order/ms_execution_order_graph_0.csv",
                   "Iteration,Task ID,Op Type,Op Name,Model,Input Tensors,Output Tensors,Timestamp\n"
                   "1,4,mul,Default/mul-op0,,1,2,501\n2,4,mul,Default/mul-op0,,2,3,502\n");
  DumpIndex index = index_dump(dir.path());
  ASSERT_EQ(index.entries.size(), 2u);
  EXPECT_EQ(index.entries[0].iteration(), 1);
  EXPECT_EQ(index.entries[1].iteration(), 2);
  EXPECT_EQ(index.entries[0].op_name, "Default/mul-op0");
}

TEST(DumpIndex, StatisticsKeepShapeAndOnlyTheColumnsTheyHave) {
  test::TempDir dir;
  std::filesystem::create_directories(dir / "rank_0/net/0/0");
  test::write_text(dir / "rank_0/net/0/0/statistic.csv",
                   "Op Type,Op Name,Task ID,Stream ID,Timestamp,IO,Slot,Data Size,Data Type,Shape,Max Value,"
                   "Some New Column,NaN Count\n"
                   "conv2d,Default/conv2d-op0,0,0,1,output,0,24,float32,\"(2,3)\",5.5,9,0\n"
                   "relu,Default/relu-op0,1,0,2,output,0,24,float32,\"(2,3)\",null,9,6\n");
  DumpIndex index = index_dump(dir.path());
  ASSERT_EQ(index.entries.size(), 2u);
  const DumpEntry& e = index.entries[0];
  EXPECT_TRUE(e.shape_known);
  EXPECT_EQ(e.shape, (Shape{2, 3}));
  ASSERT_TRUE(e.stats);
  EXPECT_EQ(*e.stats->max, 5.5);
  EXPECT_FALSE(e.stats->min);  // not in the file: absent, not 0
  EXPECT_FALSE(e.stats->l2norm);
  EXPECT_EQ(*e.stats->nan, 0u);
  EXPECT_FALSE(e.stats->has_nonfinite_counts());  // no Inf columns
  EXPECT_TRUE(index.entries[1].stats->no_finite);
}

// statistic.csv files in the formats MindSpore's own writers produce.
TEST(DumpIndex, MindSporeStatisticCsvOfEveryVersion) {
  test::TempDir dir;
  std::filesystem::create_directories(dir / "a/rank_0/Net/0/0");
  std::filesystem::create_directories(dir / "b/rank_0/Net/0/0");
  // MindSpore 2.0-2.2 (TensorStatDump): every category, "L2 Value", MD5 last, no trailing comma.
  test::write_text(dir / "a/rank_0/Net/0/0/statistic.csv",
                   "Op Type,Op Name,Task ID,Stream ID,Timestamp,IO,Slot,Data Size,Data Type,Shape,Max Value,Min Value,"
                   "Avg Value,Count,Negative Zero Count,Positive Zero Count,NaN Count,Negative Inf Count,Positive Inf "
                   "Count,Zero Count,L2 Value,MD5\n"
                   "Conv2D,Default/network-WithLossCell/_backbone-LeNet5/conv1-Conv2d/Conv2D-op5,4,0,1676954315543941,"
                   "input,0,3136,float32,\"(1,1,28,28)\",2.8214,-0.4242,0.0001,784,0,0,0,0,0,2,11.0,"
                   "8c7dd922ad47494fc02c388e12c00eac\n");
  // MindSpore 2.3+ (categories chosen in statistic_category): a comma after every value, "Nan Count".
  test::write_text(dir / "b/rank_0/Net/0/0/statistic.csv",
                   "Op Type,Op Name,Task ID,Stream ID,Timestamp,IO,Slot,Data Size,Data Type,Shape,Max Value,Min Value,"
                   "L2Norm Value,Nan Count,Negative Inf Count,Positive Inf Count\n"
                   "Conv2D,Default/network-WithLossCell/_backbone-LeNet5/conv1-Conv2d/Conv2D-op5,4,0,1676954315543941,"
                   "input,0,3136,float32,\"(1,1,28,28)\",2.8214,-0.4242,11.5,0,0,1,\n"
                   "ReLU,Default/network-WithLossCell/_backbone-LeNet5/relu-ReLU/ReLU-op6,5,0,1676954315544001,"
                   "output,0,3136,float32,\"(1,6,28,28)\",null,null,null,4704,0,0,\n");
  DumpIndex a = index_dump(dir / "a");
  ASSERT_EQ(a.entries.size(), 1u);
  EXPECT_EQ(*a.entries[0].stats->l2norm, 11.0);
  EXPECT_EQ(*a.entries[0].stats->count, 784u);
  EXPECT_EQ(a.entries[0].shape, (Shape{1, 1, 28, 28}));
  DumpIndex b = index_dump(dir / "b");
  ASSERT_EQ(b.entries.size(), 2u);
  EXPECT_EQ(*b.entries[0].stats->l2norm, 11.5);
  EXPECT_EQ(*b.entries[0].stats->pos_inf, 1u);
  EXPECT_TRUE(b.entries[0].stats->has_nonfinite_counts());
  EXPECT_EQ(*b.entries[1].stats->nan, 4704u);
  EXPECT_TRUE(b.entries[1].stats->no_finite);
  EXPECT_EQ(b.entries[1].op_type, "ReLU");
}

TEST(DumpIndex, AnUnreadableTensorIsListedWithTheReasonNotAnAbort) {
  test::TempDir dir;
  std::filesystem::create_directories(dir / "d");
  test::write_text(dir / "d/Add.Default_add-op0.0.0.5.output.0.DefaultFormat.npy", "\x93NUMPY garbage");
  const float v[1] = {1};
  write_npy(dir / "d/Add.Default_add-op1.1.0.6.output.0.DefaultFormat.npy", TensorView{v, DType::Float32, {1}});
  DumpIndex index = index_dump(dir / "d");
  ASSERT_EQ(index.entries.size(), 2u);
  EXPECT_FALSE(index.entries[0].unreadable.empty());
  EXPECT_TRUE(index.entries[1].unreadable.empty());
  EXPECT_FALSE(index.warnings.empty());
  EXPECT_THROW(load_entry(index.entries[0]), Error);
}
