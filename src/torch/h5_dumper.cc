// opdump::pt::H5Dumper (opdump/torch.h): the torch_npu 1.5 dumper's rules, once, for C++ and Python.
#include <sys/stat.h>

#include <chrono>
#include <ctime>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "load_mode.h"
#include "opdump/torch.h"
#include "runtime/runtime_interface.h"
#include "util/log.h"

namespace opdump::pt {
namespace {

bool ends_with_h5(const std::string& p) { return p.size() > 3 && p.compare(p.size() - 3, 3, ".h5") == 0; }

bool is_folder(const std::string& p) {
  struct stat st;
  return ::stat(p.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

// YYYYmmdd_HHMMSS.ffffff.h5, as the guide's tool named the file in a dump_path folder.
std::string timestamped_name() {
  const auto now = std::chrono::system_clock::now();
  const std::time_t seconds = std::chrono::system_clock::to_time_t(now);
  const auto micros =
      std::chrono::duration_cast<std::chrono::microseconds>(now.time_since_epoch()).count() % 1000000;
  std::tm tm{};
  localtime_r(&seconds, &tm);
  char text[64];
  std::snprintf(text, sizeof text, "%04d%02d%02d_%02d%02d%02d.%06lld.h5", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                tm.tm_hour, tm.tm_min, tm.tm_sec, static_cast<long long>(micros));
  return text;
}

[[noreturn]] void bad(const std::string& message) { throw std::invalid_argument("opdump.dumper: " + message); }

}  // namespace

H5DumpPlan plan_h5_dump(const H5DumperOptions& o) {
  std::vector<std::string> modes;
  if (o.use_dump) modes.push_back("use_dump");
  if (o.use_load) modes.push_back("use_load");
  if (o.check_overflow) modes.push_back("check_overflow");
  if (modes.size() != 1) {
    std::string got;
    for (const auto& m : modes) got += (got.empty() ? "" : ", ") + m;
    bad("exactly one of use_dump, use_load and check_overflow must be True (got " + (got.empty() ? "none" : got) + ")");
  }
  if (o.load_with_acl_dump && !o.use_load) bad("load_with_acl_dump applies to use_load=True only");
  if (o.dump_path.empty()) bad("dump_path is required (a folder, or a path ending in .h5)");
  H5DumpPlan plan;
  std::string path = std::filesystem::absolute(o.dump_path).lexically_normal().string();
  if (!ends_with_h5(path)) {
    std::error_code ec;
    if (std::filesystem::exists(path, ec) && !is_folder(path))
      bad("dump_path \"" + path + "\" is a file that does not end in .h5");
    path = (std::filesystem::path(path) / timestamped_name()).string();
  } else if (is_folder(path)) {
    bad("dump_path \"" + path + "\" is a folder, not an .h5 file");
  }
  plan.h5_path = path;
  plan.records_path = path.substr(0, path.size() - 3) + ".opdump";
  if (o.use_load) {
    if (o.load_file_path.empty()) bad("use_load=True needs load_file_path (the .h5 file to re-run)");
    const std::string load = std::filesystem::absolute(o.load_file_path).lexically_normal().string();
    std::error_code ec;
    if (!ends_with_h5(load) || !std::filesystem::is_regular_file(load, ec))
      bad("load_file_path \"" + load + "\" is not an existing .h5 file");
    if (load == plan.h5_path) bad("load_file_path and dump_path name the same file");
    if (o.load_with_acl_dump) {  // the guide's tool read ./acl.json
      plan.acl_config = std::filesystem::absolute("acl.json").string();
      if (!std::filesystem::is_regular_file(plan.acl_config, ec))
        bad("load_with_acl_dump=True needs an acl.json in the working directory (" + plan.acl_config + ")");
    }
    plan.load_file = load;
    return plan;
  }
  if (!o.load_file_path.empty()) bad("load_file_path applies to use_load=True only");
  if (o.level != "api" && o.level != "kernel" && o.level != "all") bad("level \"" + o.level + "\" is not api, kernel or all");
  nlohmann::json dump = {{"dump_path", plan.records_path}, {"dump_list", nlohmann::json::array()}};
  if (o.check_overflow) {
    dump["dump_debug"] = "on";
  } else {
    dump["dump_op_switch"] = "on";
    dump["dump_mode"] = "all";
  }
  nlohmann::json own = {{"check_fp16_range", o.check_fp16_range}, {"level", o.level}, {"h5_file", plan.h5_path}};
  if (o.overflow_number) own["overflow_number"] = o.overflow_number;
  plan.config_json = nlohmann::json{{"dump", dump}, {"opdump", own}}.dump();
  return plan;
}

H5Dumper::H5Dumper(const H5DumperOptions& options) : plan_(plan_h5_dump(options)) {
  install();
  if (!plan_.load_file.empty()) {
    std::filesystem::create_directories(std::filesystem::path(plan_.h5_path).parent_path());
    start_load(plan_.load_file, plan_.h5_path, plan_.acl_config);
    load_ = true;
  } else {
    runtime_interface().set_dump_config(parse_config(plan_.config_json, "opdump::pt::H5Dumper"));
  }
  running_ = true;
}

H5Dumper::~H5Dumper() {
  try {
    stop();
  } catch (const std::exception& e) {
    log_error(std::string("ending the .h5 dumper failed: ") + e.what());
  }
}

WriterReport H5Dumper::stop() {
  if (!running_) return report_;
  running_ = false;
  if (!load_) return report_ = runtime_interface().finalize_dump();
  const LoadReport r = stop_load();
  report_.files_written = r.matched;
  if (r.failed) report_.first_error = r.problems.empty() ? "a stored call failed to run" : r.problems.front();
  if (!r.unmatched.empty())
    report_.warnings.push_back(std::to_string(r.unmatched.size()) + " of " + std::to_string(r.stored) +
                               " stored op calls matched no op of this run (first: " + r.unmatched.front() + ")");
  for (const auto& p : r.problems) report_.warnings.push_back(p);
  for (const auto& w : report_.warnings) log_warning(w);
  return report_;
}

}  // namespace opdump::pt
