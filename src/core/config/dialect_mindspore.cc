// MindSpore dialect: common_dump_settings + e2e_dump_settings (the MindSpore Dump guide), with the rules of
// MindSpore's own parser (mindspore-dump-facts.md).
#include <cctype>
#include <cstring>

#include "config_internal.h"
#include "opdump/error.h"
#include "util/log.h"
#include "select/kernel_filter.h"

namespace opdump::config_detail {
namespace {

bool only_chars(const std::string& s, const char* extra) {
  for (unsigned char ch : s)
    if (!std::isalnum(ch) && !std::strchr(extra, ch)) return false;
  return true;
}

}  // namespace

void parse_mindspore(const json& doc, DumpConfig& c, const ParseOptions& options) {
  Fields top(doc, "", {"common_dump_settings", "e2e_dump_settings", "opdump"});
  top.warn_unknown(&c.warnings);
  bool e2e = false;
  if (const json* e = top.get("e2e_dump_settings")) {
    Fields f(*e, "e2e_dump_settings",
             {"enable", "trans_flag", "stat_calc_mode", "sample_mode", "sample_num", "save_kernel_args"});
    e2e = f.boolean("enable").value_or(false);
    c.trans_flag = f.boolean("trans_flag").value_or(true);
    if (auto v = f.choice("stat_calc_mode", {"host", "device"}))
      c.stat_calc_mode = *v == "host" ? StatCalcMode::Host : StatCalcMode::Device;
    c.sample = f.integer("sample_mode", 0, 1).value_or(0) == 1;
    c.sample_num = static_cast<uint32_t>(f.integer("sample_num", 1, 1 << 30).value_or(100));
    if (auto v = f.boolean("save_kernel_args")) {
      c.save_kernel_args = *v;
      c.save_kernel_args_given = true;
    }
    f.warn_unknown(&c.warnings);
  }
  const json* common = top.get("common_dump_settings");
  if (!common) throw ConfigError("common_dump_settings", "is required");
  Fields f(*common, "common_dump_settings",
           {"dump_mode", "path", "net_name", "iteration", "saved_data", "input_output", "kernels", "support_device",
            "op_debug_mode", "statistic_category", "file_format", "overflow_number"});
  c.layout = e2e ? Layout::MindSporeSync : Layout::Ascend;

  // Required fields, as MindSpore requires them (op_debug_mode only without e2e dump).
  for (const char* key : {"dump_mode", "net_name", "iteration", "input_output", "kernels", "support_device"})
    f.require(key);
  if (!e2e) f.require("op_debug_mode");

  const int64_t dump_mode = *f.integer("dump_mode", 0, 2);
  c.net_name = *f.string("net_name");
  if (c.net_name.empty() || !only_chars(c.net_name, "-_"))
    throw ConfigError(f.path("net_name"), show(f.require("net_name")) + " is not allowed; use letters, digits, '-' and '_'");
  c.iterations = IterationSet::parse(*f.string("iteration"), f.path("iteration"));
  const int64_t io = *f.integer("input_output", 0, 2);
  c.io = io == 0 ? IoSelect::All : io == 1 ? IoSelect::Input : IoSelect::Output;
  c.kernels = *f.string_list("kernels", kMaxListEntries);
  KernelFilter(c.kernels, f.path("kernels"));  // validates every entry (regex syntax) now

  const json& devices = f.require("support_device");
  if (!devices.is_array()) throw ConfigError(f.path("support_device"), "must be an array of device ids, not " + show(devices));
  if (devices.size() > 4096) throw ConfigError(f.path("support_device"), "has more than 4096 entries");
  for (size_t i = 0; i < devices.size(); ++i) {
    const json& d = devices[i];
    if (!d.is_number_unsigned() || d.get<uint64_t>() > 4095)
      throw ConfigError(f.path("support_device") + "[" + std::to_string(i) + "]",
                        show(d) + " is not a device id; allowed: integers 0 to 4095");
    c.support_device.push_back(static_cast<uint32_t>(d.get<uint64_t>()));
  }

  if (auto v = f.choice("saved_data", {"tensor", "statistic", "full"}))
    c.saved_data = *v == "tensor" ? SavedData::Tensor : *v == "statistic" ? SavedData::Statistic : SavedData::Full;
  c.file_format = e2e ? FileFormat::Npy : FileFormat::Bin;  // MindSpore's defaults
  if (auto v = f.choice("file_format", {"npy", "bin"})) c.file_format = *v == "npy" ? FileFormat::Npy : FileFormat::Bin;
  if (e2e && c.file_format == FileFormat::Bin)
    throw ConfigError(f.path("file_format"), "\"bin\" is not available with e2e_dump_settings.enable true (synchronous dump writes npy)");
  if (c.saved_data != SavedData::Tensor && c.file_format == FileFormat::Bin)
    throw ConfigError(f.path("saved_data"), "\"" + std::string(to_string(c.saved_data)) +
                                                "\" needs common_dump_settings.file_format \"npy\" (statistics are not written in bin files)");

  if (auto cats = f.string_list("statistic_category", 64)) {
    c.stat_categories.clear();
    for (size_t i = 0; i < cats->size(); ++i) {
      auto cat = stat_category_from_key((*cats)[i]);
      if (!cat)
        throw ConfigError(f.path("statistic_category") + "[" + std::to_string(i) + "]",
                          "\"" + (*cats)[i] + "\" is not a statistic; allowed: max, min, avg, count, negative zero count, "
                          "positive zero count, nan count, negative inf count, positive inf count, zero count, md5, l2norm, xxhash");
      c.stat_categories.push_back(*cat);
    }
    if (c.stat_categories.empty()) throw ConfigError(f.path("statistic_category"), "is empty; leave it out for the default [max, min, l2norm]");
  }
  if (c.stat_calc_mode == StatCalcMode::Device)
    for (StatCategory cat : c.stat_categories)
      if (cat != StatCategory::Max && cat != StatCategory::Min && cat != StatCategory::Avg && cat != StatCategory::L2Norm)
        throw ConfigError(f.path("statistic_category"), "\"" + std::string(stat_category_key(cat)) +
                                                            "\" cannot be computed with e2e_dump_settings.stat_calc_mode \"device\" (only max, min, avg, l2norm)");

  int64_t debug = f.integer("op_debug_mode", 0, 4).value_or(0);
  if (debug == 1 || debug == 2) debug = 3;
  c.overflow_number = static_cast<uint32_t>(f.integer("overflow_number", 0, UINT32_MAX).value_or(0));
  f.warn_unknown(&c.warnings);

  c.dump_all_ops = dump_mode == 0;
  c.dump_marked_only = dump_mode == 2;
  if (dump_mode == 1 && c.kernels.empty())
    throw ConfigError(f.path("kernels"), "is empty, but common_dump_settings.dump_mode 1 dumps only the kernels listed there");
  if (debug != 0 && dump_mode != 0) {
    c.warnings.push_back("common_dump_settings.op_debug_mode " + std::to_string(debug) +
                         " forces common_dump_settings.dump_mode 0 (was " + std::to_string(dump_mode) + ")");
    c.dump_all_ops = true;
    c.dump_marked_only = false;
  }
  if (debug == 3) {
    c.scene = Scene::Overflow;
    if (c.io != IoSelect::All)
      c.warnings.push_back("common_dump_settings.op_debug_mode 3 forces common_dump_settings.input_output 0");
    c.io = IoSelect::All;
  } else if (debug == 4) {
    c.scene = Scene::ExceptionBrief;
    c.io = IoSelect::Input;  // MindSpore's exception dump keeps the inputs only
  }

  // path: absolute, letters/digits/'-'/'_'/'/'; empty or missing: $MS_DIAGNOSTIC_DATA_PATH/debug_dump.
  const std::string path = f.string("path").value_or("");
  if (path.empty()) {
    auto diag = options.env("MS_DIAGNOSTIC_DATA_PATH");
    if (!diag || diag->empty())
      throw ConfigError(f.path("path"), "is empty and MS_DIAGNOSTIC_DATA_PATH is not set; give an absolute path or set the variable");
    c.dump_path = resolve_path(*diag + "/debug_dump", "environment MS_DIAGNOSTIC_DATA_PATH", options);
    c.dump_path_origin = "MS_DIAGNOSTIC_DATA_PATH";
  } else {
    if (path.front() != '/')
      throw ConfigError(f.path("path"), "\"" + path + "\" must be an absolute path (MindSpore rule)");
    if (!only_chars(path, "-_/"))
      throw ConfigError(f.path("path"), "\"" + path + "\" may hold only letters, digits, '-', '_' and '/'");
    c.dump_path = resolve_path(path, f.path("path"), options);
    c.dump_path_origin = "common_dump_settings.path";
  }
}

}  // namespace opdump::config_detail
