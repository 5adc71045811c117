// Where a dump folder sits in the layouts opdump writes and reads (dump_index.h).
#include <string_view>
#include <vector>

#include "read/dump_index.h"

namespace opdump {
namespace {

bool digits(std::string_view s, size_t max_len = 19) {
  if (s.empty() || s.size() > max_len) return false;
  for (char c : s)
    if (c < '0' || c > '9') return false;
  return true;
}

uint64_t number(std::string_view s) {
  uint64_t v = 0;
  for (char c : s) v = v * 10 + static_cast<uint64_t>(c - '0');
  return v;
}

std::string join(const std::vector<std::string_view>& parts, size_t end) {
  std::string out;
  for (size_t i = 0; i < end; ++i) {
    out += '/';
    out.append(parts[i]);
  }
  return out;
}

}  // namespace

DumpPosition position_of(const std::string& folder) {
  std::vector<std::string_view> parts;
  for (size_t start = 0; start <= folder.size();) {
    size_t slash = folder.find('/', start);
    if (slash == std::string::npos) slash = folder.size();
    if (slash > start) parts.push_back(std::string_view(folder).substr(start, slash - start));
    start = slash + 1;
  }
  // The deepest marker decides: a user's own folders above a dump may look like markers too.
  int rank_at = -1, time_at = -1, msprobe_at = -1;
  for (size_t i = 0; i < parts.size(); ++i) {
    // msprobe: step{N}/rank{R} or step{N}/proc{PID}
    if (i > 0 && parts[i - 1].size() > 4 && parts[i - 1].substr(0, 4) == "step" && digits(parts[i - 1].substr(4), 9) &&
        ((parts[i].size() > 4 && parts[i].substr(0, 4) == "rank" && digits(parts[i].substr(4), 9)) ||
         (parts[i].size() > 4 && parts[i].substr(0, 4) == "proc" && digits(parts[i].substr(4), 9))))
      msprobe_at = static_cast<int>(i);
    if (parts[i].size() > 5 && parts[i].substr(0, 5) == "rank_" && digits(parts[i].substr(5), 9))
      rank_at = static_cast<int>(i);
    if (parts[i].size() == 14 && digits(parts[i]) && i + 1 < parts.size() && digits(parts[i + 1], 9))
      time_at = static_cast<int>(i);
  }
  DumpPosition p;
  size_t base = 0;  // index of the first component below the run root
  if (msprobe_at >= 0 && msprobe_at > rank_at && msprobe_at > time_at) {
    // The run root is the dump_path above the step folders: every step is one run.
    const std::string_view folder = parts[msprobe_at];
    p.rank = folder.substr(0, 4) == "rank" ? static_cast<uint32_t>(number(folder.substr(4))) : 0;
    p.iteration = static_cast<int64_t>(number(parts[msprobe_at - 1].substr(4)));
    p.run_root = join(parts, static_cast<size_t>(msprobe_at) - 1);
    for (size_t i = static_cast<size_t>(msprobe_at) + 1; i < parts.size(); ++i)
      if (parts[i] != "dump_tensor_data") p.below += (p.below.empty() ? "" : "/") + std::string(parts[i]);
    return p;
  }
  if (rank_at >= 0 && rank_at > time_at) {
    p.rank = static_cast<uint32_t>(number(parts[rank_at].substr(5)));
    base = static_cast<size_t>(rank_at) + 1;
  } else if (time_at >= 0) {
    p.run = std::string(parts[time_at]);
    p.rank = static_cast<uint32_t>(number(parts[time_at + 1]));
    base = static_cast<size_t>(time_at) + 2;
  } else {
    if (!parts.empty() && digits(parts.back()) && parts.back().size() != 14)
      p.iteration = static_cast<int64_t>(number(parts.back()));
    return p;
  }
  p.run_root = join(parts, base);
  // {net}/{graph}/{iteration} (MindSpore) or {model}/{model_id}/{data_index} (Ascend); deeper
  // folders (watcher/after_task_N) are kept apart by DumpPosition::below.
  if (parts.size() >= base + 3 && digits(parts[base + 2])) {
    p.iteration = static_cast<int64_t>(number(parts[base + 2]));
    for (size_t i = base + 3; i < parts.size(); ++i) p.below += (p.below.empty() ? "" : "/") + std::string(parts[i]);
  } else {
    for (size_t i = base; i < parts.size(); ++i) p.below += (p.below.empty() ? "" : "/") + std::string(parts[i]);
  }
  return p;
}

}  // namespace opdump
