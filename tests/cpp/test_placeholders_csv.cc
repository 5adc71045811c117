#include <gtest/gtest.h>

#include "format/placeholders_csv.h"
#include "opdump/error.h"
#include "test_util.h"

using namespace opdump;

TEST(PlaceholdersCsv, RowsReadBackByNameTaskIoAndSlot) {
  test::TempDir dir;
  const OpIdentity add{"add", "Default/net/add-op0", 7, 0, 123};
  const OpIdentity odd{"mul", "Default/a,b/mul-op1", 9, 0, 124};
  test::write_text(dir / kPlaceholdersFile,
                   placeholders_csv_header() +
                       placeholders_csv_row(add, IoKind::Input, 2, "out= buffer: the op overwrites it without reading it") +
                       placeholders_csv_row(odd, IoKind::Output, 0, "layout Sparse is not dumped, \"quoted\""));
  const Placeholders p = read_placeholders(dir.path());
  ASSERT_EQ(p.size(), 2u);
  EXPECT_EQ(p.at({sanitize_name(add.op_name), 7, IoKind::Input, 2}), "out= buffer: the op overwrites it without reading it");
  EXPECT_EQ(p.at({sanitize_name(odd.op_name), 9, IoKind::Output, 0}), "layout Sparse is not dumped, \"quoted\"");
  EXPECT_EQ(p.count({sanitize_name(add.op_name), 7, IoKind::Output, 2}), 0u);
}

TEST(PlaceholdersCsv, AbsentFileMeansNone) {
  test::TempDir dir;
  EXPECT_TRUE(read_placeholders(dir.path()).empty());
}

TEST(PlaceholdersCsv, MalformedFileNamesFileAndRow) {
  test::TempDir dir;
  test::write_text(dir / kPlaceholdersFile, "Op Type,Op Name\nadd,x\n");
  try {
    read_placeholders(dir.path());
    FAIL() << "accepted a file without the Slot column";
  } catch (const FormatError& e) {
    EXPECT_NE(std::string(e.what()).find(kPlaceholdersFile), std::string::npos) << e.what();
  }
  test::write_text(dir / kPlaceholdersFile, placeholders_csv_header() + "add,x,7,0,1,input,two,why\n");
  try {
    read_placeholders(dir.path());
    FAIL() << "accepted a slot that is not a number";
  } catch (const FormatError& e) {
    EXPECT_NE(std::string(e.what()).find("row 2"), std::string::npos) << e.what();
  }
  test::write_text(dir / kPlaceholdersFile, placeholders_csv_header() + "add,x,7,0,1,sideways,0,why\n");
  EXPECT_THROW(read_placeholders(dir.path()), FormatError);
}
