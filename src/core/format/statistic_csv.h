// statistic.csv exactly as MindSpore writes it (the MindSpore Dump guide): fixed leading columns, then one
// column per chosen statistic category. Rows are appended with one write() each under a lock,
// so a crash or a full disk never leaves a torn row behind.
#pragma once
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "layout/layout.h"
#include "util/csv.h"
#include "stats/stats.h"

namespace opdump {

struct StatisticRow {
  OpIdentity op;
  IoKind io = IoKind::Output;
  uint32_t slot = 0;
  uint64_t data_size = 0;  // bytes
  DType dtype = DType::Float32;
  Shape shape;
  TensorStats stats;
};

// The row of one tensor of an op, its statistics still to be filled in.
StatisticRow statistic_row(const OpIdentity& op, IoKind io, size_t slot, const TensorView& view);

// "Op Type,Op Name,...,Shape,<labels>"
std::string statistic_csv_header(const std::vector<StatCategory>& categories);
std::string statistic_csv_row(const StatisticRow& row, const std::vector<StatCategory>& categories);
// The same with the category cells given (statistics recorded by another tool; "" when unknown).
std::string statistic_csv_row(const StatisticRow& row, const std::vector<std::string>& cells);
// statistic_csv_row(row, categories) appended to `out` (a batch of rows in one string).
void append_statistic_csv_row(std::string& out, const StatisticRow& row, const std::vector<StatCategory>& categories);

// A row's leading columns by reference, for a writer that formats rows from what it already holds
// (DeferredRows): a StatisticRow per row copied the op's names and the shape, allocations that
// cost a training step as much as on its own thread when every core trains.
struct StatisticRowHead {
  const OpIdentity& op;
  IoKind io;
  uint32_t slot;
  uint64_t data_size;  // bytes
  DType dtype;
  const int64_t* dims;
  size_t ndim;
};
void append_statistic_csv_row(std::string& out, const StatisticRowHead& head, const TensorStats& stats,
                              const std::vector<StatCategory>& categories);

// Appends rows to {dir}/statistic.csv files; one instance serves every folder of a dump.
class StatisticCsvWriter {
 public:
  explicit StatisticCsvWriter(std::vector<StatCategory> categories);
  ~StatisticCsvWriter();
  // Throws IoError when the row cannot be written whole (the file is left as it was).
  void append(const std::string& dir, const StatisticRow& row);
  // Several whole rows in one write() (all or none of them land).
  void append_rows(const std::string& dir, const std::vector<StatisticRow>& rows);
  // Whole rows already formatted with append_statistic_csv_row(..., categories()), in one write().
  void append_text(const std::string& dir, std::string text);
  const std::vector<StatCategory>& categories() const { return categories_; }
  void close_all();
  // statistic.csv files written and the bytes appended to them (for the dump's report).
  uint64_t files_written() const { return files_written_.load(std::memory_order_relaxed); }
  uint64_t bytes_written() const { return bytes_written_.load(std::memory_order_relaxed); }

 private:
  struct File;
  File& file_for(const std::string& dir);
  std::vector<StatCategory> categories_;
  std::mutex mutex_;
  std::unordered_map<std::string, std::unique_ptr<File>> files_;
  std::atomic<uint64_t> files_written_{0}, bytes_written_{0};
};

}  // namespace opdump
