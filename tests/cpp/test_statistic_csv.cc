#include <gtest/gtest.h>

#include <thread>

#include "opdump/error.h"
#include "opdump/statistic_csv.h"
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

TEST(Csv, ParserHandlesQuotesAndRejectsRaggedRows) {
  CsvTable t = parse_csv("a,b\n\"x,\"\"y\"\"\",2\n", "t.csv");
  ASSERT_EQ(t.rows.size(), 1u);
  EXPECT_EQ(t.rows[0][0], "x,\"y\"");
  EXPECT_THROW(parse_csv("a,b\n1\n", "t.csv"), FormatError);
  EXPECT_THROW(parse_csv("a,b\n\"1,2\n", "t.csv"), FormatError);
  EXPECT_THROW(parse_csv("", "t.csv"), FormatError);
}

TEST(Csv, TornLastRowOfAKilledWriterIsDropped) {
  CsvTable t = parse_csv("a,b,c\n1,2,3\n4,5", "s.csv");
  EXPECT_TRUE(t.truncated_last_row);
  ASSERT_EQ(t.rows.size(), 1u);
  EXPECT_EQ(t.rows[0][2], "3");
  CsvTable q = parse_csv("a,b\n1,\"x", "s.csv");  // cut inside a quoted cell
  EXPECT_TRUE(q.truncated_last_row);
  EXPECT_TRUE(q.rows.empty());
  // a complete last row without a newline is still a row
  CsvTable whole = parse_csv("a,b\n1,2", "s.csv");
  EXPECT_FALSE(whole.truncated_last_row);
  EXPECT_EQ(whole.rows.size(), 1u);
  // a ragged row inside the file is still an error
  EXPECT_THROW(parse_csv("a,b\n1\n2,3\n", "s.csv"), FormatError);
}
