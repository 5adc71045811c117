// Folder layout and file naming as CANN and MindSpore write them:
//  Ascend:        {dump_path}/{time}/{device_id}/{model_name}/{model_id}/{data_index}/{op_type}.{op_name}.{task_id}.{stream_id}.{timestamp}
//  single op:     {dump_path}/{time}/{device_id}/{dump file}
//  MindSpore:     {path}/rank_{id}/{net_name}/{graph_id}/{iteration}/{op_type}.{op_name}.{task_id}.{stream_id}.{timestamp}.{input|output}.{slot}.{format}.npy
#pragma once
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>

#include "util/path.h"  // join_path, make_dirs: what layouts are made of

namespace opdump {

// '.', '/', '\\' and spaces become '_' (CANN's and MindSpore's rule); control characters, NUL and bytes
// that would let a name escape its folder become '_' too. Never returns "", "." or "..".
std::string sanitize_name(std::string_view name);
// Decimal digits only (1 to 19 of them) as a number; false for anything else (a sign, a space, "").
bool parse_decimal(std::string_view s, uint64_t* out);
// sanitize_name for a folder (a model name): names over 200 bytes keep their first 180 and a
// hash of the whole name, so that they fit NAME_MAX and stay distinct and stable across runs.
std::string folder_name(std::string_view name);

// "YYYYMMDDHHMMSS" in local time.
std::string dump_time_string(int64_t unix_seconds);
// Microseconds since the epoch.
uint64_t now_microseconds();

enum class IoKind { Input, Output };
std::string_view to_string(IoKind io);

// Identity of one operator execution.
struct OpIdentity {
  std::string op_type;
  std::string op_name;
  uint64_t task_id = 0;
  uint64_t stream_id = 0;
  uint64_t timestamp = 0;  // microseconds
};

// {op_type}.{op_name}.{task_id}.{stream_id}.{timestamp} with names sanitized.
std::string ascend_file_name(const OpIdentity& op);
// ...{timestamp}.{input|output}.{slot}.{format}.npy
std::string mindspore_file_name(const OpIdentity& op, IoKind io, uint32_t slot,
                                 std::string_view format = "DefaultFormat");

// The parts of a dump file name, recovered from
// {op_type}.{op_name}.{task_id}.{stream_id}.{timestamp}[.{input|output}.{slot}.{format}[.{dtype}].npy]
// (names were sanitized when written, so '.' separates fields). Also CANN's other forms: no stream
// id ({op_type}.{op_name}.{task_id}.{timestamp}, older toolkits), and up to four numeric fields after
// the timestamp in FFTS+ dumps (the thread and slice of an sgt-split op: ...{timestamp}.4.1.0.0).
struct ParsedDumpName {
  OpIdentity op;
  bool has_io = false;  // an npy file of one tensor
  IoKind io = IoKind::Output;
  uint32_t slot = 0;
  std::string format;
  std::string slice;  // FFTS+ fields after the timestamp ("4.1.0.0"); "" in the plain form
};
bool parse_dump_file_name(std::string_view file_name, ParsedDumpName* out);

// A file name shortened to at most max_bytes, the same in every run: its longest '.'-separated
// field (the op name) becomes its first bytes, '~' and a hash of the whole field, so that the
// name keeps the fields readers parse ({op_type}.{op name}.{task}...).
std::string shortened_file_name(const std::string& name, size_t max_bytes);

// Keeps file names under the OS limit (255 bytes): a longer name is replaced by
// shortened_file_name() and `generated,original` is appended to mapping.csv in the same folder
// before the file is written (MindSpore's mapping.csv; readers resolve names through it). A
// counter joins the op name on collision, so names are unique under any number of threads.
class NameMapper {
 public:
  static constexpr size_t kMaxNameBytes = 255;
  // Returns the name to use inside `dir` for `name` (unchanged when short enough).
  std::string map(const std::string& dir, const std::string& name);
  // How many names were replaced so far.
  uint64_t replaced() const;

 private:
  mutable std::mutex mutex_;
  // dir -> (original -> generated) and the set of generated names in use per dir.
  std::unordered_map<std::string, std::unordered_map<std::string, std::string>> by_dir_;
  std::unordered_map<std::string, std::unordered_map<std::string, std::string>> taken_;
  uint64_t replaced_ = 0;
};

}  // namespace opdump
