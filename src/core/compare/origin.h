// Internal to compare: where two runs part, from the rows' verdicts and the data flow the
// execution order files record (docs/compare.md, "First divergence").
#pragma once
#include "compare/compare.h"

namespace opdump::detail {

// Fills result.first_divergence. Needs result.rows judged.
void find_first_divergence(CompareResult& result);

}  // namespace opdump::detail
