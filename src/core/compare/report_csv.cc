// The comparison as CSV (msaccucmp's columns, plus opdump's).
#include <fmt/format.h>

#include <cmath>

#include "compare/reports.h"
#include "format/statistic_csv.h"
#include "writer/atomic_file.h"

namespace opdump {
namespace {

std::string num(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  return fmt::format("{:.10g}", v);  // tells a cosine of 0.9999995 from 1
}

std::string tensor_index(const DumpEntry* e) {
  return e ? std::string(to_string(e->io)) + "." + std::to_string(e->slot) : "";
}

}  // namespace

void write_compare_csv(const CompareResult& result, const std::string& path) {
  AtomicFileWriter out(path);
  out.write(
      "Index,Rank,Iteration,OpSequence,OpType,Target,TargetDataType,Reference,ReferenceDataType,TensorIndex,Shape,Match,"
      "CosineSimilarity,MaxAbsoluteError,MaxRelativeError,MeanRelativeError,AccumulatedRelativeError,"
      "RelativeEuclideanDistance,EuclideanDistance,MeanAbsoluteError,RootMeanSquareError,KullbackLeiblerDivergence,"
      "StandardDeviation,OneThousandthErrRatio,FiveThousandthsErrRatio,SQNR,"
      "MaxDiff,MinDiff,AvgDiff,L2NormDiff,MaxRelDiff,MinRelDiff,AvgRelDiff,L2NormRelDiff,Result,CompareFailReason\n");
  for (const CompareRow& r : result.rows) {
    const DumpEntry* e = r.target ? r.target : r.reference;
    std::string line = std::to_string(r.index) + "," + std::to_string(e->rank()) + "," +
                       (e->iteration() >= 0 ? std::to_string(e->iteration()) : std::string()) + "," +
                       std::to_string(e->order) + "," +
                       csv_text_cell(e->op_type) + "," + csv_text_cell(r.target ? r.target->op_name : "") + "," +
                       (r.target ? std::string(dtype_name(r.target->dtype)) : "") + "," +
                       csv_text_cell(r.reference ? r.reference->op_name : "") + "," +
                       (r.reference ? std::string(dtype_name(r.reference->dtype)) : "") + "," + tensor_index(e) +
                       ",\"" + shape_to_string(e->shape) + "\"," +
                       (!r.target ? "reference only" : !r.reference ? "target only" : r.aligned ? "aligned" : "name");
    const auto& m = r.metrics;
    if (r.compared && !r.statistics_only) {
      line += "," + num(m.cosine) + "," + num(m.max_abs_err) + "," + num(m.max_rel_err) + "," + num(m.mean_rel_err) +
              "," + num(m.accumulated_rel_err) + "," + num(m.rel_euclidean) + "," + num(m.euclidean) + "," +
              num(m.mean_abs_err) + "," + num(m.rmse) + "," + num(m.kl_divergence) + ",\"(" + num(m.mean_x) + ";" +
              num(m.std_x) + "),(" + num(m.mean_y) + ";" + num(m.std_y) + ")\"," + num(m.one_thousandth_ratio) + "," +
              num(m.five_thousandths_ratio) + "," + num(m.sqnr_db) + ",,,,,,,,";
    } else if (r.compared) {
      line += ",,,,,,,,,,,,,,";
      for (int i = 0; i < kStatCount; ++i) line += "," + (r.stat_compared[i] ? num(r.stat_diff[i]) : std::string());
      for (int i = 0; i < kStatCount; ++i) line += "," + (r.stat_compared[i] ? num(r.stat_rel[i]) : std::string());
    } else {
      line += std::string(22, ',');
    }
    line += "," + std::string(to_string(r.verdict)) + "," + csv_text_cell(r.reason) + "\n";
    out.write(line);
  }
  out.commit();
}

}  // namespace opdump
