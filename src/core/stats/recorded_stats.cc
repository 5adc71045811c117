#include "stats/recorded_stats.h"

namespace opdump {

RecordedStats RecordedStats::of(const TensorStats& s) {
  RecordedStats r;
  r.count = s.count;
  r.nan = s.nan;
  r.neg_inf = s.neg_inf;
  r.pos_inf = s.pos_inf;
  r.no_finite = !s.has_finite();
  if (!r.no_finite) {
    r.max = s.max;
    r.min = s.min;
    r.avg = s.avg();
  }
  r.l2norm = s.l2norm();
  return r;
}

}  // namespace opdump
