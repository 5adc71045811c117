// The comparison as one self-contained HTML page: a summary naming the first divergence, the
// error along execution order on a log scale (inline SVG), and a sortable, filterable table drawn a
// page at a time from the rows embedded as JSON.
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>

#include "compare/reports.h"
#include "util/html.h"
#include "util/module_tree.h"
#include "writer/atomic_file.h"

namespace opdump {
namespace {

std::string escape(const std::string& s) { return html_escape(s); }

std::string num(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  return fmt::format("{:.6g}", v);
}

// The error plotted per row: relative euclidean distance (statistics rows: worst relative diff).
double row_error(const CompareRow& r) {
  if (!r.compared) return NAN;
  if (r.statistics_only) {
    double w = 0;
    for (int i = 0; i < kStatCount; ++i)
      if (r.stat_compared[i]) w = std::max(w, std::fabs(r.stat_rel[i]));
    return w;
  }
  return r.metrics.rel_euclidean;
}

// At most this many points on the chart's line and this many marked rows: a report of 100,000+ rows
// keeps a chart that draws at once (each pixel column shows its largest error).
constexpr size_t kChartPoints = 2000;
constexpr size_t kChartMarks = 2000;

std::string chart(const CompareResult& result) {
  const double W = 1000, H = 260, L = 60, B = 30, T = 10;
  std::vector<std::pair<size_t, double>> pts;
  const size_t per_point = std::max<size_t>(1, (result.rows.size() + kChartPoints - 1) / kChartPoints);
  for (size_t start = 0; start < result.rows.size(); start += per_point) {
    size_t at = start;
    double worst = NAN;
    for (size_t i = start; i < std::min(result.rows.size(), start + per_point); ++i) {
      const double e = row_error(result.rows[i]);
      if (std::isfinite(e) && !(e <= worst)) worst = e, at = i;
    }
    if (std::isfinite(worst)) pts.emplace_back(result.rows[at].index, std::max(worst, 1e-12));
  }
  std::string svg = fmt::format(
      "<svg id=\"chart\" xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" role=\"img\" "
      "aria-label=\"error along execution order\">",
      W, H);
  const double lo = -12, hi = 2;
  auto y_of = [&](double e) { return T + (hi - std::clamp(std::log10(e), lo, hi)) / (hi - lo) * (H - T - B); };
  const double n = std::max<size_t>(1, result.rows.size());
  auto x_of = [&](size_t i) { return L + (W - L - 10) * (static_cast<double>(i) / n); };
  for (int d = static_cast<int>(lo); d <= hi; d += 2)
    svg += fmt::format("<line x1=\"{}\" x2=\"{}\" y1=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"#ddd\"/><text x=\"4\" "
                       "y=\"{:.1f}\" font-size=\"11\">1e{}</text>",
                       L, W - 10, y_of(std::pow(10, d)), y_of(std::pow(10, d)), y_of(std::pow(10, d)) + 4, d);
  std::string path;
  for (const auto& [i, e] : pts) path += fmt::format("{}{:.1f},{:.1f} ", path.empty() ? "M" : "L", x_of(i), y_of(e));
  svg += "<path d=\"" + path + "\" fill=\"none\" stroke=\"#3366cc\" stroke-width=\"1.2\"/>";
  size_t marks = 0;
  for (const auto& r : result.rows) {
    const double e = row_error(r);
    if (!std::isfinite(e) || r.verdict == Verdict::Pass) continue;
    if (++marks > kChartMarks) break;  // the first ones in execution order: where a divergence starts
    svg += fmt::format("<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"2.5\" fill=\"{}\"/>", x_of(r.index),
                       y_of(std::max(e, 1e-12)), r.verdict == Verdict::Error ? "#d62728" : "#e6a700");
  }
  if (result.first_divergence.found) {
    const double x = x_of(result.first_divergence.op.row);
    svg += fmt::format("<line id=\"first-divergence\" x1=\"{0:.1f}\" x2=\"{0:.1f}\" y1=\"{1}\" y2=\"{2}\" "
                       "stroke=\"#d62728\" stroke-dasharray=\"4 3\"/><text x=\"{3:.1f}\" y=\"{4}\" font-size=\"12\" "
                       "fill=\"#d62728\">first divergence</text>",
                       x, T, H - B, x + 4, T + 12);
  }
  svg += fmt::format("<text x=\"{}\" y=\"{}\" font-size=\"12\">tensors in execution order (relative euclidean "
                     "distance, log scale)</text></svg>",
                     L, H - 8);
  return svg;
}

// Small bar charts of |x - y| per decade for the rows that got a histogram.
std::string histograms(const CompareResult& result) {
  std::string out;
  for (const auto& r : result.rows) {
    if (r.abs_err_histogram.empty()) continue;
    const uint64_t peak = std::max<uint64_t>(1, *std::max_element(r.abs_err_histogram.begin(), r.abs_err_histogram.end()));
    const double bw = 14, H = 80;
    std::string svg = fmt::format("<svg class=\"hist\" xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\">",
                                  bw * 27 + 20, H + 30);
    for (size_t k = 0; k < r.abs_err_histogram.size(); ++k) {
      const double h = H * static_cast<double>(r.abs_err_histogram[k]) / static_cast<double>(peak);
      svg += fmt::format("<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\" fill=\"#3366cc\"><title>{}: {}</title></rect>",
                         10 + k * bw, 5 + H - h, bw - 2, h,
                         k == 0 ? std::string("|x-y| = 0") : k == 26 ? std::string(">= 1e12") : fmt::format("[1e{}, 1e{})", int(k) - 14, int(k) - 13),
                         r.abs_err_histogram[k]);
    }
    svg += fmt::format("<text x=\"10\" y=\"{}\" font-size=\"10\">0</text><text x=\"{}\" y=\"{}\" font-size=\"10\">1e-6</text>"
                       "<text x=\"{}\" y=\"{}\" font-size=\"10\">1</text></svg>",
                       H + 20, 10 + 8 * bw, H + 20, 10 + 14 * bw, H + 20);
    out += "<div><p>row " + std::to_string(r.index) + ": " + escape(r.target->op_name) + " " +
           std::string(to_string(r.target->io)) + "." + std::to_string(r.target->slot) + " (relative euclidean " +
           num(r.metrics.rel_euclidean) + ")</p>" + svg + "</div>";
  }
  return out.empty() ? out : "<h2>|x - y| per decade, from the first divergence on</h2>" + out;
}

// The modules of the target's op names (the reference's where only it has the row).
std::string model_tree(const CompareResult& result) {
  std::vector<ModuleTreeRow> rows;
  rows.reserve(result.rows.size());
  int64_t first = -1;
  for (const auto& r : result.rows) {
    const DumpEntry* e = r.target ? r.target : r.reference;
    const TreeVerdict v = !r.compared ? TreeVerdict::NotJudged
                          : r.verdict == Verdict::Error ? TreeVerdict::Error
                          : r.verdict == Verdict::Warning ? TreeVerdict::Warning : TreeVerdict::Pass;
    if (result.first_divergence.found && r.index == result.first_divergence.op.row) first = static_cast<int64_t>(rows.size());
    rows.push_back(ModuleTreeRow{e->op_name, v, r.compared ? row_error(r) : NAN});
  }
  return module_tree_html(rows, first);
}

// The chart's colours, explained beside it.
std::string legend() {
  return "<p id=\"legend\" class=\"legend\">"
         "<span><svg width=\"24\" height=\"10\"><line x1=\"0\" x2=\"24\" y1=\"5\" y2=\"5\" stroke=\"#3366cc\" "
         "stroke-width=\"2\"/></svg> error of each tensor (relative euclidean distance; statistics: worst relative "
         "difference)</span>"
         "<span><svg width=\"10\" height=\"10\"><circle cx=\"5\" cy=\"5\" r=\"4\" fill=\"#d62728\"/></svg> error</span>"
         "<span><svg width=\"10\" height=\"10\"><circle cx=\"5\" cy=\"5\" r=\"4\" fill=\"#e6a700\"/></svg> warning</span>"
         "<span><svg width=\"24\" height=\"10\"><line x1=\"0\" x2=\"24\" y1=\"5\" y2=\"5\" stroke=\"#d62728\" "
         "stroke-dasharray=\"4 3\" stroke-width=\"2\"/></svg> first divergence</span></p>";
}

}  // namespace

void write_compare_html(const CompareResult& result, const std::string& path, const std::string& title) {
  // Laid out for 1400 px and up without horizontal scrolling: a fixed table whose long names wrap,
  // the verdict and the metrics left of the names' overflow, the reference name only where it differs.
  std::string html = "<!DOCTYPE html><html><head><meta charset=\"utf-8\"><meta name=\"viewport\" "
                     "content=\"width=device-width\"><title>" + escape(title) +
                     "</title><style>body{font-family:sans-serif;margin:16px}"
                     "table{border-collapse:collapse;font-size:12px;width:100%;table-layout:fixed}"
                     "td,th{border:1px solid #ccc;padding:2px 4px;overflow-wrap:anywhere;vertical-align:top}"
                     "th{cursor:pointer;background:#f3f3f3;position:sticky;top:0}"
                     "tr.error td{background:#fbdada}tr.warning td{background:#fff3c4}.num{text-align:right;white-space:nowrap;overflow-wrap:normal}"
                     ".same{color:#888}#first-row td{background:#f4a6a6;font-weight:bold;border-top:2px solid #d62728;"
                     "border-bottom:2px solid #d62728}#first{border-left:4px solid #d62728;padding-left:8px}"
                     ".legend span{margin-right:18px;font-size:12px;white-space:nowrap}svg#chart{max-width:100%;height:auto}"
                     "</style></head><body>";
  html += "<h1>" + escape(title) + "</h1>";
  html += fmt::format("<p id=\"summary\">{} rows: {} pass, {} warning, {} error, {} not compared; {} unmatched, {} "
                      "matched by execution order.</p>",
                      result.rows.size(), result.passed, result.warnings, result.errors, result.not_compared,
                      result.unmatched, result.aligned);
  const auto& f = result.first_divergence;
  if (f.found) {
    html += "<div id=\"first\"><p><b>First divergence</b>: " + escape(divergence_headline(f)) +
            fmt::format(" (<a id=\"first-link\" href=\"#first-row\">row {}</a>)", f.op.row) + "</p><p>" +
            escape(f.cause) + "</p>";
    if (!f.source.empty()) html += "<p>called from <code>" + escape(f.source) + "</code></p>";
    if (!f.reaches.empty()) {
      html += "<p>it reaches:</p><ol>";
      for (const auto& op : f.reaches) html += "<li>" + escape(divergent_op_text(op)) + "</li>";
      html += "</ol>";
    }
    html += "</div>";
  } else {
    html += "<p id=\"first\">No divergence found" + (result.precision.empty() ? "" : ": " + escape(result.precision)) + ".</p>";
  }
  for (const auto& note : result.notes) html += "<p class=\"note\">" + escape(note) + "</p>";
  html += model_tree(result);
  html += chart(result);
  html += legend();
  html += histograms(result);
  // The rows are data, drawn a page at a time (a page of 200 rows opens at once whatever the dump's
  // size; 100,000 table rows in the DOM would take the browser seconds). Widths in em for the short
  // columns; the names and the reason share what is left.
  html += "<p id=\"pager\"><input id=\"filter\" placeholder=\"filter rows (name, type, result)\" size=\"40\"> "
          "<button id=\"prev\">&#9664; previous</button> <span id=\"page\"></span> <button id=\"next\">next "
          "&#9654;</button> <button id=\"to-first\">first divergence</button></p>";
  html += "<table id=\"rows\"><colgroup><col style=\"width:4em\"><col style=\"width:3.5em\"><col style=\"width:3.5em\">"
          "<col style=\"width:5.5em\"><col style=\"width:7em\"><col><col style=\"width:12%\"><col style=\"width:5.5em\">"
          "<col style=\"width:7em\"><col style=\"width:6.5em\"><col style=\"width:6.5em\"><col style=\"width:6.5em\">"
          "<col style=\"width:6.5em\"><col style=\"width:12%\"><col style=\"width:5em\"></colgroup>"
          "<thead><tr><th>#</th><th>rank</th><th>iter</th><th>result</th><th>op type</th><th>target</th>"
          "<th>reference</th><th>tensor</th><th>shape</th><th>cosine</th><th>max abs err</th><th>max rel err</th>"
          "<th>rel euclidean</th><th>reason</th><th>match</th></tr></thead><tbody></tbody></table>";
  // One array per row, in the table's column order; a reference named like the target is null.
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& r : result.rows) {
    const DumpEntry* e = r.target ? r.target : r.reference;
    const bool m = r.compared && !r.statistics_only;
    const bool same_name = r.target && r.reference && r.target->op_name == r.reference->op_name;
    rows.push_back({r.index, e->rank(), e->iteration() >= 0 ? std::to_string(e->iteration()) : std::string(),
                    to_string(r.verdict), e->op_type, r.target ? r.target->op_name : "",
                    same_name ? nlohmann::json() : nlohmann::json(r.reference ? r.reference->op_name : ""),
                    std::string(to_string(e->io)) + "." + std::to_string(e->slot), shape_to_string(e->shape),
                    m ? num(r.metrics.cosine) : "", m ? num(r.metrics.max_abs_err) : "", m ? num(r.metrics.max_rel_err) : "",
                    r.compared ? num(row_error(r)) : "", r.reason,
                    !r.target ? "reference only" : !r.reference ? "target only" : r.aligned ? "aligned" : "name"});
  }
  std::string data = rows.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  // Inside <script>, no "</script" may end the block and no "<!--" may turn it into an escaped
  // block that never ends: every '<' (only ever inside JSON strings) is written \u003c.
  for (size_t at = data.find('<'); at != std::string::npos; at = data.find('<', at)) data.replace(at, 1, "\\u003c");
  html += "<script id=\"rows-data\" type=\"application/json\">" + data + "</script>";
  html += fmt::format("<script>const FIRST={};", f.found ? std::to_string(f.op.row) : std::string("-1"));
  html += "const PAGE=200,NUM=new Set([0,1,2,9,10,11,12]);"
          "const all=JSON.parse(document.getElementById('rows-data').textContent);let shown=all,page=0;"
          "const tb=document.querySelector('#rows tbody');"
          "function draw(){const pages=Math.max(1,Math.ceil(shown.length/PAGE));page=Math.min(Math.max(page,0),pages-1);"
          "const frag=document.createDocumentFragment();"
          "for(const row of shown.slice(page*PAGE,(page+1)*PAGE)){const tr=document.createElement('tr');tr.className=row[3];"
          "if(row[0]===FIRST)tr.id='first-row';row.forEach((v,i)=>{const td=document.createElement('td');"
          "if(i===6&&v===null){td.textContent='= target';td.className='same';}else{td.textContent=v;}"
          "if(NUM.has(i))td.className='num';tr.appendChild(td);});frag.appendChild(tr);}"
          "tb.replaceChildren(frag);document.getElementById('page').textContent='rows '+(shown.length?page*PAGE+1:0)+'\\u2013'+"
          "Math.min(shown.length,(page+1)*PAGE)+' of '+shown.length+(shown.length<all.length?' (filtered from '+all.length+')':'');}"
          "function show(index){const at=shown.findIndex(r=>r[0]===index);if(at<0)return;page=Math.floor(at/PAGE);draw();"
          "const tr=document.getElementById('first-row');if(tr)tr.scrollIntoView({block:'center'});}"
          "document.getElementById('prev').onclick=()=>{page--;draw();};"
          "document.getElementById('next').onclick=()=>{page++;draw();};"
          "document.getElementById('to-first').onclick=()=>show(FIRST);"
          // A module clicked in the model's tree: its rows (every name under its path), the table in view.
          "function show_module(prefix){document.getElementById('filter').value=prefix;"
          "shown=all.filter(r=>r[5].startsWith(prefix)||(r[6]||'').startsWith(prefix));page=0;draw();"
          "document.getElementById('pager').scrollIntoView();}"
          "const link=document.getElementById('first-link');if(link)link.onclick=e=>{e.preventDefault();show(FIRST);};"
          "document.getElementById('filter').addEventListener('input',e=>{const q=e.target.value.toLowerCase();"
          "shown=q?all.filter(r=>r.some(v=>v!==null&&String(v).toLowerCase().includes(q))):all;page=0;draw();});"
          "document.querySelectorAll('#rows th').forEach((th,i)=>th.addEventListener('click',()=>{"
          "const asc=th.dataset.asc!=='1';th.dataset.asc=asc?'1':'0';"
          "const v=r=>{const t=r[i]===null?'':r[i];const n=parseFloat(t);return isNaN(n)?String(t):n;};"
          "shown=[...shown].sort((a,b)=>{const x=v(a),y=v(b);return (x>y?1:x<y?-1:0)*(asc?1:-1);});page=0;draw();}));"
          // Open on the page of the first divergence: where the reader starts.
          "page=FIRST>=0?Math.floor(Math.max(0,all.findIndex(r=>r[0]===FIRST))/PAGE):0;draw();"
          "</script></body></html>\n";
  AtomicFileWriter out(path);
  out.write(html);
  out.commit();
}

}  // namespace opdump
