// statistic.csv as MindSpore writes it.
#include "format/statistic_csv.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include <fmt/compile.h>
#include <fmt/format.h>

#include "opdump/error.h"
#include "util/append_number.h"
#include "util/csv.h"
#include "writer/atomic_file.h"

namespace opdump {

std::string statistic_csv_header(const std::vector<StatCategory>& categories) {
  std::string h = "Op Type,Op Name,Task ID,Stream ID,Timestamp,IO,Slot,Data Size,Data Type,Shape";
  for (StatCategory c : categories) {
    h += ',';
    h += stat_category_label(c);
  }
  return h + "\n";
}

namespace {
// The columns before the statistics, appended in place: the writer formats every row of a dump,
// and a string per cell was a dozen allocations a row.
void append_row_head(std::string& out, const StatisticRowHead& r) {
  append_csv_cell(out, r.op.op_type);
  out += ',';
  append_csv_cell(out, r.op.op_name);
  // Appended piece by piece: fmt's back-inserter into a std::string resized it (and filled the new
  // bytes) for every piece, a third of the writer's time per row.
  for (const uint64_t n : {r.op.task_id, r.op.stream_id, r.op.timestamp}) {
    out += ',';
    append_number(out, n);
  }
  out += ',';
  out += to_string(r.io);
  out += ',';
  append_number(out, r.slot);
  out += ',';
  append_number(out, r.data_size);
  out += ',';
  out += dtype_name(r.dtype);
  out += ",\"(";
  for (size_t i = 0; i < r.ndim; ++i) {
    if (i) out += ',';
    append_number(out, r.dims[i]);
  }
  out += ")\"";
}

StatisticRowHead head_of(const StatisticRow& r) {
  return StatisticRowHead{r.op, r.io, r.slot, r.data_size, r.dtype, r.shape.data(), r.shape.size()};
}
}  // namespace

void append_statistic_csv_row(std::string& out, const StatisticRowHead& head, const TensorStats& stats,
                              const std::vector<StatCategory>& categories) {
  append_row_head(out, head);
  for (StatCategory c : categories) {
    out += ',';
    stats.append_cell(out, c, head.dtype);  // (a number, "null" or hex: nothing to quote)
  }
  out += '\n';
}

void append_statistic_csv_row(std::string& out, const StatisticRow& r, const std::vector<StatCategory>& categories) {
  append_statistic_csv_row(out, head_of(r), r.stats, categories);
}

std::string statistic_csv_row(const StatisticRow& r, const std::vector<StatCategory>& categories) {
  std::string row;
  append_statistic_csv_row(row, r, categories);
  return row;
}

std::string statistic_csv_row(const StatisticRow& r, const std::vector<std::string>& cells) {
  std::string row;
  append_row_head(row, head_of(r));
  for (const std::string& cell : cells) {
    row += ',';
    append_csv_cell(row, cell);
  }
  row += '\n';
  return row;
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


StatisticRow statistic_row(const OpIdentity& op, IoKind io, size_t slot, const TensorView& view) {
  StatisticRow row;
  row.op = op;
  row.io = io;
  row.slot = static_cast<uint32_t>(slot);
  row.data_size = view.nbytes();
  row.dtype = view.dtype;
  row.shape = view.shape;
  return row;
}

void StatisticCsvWriter::append(const std::string& dir, const StatisticRow& row) { append_rows(dir, {row}); }

void StatisticCsvWriter::append_rows(const std::string& dir, const std::vector<StatisticRow>& rows) {
  std::string text;
  text.reserve(rows.size() * 160);
  for (const auto& row : rows) append_statistic_csv_row(text, row, categories_);
  append_text(dir, std::move(text));
}

void StatisticCsvWriter::append_text(const std::string& dir, std::string text) {
  File& f = file_for(dir);
  std::lock_guard<std::mutex> lock(f.mutex);
  if (f.fd >= 0) {
    append_whole(f.fd, f.path, text);
    bytes_written_.fetch_add(text.size(), std::memory_order_relaxed);
    return;
  }
  // A new statistic.csv appears with its header and first rows at once: a writer killed at any
  // moment leaves no empty or header-less file.
  const std::string header = statistic_csv_header(categories_);
  const bool created = create_file_whole(f.path, header, text);
  f.fd = ::open(f.path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0640);
  if (f.fd < 0) throw IoError(f.path, "cannot open", errno);
  files_written_.fetch_add(1, std::memory_order_relaxed);
  if (created) {
    bytes_written_.fetch_add(header.size() + text.size(), std::memory_order_relaxed);
    return;
  }
  // The file was there already (an earlier run into the same folder): append to it, after a
  // header if it is empty.
  struct stat st;
  if (::fstat(f.fd, &st) == 0 && st.st_size == 0) text.insert(0, header);
  append_whole(f.fd, f.path, text);
  bytes_written_.fetch_add(text.size(), std::memory_order_relaxed);
}

void StatisticCsvWriter::close_all() {
  std::lock_guard<std::mutex> lock(mutex_);
  for (auto& [dir, f] : files_) {
    std::lock_guard<std::mutex> flock(f->mutex);
    if (f->fd >= 0) ::close(f->fd);
    f->fd = -1;
  }
}

}  // namespace opdump
