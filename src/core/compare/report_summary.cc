// compare_summary.json and the one-line texts of the first divergence shared by every report.
#include <nlohmann/json.hpp>

#include "compare/reports.h"
#include "writer/atomic_file.h"

namespace opdump {

std::string divergent_op_text(const DivergentOp& op) {
  return op.op_type + " " + op.op_name + " (" + (op.backward ? "backward" : "forward") + ", rank " +
         std::to_string(op.rank) + (op.iteration >= 0 ? ", iteration " + std::to_string(op.iteration) : std::string()) + ")";
}

std::string divergence_headline(const FirstDivergence& f) {
  switch (f.kind) {
    case FirstDivergence::Kind::ExtraOp: return "extra op in the target: " + divergent_op_text(f.op);
    case FirstDivergence::Kind::MissingOp: return "op missing in the target (only the reference ran it): " + divergent_op_text(f.op);
    case FirstDivergence::Kind::Output: break;
  }
  return divergent_op_text(f.op);
}

namespace {

nlohmann::json op_json(const DivergentOp& op) {
  return {{"rank", op.rank},
          {"iteration", op.iteration},
          {"op_type", op.op_type},
          {"op_name", op.op_name},
          {"backward", op.backward},
          {"order", op.order},
          {"row", op.row}};
}

const char* kind_name(FirstDivergence::Kind k) {
  switch (k) {
    case FirstDivergence::Kind::Output: return "output";
    case FirstDivergence::Kind::ExtraOp: return "extra_op";
    case FirstDivergence::Kind::MissingOp: return "missing_op";
  }
  return "?";
}

}  // namespace

void write_compare_summary(const CompareResult& result, const std::string& path) {
  nlohmann::json j;
  j["rows"] = result.rows.size();
  j["pass"] = result.passed;
  j["warning"] = result.warnings;
  j["error"] = result.errors;
  j["not_compared"] = result.not_compared;
  j["unmatched"] = result.unmatched;
  j["aligned"] = result.aligned;
  j["within_precision"] = result.within_precision;
  j["bytes_compared"] = result.bytes_compared;
  j["target_ranks"] = result.target.ranks();
  j["reference_ranks"] = result.reference.ranks();
  const auto& f = result.first_divergence;
  if (f.found) {
    nlohmann::json d = op_json(f.op);
    d["kind"] = kind_name(f.kind);
    d["headline"] = divergence_headline(f);
    d["cause"] = f.cause;
    d["neighbours"] = f.neighbours;
    d["inputs_agree"] = f.inputs_agree;
    d["data_flow"] = f.data_flow;
    d["source"] = f.source;
    d["reaches"] = nlohmann::json::array();
    for (const auto& op : f.reaches) d["reaches"].push_back(op_json(op));
    j["first_divergence"] = d;
  } else {
    j["first_divergence"] = nullptr;
  }
  if (!result.precision.empty()) j["precision"] = result.precision;
  j["notes"] = result.notes;
  const std::string text = j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  write_file_atomic(path, text.data(), text.size(), nullptr, 0);
}

}  // namespace opdump
