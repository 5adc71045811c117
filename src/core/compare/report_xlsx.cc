// The comparison as an xlsx workbook (libxlsxwriter): errors red, warnings yellow, a new sheet
// every 1,048,500 rows (Excel's limit is 1,048,576).
#include <xlsxwriter.h>

#include <cmath>

#include "compare/reports.h"
#include "opdump/error.h"
#include "util/path.h"

namespace opdump {
namespace {

constexpr uint32_t kRowsPerSheet = 1048500;

const char* kColumns[] = {"Index", "Rank", "Iteration", "OpSequence", "OpType", "Target", "TargetDataType", "Reference",
                          "ReferenceDataType", "TensorIndex", "Shape", "Match", "CosineSimilarity", "MaxAbsoluteError",
                          "MaxRelativeError", "MeanRelativeError", "AccumulatedRelativeError",
                          "RelativeEuclideanDistance", "EuclideanDistance", "MeanAbsoluteError", "RootMeanSquareError",
                          "KullbackLeiblerDivergence", "OneThousandthErrRatio", "FiveThousandthsErrRatio", "SQNR",
                          "Result", "CompareFailReason"};

void number(lxw_worksheet* ws, uint32_t row, uint16_t col, double v, lxw_format* f) {
  if (std::isfinite(v)) worksheet_write_number(ws, row, col, v, f);
  else worksheet_write_string(ws, row, col, std::isnan(v) ? "NaN" : (v > 0 ? "inf" : "-inf"), f);
}

}  // namespace

void write_compare_xlsx(const CompareResult& result, const std::string& path, uint32_t rows_per_sheet) {
  if (rows_per_sheet == 0) rows_per_sheet = kRowsPerSheet;
  const std::string temp = folder_of(path) + "/" + std::string(kTemporaryPrefix) + base_name(path);
  lxw_workbook* wb = workbook_new(temp.c_str());
  if (!wb) throw IoError(path, "cannot create the workbook", errno);
  lxw_format* head = workbook_add_format(wb);
  format_set_bold(head);
  lxw_format* red = workbook_add_format(wb);
  format_set_bg_color(red, 0xF8CBAD);
  lxw_format* yellow = workbook_add_format(wb);
  format_set_bg_color(yellow, 0xFFE699);
  lxw_worksheet* ws = nullptr;
  uint32_t row = 0;
  int sheet = 0;
  for (const CompareRow& r : result.rows) {
    if (!ws || row > rows_per_sheet) {
      ws = workbook_add_worksheet(wb, ("compare" + (sheet ? "_" + std::to_string(sheet + 1) : std::string())).c_str());
      ++sheet;
      for (uint16_t c = 0; c < sizeof(kColumns) / sizeof(*kColumns); ++c) worksheet_write_string(ws, 0, c, kColumns[c], head);
      row = 1;
    }
    lxw_format* f = r.verdict == Verdict::Error ? red : r.verdict == Verdict::Warning ? yellow : nullptr;
    const DumpEntry* e = r.target ? r.target : r.reference;
    const std::string io = std::string(to_string(e->io)) + "." + std::to_string(e->slot);
    uint16_t c = 0;
    worksheet_write_number(ws, row, c++, static_cast<double>(r.index), f);
    worksheet_write_number(ws, row, c++, static_cast<double>(e->rank()), f);
    if (e->iteration() >= 0) worksheet_write_number(ws, row, c++, static_cast<double>(e->iteration()), f);
    else worksheet_write_string(ws, row, c++, "", f);
    worksheet_write_number(ws, row, c++, static_cast<double>(e->order), f);
    worksheet_write_string(ws, row, c++, e->op_type.c_str(), f);
    worksheet_write_string(ws, row, c++, r.target ? r.target->op_name.c_str() : "", f);
    worksheet_write_string(ws, row, c++, r.target ? std::string(dtype_name(r.target->dtype)).c_str() : "", f);
    worksheet_write_string(ws, row, c++, r.reference ? r.reference->op_name.c_str() : "", f);
    worksheet_write_string(ws, row, c++, r.reference ? std::string(dtype_name(r.reference->dtype)).c_str() : "", f);
    worksheet_write_string(ws, row, c++, io.c_str(), f);
    worksheet_write_string(ws, row, c++, shape_to_string(e->shape).c_str(), f);
    worksheet_write_string(ws, row, c++,
                           !r.target ? "reference only" : !r.reference ? "target only" : r.aligned ? "aligned" : "name", f);
    if (r.compared && !r.statistics_only) {
      const auto& m = r.metrics;
      for (double v : {m.cosine, m.max_abs_err, m.max_rel_err, m.mean_rel_err, m.accumulated_rel_err, m.rel_euclidean,
                       m.euclidean, m.mean_abs_err, m.rmse, m.kl_divergence, m.one_thousandth_ratio,
                       m.five_thousandths_ratio, m.sqnr_db})
        number(ws, row, c++, v, f);
    } else {
      c += 13;
    }
    worksheet_write_string(ws, row, c++, std::string(to_string(r.verdict)).c_str(), f);
    worksheet_write_string(ws, row, c++, r.reason.c_str(), f);
    ++row;
  }
  if (!ws) ws = workbook_add_worksheet(wb, "compare");
  const lxw_error err = workbook_close(wb);
  if (err != LXW_NO_ERROR) {
    std::remove(temp.c_str());
    throw IoError(path, std::string("cannot write the workbook: ") + lxw_strerror(err), 0);
  }
  if (std::rename(temp.c_str(), path.c_str()) != 0) {
    const int e = errno;
    std::remove(temp.c_str());
    throw IoError(path, "cannot rename the workbook into place", e);
  }
}

}  // namespace opdump
