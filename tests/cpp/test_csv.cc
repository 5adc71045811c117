#include <gtest/gtest.h>

#include "util/csv.h"
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

TEST(Csv, RowsEndedByACommaAsMindSporeWritesThem) {
  // MindSpore 2.3+: a comma after every value, the last one included; its header has none.
  CsvTable t = parse_csv("Op Type,Op Name,Max Value\nAdd,Default/Add-op1,3.5,\nMul,Default/Mul-op2,-1,\n", "s.csv");
  ASSERT_EQ(t.rows.size(), 2u);
  EXPECT_EQ(t.rows[1][2], "-1");
  // a header ended by a comma too, and a last row without its newline
  CsvTable h = parse_csv("a,b,\n1,2,\n3,4,", "s.csv");
  EXPECT_EQ(h.header.size(), 2u);
  EXPECT_FALSE(h.truncated_last_row);
  ASSERT_EQ(h.rows.size(), 2u);
  EXPECT_EQ(h.rows[1][1], "4");
  // an empty last value that the header names is a value, not a trailing comma
  CsvTable e = parse_csv("a,b\n1,\n", "s.csv");
  ASSERT_EQ(e.rows.size(), 1u);
  EXPECT_EQ(e.rows[0][1], "");
  // two cells too many is still a ragged row
  EXPECT_THROW(parse_csv("a,b\n1,2,3,\n", "s.csv"), FormatError);
}

TEST(Csv, CellsAreQuotedWhereverTheirSpecialCharacterIs) {
  // (long cells are looked at 16 bytes at a time, the rest one by one: every position of both)
  for (const char special : {',', '"', '\n', '\r'})
    for (size_t at = 0; at < 40; ++at) {
      std::string cell(40, 'a');
      cell[at] = special;
      std::string out;
      opdump::append_csv_cell(out, cell);
      ASSERT_EQ(out.front(), '"') << "special character " << int(special) << " at " << at;
      ASSERT_EQ(out.back(), '"');
      EXPECT_EQ(out.size(), cell.size() + 2 + (special == '"' ? 1 : 0));
    }
  std::string plain;
  opdump::append_csv_cell(plain, std::string(100, 'b') + "/conv2d-op0");
  EXPECT_EQ(plain, std::string(100, 'b') + "/conv2d-op0");
}
