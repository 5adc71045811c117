// What a comparison writes: compare_summary.json, compare_result.csv, compare_result.xlsx and
// compare_report.html (one file per report: report_{summary,csv,xlsx,html}.cc), and the texts that
// name the first divergence in them and on stdout.
#pragma once
#include <cstdint>
#include <string>

#include "compare/compare.h"

namespace opdump {

// "conv2d Default/net-Net/conv1-Conv2d/conv2d-op0 (forward, rank 0, iteration 2)"
std::string divergent_op_text(const DivergentOp& op);
// The same for the origin, saying what kind of origin it is ("extra op in the target: ...").
std::string divergence_headline(const FirstDivergence& f);

// compare_summary.json: counts, the first divergence and what it reaches, notes.
void write_compare_summary(const CompareResult& result, const std::string& path);
void write_compare_csv(const CompareResult& result, const std::string& path);
// rows_per_sheet: 0 = 1,048,500 (a smaller value is for tests).
void write_compare_xlsx(const CompareResult& result, const std::string& path, uint32_t rows_per_sheet = 0);
void write_compare_html(const CompareResult& result, const std::string& path, const std::string& title);

}  // namespace opdump
