// util/path: the path helpers every writer and reader shares, and the temporary names readers skip.
#include "util/path.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "opdump/error.h"
#include "test_util.h"

using namespace opdump;

TEST(Path, FolderAndBaseName) {
  EXPECT_EQ(folder_of("a/b/c.npy"), "a/b");
  EXPECT_EQ(folder_of("c.npy"), ".");
  EXPECT_EQ(folder_of("/c.npy"), "/");
  EXPECT_EQ(base_name("a/b/c.npy"), "c.npy");
  EXPECT_EQ(base_name("c.npy"), "c.npy");
  EXPECT_EQ(base_name("a/b/"), "");
}

TEST(Path, JoinRefusesWhatLeavesTheRoot) {
  EXPECT_EQ(join_path("/d", "rank_0/Net/0"), "/d/rank_0/Net/0");
  EXPECT_EQ(join_path("/d/", "x"), "/d/x");
  EXPECT_EQ(join_path("/d", ""), "/d");
  const std::string bad_paths[] = {"/etc", "../x", "a/../b", "a//b", "./a", std::string("a\0b", 3)};
  for (const std::string& bad : bad_paths) EXPECT_THROW(join_path("/d", bad), Error) << bad;
  try {
    join_path("/d", "a/../b");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("\"..\" in \"a/../b\" below /d"), std::string::npos) << e.what();
  }
}

TEST(Path, MakeDirsCreatesParentsAndNamesAFileInTheWay) {
  test::TempDir dir;
  make_dirs(dir / "a/b/c");
  EXPECT_TRUE(std::filesystem::is_directory(dir / "a/b/c"));
  make_dirs(dir / "a/b/c");  // again: nothing to do
  test::write_text(dir / "file", "x");
  try {
    make_dirs(dir / "file/sub");
    FAIL();
  } catch (const IoError& e) {
    EXPECT_NE(std::string(e.what()).find("file"), std::string::npos) << e.what();
  }
}

TEST(Path, TemporaryNames) {
  EXPECT_TRUE(is_temporary_name(".opdump-tmp.123.4"));
  EXPECT_TRUE(is_temporary_name(std::string(kTemporaryPrefix) + "compare_result.xlsx"));
  EXPECT_FALSE(is_temporary_name("opdump-tmp.1"));
  EXPECT_FALSE(is_temporary_name("x.opdump-tmp.1"));
}
