#include "util/file_read.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include "opdump/error.h"

namespace opdump {
namespace {

// An open file descriptor, closed on every path.
struct Fd {
  int fd;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

uint64_t regular_file_size(int fd, const std::string& path) {
  struct stat st;
  if (::fstat(fd, &st) != 0) throw IoError(path, "cannot stat", errno);
  if (!S_ISREG(st.st_mode)) throw IoError(path, "not a regular file", 0);
  return static_cast<uint64_t>(st.st_size);
}

// Reads exactly `size` bytes at `offset` (short reads continued; a file that shrank is an error).
void read_exactly(int fd, const std::string& path, char* out, size_t size, uint64_t offset) {
  size_t done = 0;
  while (done < size) {
    const ssize_t n = ::pread(fd, out + done, size - done, static_cast<off_t>(offset + done));
    if (n < 0) {
      if (errno == EINTR) continue;
      throw IoError(path, "cannot read", errno);
    }
    if (n == 0) throw IoError(path, "file shrank while being read", 0);
    done += static_cast<size_t>(n);
  }
}

// O_NONBLOCK: opening a named pipe for reading would wait for a writer; regular files ignore it.
int open_for_reading(const std::string& path) { return ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK); }

}  // namespace

std::shared_ptr<const Buffer> read_file(const std::string& path) {
  Fd f{open_for_reading(path)};
  if (f.fd < 0) throw IoError(path, "cannot open", errno);
  const uint64_t size = regular_file_size(f.fd, path);
  if (size >= kReadWholeBelow) return std::make_shared<MappedFile>(path, /*populate=*/true);
  auto buffer = std::make_shared<HeapBuffer>(static_cast<size_t>(size));
  read_exactly(f.fd, path, reinterpret_cast<char*>(buffer->mutable_data()), static_cast<size_t>(size), 0);
  return buffer;
}

std::string read_file_prefix(const std::string& path, size_t max_bytes, uint64_t* file_size) {
  Fd f{open_for_reading(path)};
  if (f.fd < 0) throw IoError(path, "cannot open", errno);
  const uint64_t size = regular_file_size(f.fd, path);
  if (file_size) *file_size = size;
  std::string out(static_cast<size_t>(std::min<uint64_t>(size, max_bytes)), '\0');
  read_exactly(f.fd, path, out.data(), out.size(), 0);
  return out;
}

std::string read_text_file(const std::string& path, uint64_t max_bytes) {
  Fd f{open_for_reading(path)};
  if (f.fd < 0) throw IoError(path, "cannot open", errno);
  const uint64_t size = regular_file_size(f.fd, path);
  if (size > max_bytes)
    throw FormatError(path, "is " + std::to_string(size) + " bytes; at most " + std::to_string(max_bytes) + " are read");
  std::string out(static_cast<size_t>(size), '\0');
  read_exactly(f.fd, path, out.data(), out.size(), 0);
  return out;
}

std::string read_text_file_if_present(const std::string& path, uint64_t max_bytes) {
  struct stat st;
  if (::lstat(path.c_str(), &st) != 0 && errno == ENOENT) return "";
  return read_text_file(path, max_bytes);
}

}  // namespace opdump
