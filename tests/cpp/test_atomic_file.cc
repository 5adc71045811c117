#include <gtest/gtest.h>
#include <sys/stat.h>

#include "writer/atomic_file.h"
#include "opdump/error.h"
#include "test_util.h"

using namespace opdump;

TEST(AtomicFile, WritesWholeFileWithMode0640) {
  test::TempDir dir;
  ::umask(022);
  std::string header = "head", payload(1 << 20, 'p');
  write_file_atomic(dir / "f", header.data(), header.size(), payload.data(), payload.size());
  EXPECT_EQ(test::read_file(dir / "f"), header + payload);
  struct stat st;
  ASSERT_EQ(::stat((dir / "f").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0640u);
  EXPECT_TRUE(test::no_temporary_files(dir.path()));
}

TEST(AtomicFile, FailureLeavesNothingBehind) {
  test::TempDir dir;
  EXPECT_THROW(write_file_atomic(dir / "missing/f", "x", 1, nullptr, 0), IoError);
  {
    AtomicFileWriter w(dir / "g");
    w.write("partial");
    // destroyed without commit
  }
  EXPECT_TRUE(test::list_files(dir.path()).empty());
}
