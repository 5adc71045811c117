#include <gtest/gtest.h>

#include <filesystem>
#include <thread>

#include "opdump/error.h"
#include "format/statistic_csv.h"
#include "test_util.h"

using namespace opdump;

TEST(StatisticCsv, HeaderHasMindSporesColumns) {
  EXPECT_EQ(statistic_csv_header({StatCategory::Max, StatCategory::Min, StatCategory::L2Norm}),
            "Op Type,Op Name,Task ID,Stream ID,Timestamp,IO,Slot,Data Size,Data Type,Shape,Max Value,Min Value,L2Norm Value\n");
}

TEST(StatisticCsv, RowsQuoteShapeAndNamesWithCommas) {
  StatisticRow r;
  r.op = OpIdentity{"Conv2D", "a,b", 1, 0, 99};
  r.io = IoKind::Input;
  r.slot = 2;
  r.data_size = 8;
  r.dtype = DType::Float32;
  r.shape = {1, 2};
  std::vector<float> v = {1.5f, -2};
  r.stats = compute_stats(TensorView{v.data(), DType::Float32, {1, 2}});
  EXPECT_EQ(statistic_csv_row(r, {StatCategory::Max, StatCategory::Count}),
            "Conv2D,\"a,b\",1,0,99,input,2,8,float32,\"(1,2)\",1.5,2\n");
}

TEST(StatisticCsv, ConcurrentAppendsAreWholeRows) {
  test::TempDir dir;
  StatisticCsvWriter w({StatCategory::Max, StatCategory::Min});
  std::vector<std::thread> threads;
  std::vector<float> v = {1, 2, 3};
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < 250; ++i) {
        StatisticRow r;
        r.op = OpIdentity{"Op", "name" + std::to_string(t), static_cast<uint64_t>(i), 0, 0};
        r.shape = {3};
        r.stats = compute_stats(TensorView{v.data(), DType::Float32, {3}});
        w.append(dir.path(), r);
      }
    });
  for (auto& th : threads) th.join();
  w.close_all();
  CsvTable t = read_csv(dir / "statistic.csv");
  EXPECT_EQ(t.rows.size(), 1000u);
  EXPECT_EQ(t.header.size(), 12u);
  EXPECT_EQ(t.column("Max Value"), 10);
}

namespace {
StatisticRow row_named(const std::string& name) {
  static std::vector<float> v = {1, 2, 3};
  StatisticRow r;
  r.op = OpIdentity{"Op", name, 0, 0, 0};
  r.shape = {3};
  r.stats = compute_stats(TensorView{v.data(), DType::Float32, {3}});
  return r;
}
}  // namespace

// A writer killed between creating statistic.csv and writing to it once left an empty file that
// readers refused: a new file now appears with its header and first rows at once.
TEST(StatisticCsv, NewFileAppearsWithHeaderAndRowsAtOnce) {
  test::TempDir dir;
  StatisticCsvWriter w({StatCategory::Max});
  w.append_rows(dir.path(), {row_named("a"), row_named("b")});
  const std::string text = test::read_file(dir / "statistic.csv");
  EXPECT_EQ(text.rfind(statistic_csv_header({StatCategory::Max}), 0), 0u);
  EXPECT_EQ(read_csv(dir / "statistic.csv").rows.size(), 2u);
  w.append(dir.path(), row_named("c"));
  w.close_all();
  EXPECT_EQ(read_csv(dir / "statistic.csv").rows.size(), 3u);
  for (const auto& e : std::filesystem::directory_iterator(dir.path()))
    EXPECT_EQ(e.path().filename(), "statistic.csv");  // no temporary file left behind
}

TEST(StatisticCsv, ExistingFilesAreAppendedToWithOneHeader) {
  test::TempDir dir;
  test::write_text(dir / "statistic.csv", "");  // left empty by an older writer that was killed
  StatisticCsvWriter first({StatCategory::Max});
  first.append(dir.path(), row_named("a"));
  first.close_all();
  StatisticCsvWriter second({StatCategory::Max});  // a later run into the same folder
  second.append(dir.path(), row_named("b"));
  second.close_all();
  const std::string text = test::read_file(dir / "statistic.csv");
  const std::string header = statistic_csv_header({StatCategory::Max});
  EXPECT_EQ(text.rfind(header, 0), 0u);
  EXPECT_EQ(text.find(header, 1), std::string::npos);
  EXPECT_EQ(read_csv(dir / "statistic.csv").rows.size(), 2u);
}

// Cells are written in place (TensorStats::append_cell): float32 values in float32's shortest form,
// float64 ones in full, counts as integers, sums that read back to the very double computed.
TEST(StatisticCsv, RowsCarryEveryCategoryExactly) {
  const std::vector<StatCategory> cats = {StatCategory::Max,   StatCategory::Min,      StatCategory::Avg,
                                          StatCategory::L2Norm, StatCategory::Count,   StatCategory::NanCount,
                                          StatCategory::ZeroCount};
  StatisticRow r;
  r.op = OpIdentity{"add", "Default/add-op0", 0, 0, 7};
  r.shape = {4};
  r.dtype = DType::Float64;
  std::vector<double> d = {0.1, -0.30000000000000004, 0.0, std::nan("")};
  r.stats = compute_stats(TensorView{d.data(), DType::Float64, {4}});
  const std::string row = statistic_csv_row(r, cats);
  const std::string head = "add,Default/add-op0,0,0,7,output,0,0,float64,\"(4)\",";
  ASSERT_EQ(row.compare(0, head.size(), head), 0) << row;
  std::vector<std::string> cells;
  std::string cell;
  for (char c : row.substr(head.size())) {
    if (c == ',' || c == '\n') cells.push_back(std::exchange(cell, ""));
    else cell += c;
  }
  ASSERT_EQ(cells.size(), cats.size()) << row;
  EXPECT_EQ(cells[0], "0.1");
  EXPECT_EQ(cells[1], "-0.30000000000000004");
  EXPECT_EQ(std::stod(cells[2]), r.stats.avg());
  EXPECT_EQ(std::stod(cells[3]), r.stats.l2norm());
  EXPECT_EQ(cells[4], "4");
  EXPECT_EQ(cells[5], "1");
  EXPECT_EQ(cells[6], "1");

  r.dtype = DType::Float32;
  std::vector<float> f = {0.1f, -3.4028235e38f};
  r.stats = compute_stats(TensorView{f.data(), DType::Float32, {2}});
  r.shape = {1, 2};
  EXPECT_EQ(statistic_csv_row(r, {StatCategory::Max, StatCategory::Min}),
            "add,Default/add-op0,0,0,7,output,0,0,float32,\"(1,2)\",0.1,-3.4028235e+38\n");
}

// The writer formats batched rows from heads that point at what it holds (DeferredRows): the
// same text as a StatisticRow's, and appended as given.
TEST(StatisticCsv, RowsFromHeadsAreTheRowsOfStatisticRows) {
  const std::vector<StatCategory> categories = {StatCategory::Max, StatCategory::Min, StatCategory::Count};
  std::vector<float> v = {4.25f, -1, 0};
  // (more dimensions than a batched row holds inline)
  StatisticRow r{OpIdentity{"conv2d", "Default/net,1/conv2d-op0", 3, 1, 12345}, IoKind::Output, 1, 12, DType::Float32,
                 Shape{1, 3, 1, 1, 1, 1, 1, 1, 1}};
  r.stats = compute_stats(TensorView{v.data(), DType::Float32, r.shape});
  std::string from_head;
  append_statistic_csv_row(from_head, StatisticRowHead{r.op, r.io, r.slot, r.data_size, r.dtype, r.shape.data(), r.shape.size()},
                           r.stats, categories);
  EXPECT_EQ(from_head, statistic_csv_row(r, categories));
  EXPECT_EQ(from_head,
            "conv2d,\"Default/net,1/conv2d-op0\",3,1,12345,output,1,12,float32,\"(1,3,1,1,1,1,1,1,1)\",4.25,-1,3\n");

  test::TempDir dir;
  StatisticCsvWriter w(categories);
  w.append_text(dir.path(), from_head + from_head);
  EXPECT_EQ(test::read_file(dir.path() + "/statistic.csv"), statistic_csv_header(categories) + from_head + from_head);
  EXPECT_EQ(w.bytes_written(), statistic_csv_header(categories).size() + 2 * from_head.size());
}
