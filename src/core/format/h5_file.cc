#include "format/h5_file.h"

#include <hdf5.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cerrno>
#include <cstdio>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <set>
#include <utility>

#include "opdump/error.h"
#include "util/path.h"

// Sanitizer builds only: a fuzzer's death callback must not run in a reading child.
extern "C" void __sanitizer_set_death_callback(void (*)(void)) __attribute__((weak));

namespace opdump::h5 {
namespace {

// One HDF5 call at a time in this process: Debian's library is built thread-safe, other builds
// need not be, and the writer threads share one file anyway. A child of isolated() has one thread
// and a copy of the lock its parent held while forking: it goes without.
std::recursive_mutex& library_mutex() {
  static std::recursive_mutex m;
  return m;
}
bool g_isolated_child = false;

class LibraryLock {
 public:
  LibraryLock() {
    if (!g_isolated_child) library_mutex().lock();
  }
  ~LibraryLock() {
    if (!g_isolated_child) library_mutex().unlock();
  }
  LibraryLock(const LibraryLock&) = delete;
  LibraryLock& operator=(const LibraryLock&) = delete;
};

// HDF5 prints its error stack to stderr by default; opdump reports errors itself.
void quiet_library() {
  static std::once_flag once;
  std::call_once(once, [] { H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr); });
}

// The innermost message of HDF5's error stack ("" when it is empty).
std::string library_message() {
  std::string out;
  H5Ewalk2(
      H5E_DEFAULT, H5E_WALK_DOWNWARD,
      [](unsigned n, const H5E_error2_t* e, void* data) -> herr_t {
        auto* s = static_cast<std::string*>(data);
        if (n == 0 && e && e->desc) *s = e->desc;
        return 0;
      },
      &out);
  H5Eclear2(H5E_DEFAULT);
  return out;
}

[[noreturn]] void fail(const std::string& file, const std::string& object, const std::string& what) {
  std::string message = object.empty() ? what : object + ": " + what;
  const std::string detail = library_message();
  if (!detail.empty()) message += " (HDF5: " + detail + ")";
  throw FormatError(file, message);
}

// Closes an HDF5 identifier of any kind when it goes out of scope.
class Id {
 public:
  Id() = default;
  explicit Id(hid_t id) : id_(id) {}
  Id(Id&& o) noexcept : id_(o.id_) { o.id_ = H5I_INVALID_HID; }
  Id& operator=(Id&& o) noexcept {
    std::swap(id_, o.id_);
    return *this;
  }
  ~Id() {
    if (id_ >= 0 && H5Iis_valid(id_) > 0) H5Idec_ref(id_);
  }
  hid_t get() const { return id_; }
  bool ok() const { return id_ >= 0; }
  hid_t release() { return std::exchange(id_, H5I_INVALID_HID); }

 private:
  hid_t id_ = H5I_INVALID_HID;
};

// The file types of opdump's dtypes: little-endian, float16 and bfloat16 as 2-byte IEEE-style floats
// (exact: h5py reads float16 as numpy's float16), bool as h5py's enum, complex as h5py's {r, i}.
Id small_float(size_t exponent_bits, size_t mantissa_bits) {
  Id t(H5Tcopy(H5T_IEEE_F32LE));
  H5Tset_fields(t.get(), 15, mantissa_bits, exponent_bits, 0, mantissa_bits);
  H5Tset_size(t.get(), 2);
  H5Tset_ebias(t.get(), (1u << (exponent_bits - 1)) - 1);
  return t;
}

Id complex_type(hid_t part, size_t part_size) {
  Id t(H5Tcreate(H5T_COMPOUND, 2 * part_size));
  H5Tinsert(t.get(), "r", 0, part);
  H5Tinsert(t.get(), "i", part_size, part);
  return t;
}

Id file_type(DType d) {
  switch (d) {
    case DType::Bool: {
      Id t(H5Tenum_create(H5T_NATIVE_INT8));
      int8_t v = 0;
      H5Tenum_insert(t.get(), "FALSE", &v);
      v = 1;
      H5Tenum_insert(t.get(), "TRUE", &v);
      return t;
    }
    case DType::Int8: return Id(H5Tcopy(H5T_STD_I8LE));
    case DType::Int16: return Id(H5Tcopy(H5T_STD_I16LE));
    case DType::Int32: return Id(H5Tcopy(H5T_STD_I32LE));
    case DType::Int64: return Id(H5Tcopy(H5T_STD_I64LE));
    case DType::UInt8: return Id(H5Tcopy(H5T_STD_U8LE));
    case DType::UInt16: return Id(H5Tcopy(H5T_STD_U16LE));
    case DType::UInt32: return Id(H5Tcopy(H5T_STD_U32LE));
    case DType::UInt64: return Id(H5Tcopy(H5T_STD_U64LE));
    case DType::Float16: return small_float(5, 10);
    case DType::BFloat16: return small_float(8, 7);
    case DType::Float32: return Id(H5Tcopy(H5T_IEEE_F32LE));
    case DType::Float64: return Id(H5Tcopy(H5T_IEEE_F64LE));
    case DType::Complex64: return complex_type(H5T_IEEE_F32LE, 4);
    case DType::Complex128: return complex_type(H5T_IEEE_F64LE, 8);
  }
  return Id();
}

// The dtype of a dataset's file type, or why it has none.
std::optional<DType> dtype_of_type(hid_t t, std::string* why) {
  const H5T_class_t cls = H5Tget_class(t);
  const size_t size = H5Tget_size(t);
  if (cls == H5T_ENUM) {
    Id base(H5Tget_super(t));
    if (H5Tget_size(base.get()) == 1 && H5Tget_nmembers(t) == 2) return DType::Bool;
    *why = "an enumeration that is not h5py's bool";
    return std::nullopt;
  }
  if (cls == H5T_INTEGER) {
    const bool is_signed = H5Tget_sign(t) == H5T_SGN_2;
    switch (size) {
      case 1: return is_signed ? DType::Int8 : DType::UInt8;
      case 2: return is_signed ? DType::Int16 : DType::UInt16;
      case 4: return is_signed ? DType::Int32 : DType::UInt32;
      case 8: return is_signed ? DType::Int64 : DType::UInt64;
    }
  } else if (cls == H5T_FLOAT) {
    size_t spos = 0, epos = 0, esize = 0, mpos = 0, msize = 0;
    H5Tget_fields(t, &spos, &epos, &esize, &mpos, &msize);
    if (size == 2 && esize == 5 && msize == 10) return DType::Float16;
    if (size == 2 && esize == 8 && msize == 7) return DType::BFloat16;
    if (size == 4 && esize == 8 && msize == 23) return DType::Float32;
    if (size == 8 && esize == 11 && msize == 52) return DType::Float64;
  } else if (cls == H5T_COMPOUND && H5Tget_nmembers(t) == 2) {
    Id part(H5Tget_member_type(t, 0));
    if (H5Tget_class(part.get()) == H5T_FLOAT && H5Tget_size(part.get()) * 2 == size && H5Tget_member_offset(t, 0) == 0)
      return size == 8 ? std::optional<DType>(DType::Complex64)
                       : size == 16 ? std::optional<DType>(DType::Complex128) : std::nullopt;
  }
  *why = "an HDF5 element type opdump does not read (class " + std::to_string(static_cast<int>(cls)) + ", " +
         std::to_string(size) + " bytes)";
  return std::nullopt;
}

Id scalar_space() { return Id(H5Screate(H5S_SCALAR)); }

Id space_of(const Shape& shape) {
  if (shape.empty()) return scalar_space();
  std::vector<hsize_t> dims(shape.begin(), shape.end());
  return Id(H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr));
}

Id utf8_string_type() {
  Id t(H5Tcopy(H5T_C_S1));
  H5Tset_size(t.get(), H5T_VARIABLE);
  H5Tset_cset(t.get(), H5T_CSET_UTF8);
  return t;
}

// A string attribute or dataset's value, fixed-length or variable-length.
std::optional<std::string> read_string(hid_t object, hid_t type, bool attribute) {
  if (H5Tget_class(type) != H5T_STRING) return std::nullopt;
  if (H5Tis_variable_str(type) > 0) {
    Id mem = utf8_string_type();
    char* value = nullptr;
    const herr_t rc = attribute ? H5Aread(object, mem.get(), &value) : H5Dread(object, mem.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, &value);
    if (rc < 0) return std::nullopt;
    std::string out = value ? value : "";
    if (value) H5free_memory(value);
    return out;
  }
  const size_t size = H5Tget_size(type);
  if (size == 0 || size > (size_t(64) << 20)) return std::nullopt;
  std::string out(size, '\0');
  const herr_t rc = attribute ? H5Aread(object, type, out.data()) : H5Dread(object, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, out.data());
  if (rc < 0) return std::nullopt;
  out.resize(strnlen(out.data(), out.size()));
  return out;
}

}  // namespace

int32_t data_type_code(DType t) {
  switch (t) {
    case DType::Float32: return 1;
    case DType::UInt8: return 2;
    case DType::Int8: return 3;
    case DType::UInt16: return 4;
    case DType::Int16: return 5;
    case DType::Int32: return 6;
    case DType::Int64: return 7;
    case DType::Bool: return 9;
    case DType::Float16: return 10;
    case DType::Float64: return 11;
    case DType::UInt32: return 12;
    case DType::UInt64: return 13;
    case DType::Complex64: return 14;
    case DType::Complex128: return 15;
    case DType::BFloat16: return 16;
  }
  return 0;
}

std::optional<DType> dtype_of_code(int32_t code) {
  for (int i = 0; i < kDTypeCount; ++i)
    if (data_type_code(static_cast<DType>(i)) == code) return static_cast<DType>(i);
  return std::nullopt;
}

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
    const ssize_t n = ::write(fd, data, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    data += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}
}  // namespace

std::string isolated(const std::string& file, const std::function<std::string()>& work) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) throw Error(file + ": cannot create a pipe: " + std::strerror(errno));
  pid_t child;
  {
    LibraryLock lock;  // no other thread of this process is inside HDF5 while the child is made
    child = ::fork();
  }
  if (child < 0) {
    const int err = errno;
    ::close(fds[0]);
    ::close(fds[1]);
    throw Error(file + ": cannot start a process to read it: " + std::strerror(err));
  }
  if (child == 0) {
    ::close(fds[0]);
    g_isolated_child = true;
    if (__sanitizer_set_death_callback) __sanitizer_set_death_callback(nullptr);  // a fuzzer's: the parent reports
    std::string out;
    char status = 'O';
    try {
      out = work();
    } catch (const std::exception& e) {
      status = 'E';
      out = e.what();
    }
    const bool ok = write_all(fds[1], &status, 1) && write_all(fds[1], out.data(), out.size());
    ::_exit(ok ? 0 : 3);  // no exit handlers: they belong to the parent
  }
  ::close(fds[1]);
  std::string out;
  char buffer[1 << 16];
  bool stalled = false;
  const int limit_ms = read_timeout_seconds() * 1000;
  for (;;) {
    pollfd p{fds[0], POLLIN, 0};
    const int ready = ::poll(&p, 1, limit_ms);
    if (ready < 0 && errno == EINTR) continue;
    if (ready == 0) {  // a library caught in a loop by the file: ended, not waited for
      stalled = true;
      ::kill(child, SIGKILL);
      break;
    }
    const ssize_t n = ::read(fds[0], buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    out.append(buffer, static_cast<size_t>(n));
  }
  ::close(fds[0]);
  int status = 0;
  while (::waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  if (stalled)
    throw FormatError(file, "HDF5's library made no progress reading it for " + std::to_string(limit_ms / 1000) +
                                " s (OPDUMP_H5_READ_TIMEOUT): the file is corrupt or hostile");
  if (WIFSIGNALED(status))
    throw FormatError(file, std::string("HDF5's library failed reading it (") + strsignal(WTERMSIG(status)) +
                                "): the file is corrupt or hostile");
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || out.empty())
    throw FormatError(file, "HDF5's library failed reading it (its reader exited with " +
                                std::to_string(WIFEXITED(status) ? WEXITSTATUS(status) : -1) +
                                "): the file is corrupt or hostile");
  if (out[0] == 'E') {
    std::string message = out.substr(1);
    const std::string prefix = file + ": ";
    if (message.rfind(prefix, 0) == 0) message = message.substr(prefix.size());
    throw FormatError(file, message);
  }
  return out.substr(1);
}

bool is_h5_file(const std::string& path) {
  static const char kSignature[8] = {'\x89', 'H', 'D', 'F', '\r', '\n', '\x1a', '\n'};
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) return false;
  char head[8] = {};
  const bool ok = std::fread(head, 1, 8, f) == 8 && std::memcmp(head, kSignature, 8) == 0;
  std::fclose(f);
  return ok;
}

// ---- Writer ----

struct Writer::Handles {
  Id file, group_plist;
  Id large_plist;  // datasets whose bytes opdump writes itself: space at creation, no fill
  std::set<std::string> groups{"/"};
  int data_fd = -1;    // the same file, for raw data written beside HDF5 (through the page cache)
  int direct_fd = -1;  // ...and past it (O_DIRECT; -1 where the file system refuses it)
  ~Handles() {
    if (data_fd >= 0) ::close(data_fd);
    if (direct_fd >= 0) ::close(direct_fd);
  }
};

namespace {
// Large datasets start on a page (O_DIRECT writes need it) and have their bytes written by the
// calling thread outside the library's lock: writer threads write several at once, as npy files are.
constexpr size_t kOwnWriteFrom = size_t(256) << 10;
constexpr size_t kPage = 4096;
constexpr size_t kBounce = size_t(2) << 20;

struct FreeAligned {
  void operator()(uint8_t* p) const { std::free(p); }
};

// `size` bytes at `offset` of the file: whole pages through `direct_fd` from an aligned copy where
// it can, the rest through `fd`. 0 or an errno.
int write_at(int fd, int direct_fd, uint64_t offset, const uint8_t* data, size_t size) {
  size_t done = 0;
  if (direct_fd >= 0 && offset % kPage == 0) {
    thread_local std::unique_ptr<uint8_t, FreeAligned> bounce(static_cast<uint8_t*>(std::aligned_alloc(kPage, kBounce)));
    const size_t whole = size & ~(kPage - 1);
    while (bounce && done < whole) {
      const size_t n = std::min(kBounce, whole - done);
      std::memcpy(bounce.get(), data + done, n);
      const ssize_t w = ::pwrite(direct_fd, bounce.get(), n, static_cast<off_t>(offset + done));
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0 || static_cast<size_t>(w) % kPage) break;  // refused or short: the rest through the cache
      done += static_cast<size_t>(w);
    }
  }
  while (done < size) {
    const ssize_t w = ::pwrite(fd, data + done, size - done, static_cast<off_t>(offset + done));
    if (w < 0 && errno == EINTR) continue;
    if (w < 0) return errno;
    if (w == 0) return ENOSPC;
    done += static_cast<size_t>(w);
  }
  return 0;
}
}  // namespace

Writer::Writer(std::string path, bool bypass_page_cache) : path_(std::move(path)), h_(std::make_unique<Handles>()) {
  LibraryLock lock;
  quiet_library();
  temp_ = path_ + ".tmp-" + std::to_string(::getpid());
  Id fcpl(H5Pcreate(H5P_FILE_CREATE));
  H5Pset_link_creation_order(fcpl.get(), H5P_CRT_ORDER_TRACKED | H5P_CRT_ORDER_INDEXED);
  Id fapl(H5Pcreate(H5P_FILE_ACCESS));
  H5Pset_alignment(fapl.get(), kOwnWriteFrom, kPage);
  // Many small objects per op (groups, argument datasets, attributes): larger metadata blocks and
  // the 1.8 object format (compact attribute and link storage) keep their bookkeeping short; h5py
  // and HDF5's tools since 1.8 read it.
  H5Pset_meta_block_size(fapl.get(), 1 << 20);
  H5Pset_libver_bounds(fapl.get(), H5F_LIBVER_V18, H5F_LIBVER_V18);
  h_->file = Id(H5Fcreate(temp_.c_str(), H5F_ACC_TRUNC, fcpl.get(), fapl.get()));
  if (!h_->file.ok()) fail(path_, "", "cannot create the file");
  h_->group_plist = Id(H5Pcreate(H5P_GROUP_CREATE));
  H5Pset_link_creation_order(h_->group_plist.get(), H5P_CRT_ORDER_TRACKED | H5P_CRT_ORDER_INDEXED);
  h_->large_plist = Id(H5Pcreate(H5P_DATASET_CREATE));
  H5Pset_alloc_time(h_->large_plist.get(), H5D_ALLOC_TIME_EARLY);
  H5Pset_fill_time(h_->large_plist.get(), H5D_FILL_TIME_NEVER);
  h_->data_fd = ::open(temp_.c_str(), O_WRONLY | O_CLOEXEC);
  if (h_->data_fd < 0) fail(path_, "", std::string("cannot open it for writing: ") + std::strerror(errno));
  if (bypass_page_cache) h_->direct_fd = ::open(temp_.c_str(), O_WRONLY | O_CLOEXEC | O_DIRECT);
}

Writer::~Writer() {
  if (!h_) return;
  LibraryLock lock;
  h_.reset();
  std::remove(temp_.c_str());
}

namespace {
// Creates the groups along `path` (not its last component) and returns the parent's name.
std::string make_parents(hid_t file, hid_t gcpl, std::set<std::string>& made, const std::string& file_name,
                         const std::string& path) {
  const std::string parent = folder_of(path);
  if (made.count(parent)) return parent;
  size_t pos = 1;
  while (pos <= parent.size()) {
    const size_t next = parent.find('/', pos);
    const std::string prefix = parent.substr(0, next);
    if (!made.count(prefix)) {
      if (H5Lexists(file, prefix.c_str(), H5P_DEFAULT) <= 0) {
        Id g(H5Gcreate2(file, prefix.c_str(), H5P_DEFAULT, gcpl, H5P_DEFAULT));
        if (!g.ok()) fail(file_name, prefix, "cannot create the group");
      }
      made.insert(prefix);
    }
    if (next == std::string::npos) break;
    pos = next + 1;
  }
  return parent;
}

void int_attr(hid_t object, const char* name, int32_t value) {
  Id space = scalar_space();
  Id a(H5Acreate2(object, name, H5T_STD_I32LE, space.get(), H5P_DEFAULT, H5P_DEFAULT));
  H5Awrite(a.get(), H5T_NATIVE_INT32, &value);
}

void ints_attr(hid_t object, const char* name, const std::vector<int64_t>& values) {
  const hsize_t n = values.size();
  Id space(H5Screate_simple(1, &n, nullptr));
  Id a(H5Acreate2(object, name, H5T_STD_I64LE, space.get(), H5P_DEFAULT, H5P_DEFAULT));
  if (n) H5Awrite(a.get(), H5T_NATIVE_INT64, values.data());
}
}  // namespace

void Writer::tensor(const std::string& path, const TensorView& v, const TensorAttrs& attrs) {
  haddr_t own_write = HADDR_UNDEF;  // where this thread writes the bytes itself, after the lock
  {
    LibraryLock lock;
    make_parents(h_->file.get(), h_->group_plist.get(), h_->groups, path_, path);
    Id type = file_type(v.dtype);
    Id space = space_of(v.shape);
    const bool large = v.data && v.nbytes() >= kOwnWriteFrom;
    Id ds(H5Dcreate2(h_->file.get(), path.c_str(), type.get(), space.get(), H5P_DEFAULT,
                     large ? h_->large_plist.get() : H5P_DEFAULT, H5P_DEFAULT));
    if (!ds.ok()) fail(path_, path, "cannot create the dataset");
    if (large) own_write = H5Dget_offset(ds.get());
    if (own_write == HADDR_UNDEF && v.numel() && v.data &&
        H5Dwrite(ds.get(), type.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, v.data) < 0)
      fail(path_, path, "cannot write the dataset");
    write_tensor_attrs(ds.get(), v, attrs);
  }
  if (own_write != HADDR_UNDEF) {
    if (const int err = write_at(h_->data_fd, h_->direct_fd, own_write, static_cast<const uint8_t*>(v.data), v.nbytes()))
      throw FormatError(path_, path + ": cannot write the data: " + std::strerror(err));
  }
}

void Writer::write_tensor_attrs(int64_t dataset, const TensorView& v, const TensorAttrs& attrs) {
  const hid_t ds = static_cast<hid_t>(dataset);
  int_attr(ds, "DeviceType", attrs.device_type);
  int_attr(ds, "DataType", data_type_code(v.dtype));
  int_attr(ds, "FormatType", attrs.format_type);
  int_attr(ds, "Type", static_cast<int32_t>(ValueType::Tensor));
  std::vector<int64_t> stride = attrs.stride;
  if (stride.empty()) {  // contiguous
    stride.assign(v.shape.size(), 1);
    for (size_t i = v.shape.size(); i-- > 1;) stride[i - 1] = stride[i] * std::max<int64_t>(v.shape[i], 1);
  }
  ints_attr(ds, "Stride", stride);
  if (attrs.storage_offset) ints_attr(ds, "StorageOffset", {attrs.storage_offset});
}

// One non-tensor dataset: `data` (nullptr: nothing to write) in memory as `mem_type`, stored as
// `file_type` with its Type attribute. Called under the library lock.
void Writer::value(const std::string& path, int64_t file_type, int64_t space, int64_t mem_type, const void* data,
                   ValueType type) {
  make_parents(h_->file.get(), h_->group_plist.get(), h_->groups, path_, path);
  Id ds(H5Dcreate2(h_->file.get(), path.c_str(), file_type, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT));
  if (!ds.ok()) fail(path_, path, "cannot create the dataset");
  if (data && H5Dwrite(ds.get(), mem_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, data) < 0)
    fail(path_, path, "cannot write the dataset");
  int_attr(ds.get(), "Type", static_cast<int32_t>(type));
}

void Writer::ints(const std::string& path, const std::vector<int64_t>& values, bool scalar, ValueType type,
                  DType element) {
  LibraryLock lock;
  Id space = scalar ? scalar_space() : space_of({static_cast<int64_t>(values.size())});
  const hid_t file_type = element == DType::Int8 ? H5T_STD_I8LE : element == DType::Int32 ? H5T_STD_I32LE : H5T_STD_I64LE;
  value(path, file_type, space.get(), H5T_NATIVE_INT64, values.empty() ? nullptr : values.data(), type);
}

void Writer::real(const std::string& path, double number, ValueType type) {
  LibraryLock lock;
  Id space = scalar_space();
  value(path, H5T_IEEE_F64LE, space.get(), H5T_NATIVE_DOUBLE, &number, type);
}

void Writer::reals(const std::string& path, const std::vector<double>& values, ValueType type) {
  LibraryLock lock;
  Id space = space_of({static_cast<int64_t>(values.size())});
  value(path, H5T_IEEE_F64LE, space.get(), H5T_NATIVE_DOUBLE, values.empty() ? nullptr : values.data(), type);
}

void Writer::text(const std::string& path, const std::string& text, ValueType type) {
  LibraryLock lock;
  Id str = utf8_string_type();
  Id space = scalar_space();
  const char* p = text.c_str();
  value(path, str.get(), space.get(), str.get(), &p, type);
}

void Writer::none(const std::string& path) {
  LibraryLock lock;
  Id space(H5Screate(H5S_NULL));
  value(path, H5T_STD_I8LE, space.get(), H5T_STD_I8LE, nullptr, ValueType::None);
}

namespace {
// The object an attribute goes on: an existing dataset or group, or a new group.
Id attribute_owner(hid_t file, hid_t gcpl, std::set<std::string>& made, const std::string& file_name,
                   const std::string& object) {
  if (!made.count(object) && H5Lexists(file, object.c_str(), H5P_DEFAULT) <= 0)
    make_parents(file, gcpl, made, file_name, object + "/x");
  Id o(H5Oopen(file, object.c_str(), H5P_DEFAULT));
  if (!o.ok()) fail(file_name, object, "cannot open the object");
  return o;
}
}  // namespace

void Writer::attr(const std::string& object, const std::string& name, const std::string& value) {
  LibraryLock lock;
  Id o = attribute_owner(h_->file.get(), h_->group_plist.get(), h_->groups, path_, object);
  Id str = utf8_string_type();
  Id space = scalar_space();
  Id a(H5Acreate2(o.get(), name.c_str(), str.get(), space.get(), H5P_DEFAULT, H5P_DEFAULT));
  if (!a.ok()) fail(path_, object, "cannot write the attribute " + name);
  const char* p = value.c_str();
  H5Awrite(a.get(), str.get(), &p);
}

void Writer::attr(const std::string& object, const std::string& name, int64_t value) {
  LibraryLock lock;
  Id o = attribute_owner(h_->file.get(), h_->group_plist.get(), h_->groups, path_, object);
  Id space = scalar_space();
  Id a(H5Acreate2(o.get(), name.c_str(), H5T_STD_I64LE, space.get(), H5P_DEFAULT, H5P_DEFAULT));
  if (!a.ok()) fail(path_, object, "cannot write the attribute " + name);
  H5Awrite(a.get(), H5T_NATIVE_INT64, &value);
}

void Writer::close() {
  LibraryLock lock;
  if (!h_) return;
  if (H5Fflush(h_->file.get(), H5F_SCOPE_GLOBAL) < 0) fail(path_, "", "cannot write the file");
  h_->group_plist = Id();
  const hid_t file = h_->file.release();
  h_.reset();
  if (H5Fclose(file) < 0) {
    std::remove(temp_.c_str());
    fail(path_, "", "cannot close the file");
  }
  if (std::rename(temp_.c_str(), path_.c_str()) != 0) {
    const int err = errno;
    std::remove(temp_.c_str());
    throw Error(path_ + ": cannot move the finished file into place: " + std::strerror(err));
  }
}

// ---- Reader ----

struct Reader::Handles {
  Id file;
};

Reader::Reader(std::string path) : path_(std::move(path)), h_(std::make_unique<Handles>()) {
  LibraryLock lock;
  quiet_library();
  if (!is_h5_file(path_)) throw FormatError(path_, "not an HDF5 file (no HDF5 signature at its start)");
  h_->file = Id(H5Fopen(path_.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT));
  if (!h_->file.ok()) fail(path_, "", "cannot open the HDF5 file");
}

Reader::~Reader() {
  LibraryLock lock;
  h_.reset();
}

namespace {
Id open_object(hid_t file, const std::string& file_name, const std::string& object) {
  if (object != "/" && H5Lexists(file, object.c_str(), H5P_DEFAULT) <= 0) fail(file_name, object, "no such object");
  Id o(H5Oopen(file, object.c_str(), H5P_DEFAULT));
  if (!o.ok()) fail(file_name, object, "cannot open the object");
  return o;
}

H5I_type_t kind_of(hid_t file, const std::string& object) {
  if (object != "/" && H5Lexists(file, object.c_str(), H5P_DEFAULT) <= 0) return H5I_BADID;
  Id o(H5Oopen(file, object.c_str(), H5P_DEFAULT));
  if (!o.ok()) {
    H5Eclear2(H5E_DEFAULT);
    return H5I_BADID;
  }
  return H5Iget_type(o.get());
}

// A dataset's shape, checked: rank and every dimension within what a tensor can have.
Shape shape_of(hid_t ds, const std::string& file, const std::string& object, bool* null) {
  Id space(H5Dget_space(ds));
  if (!space.ok()) fail(file, object, "cannot read the dataspace");
  const H5S_class_t cls = H5Sget_simple_extent_type(space.get());
  *null = cls == H5S_NULL;
  if (cls != H5S_SIMPLE) return {};
  const int rank = H5Sget_simple_extent_ndims(space.get());
  if (rank < 0 || rank > 32) fail(file, object, "rank " + std::to_string(rank) + " is not a tensor's (at most 32)");
  std::vector<hsize_t> dims(static_cast<size_t>(rank));
  if (H5Sget_simple_extent_dims(space.get(), dims.data(), nullptr) < 0) fail(file, object, "cannot read the dimensions");
  Shape shape;
  for (hsize_t d : dims) {
    if (d > static_cast<hsize_t>(INT64_MAX)) fail(file, object, "a dimension beyond int64");
    shape.push_back(static_cast<int64_t>(d));
  }
  try {
    shape_numel(shape);
  } catch (const Error& e) {
    fail(file, object, e.what());
  }
  return shape;
}

std::optional<int64_t> int_attribute(hid_t object, const char* name) {
  if (H5Aexists(object, name) <= 0) return std::nullopt;
  Id a(H5Aopen(object, name, H5P_DEFAULT));
  Id space(H5Aget_space(a.get()));
  Id type(H5Aget_type(a.get()));
  if (!a.ok() || !space.ok() || !type.ok() || H5Tget_class(type.get()) != H5T_INTEGER ||
      H5Sget_simple_extent_npoints(space.get()) != 1)
    return std::nullopt;
  int64_t v = 0;
  if (H5Aread(a.get(), H5T_NATIVE_INT64, &v) < 0) return std::nullopt;
  return v;
}

std::vector<int64_t> ints_attribute(hid_t object, const char* name) {
  if (H5Aexists(object, name) <= 0) return {};
  Id a(H5Aopen(object, name, H5P_DEFAULT));
  Id space(H5Aget_space(a.get()));
  Id type(H5Aget_type(a.get()));
  if (!a.ok() || !space.ok() || !type.ok() || H5Tget_class(type.get()) != H5T_INTEGER) return {};
  const hssize_t n = H5Sget_simple_extent_npoints(space.get());
  if (n <= 0 || n > 64) return {};
  std::vector<int64_t> v(static_cast<size_t>(n));
  if (H5Aread(a.get(), H5T_NATIVE_INT64, v.data()) < 0) return {};
  return v;
}
}  // namespace

std::vector<std::string> Reader::members(const std::string& group) const {
  LibraryLock lock;
  Id g = open_object(h_->file.get(), path_, group);
  if (H5Iget_type(g.get()) != H5I_GROUP) fail(path_, group, "not a group");
  H5G_info_t info;
  if (H5Gget_info(g.get(), &info) < 0) fail(path_, group, "cannot read the group");
  std::vector<std::string> names;
  auto collect = [](hid_t, const char* name, const H5L_info_t*, void* data) -> herr_t {
    static_cast<std::vector<std::string>*>(data)->push_back(name);
    return 0;
  };
  hsize_t index = 0;
  if (H5Literate(g.get(), H5_INDEX_CRT_ORDER, H5_ITER_INC, &index, collect, &names) < 0) {
    H5Eclear2(H5E_DEFAULT);  // creation order not tracked: by name
    names.clear();
    index = 0;
    if (H5Literate(g.get(), H5_INDEX_NAME, H5_ITER_INC, &index, collect, &names) < 0)
      fail(path_, group, "cannot list the group");
  }
  return names;
}

bool Reader::is_group(const std::string& object) const {
  LibraryLock lock;
  return kind_of(h_->file.get(), object) == H5I_GROUP;
}

bool Reader::is_dataset(const std::string& object) const {
  LibraryLock lock;
  return kind_of(h_->file.get(), object) == H5I_DATASET;
}

DatasetInfo Reader::info(const std::string& dataset) const {
  LibraryLock lock;
  Id ds = open_object(h_->file.get(), path_, dataset);
  if (H5Iget_type(ds.get()) != H5I_DATASET) fail(path_, dataset, "not a dataset");
  DatasetInfo out;
  out.shape = shape_of(ds.get(), path_, dataset, &out.null);
  const auto type_code = int_attribute(ds.get(), "Type");
  out.type = static_cast<ValueType>(type_code.value_or(0));
  if (auto code = int_attribute(ds.get(), "DataType")) out.data_type = static_cast<int32_t>(*code);
  if (auto v = int_attribute(ds.get(), "DeviceType")) out.attrs.device_type = static_cast<int32_t>(*v);
  if (auto v = int_attribute(ds.get(), "FormatType")) out.attrs.format_type = static_cast<int32_t>(*v);
  out.attrs.stride = ints_attribute(ds.get(), "Stride");
  if (auto v = ints_attribute(ds.get(), "StorageOffset"); v.size() == 1) out.attrs.storage_offset = v[0];
  Id type(H5Dget_type(ds.get()));
  if (!type.ok()) fail(path_, dataset, "cannot read the element type");
  out.dtype = dtype_of_type(type.get(), &out.unreadable);
  // The 1.5 dumper widened float16 to float32 and stored bool/uint8 as int8: its DataType says what it was.
  if (out.dtype && out.data_type >= 0) {
    const auto recorded = dtype_of_code(out.data_type);
    if (recorded && *recorded != *out.dtype && dtype_size(*recorded) == dtype_size(*out.dtype) &&
        (*recorded == DType::Bool || *recorded == DType::UInt8))
      out.dtype = recorded;
  }
  return out;
}

Tensor Reader::tensor(const std::string& dataset) const {
  const DatasetInfo i = info(dataset);
  if (!i.dtype) fail(path_, dataset, i.unreadable);
  if (i.null) fail(path_, dataset, "the dataset holds no data");
  LibraryLock lock;
  Tensor t;
  t.dtype = *i.dtype;
  t.shape = i.shape;
  const uint64_t bytes = checked_bytes(shape_numel(t.shape), dtype_size(t.dtype));
  check_allocation(bytes, path_, dataset);
  auto buffer = std::make_shared<HeapBuffer>(bytes);
  if (bytes) {
    Id ds = open_object(h_->file.get(), path_, dataset);
    Id mem = file_type(t.dtype);
    if (H5Dread(ds.get(), mem.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, buffer->mutable_data()) < 0)
      fail(path_, dataset, "cannot read the data");
  }
  t.data = buffer->data();
  t.buffer = std::move(buffer);
  return t;
}

// A dataset's numbers converted by HDF5 to `native` (int64 or double); `accepts` says which element
// types may be read so.
template <typename T>
std::vector<T> read_numbers(const Reader& r, const std::string& path, const std::string& dataset, hid_t file,
                            hid_t native, bool (*accepts)(DType), const char* what) {
  const DatasetInfo i = r.info(dataset);
  if (!i.dtype || !accepts(*i.dtype)) fail(path, dataset, what);
  if (i.null) return {};
  LibraryLock lock;
  const uint64_t n = shape_numel(i.shape);
  check_allocation(checked_bytes(n, sizeof(T)), path, dataset);
  std::vector<T> v(n);
  Id ds = open_object(file, path, dataset);
  if (n && H5Dread(ds.get(), native, H5S_ALL, H5S_ALL, H5P_DEFAULT, v.data()) < 0) fail(path, dataset, "cannot read the data");
  return v;
}

std::vector<int64_t> Reader::ints(const std::string& dataset) const {
  return read_numbers<int64_t>(*this, path_, dataset, h_->file.get(), H5T_NATIVE_INT64,
                               [](DType d) { return !dtype_is_float(d) && !dtype_is_complex(d); }, "not integers");
}

std::vector<double> Reader::reals(const std::string& dataset) const {
  return read_numbers<double>(*this, path_, dataset, h_->file.get(), H5T_NATIVE_DOUBLE,
                              [](DType d) { return !dtype_is_complex(d); }, "not real numbers");
}

std::string Reader::text(const std::string& dataset) const {
  LibraryLock lock;
  Id ds = open_object(h_->file.get(), path_, dataset);
  if (H5Iget_type(ds.get()) != H5I_DATASET) fail(path_, dataset, "not a dataset");
  Id space(H5Dget_space(ds.get()));
  if (H5Sget_simple_extent_type(space.get()) != H5S_SCALAR) fail(path_, dataset, "not a single string");
  Id type(H5Dget_type(ds.get()));
  auto s = read_string(ds.get(), type.get(), false);
  if (!s) fail(path_, dataset, "not a readable string");
  return *s;
}

std::optional<std::string> Reader::string_attr(const std::string& object, const std::string& name) const {
  LibraryLock lock;
  Id o = open_object(h_->file.get(), path_, object);
  if (H5Aexists(o.get(), name.c_str()) <= 0) return std::nullopt;
  Id a(H5Aopen(o.get(), name.c_str(), H5P_DEFAULT));
  Id space(H5Aget_space(a.get()));
  Id type(H5Aget_type(a.get()));
  if (!a.ok() || !type.ok() || H5Sget_simple_extent_npoints(space.get()) != 1) return std::nullopt;
  return read_string(a.get(), type.get(), true);
}

std::optional<int64_t> Reader::int_attr(const std::string& object, const std::string& name) const {
  LibraryLock lock;
  Id o = open_object(h_->file.get(), path_, object);
  return int_attribute(o.get(), name.c_str());
}

}  // namespace opdump::h5
