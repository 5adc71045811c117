#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <utility>
#include <vector>

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

namespace {
// Pages of `path` in the page cache, and pages in all.
std::pair<size_t, size_t> cached_pages(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  struct stat st;
  if (fd < 0 || ::fstat(fd, &st) != 0) return {0, 0};
  const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  const size_t pages = (static_cast<size_t>(st.st_size) + page - 1) / page;
  void* map = ::mmap(nullptr, static_cast<size_t>(st.st_size), PROT_READ, MAP_SHARED, fd, 0);
  ::close(fd);
  std::vector<unsigned char> in_core(pages);
  size_t cached = 0;
  if (map != MAP_FAILED && ::mincore(map, static_cast<size_t>(st.st_size), in_core.data()) == 0)
    for (unsigned char c : in_core) cached += c & 1;
  if (map != MAP_FAILED) ::munmap(map, static_cast<size_t>(st.st_size));
  return {cached, pages};
}

// Whether the file system under `folder` takes O_DIRECT (tmpfs before Linux 6.6 does not).
bool takes_direct_io(const std::string& folder) {
  const std::string probe = folder + "/probe";
  const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_DIRECT | O_CLOEXEC, 0640);
  if (fd >= 0) ::close(fd);
  ::unlink(probe.c_str());
  return fd >= 0;
}

std::string pattern(size_t n, int seed) {
  std::string s(n, '\0');
  for (size_t i = 0; i < n; ++i) s[i] = static_cast<char>((i * 7 + seed) % 251);
  return s;
}
}  // namespace

// Large files bypass the page cache in aligned blocks through a bounce buffer; the unaligned tail and
// the header's offset must not shift a byte. Sizes: under the threshold, the bounce buffer's size plus
// an unaligned tail, a total that is whole blocks, and a header longer than one block.
TEST_P(AtomicFile, BypassingThePageCacheWritesEveryByteInPlace) {
  const bool direct = takes_direct_io(dir.path());
  struct Case {
    size_t header, payload;
  };
  for (const Case& c : {Case{128, kDirectFrom - 200}, Case{128, (size_t(2) << 20) + 4096 + 1234},
                        Case{128, (size_t(4) << 20) - 128}, Case{5000, (size_t(1) << 20) + 3}, Case{0, 3 << 20}}) {
    const std::string header = pattern(c.header, 1), payload = pattern(c.payload, 2);
    const std::string path = dir / ("f" + std::to_string(c.header) + "_" + std::to_string(c.payload));
    write_file_atomic(path, header.data(), header.size(), payload.data(), payload.size(), PageCache::Bypass);
    const auto [cached, pages] = cached_pages(path);
    if (direct && c.header + c.payload >= kDirectFrom)
      EXPECT_LE(cached, 1u) << path << ": only the partial last page goes through the cache";
    else
      EXPECT_EQ(cached, pages) << path;
    EXPECT_EQ(test::read_file(path), header + payload) << path;
  }
  std::string same = pattern(3 << 20, 3);
  write_file_atomic(dir / "cached", nullptr, 0, same.data(), same.size(), PageCache::Use);
  EXPECT_EQ(cached_pages(dir / "cached").first, cached_pages(dir / "cached").second);
  EXPECT_TRUE(test::no_temporary_files(dir.path()));
}

// A write that fails part way past the page cache (file size limit: EFBIG, in a child) throws and leaves
// nothing, named or not.
TEST_P(AtomicFile, BypassingThePageCacheFailureLeavesNothing) {
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    std::signal(SIGXFSZ, SIG_IGN);
    struct rlimit lim = {size_t(1) << 20, size_t(1) << 20};
    ::setrlimit(RLIMIT_FSIZE, &lim);
    const std::string payload = pattern(3 << 20, 4);
    bool threw = false;
    try {
      write_file_atomic(dir / "big", "h", 1, payload.data(), payload.size(), PageCache::Bypass);
    } catch (const IoError&) {
      threw = true;
    }
    std::_Exit(threw ? 0 : 1);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "the failed write did not throw";
  EXPECT_TRUE(test::list_files(dir.path()).empty());
}
