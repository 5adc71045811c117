#include <gtest/gtest.h>
#include <sys/stat.h>

#include <set>
#include <thread>

#include "opdump/error.h"
#include "layout/layout.h"
#include "format/statistic_csv.h"
#include "test_util.h"

using namespace opdump;

TEST(Naming, SanitizeReplacesTheSeedsCharacters) {
  EXPECT_EQ(sanitize_name("Default/network-WithLossCell/_backbone-AlexNet/conv3-Conv2d/Conv2D-op12"),
            "Default_network-WithLossCell__backbone-AlexNet_conv3-Conv2d_Conv2D-op12");
  EXPECT_EQ(sanitize_name("a.b\\c d"), "a_b_c_d");
}

TEST(Naming, SanitizeNeverEscapes) {
  EXPECT_EQ(sanitize_name(".."), "__");
  EXPECT_EQ(sanitize_name("../../etc/passwd"), "______etc_passwd");
  EXPECT_EQ(sanitize_name(std::string("a\0b\n\x7f", 5)), "a_b__");
  EXPECT_EQ(sanitize_name(""), "_");
  EXPECT_EQ(sanitize_name("\xff\xfe ok \xe4\xb8\xad"), "___ok_\xe4\xb8\xad");  // invalid UTF-8 bytes replaced, valid kept
}

TEST(Naming, FileNamesOfTheSeeds) {
  OpIdentity op{"Conv2D", "Default/net/conv3-Conv2d/Conv2D-op12", 2, 7, 161243956333802};
  EXPECT_EQ(ascend_file_name(op), "Conv2D.Default_net_conv3-Conv2d_Conv2D-op12.2.7.161243956333802");
  EXPECT_EQ(mindspore_file_name(op, IoKind::Output, 0),
            "Conv2D.Default_net_conv3-Conv2d_Conv2D-op12.2.7.161243956333802.output.0.DefaultFormat.npy");
  ParsedDumpName p;
  ASSERT_TRUE(parse_dump_file_name(mindspore_file_name(op, IoKind::Input, 3), &p));
  EXPECT_EQ(p.op.op_type, "Conv2D");
  EXPECT_EQ(p.op.task_id, 2u);
  EXPECT_EQ(p.op.timestamp, 161243956333802u);
  EXPECT_TRUE(p.has_io);
  EXPECT_EQ(p.io, IoKind::Input);
  EXPECT_EQ(p.slot, 3u);
  ASSERT_TRUE(parse_dump_file_name(ascend_file_name(op), &p));
  EXPECT_FALSE(p.has_io);
  EXPECT_FALSE(parse_dump_file_name("statistic.csv", &p));
}

TEST(Naming, EveryCannNameForm) {
  ParsedDumpName p;
  // FFTS+ (sgt): four fields after the timestamp name the slice
  ASSERT_TRUE(parse_dump_file_name("MatMul.Default_MatMul-op3.12.2.1673383728093446.4.1.0.0", &p));
  EXPECT_EQ(p.op.op_type, "MatMul");
  EXPECT_EQ(p.op.op_name, "Default_MatMul-op3");
  EXPECT_EQ(p.op.task_id, 12u);
  EXPECT_EQ(p.op.stream_id, 2u);
  EXPECT_EQ(p.op.timestamp, 1673383728093446u);
  EXPECT_EQ(p.slice, "4.1.0.0");
  EXPECT_FALSE(p.has_io);
  // converted to npy: the slice kept before the io fields
  ASSERT_TRUE(parse_dump_file_name("MatMul.Default_MatMul-op3.12.2.1673383728093446.4.1.0.0.output.0.ND.npy", &p));
  EXPECT_EQ(p.slice, "4.1.0.0");
  EXPECT_TRUE(p.has_io);
  EXPECT_EQ(p.format, "ND");
  EXPECT_EQ(p.op.timestamp, 1673383728093446u);
  // no stream id (older toolkits)
  ASSERT_TRUE(parse_dump_file_name("Add.Default_Add-op1.7.1673383728093446", &p));
  EXPECT_EQ(p.op.task_id, 7u);
  EXPECT_EQ(p.op.stream_id, 0u);
  EXPECT_EQ(p.op.timestamp, 1673383728093446u);
  EXPECT_TRUE(p.slice.empty());
  ASSERT_TRUE(parse_dump_file_name("Add.Default_Add-op1.7.1673383728093446.input.1.NCHW.npy", &p));
  EXPECT_EQ(p.slot, 1u);
  EXPECT_EQ(p.op.task_id, 7u);
  // the dtype field of newer MindSpore npy names
  ASSERT_TRUE(parse_dump_file_name("Add.Default_Add-op1.7.0.99.output.2.DefaultFormat.float16.npy", &p));
  EXPECT_EQ(p.slot, 2u);
  EXPECT_EQ(p.op.timestamp, 99u);
  // not names: a non-numeric slice field, too many fields, too few
  EXPECT_FALSE(parse_dump_file_name("MatMul.op.12.2.1673383728093446.4.x.0.0", &p));
  EXPECT_FALSE(parse_dump_file_name("MatMul.op.12.2.1673383728093446.4.1.0.0.9", &p));
  EXPECT_FALSE(parse_dump_file_name("MatMul.op.12", &p));
}

TEST(Naming, TimeFolderFormat) {
  std::string t = dump_time_string(1600000000);
  EXPECT_EQ(t.size(), 14u);
  for (char c : t) EXPECT_TRUE(std::isdigit(static_cast<unsigned char>(c)));
}

TEST(Naming, JoinPathRefusesEscapes) {
  EXPECT_EQ(join_path("/r", "a/b"), "/r/a/b");
  EXPECT_THROW(join_path("/r", "../x"), Error);
  EXPECT_THROW(join_path("/r", "a/../../x"), Error);
  EXPECT_THROW(join_path("/r", "/etc"), Error);
  EXPECT_THROW(join_path("/r", "a//b"), Error);
}

TEST(Naming, FoldersAre0750) {
  test::TempDir dir;
  ::umask(022);
  make_dirs(dir / "a/b/c");
  struct stat st;
  ASSERT_EQ(::stat((dir / "a/b/c").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0750u);
}

TEST(NameMapper, ShortNamesUnchangedLongNamesMapped) {
  test::TempDir dir;
  NameMapper m;
  EXPECT_EQ(m.map(dir.path(), "short.npy"), "short.npy");
  const std::string long_name = std::string(300, 'x') + ".output.0.DefaultFormat.npy";
  std::string g = m.map(dir.path(), long_name);
  EXPECT_LE(g.size(), 255u);
  EXPECT_EQ(g.substr(g.size() - 4), ".npy");
  EXPECT_EQ(m.map(dir.path(), long_name), g);  // stable
  CsvTable t = parse_csv("generated,original\n" + test::read_file(dir / "mapping.csv"), "mapping.csv");
  ASSERT_EQ(t.rows.size(), 1u);
  EXPECT_EQ(t.rows[0][0], g);
  EXPECT_EQ(t.rows[0][1], long_name);
}

TEST(NameMapper, UniqueUnderManyThreads) {
  test::TempDir dir;
  NameMapper m;
  constexpr int kThreads = 8, kPerThread = 200;
  std::vector<std::vector<std::string>> got(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < kPerThread; ++i) {
        // Every thread maps the same names too, so that races on one name are exercised.
        got[t].push_back(m.map(dir.path(), std::string(260, 'n') + std::to_string(i % 150) + "," + std::to_string(t % 2)));
      }
    });
  for (auto& th : threads) th.join();
  std::set<std::string> generated;
  for (auto& v : got) generated.insert(v.begin(), v.end());
  EXPECT_EQ(generated.size(), 300u);  // 150 names x 2 variants, each exactly one generated name
  CsvTable t = parse_csv("generated,original\n" + test::read_file(dir / "mapping.csv"), "mapping.csv");
  EXPECT_EQ(t.rows.size(), 300u);
  std::set<std::string> in_csv;
  for (auto& r : t.rows) in_csv.insert(r[0]);
  EXPECT_EQ(in_csv, generated);
}

TEST(Naming, LongFolderNamesFitAndStayDistinct) {
  EXPECT_EQ(folder_name("resnet/v1.5"), "resnet_v1_5");
  std::string e300;
  for (int i = 0; i < 300; ++i) e300 += "\xc3\xa9";  // 600 bytes of 'é'
  const std::string a = folder_name("../" + e300), b = folder_name("../" + e300 + "x");
  EXPECT_LE(a.size(), 200u);
  EXPECT_NE(a, b);
  EXPECT_EQ(a, folder_name("../" + e300));  // stable across runs
  EXPECT_EQ(a.find('/'), std::string::npos);
  EXPECT_EQ(a.rfind("___\xc3\xa9", 0), 0u);  // the readable start is kept, cut on a character boundary
}
