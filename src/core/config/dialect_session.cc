// The CANN Data Dump guide's session options as a flat object: enable_dump, dump_path, dump_step, dump_mode.
#include "config_internal.h"
#include "opdump/error.h"

namespace opdump::config_detail {

void parse_session(const json& doc, DumpConfig& c, const ParseOptions& options) {
  Fields f(doc, "", {"enable_dump", "dump_path", "dump_step", "dump_mode", "opdump"});
  c.layout = Layout::Ascend;
  c.file_format = FileFormat::Npy;
  c.enabled = f.boolean("enable_dump").value_or(false);
  if (auto v = f.string("dump_step")) c.iterations = IterationSet::parse(*v, f.path("dump_step"));
  if (auto v = f.choice("dump_mode", {"input", "output", "all"}))
    c.io = *v == "input" ? IoSelect::Input : *v == "output" ? IoSelect::Output : IoSelect::All;
  auto path = f.string("dump_path");
  if (c.enabled && !path) throw ConfigError("dump_path", "is required when enable_dump is true");
  if (path) {
    c.dump_path = resolve_path(*path, "dump_path", options);
    c.dump_path_origin = "dump_path";
  }
  c.op_switch = true;  // a session dumps every op it runs
  f.warn_unknown(&c.warnings);
}

}  // namespace opdump::config_detail
