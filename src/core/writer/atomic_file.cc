// Whole-file writes that never leave a truncated file under the final name.
#include <fcntl.h>
#include <sys/uio.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <string>

#include "opdump/error.h"
#include "writer/atomic_file.h"

namespace opdump {
namespace {

std::atomic<uint64_t> g_temp_counter{0};

// Writes every byte of the two pieces, retrying short writes and EINTR.
int write_all(int fd, const void* a, size_t na, const void* b, size_t nb) {
  struct iovec iov[2] = {{const_cast<void*>(a), na}, {const_cast<void*>(b), nb}};
  int idx = 0;
  while (idx < 2) {
    if (iov[idx].iov_len == 0) {
      ++idx;
      continue;
    }
    // Cap each call: Linux writes at most ~2 GiB per call anyway.
    struct iovec chunk[2];
    int cnt = 0;
    for (int k = idx; k < 2; ++k) {
      chunk[cnt] = iov[k];
      if (chunk[cnt].iov_len > (size_t(1) << 30)) chunk[cnt].iov_len = size_t(1) << 30;
      ++cnt;
    }
    ssize_t n = ::writev(fd, chunk, cnt);
    if (n < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    if (n == 0) return ENOSPC;
    size_t left = static_cast<size_t>(n);
    while (left > 0 && idx < 2) {
      size_t take = std::min(left, iov[idx].iov_len);
      iov[idx].iov_base = static_cast<char*>(iov[idx].iov_base) + take;
      iov[idx].iov_len -= take;
      left -= take;
      if (iov[idx].iov_len == 0) ++idx;
    }
  }
  return 0;
}

}  // namespace

void append_whole(int fd, const std::string& path, const std::string& text) {
  const off_t before = ::lseek(fd, 0, SEEK_END);
  ssize_t n;
  do {
    n = ::write(fd, text.data(), text.size());
  } while (n < 0 && errno == EINTR);
  if (n == static_cast<ssize_t>(text.size())) return;
  const int err = n < 0 ? errno : ENOSPC;
  if (n > 0 && before >= 0 && ::ftruncate(fd, before) != 0) { /* nothing more can be done */ }
  throw IoError(path, "cannot append", err);
}

void append_to_file(const std::string& path, const std::string& text) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0640);
  if (fd < 0) throw IoError(path, "cannot open", errno);
  try {
    append_whole(fd, path, text);
  } catch (...) {
    ::close(fd);
    throw;
  }
  ::close(fd);
}

std::string temp_path_for(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  const std::string dir = slash == std::string::npos ? "." : path.substr(0, slash);
  return dir + "/.opdump-tmp." + std::to_string(::getpid()) + "." +
         std::to_string(g_temp_counter.fetch_add(1, std::memory_order_relaxed));
}

AtomicFileWriter::AtomicFileWriter(std::string path) : path_(std::move(path)), temp_(temp_path_for(path_)) {
  fd_ = ::open(temp_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0640);
  if (fd_ < 0) throw IoError(path_, "cannot create temporary file", errno);
}

AtomicFileWriter::~AtomicFileWriter() {
  if (fd_ >= 0) {
    ::close(fd_);
    ::unlink(temp_.c_str());
  }
}

void AtomicFileWriter::flush() {
  if (buffer_.empty()) return;
  int err = write_all(fd_, buffer_.data(), buffer_.size(), nullptr, 0);
  buffer_.clear();
  if (err) throw IoError(path_, "cannot write", err);
}

void AtomicFileWriter::write(const void* data, size_t size) {
  if (fd_ < 0) throw IoError(path_, "write after commit", 0);
  if (buffer_.size() + size > (size_t(1) << 20)) flush();
  if (size > (size_t(1) << 20)) {
    int err = write_all(fd_, data, size, nullptr, 0);
    if (err) throw IoError(path_, "cannot write", err);
    return;
  }
  buffer_.append(static_cast<const char*>(data), size);
}

void AtomicFileWriter::commit() {
  flush();
  int fd = fd_;
  fd_ = -1;
  if (::close(fd) != 0) {
    int err = errno;
    ::unlink(temp_.c_str());
    throw IoError(path_, "cannot write", err);
  }
  if (::rename(temp_.c_str(), path_.c_str()) != 0) {
    int err = errno;
    ::unlink(temp_.c_str());
    throw IoError(path_, "cannot rename temporary file into place", err);
  }
}

namespace {
// A complete temporary file beside `path` holding header then payload; its name is returned.
std::string write_temporary(const std::string& path, const void* header, size_t header_size, const void* payload,
                            size_t payload_size) {
  const std::string temp = temp_path_for(path);
  int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0640);
  if (fd < 0) throw IoError(path, "cannot create temporary file", errno);
  int err = write_all(fd, header, header_size, payload, payload_size);
  if (::close(fd) != 0 && err == 0) err = errno;
  if (err != 0) {
    ::unlink(temp.c_str());
    throw IoError(path, "cannot write", err);
  }
  return temp;
}
}  // namespace

void write_file_atomic(const std::string& path, const void* header, size_t header_size, const void* payload,
                       size_t payload_size) {
  const std::string temp = write_temporary(path, header, header_size, payload, payload_size);
  if (::rename(temp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    ::unlink(temp.c_str());
    throw IoError(path, "cannot rename temporary file into place", err);
  }
}

bool create_file_whole(const std::string& path, const std::string& header, const std::string& payload) {
  const std::string temp = write_temporary(path, header.data(), header.size(), payload.data(), payload.size());
  // link(), unlike rename(), never replaces a file that appeared meanwhile.
  const int err = ::link(temp.c_str(), path.c_str()) == 0 ? 0 : errno;
  ::unlink(temp.c_str());
  if (err == EEXIST) return false;
  if (err != 0) throw IoError(path, "cannot link temporary file into place", err);
  return true;
}

}  // namespace opdump
