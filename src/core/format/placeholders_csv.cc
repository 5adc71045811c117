#include "format/placeholders_csv.h"

#include <sys/stat.h>

#include "util/csv.h"
#include "opdump/error.h"

namespace opdump {

std::string placeholders_csv_header() { return "Op Type,Op Name,Task ID,Stream ID,Timestamp,IO,Slot,Reason\n"; }

std::string placeholders_csv_row(const OpIdentity& op, IoKind io, uint32_t slot, const std::string& reason) {
  return csv_escape(op.op_type) + ',' + csv_escape(op.op_name) + ',' + std::to_string(op.task_id) + ',' +
         std::to_string(op.stream_id) + ',' + std::to_string(op.timestamp) + ',' + std::string(to_string(io)) + ',' +
         std::to_string(slot) + ',' + csv_escape(reason) + '\n';
}

PlaceholderKey placeholder_key(const std::string& op_name, uint64_t task_id, IoKind io, uint32_t slot) {
  return {sanitize_name(op_name), task_id, io, slot};
}

std::string placeholder_reason(const Placeholders& placeholders, const std::string& op_name, uint64_t task_id, IoKind io,
                               uint32_t slot) {
  if (placeholders.empty()) return {};
  auto it = placeholders.find(placeholder_key(op_name, task_id, io, slot));
  return it == placeholders.end() ? std::string() : it->second;
}

Placeholders read_placeholders(const std::string& folder) {
  const std::string path = folder + "/" + kPlaceholdersFile;
  struct stat st;
  if (::lstat(path.c_str(), &st) != 0) return {};
  const CsvTable t = read_csv(path);
  const int c_name = t.column("Op Name"), c_task = t.column("Task ID"), c_io = t.column("IO"),
            c_slot = t.column("Slot"), c_reason = t.column("Reason");
  if (c_name < 0 || c_task < 0 || c_io < 0 || c_slot < 0 || c_reason < 0)
    throw FormatError(path, "not a placeholders.csv: it lacks the Op Name, Task ID, IO, Slot or Reason column");
  Placeholders out;
  for (size_t i = 0; i < t.rows.size(); ++i) {
    const auto& row = t.rows[i];
    uint64_t task = 0, slot = 0;
    try {
      size_t used = 0;
      task = std::stoull(row[c_task], &used);
      if (used != row[c_task].size()) throw std::invalid_argument("task");
      slot = std::stoull(row[c_slot], &used);
      if (used != row[c_slot].size() || slot > UINT32_MAX) throw std::invalid_argument("slot");
    } catch (const std::exception&) {
      throw FormatError(path, "row " + std::to_string(i + 2) + ": Task ID and Slot must be whole numbers");
    }
    if (row[c_io] != "input" && row[c_io] != "output")
      throw FormatError(path, "row " + std::to_string(i + 2) + ": IO must be input or output, not \"" + row[c_io] + "\"");
    const IoKind io = row[c_io] == "input" ? IoKind::Input : IoKind::Output;
    out[placeholder_key(row[c_name], task, io, static_cast<uint32_t>(slot))] = row[c_reason];
  }
  return out;
}

}  // namespace opdump
