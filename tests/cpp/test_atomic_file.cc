#include <gtest/gtest.h>
#include <sys/stat.h>

#include "writer/atomic_file.h"
#include "opdump/error.h"
#include "test_util.h"

using namespace opdump;

// Every behaviour holds both ways a file is written: unnamed until complete (O_TMPFILE, the default
// where the system has it) and under a named temporary (file systems without it).
class AtomicFile : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override { use_unnamed_files(GetParam()); }
  void TearDown() override { use_unnamed_files(true); }
  test::TempDir dir;
};

INSTANTIATE_TEST_SUITE_P(Ways, AtomicFile, ::testing::Values(true, false),
                         [](const auto& info) { return info.param ? "Unnamed" : "NamedTemporary"; });

TEST_P(AtomicFile, WritesWholeFileWithMode0640) {
  ::umask(022);
  std::string header = "head", payload(1 << 20, 'p');
  write_file_atomic(dir / "f", header.data(), header.size(), payload.data(), payload.size());
  EXPECT_EQ(test::read_file(dir / "f"), header + payload);
  struct stat st;
  ASSERT_EQ(::stat((dir / "f").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0640u);
  EXPECT_TRUE(test::no_temporary_files(dir.path()));
}

TEST_P(AtomicFile, FailureLeavesNothingBehind) {
  EXPECT_THROW(write_file_atomic(dir / "missing/f", "x", 1, nullptr, 0), IoError);
  {
    AtomicFileWriter w(dir / "g");
    w.write("partial");
    // destroyed without commit
  }
  EXPECT_TRUE(test::list_files(dir.path()).empty());
}

TEST_P(AtomicFile, ReplacesAFileAlreadyThere) {
  test::write_text(dir / "f", "old contents, longer than the new");
  write_file_atomic(dir / "f", "new", 3, nullptr, 0);
  EXPECT_EQ(test::read_file(dir / "f"), "new");
  test::write_text(dir / "g", "old");
  AtomicFileWriter w(dir / "g");
  w.write("written in pieces");
  w.commit();
  EXPECT_EQ(test::read_file(dir / "g"), "written in pieces");
  EXPECT_EQ(test::list_files(dir.path()), (std::vector<std::string>{"f", "g"}));
}

TEST_P(AtomicFile, CreateNeverReplaces) {
  EXPECT_TRUE(create_file_whole(dir / "f", "a,b\n", "1,2\n"));
  EXPECT_FALSE(create_file_whole(dir / "f", "x\n", "y\n"));
  EXPECT_EQ(test::read_file(dir / "f"), "a,b\n1,2\n");
  EXPECT_EQ(test::list_files(dir.path()), std::vector<std::string>{"f"});
}

TEST_P(AtomicFile, NothingIsNamedBeforeCommit) {
  AtomicFileWriter w(dir / "f");
  w.write(std::string(3 << 20, 'x'));  // past the writer's buffer: bytes are in the file already
  const auto before = test::list_files(dir.path());
  w.commit();
  if (GetParam()) {
    EXPECT_TRUE(before.empty());  // an unnamed file: a crash here leaves nothing to clean up
  } else {
    ASSERT_EQ(before.size(), 1u);
    EXPECT_NE(before[0].find(".opdump-tmp."), std::string::npos);
  }
  EXPECT_EQ(test::list_files(dir.path()), std::vector<std::string>{"f"});
  EXPECT_EQ(test::read_file(dir / "f").size(), size_t(3) << 20);
}
