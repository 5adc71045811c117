#include "report.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "format/csv.h"
#include "writer/atomic_file.h"

namespace opdump::replay {
namespace {

std::string number(double v) { return fmt::format("{:.6g}", v); }

std::map<std::string, uint64_t> counts(const ReplayResult& result) {
  std::map<std::string, uint64_t> out = {{"pass", 0}, {"warning", 0}, {"error", 0}, {"skipped", 0}};
  for (const auto& r : result.rows) ++out[to_string(r.judgement.result)];
  return out;
}

}  // namespace

void write_replay_csv(const ReplayResult& result, const std::string& path) {
  AtomicFileWriter out(path);
  out.write("Rank,Iteration,OpSequence,OpType,OpName,TensorIndex,DataType,Result,Standard,Reason,RelL2Error,MaxNormError\n");
  for (const auto& r : result.rows) {
    const Judgement& j = r.judgement;
    const bool measured = j.result == Result::Pass || j.result == Result::Warning || j.result == Result::Error;
    out.write(std::to_string(r.rank) + "," + (r.iteration >= 0 ? std::to_string(r.iteration) : "") + "," +
              std::to_string(r.order) + "," + csv_text_cell(r.op_type) + "," + csv_text_cell(r.op_name) + "," +
              r.tensor_index + "," + r.dtype + "," + to_string(j.result) + "," + csv_text_cell(j.standard) + "," +
              csv_text_cell(j.reason) + "," + (measured ? number(j.rel_l2) : "") + "," +
              (measured ? number(j.max_norm) : "") + "\n");
  }
  out.commit();
}

void write_replay_summary(const ReplayResult& result, const std::string& dump, const std::string& path) {
  nlohmann::ordered_json j;
  j["dump"] = dump;
  j["ops"] = {{"total", result.ops}, {"replayed", result.ops_replayed}, {"skipped", result.ops_skipped}};
  j["rows"] = counts(result);
  j["skipped_reasons"] = result.skipped_reasons;
  if (const ReplayRow* e = result.first_error())
    j["first_error"] = {{"op_type", e->op_type}, {"op_name", e->op_name}, {"rank", e->rank}, {"iteration", e->iteration},
                        {"tensor_index", e->tensor_index}, {"reason", e->judgement.reason}, {"standard", e->judgement.standard}};
  else
    j["first_error"] = nullptr;
  j["seconds"] = result.seconds;
  j["ops_per_second"] = result.seconds > 0 ? result.ops_replayed / result.seconds : 0.0;
  j["warnings"] = result.warnings;
  const std::string text = j.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + "\n";
  write_file_atomic(path, text.data(), text.size(), nullptr, 0);
}

std::string summary_text(const ReplayResult& result) {
  const auto c = counts(result);
  std::string s = fmt::format("replayed {} of {} ops in {:.1f} s ({:.0f} ops/s): {} outputs pass, {} warning, {} error; {} skipped\n",
                              result.ops_replayed, result.ops, result.seconds,
                              result.seconds > 0 ? result.ops_replayed / result.seconds : 0.0, c.at("pass"),
                              c.at("warning"), c.at("error"), c.at("skipped"));
  if (const ReplayRow* e = result.first_error())
    s += fmt::format("first op that fails on its own inputs: {} {} {} (rank {}, iteration {}): {}\n", e->op_type,
                     e->op_name, e->tensor_index, e->rank, e->iteration, e->judgement.reason);
  else
    s += "no op fails on its own inputs\n";
  for (const auto& [why, n] : result.skipped_reasons) s += fmt::format("  skipped {}: {}\n", n, why);
  return s;
}

}  // namespace opdump::replay
