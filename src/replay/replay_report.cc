#include "replay_report.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include <cmath>

#include "util/csv.h"
#include "util/html.h"
#include "util/module_tree.h"
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

void write_replay_html(const ReplayResult& result, const std::string& dump, const std::string& path) {
  const auto c = counts(result);
  std::string html =
      "<!doctype html><html><head><meta charset=\"utf-8\"><title>opdump replay: " + html_escape(dump) +
      "</title><style>body{font:14px sans-serif;margin:20px}table{border-collapse:collapse;font-size:12px}"
      "td,th{border:1px solid #ccc;padding:2px 6px;text-align:left}tr.error td{background:#fdd}"
      "tr.warning td{background:#ffd}tr.skipped td{color:#777}code{font-size:12px}</style></head><body>";
  html += "<h1>opdump replay: " + html_escape(dump) + "</h1>";
  html += fmt::format("<p id=\"summary\">replayed {} of {} ops in {:.1f} s ({:.0f} ops/s): {} outputs pass, {} warning, "
                      "{} error; {} skipped.</p>",
                      result.ops_replayed, result.ops, result.seconds,
                      result.seconds > 0 ? result.ops_replayed / result.seconds : 0.0, c.at("pass"), c.at("warning"),
                      c.at("error"), c.at("skipped"));
  if (const ReplayRow* e = result.first_error())
    html += "<p id=\"first\"><b>First op that fails on its own inputs</b>: " +
            html_escape(e->op_type + " " + e->op_name + " " + e->tensor_index) + fmt::format(" (rank {}, iteration {}): ", e->rank, e->iteration) +
            html_escape(e->judgement.reason) + "</p>";
  else
    html += "<p id=\"first\">No op fails on its own inputs.</p>";
  for (const auto& w : result.warnings) html += "<p class=\"note\">" + html_escape(w) + "</p>";
  {  // the model's modules, coloured by their outputs' results
    std::vector<ModuleTreeRow> tree;
    int64_t first = -1;
    const ReplayRow* first_error = result.first_error();
    for (const auto& r : result.rows) {
      const Result v = r.judgement.result;
      if (&r == first_error) first = static_cast<int64_t>(tree.size());
      tree.push_back(ModuleTreeRow{r.op_name,
                                   v == Result::Error ? TreeVerdict::Error : v == Result::Warning ? TreeVerdict::Warning
                                   : v == Result::Pass ? TreeVerdict::Pass : TreeVerdict::NotJudged,
                                   v == Result::Skipped ? NAN : r.judgement.rel_l2});
    }
    html += module_tree_html(tree, first);
  }
  if (!result.skipped_reasons.empty()) {
    html += "<h2>Skipped</h2><ul>";
    for (const auto& [why, n] : result.skipped_reasons) html += fmt::format("<li>{}: {}</li>", n, html_escape(why));
    html += "</ul>";
  }
  auto row_html = [](const ReplayRow& r) {
    const Judgement& j = r.judgement;
    const bool measured = j.result != Result::Skipped;
    return fmt::format("<tr class=\"{}\"><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>"
                       "<td>{}</td><td>{}</td><td>{}</td></tr>",
                       to_string(j.result), r.rank, r.iteration, html_escape(r.op_type + " " + r.op_name),
                       html_escape(r.tensor_index), html_escape(r.dtype), to_string(j.result),
                       measured ? number(j.rel_l2) : "", measured ? number(j.max_norm) : "", html_escape(j.standard),
                       html_escape(j.reason));
  };
  const std::string head = "<tr><th>Rank</th><th>Iteration</th><th>Op</th><th>Output</th><th>DataType</th><th>Result</th>"
                           "<th>RelL2</th><th>MaxNorm</th><th>Standard</th><th>Reason</th></tr>";
  std::string failing;
  for (Result level : {Result::Error, Result::Warning})
    for (const auto& r : result.rows)
      if (r.judgement.result == level) failing += row_html(r);
  if (!failing.empty()) html += "<h2>Errors and warnings</h2><table id=\"failing\">" + head + failing + "</table>";
  html += "<h2>Every output, in execution order</h2><p id=\"shown\"></p><table id=\"rows\">" + head;
  for (const auto& r : result.rows) html += row_html(r);
  // A module clicked in the model's tree: only its outputs' rows (their op names start with its path).
  html += "</table><script>function show_module(prefix){const rows=[...document.querySelectorAll('#rows tr')].slice(1);"
          "let n=0;for(const tr of rows){const on=tr.cells[2].textContent.includes(' '+prefix);tr.style.display=on?'':'none';n+=on;}"
          "const p=document.getElementById('shown');p.textContent=n+' rows of '+prefix+' ';const all=document.createElement('button');"
          "all.textContent='show all';all.onclick=()=>{rows.forEach(tr=>tr.style.display='');p.textContent='';};p.appendChild(all);"
          "p.scrollIntoView();}</script></body></html>\n";
  write_file_atomic(path, html.data(), html.size(), nullptr, 0);
}

}  // namespace opdump::replay
