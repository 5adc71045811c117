// msprobe's dump.json records each API's Python call (input_args, input_kwargs); replay takes
// aten calls (arguments.h). This turns the one into the other, by the rules of
// data/msprobe_apis.json (docs/replay.md, "msprobe dumps").
#pragma once
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace opdump::replay {

// The args-file spec (the format kernel_args.cc writes, plus "output_dtypes": each output's dtype as
// msprobe recorded it) of each forward API call of `dump_json`, by sanitized API name. A call that is
// not one aten operator call gets {"unreplayable": why}. Throws opdump::Error when the file cannot be
// read or parsed.
std::map<std::string, nlohmann::json> msprobe_kernel_args(const std::string& dump_json);

}  // namespace opdump::replay
