// HDF5 on files opdump did not write, in child processes (h5_isolation.h).
#include "format/h5_isolation.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "format/h5_file.h"
#include "opdump/error.h"

// Sanitizer builds only: a fuzzer's death callback must not run in a reading child.
extern "C" void __sanitizer_set_death_callback(void (*)(void)) __attribute__((weak));

namespace opdump::h5 {
namespace {

// Seconds a reading child may go without sending anything (OPDUMP_H5_READ_TIMEOUT; default 300).
int read_timeout_seconds() {
  const char* v = std::getenv("OPDUMP_H5_READ_TIMEOUT");
  if (!v || !*v) return 300;
  char* end = nullptr;
  const long s = std::strtol(v, &end, 10);
  return *end || s < 1 || s > 86400 ? 300 : static_cast<int>(s);
}

bool write_all(int fd, const char* data, size_t size) {
  while (size) {
    // send() on a socket: a reader that died is an error here, not a SIGPIPE for the whole process
    const ssize_t n = ::send(fd, data, size, MSG_NOSIGNAL);
    const ssize_t m = n < 0 && errno == ENOTSOCK ? ::write(fd, data, size) : n;
    if (m < 0 && errno == EINTR) continue;
    if (m <= 0) return false;
    data += m;
    size -= static_cast<size_t>(m);
  }
  return true;
}

// Appends `size` bytes from `fd` to `out` as they come (memory grows with what arrived, whatever a
// broken child announced). false at the end of the stream, on an error, or when nothing came for
// `limit_ms` (then *stalled); limit_ms < 0 waits as long as it takes.
bool read_into(int fd, std::string& out, size_t size, int limit_ms, bool* stalled) {
  char buffer[1 << 16];
  while (size) {
    if (limit_ms >= 0) {
      pollfd p{fd, POLLIN, 0};
      const int ready = ::poll(&p, 1, limit_ms);
      if (ready < 0 && errno == EINTR) continue;
      if (ready == 0) *stalled = true;
      if (ready <= 0) return false;
    }
    const ssize_t n = ::read(fd, buffer, std::min(size, sizeof buffer));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    out.append(buffer, static_cast<size_t>(n));
    size -= static_cast<size_t>(n);
  }
  return true;
}

void enter_child() {
  if (__sanitizer_set_death_callback) __sanitizer_set_death_callback(nullptr);  // a fuzzer's: the parent reports
}

// A child that ended (or was ended) without an answer, as the error its caller gets.
[[noreturn]] void child_failed(const std::string& file, int status, bool stalled, int limit_ms) {
  if (stalled)
    throw FormatError(file, "HDF5's library made no progress reading it for " + std::to_string(limit_ms / 1000) +
                                " s (OPDUMP_H5_READ_TIMEOUT): the file is corrupt or hostile");
  if (WIFSIGNALED(status))
    throw FormatError(file, std::string("HDF5's library failed reading it (") + strsignal(WTERMSIG(status)) +
                                "): the file is corrupt or hostile");
  throw FormatError(file, "HDF5's library failed reading it (its reader exited with " +
                              std::to_string(WIFEXITED(status) ? WEXITSTATUS(status) : -1) +
                              "): the file is corrupt or hostile");
}

// What a child answered: 'O' and the result, or 'E' and the message of the error it caught.
std::string answer(const std::string& file, const std::string& out) {
  if (out[0] == 'E') {
    std::string message = out.substr(1);
    const std::string prefix = file + ": ";
    if (message.rfind(prefix, 0) == 0) message = message.substr(prefix.size());
    throw FormatError(file, message);
  }
  return out.substr(1);
}

// Runs `work` in the child and frames its answer as answer() reads it.
std::string run_in_child(const std::function<std::string()>& work) {
  std::string out = "O";
  try {
    out += work();
  } catch (const std::exception& e) {
    out = std::string("E") + e.what();
  }
  return out;
}

int wait_for(pid_t pid) {
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return status;
}

}  // namespace

std::string isolated(const std::string& file, const std::function<std::string()>& work) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) throw Error(file + ": cannot create a pipe: " + std::strerror(errno));
  const pid_t child = fork_outside_library();
  if (child < 0) {
    const int err = errno;
    ::close(fds[0]);
    ::close(fds[1]);
    throw Error(file + ": cannot start a process to read it: " + std::strerror(err));
  }
  if (child == 0) {
    ::close(fds[0]);
    enter_child();
    const std::string out = run_in_child(work);
    ::_exit(write_all(fds[1], out.data(), out.size()) ? 0 : 3);  // no exit handlers: they belong to the parent
  }
  ::close(fds[1]);
  std::string out;
  bool stalled = false;
  const int limit_ms = read_timeout_seconds() * 1000;
  read_into(fds[0], out, SIZE_MAX, limit_ms, &stalled);  // to the end of the stream
  ::close(fds[0]);
  if (stalled) ::kill(child, SIGKILL);  // a library caught in a loop by the file
  const int status = wait_for(child);
  if (stalled || !WIFEXITED(status) || WEXITSTATUS(status) != 0 || out.empty())
    child_failed(file, status, stalled, limit_ms);
  return answer(file, out);
}

IsolatedReaders::IsolatedReaders(std::string file, std::function<std::string(const std::string&)> serve,
                                 unsigned max_children)
    : file_(std::move(file)), serve_(std::move(serve)), max_children_(std::max(1u, max_children)) {}

IsolatedReaders::~IsolatedReaders() {
  std::lock_guard<std::mutex> lock(mutex_);
  // Killed, not asked to end: a child started later holds a copy of each older child's socket, so
  // closing ours is no end of stream for it.
  for (const Child& c : idle_) {
    ::close(c.fd);
    ::kill(c.pid, SIGKILL);
    wait_for(c.pid);
  }
}

unsigned IsolatedReaders::started() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return started_;
}

IsolatedReaders::Child IsolatedReaders::start() {
  int fds[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0)
    throw Error(file_ + ": cannot create a socket to a reading process: " + std::strerror(errno));
  const pid_t pid = fork_outside_library();
  if (pid < 0) {
    const int err = errno;
    ::close(fds[0]);
    ::close(fds[1]);
    throw Error(file_ + ": cannot start a process to read it: " + std::strerror(err));
  }
  if (pid == 0) {  // requests: [size: 8 bytes][request]; answers: [size: 8 bytes][answer()'s form]
    ::close(fds[0]);
    enter_child();
    for (;;) {
      std::string head, request;
      bool stalled = false;
      uint64_t size = 0;
      if (!read_into(fds[1], head, 8, -1, &stalled)) ::_exit(0);  // the parent is gone or done
      std::memcpy(&size, head.data(), 8);
      if (!read_into(fds[1], request, size, -1, &stalled)) ::_exit(0);
      const std::string out = run_in_child([&] { return serve_(request); });
      const uint64_t n = out.size();
      if (!write_all(fds[1], reinterpret_cast<const char*>(&n), 8) || !write_all(fds[1], out.data(), out.size()))
        ::_exit(3);
    }
  }
  ::close(fds[1]);
  std::lock_guard<std::mutex> lock(mutex_);
  ++started_;
  return Child{pid, fds[0]};
}

std::string IsolatedReaders::call(const std::string& request) {
  Child child;
  {
    std::unique_lock<std::mutex> lock(mutex_);
    idle_changed_.wait(lock, [&] { return !idle_.empty() || running_ < max_children_; });
    if (!idle_.empty()) {
      child = idle_.back();
      idle_.pop_back();
    } else {
      ++running_;
    }
  }
  auto release = [&](bool keep) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (keep) idle_.push_back(child);
      else --running_;
    }
    idle_changed_.notify_one();
  };
  if (child.pid < 0) {
    try {
      child = start();
    } catch (...) {
      release(false);
      throw;
    }
  }
  const int limit_ms = read_timeout_seconds() * 1000;
  const uint64_t size = request.size();
  std::string head, out;
  bool stalled = false;
  bool ok = write_all(child.fd, reinterpret_cast<const char*>(&size), 8) &&
            write_all(child.fd, request.data(), request.size()) && read_into(child.fd, head, 8, limit_ms, &stalled);
  if (ok) {
    uint64_t n = 0;
    std::memcpy(&n, head.data(), 8);
    ok = n > 0 && read_into(child.fd, out, n, limit_ms, &stalled) && (out[0] == 'O' || out[0] == 'E');
  }
  if (!ok) {  // crashed, stalled or talking nonsense: ended, and the next request starts another
    ::close(child.fd);
    ::kill(child.pid, SIGKILL);
    const int status = wait_for(child.pid);
    release(false);
    child_failed(file_, status, stalled, limit_ms);
  }
  release(true);
  return answer(file_, out);
}

}  // namespace opdump::h5
