// Internal: pieces shared by the config dialects.
#pragma once
#include <string>

#include "json_fields.h"
#include "config/config.h"

namespace opdump::config_detail {

// Expands $VAR and ${VAR} (an unset variable is an error naming `field`), makes a relative
// path absolute against `cwd`, and drops trailing slashes.
std::string resolve_path(const std::string& raw, const std::string& field, const ParseOptions& options);

// The dialect parsers fill `config` from the whole document.
void parse_acl(const json& doc, DumpConfig& config, const ParseOptions& options);
void parse_mindspore(const json& doc, DumpConfig& config, const ParseOptions& options);
void parse_session(const json& doc, DumpConfig& config, const ParseOptions& options);
void parse_msprobe(const json& doc, DumpConfig& config, const ParseOptions& options);

// The top-level "opdump" object, accepted in every dialect.
void parse_opdump_options(const json& doc, DumpConfig& config, const ParseOptions& options);

// Limits that keep hostile configs bounded.
inline constexpr size_t kMaxListEntries = 100000;

}  // namespace opdump::config_detail
