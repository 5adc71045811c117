// Progress on stderr for long work (util/progress.h): what a line says, and when nothing is drawn.
#include "util/progress.h"

#include <gtest/gtest.h>

#include <thread>
#include <vector>

using namespace opdump;

namespace {

ProgressOptions into(std::string& out, double after = 0, bool enabled = true) {
  ProgressOptions o;
  o.enabled = enabled;
  o.after_seconds = after;
  o.every_seconds = 0;
  o.write = [&out](std::string_view s) { out.append(s); };
  return o;
}

}  // namespace

TEST(Progress, LineSaysItemsBytesRateAndTimeLeft) {
  std::string out;
  Progress p("compare: tensor pairs", 10, 10'000'000, into(out));
  p.advance(3, 3'000'000);
  EXPECT_NE(out.find("\rcompare: tensor pairs: 3/10 (30%), 3.0 MB of 10.0 MB, "), std::string::npos) << out;
  EXPECT_NE(out.find("B/s, "), std::string::npos) << out;
  EXPECT_NE(out.find(" left"), std::string::npos) << out;
  p.done(10, 10'000'000);
  p.finish();
  EXPECT_NE(out.find("10/10 (100%)"), std::string::npos) << out;
  EXPECT_EQ(out.back(), '\n');
  const size_t len = out.size();
  p.finish();  // once
  EXPECT_EQ(out.size(), len);
}

TEST(Progress, ShortWorkAndQuietOrNoTerminalDrawNothing) {
  std::string shortwork, disabled;
  {
    Progress p("convert: files", 5, 0, into(shortwork, /*after=*/3600));
    p.advance(5);
  }  // finished by its destructor
  {
    Progress p("convert: files", 5, 0, into(disabled, 0, /*enabled=*/false));
    p.advance(5);
  }
  EXPECT_EQ(shortwork, "");
  EXPECT_EQ(disabled, "");
  EXPECT_FALSE(Progress::for_terminal(/*quiet=*/true).enabled);
}

TEST(Progress, ItemsFromManyThreadsAddUp) {
  std::string out;
  Progress p("replay: ops", 4000, 0, into(out));
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&p] {
      for (int i = 0; i < 1000; ++i) p.advance(1);
    });
  for (auto& t : threads) t.join();
  p.finish();
  EXPECT_NE(out.rfind("replay: ops: 4000/4000 (100%)"), std::string::npos) << out.substr(out.size() > 200 ? out.size() - 200 : 0);
  EXPECT_EQ(p.line().rfind("replay: ops: 4000/4000 (100%), ", 0), 0u) << p.line();
}
