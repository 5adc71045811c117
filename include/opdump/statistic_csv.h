// statistic.csv exactly as MindSpore writes it (seed 001): fixed leading columns, then one
// column per chosen statistic category. Rows are appended with one write() each under a lock,
// so a crash or a full disk never leaves a torn row behind.
#pragma once
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "opdump/layout.h"
#include "opdump/stats.h"

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

// "Op Type,Op Name,...,Shape,<labels>"
std::string statistic_csv_header(const std::vector<StatCategory>& categories);
std::string statistic_csv_row(const StatisticRow& row, const std::vector<StatCategory>& categories);

// Appends rows to {dir}/statistic.csv files; one instance serves every folder of a dump.
class StatisticCsvWriter {
 public:
  explicit StatisticCsvWriter(std::vector<StatCategory> categories);
  ~StatisticCsvWriter();
  // Throws IoError when the row cannot be written whole (the file is left as it was).
  void append(const std::string& dir, const StatisticRow& row);
  // Several whole rows in one write() (all or none of them land).
  void append_rows(const std::string& dir, const std::vector<StatisticRow>& rows);
  void close_all();

 private:
  struct File;
  File& file_for(const std::string& dir);
  std::vector<StatCategory> categories_;
  std::mutex mutex_;
  std::unordered_map<std::string, std::unique_ptr<File>> files_;
};

// A parsed CSV file: header cells and rows of cells (RFC 4180 quoting).
struct CsvTable {
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;
  bool truncated_last_row = false;  // an unterminated, incomplete last row was dropped
  int column(const std::string& name) const;  // -1 when absent
};
// Throws FormatError (naming the file and line) on unbalanced quotes or ragged rows. An
// incomplete last row without a newline (a writer killed mid-row) is dropped, not an error.
CsvTable read_csv(const std::string& path);
CsvTable parse_csv(const std::string& text, const std::string& name);
std::string csv_escape(const std::string& cell);

}  // namespace opdump
