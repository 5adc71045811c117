// Reading whole dump files as fast as the disk and the page cache allow: small files with one
// read() into memory (a map and unmap per file cost more than the copy: dumps of big models hold
// hundreds of thousands of small tensors), large ones mapped (compare/read_ahead.h has them read
// into the page cache ahead of time).
#pragma once
#include <cstddef>
#include <memory>
#include <string>

#include "util/tensor.h"
#include "opdump/api.h"

namespace opdump {

// Files up to this size are read, larger ones mapped.
inline constexpr size_t kReadWholeBelow = size_t(1) << 20;

// The whole file. Throws IoError naming the file (missing, unreadable, not a regular file).
std::shared_ptr<const Buffer> read_file(const std::string& path);

// The first `max_bytes` bytes (fewer when the file is shorter); *file_size gets the file's size.
std::string read_file_prefix(const std::string& path, size_t max_bytes, uint64_t* file_size);

// Text files a dump or the user names (csv, json, graphs): at most this many bytes.
inline constexpr uint64_t kMaxTextBytes = uint64_t(2) << 30;
// A whole text file. Only regular files are read, opened without blocking (a named pipe or a
// device under a dump's file name is an error, not a hang or an endless read); a file over
// `max_bytes` is a FormatError. Throws IoError naming the file.
OPDUMP_ADAPTER_API std::string read_text_file(const std::string& path, uint64_t max_bytes = kMaxTextBytes);
// The same for a file that may be absent: "" when there is nothing at `path`.
std::string read_text_file_if_present(const std::string& path, uint64_t max_bytes = kMaxTextBytes);

}  // namespace opdump
