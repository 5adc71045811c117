// placeholders.csv: the slots of a dump folder that hold no data, and why. A placeholder is
// written as an empty float32 tensor of shape (0,) (npy, bin or a statistic.csv row), so that slot
// numbers stay aligned with the op's tensors; this file tells it apart from a real empty tensor.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <tuple>

#include "layout/layout.h"

namespace opdump {

constexpr const char* kPlaceholdersFile = "placeholders.csv";

// How the reasons a reader acts on begin: the replay gives an op an undefined tensor where one was,
// and an out= buffer a fresh tensor for the kernel to resize.
inline constexpr std::string_view kUndefinedPlaceholder = "undefined tensor";
inline constexpr std::string_view kOutBufferPlaceholder = "out= buffer";

// "Op Type,Op Name,Task ID,Stream ID,Timestamp,IO,Slot,Reason\n"
std::string placeholders_csv_header();
std::string placeholders_csv_row(const OpIdentity& op, IoKind io, uint32_t slot, const std::string& reason);

// (sanitized op name, task id, io, slot) -> reason.
using PlaceholderKey = std::tuple<std::string, uint64_t, IoKind, uint32_t>;
using Placeholders = std::map<PlaceholderKey, std::string>;
// The key of a slot (the op name sanitized, as file names hold it).
PlaceholderKey placeholder_key(const std::string& op_name, uint64_t task_id, IoKind io, uint32_t slot);
// Why the slot holds no data; "" when it is not listed.
std::string placeholder_reason(const Placeholders& placeholders, const std::string& op_name, uint64_t task_id, IoKind io,
                               uint32_t slot);
// The placeholders listed in `folder` (none when the file is absent). Throws FormatError naming
// the file when it is there but is not a placeholders.csv.
Placeholders read_placeholders(const std::string& folder);

}  // namespace opdump
