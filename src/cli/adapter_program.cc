// The programs of the PyTorch adapter's side (opdump_demo, opdump_replay): found beside this
// binary, and run in place of it or as a child.
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "commands.h"
#include "opdump/error.h"

namespace opdump::cli {
namespace {
std::vector<std::string> command_line_;
}

void remember_command_line(int argc, char** argv) { command_line_.assign(argv, argv + argc); }
const std::vector<std::string>& command_line() { return command_line_; }

std::string adapter_program(const std::string& name) {
  std::error_code ec;
  auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) return "";
  auto program = self.parent_path() / name;
  return std::filesystem::exists(program, ec) ? program.string() : "";
}

void exec_adapter_program(const std::string& program, std::vector<std::string> args) {
  std::vector<char*> argv = {const_cast<char*>(program.c_str())};
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  ::execv(program.c_str(), argv.data());
  throw Error("cannot run " + program + ": " + std::strerror(errno));
}

int run_adapter_program(const std::string& program, std::vector<std::string> args) {
  std::vector<char*> argv = {const_cast<char*>(program.c_str())};
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::fflush(nullptr);
  const pid_t child = ::fork();
  if (child < 0) throw Error("cannot run " + program + ": " + std::strerror(errno));
  if (child == 0) {
    ::execv(program.c_str(), argv.data());
    ::_exit(127);
  }
  int status = 0;
  while (::waitpid(child, &status, 0) < 0)
    if (errno != EINTR) throw Error("cannot wait for " + program + ": " + std::strerror(errno));
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

}  // namespace opdump::cli
