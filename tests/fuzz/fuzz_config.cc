// libFuzzer target: the config parser (all three dialects, opdump options, selection specs).
#include <cstddef>
#include <cstdint>
#include <string>

#include "config/config.h"
#include "opdump/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  opdump::ParseOptions options;
  options.env = [](const std::string& name) -> std::optional<std::string> {
    if (name == "HOME") return std::string("/home/fuzz");
    return std::nullopt;
  };
  options.cwd = "/fuzz";
  try {
    opdump::DumpConfig c = opdump::parse_config(std::string(reinterpret_cast<const char*>(data), size), "fuzz", options);
    (void)opdump::describe_config(c);
    (void)opdump::config_to_json(c);
  } catch (const opdump::Error&) {
    // a clear error is the expected outcome for bad input
  }
  return 0;
}
