// What opdump replay writes: OUT/replay_result.csv (a row per op output), OUT/replay_summary.json,
// OUT/replay_report.html, and the summary on stdout naming the first op that fails on its own inputs.
#pragma once
#include <string>

#include "engine.h"

namespace opdump::replay {

void write_replay_csv(const ReplayResult& result, const std::string& path);
void write_replay_summary(const ReplayResult& result, const std::string& dump, const std::string& path);
std::string summary_text(const ReplayResult& result);
// A self-contained page: the summary, the rows that are not a pass (errors first), the reasons ops
// were skipped, then every row.
void write_replay_html(const ReplayResult& result, const std::string& dump, const std::string& path);

}  // namespace opdump::replay
