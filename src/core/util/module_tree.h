// The model as a picture in the HTML reports (compare's, replay's): the module hierarchy that the
// op names record ("Default/net-Net/layer1-Sequential/0-BasicBlock/conv1-Conv2d/conv2d-op0"; backward
// ops under "Gradients/..."), each module coloured by the worst verdict beneath it and labelled with
// the largest error there, the path to the first divergence open and highlighted, a click on a module
// showing its rows. Built here, drawn by the page a level at a time as the reader opens modules (a
// model of 10,000 modules opens at once).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace opdump {

enum class TreeVerdict : int8_t { NotJudged = -1, Pass = 0, Warning = 1, Error = 2 };

struct ModuleTreeRow {
  std::string op_name;
  TreeVerdict verdict = TreeVerdict::NotJudged;
  double error = 0;  // the row's error as the report shows it (NaN: none)
};

// The tree's section: a <div id="model-tree"> with the nodes as JSON and the script that draws them.
// `first_row`: the index in `rows` of the first divergence (-1: none): its modules are opened and
// highlighted. A click on a module calls the page's JavaScript function `show_module(prefix)` with
// the module's path followed by '/' (every row of the module starts with it).
std::string module_tree_html(const std::vector<ModuleTreeRow>& rows, int64_t first_row);

}  // namespace opdump
