// Paths as opdump's files use them: POSIX, '/'-separated strings (dump layouts are spelled that way
// in every document opdump follows), and the one temporary-name prefix readers skip.
#pragma once
#include <string>
#include <string_view>

namespace opdump {

// "a/b/c.npy" -> "a/b"; "c.npy" -> "."; "/c.npy" -> "/".
std::string folder_of(const std::string& path);
// "a/b/c.npy" -> "c.npy".
std::string base_name(const std::string& path);
// `relative` below `root`, refusing what would leave it (absolute paths, "..", ".", empty or NUL
// components): throws opdump::Error naming both.
std::string join_path(const std::string& root, std::string_view relative);
// mkdir -p (mode 0750); throws IoError naming the folder that cannot be made, or a file in its way.
void make_dirs(const std::string& path);

// Files opdump writes under a temporary name start with this (".opdump-tmp.PID.N"); readers of a
// dump skip them.
inline constexpr std::string_view kTemporaryPrefix = ".opdump-tmp.";
bool is_temporary_name(const std::string& file_name);

}  // namespace opdump
