#include "util/progress.h"

#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>

#include <fmt/format.h>

namespace opdump {
namespace {

std::string bytes_text(double b) {
  if (b >= 1e9) return fmt::format("{:.1f} GB", b / 1e9);
  if (b >= 1e6) return fmt::format("{:.1f} MB", b / 1e6);
  return fmt::format("{:.0f} kB", b / 1e3);
}

std::string duration_text(double s) {
  if (s >= 3600) return fmt::format("{}h{:02d}m", static_cast<int>(s / 3600), static_cast<int>(std::fmod(s, 3600) / 60));
  if (s >= 60) return fmt::format("{}m{:02d}s", static_cast<int>(s / 60), static_cast<int>(std::fmod(s, 60)));
  return fmt::format("{:.0f} s", std::ceil(s));
}

int64_t nanoseconds(double s) { return static_cast<int64_t>(s * 1e9); }

}  // namespace

Progress::Progress(std::string what, uint64_t total_items, uint64_t total_bytes, ProgressOptions options)
    : what_(std::move(what)),
      total_items_(total_items),
      total_bytes_(total_bytes),
      options_(std::move(options)),
      start_(Clock::now()),
      next_draw_ns_(nanoseconds(options_.after_seconds)) {
  if (!options_.write) options_.write = [](std::string_view s) {
    std::fwrite(s.data(), 1, s.size(), stderr);
    std::fflush(stderr);
  };
}

ProgressOptions Progress::for_terminal(bool quiet) {
  ProgressOptions o;
  o.enabled = !quiet && ::isatty(STDERR_FILENO);
  if (const char* after = std::getenv("OPDUMP_PROGRESS_AFTER_S")) {
    char* end = nullptr;
    const double v = std::strtod(after, &end);
    if (end != after && *end == '\0' && v >= 0 && v < 1e6) o.after_seconds = v;
  }
  return o;
}

void Progress::advance(uint64_t items, uint64_t bytes) {
  items_.fetch_add(items, std::memory_order_relaxed);
  if (bytes) bytes_.fetch_add(bytes, std::memory_order_relaxed);
  maybe_draw();
}

void Progress::done(uint64_t items, uint64_t bytes) {
  items_.store(items, std::memory_order_relaxed);
  bytes_.store(bytes, std::memory_order_relaxed);
  maybe_draw();
}

void Progress::maybe_draw() {
  if (!options_.enabled) return;
  const int64_t since = std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - start_).count();
  if (since < next_draw_ns_.load(std::memory_order_relaxed)) return;
  std::unique_lock<std::mutex> lock(draw_mutex_, std::try_to_lock);  // another thread draws: skip
  if (!lock.owns_lock() || finished_) return;
  next_draw_ns_.store(since + nanoseconds(options_.every_seconds), std::memory_order_relaxed);
  draw();
}

std::string Progress::line() const {
  const uint64_t items = items_.load(std::memory_order_relaxed);
  const uint64_t bytes = bytes_.load(std::memory_order_relaxed);
  const double secs = std::chrono::duration<double>(Clock::now() - start_).count();
  std::string text = fmt::format("{}: {}/{}", what_, items, total_items_);
  if (total_items_) text += fmt::format(" ({:.0f}%)", 100.0 * static_cast<double>(items) / static_cast<double>(total_items_));
  if (bytes) {
    text += ", " + bytes_text(static_cast<double>(bytes));
    if (total_bytes_) text += " of " + bytes_text(static_cast<double>(total_bytes_));
    if (secs > 0) text += ", " + bytes_text(static_cast<double>(bytes) / secs) + "/s";
  } else if (secs > 0) {
    text += fmt::format(", {:.0f}/s", static_cast<double>(items) / secs);
  }
  // Time left from whichever total is known, bytes first (items differ in size).
  double fraction = 0;
  if (total_bytes_ && bytes) fraction = static_cast<double>(bytes) / static_cast<double>(total_bytes_);
  else if (total_items_ && items) fraction = static_cast<double>(items) / static_cast<double>(total_items_);
  if (fraction > 0 && fraction < 1) text += ", " + duration_text(secs * (1 - fraction) / fraction) + " left";
  return text;
}

void Progress::draw() {
  std::string text = "\r" + line() + "\033[K";  // erase what a longer earlier line left
  options_.write(text);
  drawn_ = true;
}

void Progress::finish() {
  std::lock_guard<std::mutex> lock(draw_mutex_);
  if (finished_) return;
  finished_ = true;
  if (!drawn_) return;
  draw();
  options_.write("\n");
}

}  // namespace opdump
