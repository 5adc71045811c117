#include <gtest/gtest.h>

#include "format/csv.h"
#include "opdump/error.h"

using namespace opdump;

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
