// A small RFC 4180 reader and the quoting of cells that writers use.
#include "util/csv.h"

#include <algorithm>
#include <cstring>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "util/file_read.h"

#include <cerrno>
#include <fstream>
#include <sstream>

#include "opdump/error.h"

namespace opdump {

namespace {
bool special(char c) { return c == ',' || c == '"' || c == '\n' || c == '\r'; }

// Whether a cell needs quotes. Every row of statistic.csv and of the execution order has an op's
// full name in it (a hundred characters and more): looked at 16 bytes at a time where SSE2 is
// there, it is a tenth of what one character at a time costs. (find_first_of calls memchr per
// character of the cell.)
bool needs_quotes(std::string_view cell) {
  size_t i = 0;
#if defined(__SSE2__)
  const __m128i comma = _mm_set1_epi8(','), quote = _mm_set1_epi8('"'), lf = _mm_set1_epi8('\n'),
                cr = _mm_set1_epi8('\r');
  for (; i + 16 <= cell.size(); i += 16) {
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(cell.data() + i));
    const __m128i hits = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v, comma), _mm_cmpeq_epi8(v, quote)),
                                      _mm_or_si128(_mm_cmpeq_epi8(v, lf), _mm_cmpeq_epi8(v, cr)));
    if (_mm_movemask_epi8(hits)) return true;
  }
#endif
  return std::any_of(cell.begin() + i, cell.end(), special);
}
}  // namespace

void append_csv_cell(std::string& out, std::string_view cell) {
  if (!needs_quotes(cell)) {
    out += cell;
    return;
  }
  out += '"';
  for (char c : cell) {
    if (c == '"') out += '"';
    out += c;
  }
  out += '"';
}

std::string csv_escape(const std::string& cell) {
  std::string out;
  append_csv_cell(out, cell);
  return out;
}

std::string csv_text_cell(const std::string& cell) {
  if (!cell.empty() && std::strchr("=+-@\t\r", cell[0])) return csv_escape("'" + cell);
  return csv_escape(cell);
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
    // A line ended by a comma (MindSpore 2.3 and later write one after the last cell of every
    // row, but not after the header's) has an empty last cell that is no column.
    const bool trailing_comma = row.size() > 1 && row.back().empty() && !quoted;
    if (table.header.empty()) {
      if (trailing_comma) row.pop_back();
      table.header = std::move(row);
    } else {
      if (trailing_comma && row.size() == table.header.size() + 1) row.pop_back();
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
  const bool whole = row.size() + 1 == table.header.size() || (row.size() == table.header.size() && cell.empty());
  if (unterminated && !table.header.empty() && (in_quotes || !whole)) {
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

CsvTable read_csv(const std::string& path) { return parse_csv(read_text_file(path), path); }

}  // namespace opdump
