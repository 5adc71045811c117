#include <gtest/gtest.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <atomic>
#include <csignal>
#include <future>
#include <cstring>
#include <thread>

#include "opdump/error.h"
#include "format/npy.h"
#include "format/statistic_csv.h"
#include "writer/async_writer.h"
#include "test_util.h"

using namespace opdump;

namespace {
WriterOptions capped_at(uint64_t max_inflight_bytes, unsigned threads) {
  WriterOptions o;
  o.threads = threads;
  o.max_inflight_bytes = max_inflight_bytes;
  return o;
}
}  // namespace

TEST(AsyncWriter, MemoryInFlightIsCapped) {
  test::TempDir dir;
  AsyncWriter w(capped_at(1000, 2));
  std::atomic<uint64_t> peak{0};
  std::atomic<int> done{0};
  for (int i = 0; i < 50; ++i) {
    w.run(300, [&] {
      peak = std::max<uint64_t>(peak.load(), w.inflight_bytes());
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
      ++done;
    });
    EXPECT_LE(w.inflight_bytes(), 1000u);
  }
  w.drain();
  EXPECT_EQ(done.load(), 50);
  EXPECT_LE(peak.load(), 1000u);
  EXPECT_EQ(w.inflight_bytes(), 0u);
}

namespace {
// Bytes counted as in flight when they were made, as the torch adapter's copies are.
class ChargedBuffer final : public Buffer {
 public:
  ChargedBuffer(size_t size, std::shared_ptr<const void> charge) : bytes_(size, 'x'), charge_(std::move(charge)) {}
  const void* data() const override { return bytes_.data(); }
  size_t size() const override { return bytes_.size(); }
  bool charged() const override { return charge_ != nullptr; }

 private:
  std::string bytes_;
  std::shared_ptr<const void> charge_;
};
}  // namespace

TEST(AsyncWriter, ChargedCopiesCountAgainstTheCapUntilDropped) {
  AsyncWriter w(capped_at(1000, 1));
  std::promise<void> gate;
  std::shared_future<void> opened = gate.get_future().share();
  w.run(600, [opened] { opened.wait(); });
  auto first = w.charge(300);
  EXPECT_EQ(w.inflight_bytes(), 900u);
  std::atomic<bool> charged{false};
  std::shared_ptr<const void> second;
  std::thread t([&] {
    second = w.charge(300);  // 1200 > 1000 while the queued job can still free 600
    charged = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_FALSE(charged.load());
  gate.set_value();
  t.join();
  EXPECT_TRUE(charged.load());
  w.drain();
  EXPECT_EQ(w.inflight_bytes(), 600u);
  first.reset();
  second.reset();
  EXPECT_EQ(w.inflight_bytes(), 0u);
  EXPECT_EQ(w.report().peak_inflight_bytes, 900u);
}

TEST(AsyncWriter, ChargesGoAheadWhenNothingQueuedCanMakeRoom) {
  test::TempDir dir;
  AsyncWriter w(capped_at(100, 1));
  // An op and the op nested in it each hold a copy larger than the cap allows together.
  auto outer = w.charge(80);
  auto inner = w.charge(80);
  EXPECT_EQ(w.inflight_bytes(), 160u);
  // Writing a charged copy counts only its header: counting the payload again would wait for room
  // that only this write can free.
  w.write_file(dir / "outer.npy", "h", std::make_shared<ChargedBuffer>(80, std::move(outer)));
  w.drain();
  EXPECT_EQ(test::read_file(dir / "outer.npy"), "h" + std::string(80, 'x'));
  EXPECT_EQ(w.inflight_bytes(), 80u);  // the written copy was dropped, and its charge with it
  inner.reset();
  EXPECT_EQ(w.inflight_bytes(), 0u);
  EXPECT_EQ(w.report().peak_inflight_bytes, 161u);
}

TEST(AsyncWriter, AChargeMayOutliveTheWriter) {
  std::shared_ptr<const void> charge;
  {
    AsyncWriter w;
    charge = w.charge(10);
  }
  charge.reset();  // nothing left to count it against: a no-op, not a write to the freed writer (the ASan run)
}

TEST(AsyncWriter, WritesFilesAndReports) {
  test::TempDir dir;
  AsyncWriter w;
  for (int i = 0; i < 20; ++i) {
    auto payload = std::make_shared<HeapBuffer>(1000);
    std::memset(payload->mutable_data(), i, 1000);
    w.write_file(dir / ("f" + std::to_string(i)), "h", payload);
  }
  w.drain();
  WriterReport r = w.report();
  EXPECT_EQ(r.files_written, 20u);
  EXPECT_EQ(r.bytes_written, 20u * 1001);
  EXPECT_TRUE(r.ok());
  EXPECT_EQ(test::read_file(dir / "f7"), "h" + std::string(1000, '\x07'));
}

TEST(AsyncWriter, TaskExceptionsAreCountedNotFatal) {
  AsyncWriter w;
  w.run(1, [] { throw Error("boom"); });
  w.run(1, [] {});
  w.drain();
  EXPECT_EQ(w.report().tasks_failed, 1u);
  EXPECT_EQ(w.report().first_error, "boom");
}

// The process goes on after a write failure; tensor writing stops; nothing is left under a
// final name half-written; the loss is counted. File size limits inject the failure (EFBIG)
// without privileges, in a child process.
TEST(AsyncWriter, WriteFailureStopsTensorWritesAndCountsLoss) {
  test::TempDir dir;
  pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    std::signal(SIGXFSZ, SIG_IGN);
    struct rlimit lim = {50000, 50000};
    ::setrlimit(RLIMIT_FSIZE, &lim);
    AsyncWriter w(WriterOptions{1, 1 << 20});
    for (int i = 0; i < 10; ++i) {
      auto payload = std::make_shared<HeapBuffer>(20000);
      w.write_file(dir / ("t" + std::to_string(i)), "", payload);
    }
    w.drain();
    WriterReport r = w.report();
    // Each file is 20000 bytes (< limit), so all fit... then one of 60000 fails.
    auto big = std::make_shared<HeapBuffer>(60000);
    w.write_file(dir / "big", "", big);
    w.write_file(dir / "after", "", std::make_shared<HeapBuffer>(10));
    w.drain();
    r = w.report();
    bool ok = r.files_written == 10 && r.files_lost == 2 && !r.first_error.empty() && w.tensor_writes_stopped();
    std::_Exit(ok ? 0 : 1);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
  auto files = test::list_files(dir.path());
  EXPECT_EQ(files.size(), 10u);  // no "big", no "after", no temporaries
  EXPECT_TRUE(test::no_temporary_files(dir.path()));
  for (const auto& f : files) EXPECT_EQ(test::read_file(dir / f).size(), 20000u);
}

// The real thing: a small tmpfs that fills up (needs mount privileges; skipped without).
TEST(AsyncWriter, SmallTmpfsFillsUp) {
  test::TempDir dir;
  const std::string mnt = dir / "mnt";
  ::mkdir(mnt.c_str(), 0750);
  if (::mount("tmpfs", mnt.c_str(), "tmpfs", 0, "size=1m") != 0)
    GTEST_SKIP() << "cannot mount a tmpfs here: " << std::strerror(errno);
  {
    AsyncWriter w(WriterOptions{2, 4 << 20});
    StatisticCsvWriter csv({StatCategory::Max});
    std::vector<float> v(100000, 1.0f);  // 400 KB per file: the third cannot fit
    int csv_failures = 0;
    for (int i = 0; i < 6; ++i) {
      w.write_file(mnt + "/t" + std::to_string(i) + ".npy", npy_header(DType::Float32, {100000}),
                   std::make_shared<HeapBuffer>(v.data(), v.size() * 4));
      w.drain();
      StatisticRow row;
      row.op.op_name = "op" + std::to_string(i);
      row.shape = {100000};
      row.stats = compute_stats(TensorView{v.data(), DType::Float32, {100000}});
      try {
        csv.append(mnt, row);
      } catch (const IoError&) {
        ++csv_failures;
      }
    }
    csv.close_all();
    WriterReport r = w.report();
    EXPECT_GE(r.files_written, 1u);
    EXPECT_GE(r.files_lost, 1u);
    EXPECT_EQ(r.files_written + r.files_lost, 6u);
    EXPECT_FALSE(r.ok());
    // Every file present is complete, and statistic.csv parses with whole rows.
    for (const auto& f : test::list_files(mnt)) {
      if (f == "statistic.csv") continue;
      EXPECT_EQ(f.find(".opdump-tmp."), std::string::npos);
      Tensor t = read_npy(mnt + "/" + f);
      EXPECT_EQ(t.numel(), 100000u);
    }
    CsvTable t = read_csv(mnt + "/statistic.csv");
    EXPECT_EQ(t.rows.size() + static_cast<size_t>(csv_failures), 6u);
  }
  ::umount2(mnt.c_str(), MNT_DETACH);
}
