// The normalized config as text (for people) and JSON (for tools).
#include <nlohmann/json.hpp>

#include "config/config.h"

namespace opdump {

namespace {

nlohmann::ordered_json to_json_object(const DumpConfig& c) {
  nlohmann::ordered_json j;
  j["dialect"] = to_string(c.dialect);
  j["source"] = c.source;
  j["enabled"] = c.enabled;
  j["dump_path"] = c.dump_path;
  j["dump_path_origin"] = c.dump_path_origin;
  j["layout"] = c.msprobe_layout ? "msprobe (written by PrecisionDebugger)" : to_string(c.layout);
  j["file_format"] = to_string(c.file_format);
  j["net_name"] = c.net_name;
  j["iterations"] = c.iterations.to_string();
  j["io"] = to_string(c.io);
  j["saved_data"] = to_string(c.saved_data);
  auto cats = nlohmann::ordered_json::array();
  for (StatCategory s : c.stat_categories) cats.push_back(stat_category_key(s));
  j["statistic_category"] = cats;
  j["ops"] = c.dump_marked_only ? "marked with set_dump" : c.dump_all_ops ? "all" : "kernels";
  j["kernels"] = c.kernels;
  auto list = nlohmann::ordered_json::array();
  for (const auto& m : c.dump_list) {
    nlohmann::ordered_json e;
    e["model_name"] = m.model_name;
    e["layer"] = m.layers;
    e["watcher_nodes"] = m.watcher_nodes;
    list.push_back(e);
  }
  j["dump_list"] = list;
  j["single_op_dump"] = c.op_switch;
  j["support_device"] = c.support_device;
  j["support_rank"] = c.support_rank;
  j["module_records"] = c.module_records;
  j["scene"] = to_string(c.scene);
  j["overflow_number"] = c.overflow_number;
  j["trans_flag"] = c.trans_flag;
  j["stat_calc_mode"] = c.stat_calc_mode == StatCalcMode::Host ? "host" : "device";
  j["sample_mode"] = c.sample ? 1 : 0;
  j["sample_num"] = c.sample_num;
  j["save_kernel_args"] = c.save_kernel_args;
  j["level"] = to_string(c.level);
  j["skip_no_compute_ops"] = c.skip_no_compute_ops;
  j["check_fp16_range"] = c.check_fp16_range;
  j["overflow_ignore_ops"] = c.overflow_ignore_ops;
  j["max_inflight_mb"] = c.max_inflight_bytes >> 20;
  j["writer_threads"] = c.writer_threads;
  j["direct_io"] = c.direct_io;
  j["host_work"] = to_string(c.host_work);
  j["device_path_on_cpu"] = c.device_path_on_cpu;
  j["warnings"] = c.warnings;
  return j;
}

}  // namespace

std::string config_to_json(const DumpConfig& c) { return to_json_object(c).dump(2) + "\n"; }

std::string describe_config(const DumpConfig& c) {
  std::string out;
  const nlohmann::ordered_json j = to_json_object(c);
  for (const auto& [key, value] : j.items()) {
    if (key == "warnings") continue;
    std::string v = value.is_string() ? value.get<std::string>() : value.dump();
    out += key;
    out.append(key.size() < 20 ? 20 - key.size() : 1, ' ');
    out += v + "\n";
  }
  for (const auto& w : c.warnings) out += "warning: " + w + "\n";
  return out;
}

}  // namespace opdump
