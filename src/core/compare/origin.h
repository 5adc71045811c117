// Internal to compare: where two runs part, from the rows' verdicts and the data flow the
// execution order files record (docs/compare.md, "First divergence").
#pragma once
#include "compare/compare.h"

namespace opdump::detail {

// Fills result.first_divergence (or result.precision). Needs result.rows judged. `cross_replay`
// (may be empty) re-runs ops whose inputs already differ.
void find_first_divergence(CompareResult& result, const CrossReplay& cross_replay);

}  // namespace opdump::detail
