// CSV as opdump's readers take it (statistic.csv, execution order, mapping.csv, compare results).
#pragma once
#include <string>
#include <string_view>
#include <vector>

namespace opdump {

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
// csv_escape(cell) appended to `out` (rows built in place, without a string per cell).
void append_csv_cell(std::string& out, std::string_view cell);
// A text cell of a report users open in a spreadsheet: one starting with =, +, -, @, tab or
// carriage return is prefixed with ' so that it is not taken for a formula (as OWASP advises).
std::string csv_text_cell(const std::string& cell);

}  // namespace opdump
