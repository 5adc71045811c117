// statistic.csv writer and a small RFC 4180 reader.
#include "opdump/statistic_csv.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <fstream>
#include <sstream>

#include "opdump/error.h"
#include "opdump/writer.h"

namespace opdump {

std::string csv_escape(const std::string& cell) {
  if (cell.find_first_of(",\"\n\r") == std::string::npos) return cell;
  std::string out = "\"";
  for (char c : cell) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

std::string statistic_csv_header(const std::vector<StatCategory>& categories) {
  std::string h = "Op Type,Op Name,Task ID,Stream ID,Timestamp,IO,Slot,Data Size,Data Type,Shape";
  for (StatCategory c : categories) {
    h += ',';
    h += stat_category_label(c);
  }
  return h + "\n";
}

std::string statistic_csv_row(const StatisticRow& r, const std::vector<StatCategory>& categories) {
  std::string row = csv_escape(r.op.op_type) + ',' + csv_escape(r.op.op_name) + ',' + std::to_string(r.op.task_id) +
                    ',' + std::to_string(r.op.stream_id) + ',' + std::to_string(r.op.timestamp) + ',' +
                    std::string(to_string(r.io)) + ',' + std::to_string(r.slot) + ',' + std::to_string(r.data_size) +
                    ',' + std::string(dtype_name(r.dtype)) + ",\"" + shape_to_string(r.shape) + '"';
  for (StatCategory c : categories) {
    row += ',';
    row += csv_escape(r.stats.cell(c, r.dtype));
  }
  return row + "\n";
}

struct StatisticCsvWriter::File {
  std::mutex mutex;
  int fd = -1;
  std::string path;
  ~File() {
    if (fd >= 0) ::close(fd);
  }
};

StatisticCsvWriter::StatisticCsvWriter(std::vector<StatCategory> categories) : categories_(std::move(categories)) {}
StatisticCsvWriter::~StatisticCsvWriter() { close_all(); }

StatisticCsvWriter::File& StatisticCsvWriter::file_for(const std::string& dir) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto& slot = files_[dir];
  if (!slot) {
    slot = std::make_unique<File>();
    slot->path = dir + "/statistic.csv";
  }
  return *slot;
}


void StatisticCsvWriter::append(const std::string& dir, const StatisticRow& row) { append_rows(dir, {row}); }

void StatisticCsvWriter::append_rows(const std::string& dir, const std::vector<StatisticRow>& rows) {
  File& f = file_for(dir);
  std::string text;
  for (const auto& row : rows) text += statistic_csv_row(row, categories_);
  std::lock_guard<std::mutex> lock(f.mutex);
  if (f.fd >= 0) {
    append_whole(f.fd, f.path, text);
    return;
  }
  // A new statistic.csv appears with its header and first rows at once: a writer killed at any
  // moment leaves no empty or header-less file.
  const bool created = create_file_whole(f.path, statistic_csv_header(categories_), text);
  f.fd = ::open(f.path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0640);
  if (f.fd < 0) throw IoError(f.path, "cannot open", errno);
  if (created) return;
  // The file was there already (an earlier run into the same folder): append to it, after a
  // header if it is empty.
  struct stat st;
  if (::fstat(f.fd, &st) == 0 && st.st_size == 0) text.insert(0, statistic_csv_header(categories_));
  append_whole(f.fd, f.path, text);
}

void StatisticCsvWriter::close_all() {
  std::lock_guard<std::mutex> lock(mutex_);
  for (auto& [dir, f] : files_) {
    std::lock_guard<std::mutex> flock(f->mutex);
    if (f->fd >= 0) ::close(f->fd);
    f->fd = -1;
  }
}

int CsvTable::column(const std::string& name) const {
  for (size_t i = 0; i < header.size(); ++i)
    if (header[i] == name) return static_cast<int>(i);
  return -1;
}

CsvTable parse_csv(const std::string& text, const std::string& name) {
  CsvTable table;
  std::vector<std::string> row;
  std::string cell;
  bool quoted = false, in_quotes = false, row_has_data = false;
  size_t line = 1, row_line = 1;
  auto end_row = [&] {
    row.push_back(std::move(cell));
    cell.clear();
    if (table.header.empty()) {
      table.header = std::move(row);
    } else {
      if (row.size() != table.header.size())
        throw FormatError(name, "line " + std::to_string(row_line) + " has " + std::to_string(row.size()) +
                                    " cells, the header has " + std::to_string(table.header.size()));
      table.rows.push_back(std::move(row));
    }
    row.clear();
    row_has_data = false;
    quoted = false;
  };
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (in_quotes) {
      if (c == '"') {
        if (i + 1 < text.size() && text[i + 1] == '"') {
          cell += '"';
          ++i;
        } else {
          in_quotes = false;
        }
      } else {
        if (c == '\n') ++line;
        cell += c;
      }
      continue;
    }
    if (c == '"' && cell.empty() && !quoted) {
      in_quotes = quoted = true;
      row_has_data = true;
    } else if (c == ',') {
      row.push_back(std::move(cell));
      cell.clear();
      quoted = false;
      row_has_data = true;
    } else if (c == '\n' || c == '\r') {
      if (c == '\r' && i + 1 < text.size() && text[i + 1] == '\n') ++i;
      if (row_has_data || !cell.empty()) end_row();
      ++line;
      row_line = line;
    } else {
      if (quoted) throw FormatError(name, "line " + std::to_string(line) + ": text after a closing quote");
      cell += c;
      row_has_data = true;
    }
  }
  const bool unterminated = !text.empty() && text.back() != '\n' && text.back() != '\r';
  if (unterminated && !table.header.empty() &&
      (in_quotes || row.size() + 1 != table.header.size())) {
    // A last row cut short and not ended by a newline: the writer was killed mid-write (every
    // row opdump writes ends with one). The whole rows before it stand.
    table.truncated_last_row = true;
    return table;
  }
  if (in_quotes) throw FormatError(name, "line " + std::to_string(row_line) + ": unterminated quoted cell");
  if (row_has_data || !cell.empty()) end_row();
  if (table.header.empty()) throw FormatError(name, "empty CSV file");
  return table;
}

CsvTable read_csv(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw IoError(path, "cannot open", errno);
  std::ostringstream ss;
  ss << in.rdbuf();
  return parse_csv(ss.str(), path);
}

}  // namespace opdump
