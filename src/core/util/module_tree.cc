#include "util/module_tree.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <string_view>
#include <unordered_map>

namespace opdump {
namespace {

struct Node {
  std::string name;   // one element of the path ("conv1-Conv2d")
  int64_t parent = -1;
  int8_t worst = -1;  // TreeVerdict
  double error = NAN; // the largest finite error beneath
  uint64_t rows = 0;
  bool on_path = false;
};

// '<' inside a <script> block written \u003c: no "</script" or "<!--" can end or hide the block.
std::string script_safe(std::string s) {
  for (size_t at = s.find('<'); at != std::string::npos; at = s.find('<', at)) s.replace(at, 1, "\\u003c");
  return s;
}

}  // namespace

std::string module_tree_html(const std::vector<ModuleTreeRow>& rows, int64_t first_row) {
  std::vector<Node> nodes;
  // (parent, name) -> node: one lookup per path element of each row.
  std::unordered_map<std::string, int64_t> index;
  for (size_t r = 0; r < rows.size(); ++r) {
    const std::string& name = rows[r].op_name;
    const size_t last = name.rfind('/');
    if (last == std::string::npos || last == 0) continue;  // no module recorded (an op outside any scope)
    int64_t parent = -1;
    size_t begin = 0;
    while (begin < last) {
      size_t end = name.find('/', begin);
      if (end == std::string::npos || end > last) end = last;
      const std::string key = std::to_string(parent) + '\x1f' + name.substr(begin, end - begin);
      auto [it, added] = index.try_emplace(key, static_cast<int64_t>(nodes.size()));
      if (added) nodes.push_back(Node{name.substr(begin, end - begin), parent});
      Node& n = nodes[static_cast<size_t>(it->second)];
      n.worst = std::max<int8_t>(n.worst, static_cast<int8_t>(rows[r].verdict));
      if (std::isfinite(rows[r].error) && !(rows[r].error <= n.error)) n.error = rows[r].error;
      ++n.rows;
      if (static_cast<int64_t>(r) == first_row) n.on_path = true;
      parent = it->second;
      begin = end + 1;
    }
  }
  // [name, parent, worst, error, rows, on path] per node, parents before their children.
  nlohmann::json data = nlohmann::json::array();
  for (const Node& n : nodes)
    data.push_back({n.name, n.parent, n.worst, std::isfinite(n.error) ? nlohmann::json(n.error) : nlohmann::json(),
                    n.rows, n.on_path ? 1 : 0});
  std::string html =
      "<style>#model-tree{position:relative;border:1px solid #ccc;padding:6px;max-height:420px;overflow:auto;font-size:12px}"
      "#model-tree ul{list-style:none;margin:0;padding-left:16px}#model-tree>ul{padding-left:0}"
      "#model-tree li>div{display:flex;gap:8px;align-items:baseline;padding:1px 4px;margin:1px 0;border-radius:3px}"
      "#model-tree .tw{width:1em;cursor:pointer;color:#555}#model-tree a{cursor:pointer;color:#000;text-decoration:none}"
      "#model-tree .v2>div{background:#fbdada}#model-tree .v1>div{background:#fff3c4}#model-tree .v0>div{background:#dff0dc}"
      "#model-tree .v-1>div{background:#eee}#model-tree .on-path>div{outline:2px solid #d62728;font-weight:bold}"
      "#model-tree .e,#model-tree .n{color:#555;font-size:11px}.tree-legend span{margin-right:14px;font-size:12px}"
      ".tree-legend i{display:inline-block;width:12px;height:12px;vertical-align:middle;margin-right:4px}</style>";
  html += "<h2>The model</h2><p class=\"tree-legend\">modules by the worst result beneath them: "
          "<span><i style=\"background:#fbdada\"></i>error</span><span><i style=\"background:#fff3c4\"></i>warning</span>"
          "<span><i style=\"background:#dff0dc\"></i>pass</span><span><i style=\"background:#eee\"></i>not compared</span>"
          "<span><i style=\"outline:2px solid #d62728\"></i>path to the first divergence</span>; click a module for "
          "its rows</p>";
  html += fmt::format("<div id=\"model-tree\" data-modules=\"{}\"></div>", nodes.size());
  html += "<script id=\"tree-data\" type=\"application/json\">" +
          script_safe(data.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)) + "</script>";
  // Children are drawn when their module opens; the first divergence's modules are open from the start.
  html +=
      "<script>(()=>{const N=JSON.parse(document.getElementById('tree-data').textContent);const kids=N.map(()=>[]);"
      "const roots=[];N.forEach((n,i)=>(n[1]<0?roots:kids[n[1]]).push(i));"
      "const path=i=>{const p=[];for(;i>=0;i=N[i][1])p.unshift(N[i][0]);return p.join('/')+'/';};"
      "const fmt=e=>e===null?'':'max error '+(e<1e-3&&e>0?e.toExponential(2):+e.toPrecision(3));"
      "function item(i){const n=N[i],li=document.createElement('li');li.className='v'+n[2]+(n[5]?' on-path':'');"
      "li.dataset.path=path(i);const d=document.createElement('div');const tw=document.createElement('span');tw.className='tw';"
      "tw.textContent=kids[i].length?'\\u25B8':'';const a=document.createElement('a');a.textContent=n[0];a.title=li.dataset.path;"
      "a.onclick=()=>{if(typeof show_module==='function')show_module(li.dataset.path);};"
      "const e=document.createElement('span');e.className='e';e.textContent=fmt(n[3]);"
      "const c=document.createElement('span');c.className='n';c.textContent=n[4]+(n[4]===1?' row':' rows');"
      "d.append(tw,a,e,c);li.appendChild(d);tw.onclick=()=>toggle(li,i);if(n[5]&&kids[i].length)toggle(li,i);return li;}"
      "function list(ids){const ul=document.createElement('ul');for(const i of ids)ul.appendChild(item(i));return ul;}"
      "function toggle(li,i){const open=li.querySelector(':scope>ul');const tw=li.querySelector('.tw');"
      "if(open){open.remove();tw.textContent='\\u25B8';}else{li.appendChild(list(kids[i]));tw.textContent='\\u25BE';}}"
      "document.getElementById('model-tree').appendChild(list(roots));"
      "const box=document.getElementById('model-tree'),hit=[...box.querySelectorAll('.on-path')].pop();"
      "if(hit)box.scrollTop=Math.max(0,hit.offsetTop-box.clientHeight/2);"
      "})();</script>";
  return html;
}

}  // namespace opdump
