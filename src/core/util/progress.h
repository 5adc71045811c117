// Progress of long work (compare, replay, convert) on stderr: items and bytes done, the rate and the
// time left, redrawn in place at most five times a second. Shown only where someone watches: when
// stderr is a terminal, the command was not asked to be quiet, and the work has run for a couple of
// seconds (OPDUMP_PROGRESS_AFTER_S, default 2) -- a short run prints nothing.
#pragma once
#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <string_view>

namespace opdump {

struct ProgressOptions {
  bool enabled = false;          // Progress::wanted(quiet) for the commands
  double after_seconds = 2.0;    // nothing is drawn before the work has run this long
  double every_seconds = 0.2;    // between redraws
  // Where a line goes ("\r...": redrawn in place; "\n" at the end). Default: stderr.
  std::function<void(std::string_view)> write;
};

class Progress {
 public:
  // `what` names the work ("compare"); `total_bytes` 0 when the bytes are not known.
  Progress(std::string what, uint64_t total_items, uint64_t total_bytes, ProgressOptions options);
  ~Progress() { finish(); }
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  // stderr is a terminal and not `quiet`; with the delay from OPDUMP_PROGRESS_AFTER_S.
  static ProgressOptions for_terminal(bool quiet);

  // Thread-safe; cheap when nothing is to be drawn. advance() adds to what is done, done() sets it.
  void advance(uint64_t items, uint64_t bytes = 0);
  void done(uint64_t items, uint64_t bytes = 0);
  // The last line stays (with the totals), followed by a newline; only when something was drawn.
  void finish();

  // The line as it would be drawn now (tests).
  std::string line() const;

 private:
  using Clock = std::chrono::steady_clock;
  void maybe_draw();
  void draw();

  std::string what_;
  uint64_t total_items_, total_bytes_;
  ProgressOptions options_;
  Clock::time_point start_;
  std::atomic<uint64_t> items_{0}, bytes_{0};
  std::atomic<int64_t> next_draw_ns_;  // since start_
  std::mutex draw_mutex_;
  bool drawn_ = false;    // under draw_mutex_
  bool finished_ = false; // under draw_mutex_
};

}  // namespace opdump
