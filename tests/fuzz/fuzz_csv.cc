// libFuzzer target: the csv reader (statistic.csv, mapping files) and dump file names.
#include <cstddef>
#include <cstdint>
#include <string>

#include "opdump/error.h"
#include "layout/layout.h"
#include "format/statistic_csv.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    opdump::CsvTable t = opdump::parse_csv(text, "fuzz.csv");
    for (const auto& row : t.rows) {
      if (row.size() != t.header.size()) __builtin_trap();  // rows are whole or rejected
      opdump::ParsedDumpName parsed;
      if (!row.empty()) (void)opdump::parse_dump_file_name(row[0], &parsed);
    }
  } catch (const opdump::Error&) {
  }
  opdump::ParsedDumpName parsed;
  (void)opdump::parse_dump_file_name(text, &parsed);
  (void)opdump::sanitize_name(text);
  return 0;
}
