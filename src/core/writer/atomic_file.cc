// Whole-file writes that never leave a truncated file under the final name.
#include <fcntl.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>

#include "opdump/error.h"
#include "writer/atomic_file.h"

#include "util/path.h"

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

// Offsets, lengths and memory of O_DIRECT writes are multiples of this: a page suits every Linux file
// system that takes O_DIRECT.
constexpr size_t kDirectAlign = 4096;
// The aligned copy each writing thread makes the bytes pass through (header and payload are rarely
// aligned in memory, nor the payload in the file).
constexpr size_t kBounceSize = size_t(2) << 20;
// Set when a file system took the O_DIRECT flag and then refused an aligned write: not tried again.
std::atomic<bool> g_direct_refused{false};

struct FreeAligned {
  void operator()(uint8_t* p) const { std::free(p); }
};

// Bytes [offset, offset + n) of the file `header` then `payload`, into `out`.
void gather(const void* header, size_t header_size, const void* payload, size_t offset, size_t n, uint8_t* out) {
  if (offset < header_size) {
    const size_t take = std::min(n, header_size - offset);
    std::memcpy(out, static_cast<const uint8_t*>(header) + offset, take);
    out += take;
    n -= take;
    offset = header_size;
  }
  if (n) std::memcpy(out, static_cast<const uint8_t*>(payload) + (offset - header_size), n);
}

// Header then payload into a new, empty file: with Bypass the whole blocks past the page cache
// (O_DIRECT) from an aligned copy, the last partial block through the cache. 0 or an errno.
int write_file_bytes(int fd, const void* header, size_t header_size, const void* payload, size_t payload_size,
                     PageCache cache) {
  const size_t total = header_size + payload_size;
  if (cache == PageCache::Use || total < kDirectFrom || g_direct_refused.load(std::memory_order_relaxed))
    return write_all(fd, header, header_size, payload, payload_size);
  const int flags = ::fcntl(fd, F_GETFL);
  if (flags < 0 || ::fcntl(fd, F_SETFL, flags | O_DIRECT) != 0)  // e.g. a file system without O_DIRECT
    return write_all(fd, header, header_size, payload, payload_size);
  thread_local std::unique_ptr<uint8_t, FreeAligned> bounce(
      static_cast<uint8_t*>(std::aligned_alloc(kDirectAlign, kBounceSize)));
  if (!bounce) return ENOMEM;
  const size_t whole = total & ~(kDirectAlign - 1);
  size_t done = 0;
  while (done < whole) {
    const size_t n = std::min(kBounceSize, whole - done);
    gather(header, header_size, payload, done, n, bounce.get());
    const ssize_t w = ::write(fd, bounce.get(), n);
    if (w < 0 && errno == EINTR) continue;
    if (w < 0 && errno == EINVAL && done == 0) {  // took the flag, not the alignment
      g_direct_refused.store(true);
      break;
    }
    if (w < 0) return errno;
    if (w == 0) return ENOSPC;
    done += static_cast<size_t>(w);
    if (static_cast<size_t>(w) % kDirectAlign) break;  // a short write: the rest would be misaligned
  }
  if (::fcntl(fd, F_SETFL, flags) != 0) return errno;
  const auto* h = static_cast<const uint8_t*>(header);
  const auto* p = static_cast<const uint8_t*>(payload);
  if (done >= header_size) return write_all(fd, nullptr, 0, p + (done - header_size), total - done);
  return write_all(fd, h + done, header_size - done, payload, payload_size);
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

namespace {
std::atomic<bool> g_unnamed_files{true};

// A temporary name beside `path` (".opdump-tmp.PID.N": readers of a dump skip such names).
std::string temp_path_for(const std::string& path) {
  return folder_of(path) + "/" + std::string(kTemporaryPrefix) + std::to_string(::getpid()) + "." +
         std::to_string(g_temp_counter.fetch_add(1, std::memory_order_relaxed));
}

// An unnamed file in `path`'s folder (O_TMPFILE): it gets a name only once linked, so a killed process
// leaves nothing behind, and creating it takes no lock on the folder (a temporary name took the
// folder's lock twice: create, then rename; parallel writers of one folder waited on it). -1 where the
// kernel, the file system or /proc (which linking goes through) lacks it: then a named temporary is used.
int open_unnamed(const std::string& path) {
#ifdef O_TMPFILE
  static const bool proc_fds = ::access("/proc/self/fd", F_OK) == 0;
  if (!proc_fds || !g_unnamed_files.load(std::memory_order_relaxed)) return -1;
  return ::open(folder_of(path).c_str(), O_TMPFILE | O_WRONLY | O_CLOEXEC, 0640);
#else
  (void)path;
  return -1;
#endif
}

// Gives an unnamed file the name `path`; with `replace`, over a file already there (through a temporary
// name, as link() never replaces). 0, EEXIST (only without `replace`) or another errno.
int name_unnamed(int fd, const std::string& path, bool replace) {
  const std::string self = "/proc/self/fd/" + std::to_string(fd);
  if (::linkat(AT_FDCWD, self.c_str(), AT_FDCWD, path.c_str(), AT_SYMLINK_FOLLOW) == 0) return 0;
  if (errno != EEXIST || !replace) return errno;
  const std::string temp = temp_path_for(path);
  if (::linkat(AT_FDCWD, self.c_str(), AT_FDCWD, temp.c_str(), AT_SYMLINK_FOLLOW) != 0) return errno;
  if (::rename(temp.c_str(), path.c_str()) == 0) return 0;
  const int err = errno;
  ::unlink(temp.c_str());
  return err;
}
}  // namespace

void use_unnamed_files(bool on) { g_unnamed_files.store(on); }

AtomicFileWriter::AtomicFileWriter(std::string path) : path_(std::move(path)) {
  fd_ = open_unnamed(path_);
  if (fd_ >= 0) return;
  temp_ = temp_path_for(path_);
  fd_ = ::open(temp_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0640);
  if (fd_ < 0) throw IoError(path_, "cannot create temporary file", errno);
}

AtomicFileWriter::~AtomicFileWriter() {
  if (fd_ >= 0) {
    ::close(fd_);
    if (!temp_.empty()) ::unlink(temp_.c_str());
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
  if (temp_.empty()) {
    const int err = name_unnamed(fd_, path_, /*replace=*/true);
    ::close(fd_);
    fd_ = -1;
    if (err != 0) throw IoError(path_, "cannot link the written file into place", err);
    return;
  }
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
                            size_t payload_size, PageCache cache) {
  const std::string temp = temp_path_for(path);
  int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0640);
  if (fd < 0) throw IoError(path, "cannot create temporary file", errno);
  int err = write_file_bytes(fd, header, header_size, payload, payload_size, cache);
  if (::close(fd) != 0 && err == 0) err = errno;
  if (err != 0) {
    ::unlink(temp.c_str());
    throw IoError(path, "cannot write", err);
  }
  return temp;
}

// Header then payload into an unnamed file named `path` once complete: 0 done, EEXIST (`path` is
// there and `replace` is false), -1 when unnamed files are not available here; throws on other errors.
int write_unnamed(const std::string& path, const void* header, size_t header_size, const void* payload,
                  size_t payload_size, bool replace, PageCache cache) {
  const int fd = open_unnamed(path);
  if (fd < 0) return -1;
  int err = write_file_bytes(fd, header, header_size, payload, payload_size, cache);
  if (err == 0) err = name_unnamed(fd, path, replace);
  ::close(fd);  // the unnamed file is gone with it unless it was named
  if (err == 0 || err == EEXIST) return err;
  throw IoError(path, "cannot write", err);
}
}  // namespace

void write_file_atomic(const std::string& path, const void* header, size_t header_size, const void* payload,
                       size_t payload_size, PageCache cache) {
  if (write_unnamed(path, header, header_size, payload, payload_size, /*replace=*/true, cache) == 0) return;
  const std::string temp = write_temporary(path, header, header_size, payload, payload_size, cache);
  if (::rename(temp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    ::unlink(temp.c_str());
    throw IoError(path, "cannot rename temporary file into place", err);
  }
}

bool create_file_whole(const std::string& path, const std::string& header, const std::string& payload) {
  const int unnamed =
      write_unnamed(path, header.data(), header.size(), payload.data(), payload.size(), false, PageCache::Use);
  if (unnamed != -1) return unnamed == 0;
  const std::string temp =
      write_temporary(path, header.data(), header.size(), payload.data(), payload.size(), PageCache::Use);
  // link(), unlike rename(), never replaces a file that appeared meanwhile.
  const int err = ::link(temp.c_str(), path.c_str()) == 0 ? 0 : errno;
  ::unlink(temp.c_str());
  if (err == EEXIST) return false;
  if (err != 0) throw IoError(path, "cannot link temporary file into place", err);
  return true;
}

}  // namespace opdump
