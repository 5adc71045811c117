#include <gtest/gtest.h>

#include "opdump/error.h"
#include "select/iteration_set.h"

using opdump::ConfigError;
using opdump::IterationSet;

TEST(IterationSet, AllContainsEverything) {
  auto s = IterationSet::parse("all", "f");
  EXPECT_TRUE(s.is_all());
  EXPECT_TRUE(s.contains(0));
  EXPECT_TRUE(s.contains(UINT64_MAX));
}

TEST(IterationSet, PiecesAndRanges) {
  auto s = IterationSet::parse("0|5-8|100-120", "f");
  for (uint64_t i : {0, 5, 6, 7, 8, 100, 110, 120}) EXPECT_TRUE(s.contains(i)) << i;
  for (uint64_t i : {1, 4, 9, 99, 121, 1000}) EXPECT_FALSE(s.contains(i)) << i;
  EXPECT_EQ(s.to_string(), "0|5-8|100-120");
  EXPECT_EQ(s.next_after(0), 5u);
  EXPECT_EQ(s.next_after(8), 100u);
  EXPECT_EQ(s.next_after(120), UINT64_MAX);
}

TEST(IterationSet, OverlapsMergeAndOrderDoesNotMatter) {
  auto s = IterationSet::parse("10-20|0|15-30|1", "f");
  EXPECT_EQ(s.to_string(), "0-1|10-30");
}

TEST(IterationSet, FullUint64Range) {
  auto s = IterationSet::parse("0-18446744073709551615", "f");
  EXPECT_TRUE(s.contains(UINT64_MAX));
  EXPECT_TRUE(s.contains(12345));
}

TEST(IterationSet, MalformedSpecsAreErrorsNamingTheField) {
  for (const char* bad : {"5-", "-5", "a", "3-1", "", "1||2", "|1", "1|", "1-2-3", " 1", "1.5",
                          "18446744073709551616", "99999999999999999999999", "0-18446744073709551616"}) {
    try {
      IterationSet::parse(bad, "common_dump_settings.iteration");
      ADD_FAILURE() << "accepted \"" << bad << "\"";
    } catch (const ConfigError& e) {
      EXPECT_EQ(e.field(), "common_dump_settings.iteration") << bad;
      EXPECT_NE(std::string(e.what()).find("common_dump_settings.iteration"), std::string::npos);
    }
  }
}
