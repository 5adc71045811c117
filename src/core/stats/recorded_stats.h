// A tensor's statistics as a dump recorded them, each absent when the dump lacks it: what readers
// of statistic.csv, msprobe's dump.json and the .h5 files hand on, and what is computed from values.
#pragma once
#include <cstdint>
#include <optional>

#include "stats/stats.h"

namespace opdump {

// The statistics of one tensor as its dump recorded them: each is absent when the dump lacks it.
struct RecordedStats {
  std::optional<double> max, min, avg, l2norm;
  std::optional<uint64_t> count, nan, neg_inf, pos_inf;
  bool no_finite = false;  // "null" cells: the tensor has no finite element
  static RecordedStats of(const TensorStats& s);  // everything, computed from a tensor
  bool has_nonfinite_counts() const { return nan && neg_inf && pos_inf; }
};

}  // namespace opdump
