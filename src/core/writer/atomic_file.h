// Files that appear whole: written as an unnamed file (O_TMPFILE) and linked under their name once
// complete, or where that is not available under a temporary name renamed (or linked) into place; and
// appends of whole records. A killed process never leaves a torn file under a final name.
#pragma once
#include <cstddef>
#include <string>

namespace opdump {

// Whether a whole file's bytes go through the page cache (Use: a file read again soon, small files) or
// past it (Bypass: O_DIRECT for files of kDirectFrom bytes and more; the kernel's copy into the page
// cache and its writeback cost a dump about as much CPU time as everything else it does, and a dump
// is rarely read back before it has left the cache anyway). Where the file system refuses O_DIRECT,
// Bypass writes through the cache.
enum class PageCache { Use, Bypass };
// Files smaller than this go through the page cache either way: for them a trip to the device per file
// costs more than the copy it saves.
constexpr size_t kDirectFrom = size_t(256) << 10;

// Writes `header` then `payload` to `path` (mode 0640), replacing a file already there, through an
// unnamed or temporary file in the same folder. Throws IoError; leaves no temporary behind.
void write_file_atomic(const std::string& path, const void* header, size_t header_size,
                       const void* payload, size_t payload_size, PageCache cache = PageCache::Use);

// Creates `path` holding `header` then `payload`, all at once (a complete unnamed or temporary file
// is linked into place): false, with nothing written, when `path` already exists. Throws IoError.
bool create_file_whole(const std::string& path, const std::string& header, const std::string& payload);

// Appends `text` to an open O_APPEND file in one write(); a short write is rolled back, so the
// file never ends in a torn record. Throws IoError.
void append_whole(int fd, const std::string& path, const std::string& text);
// Opens (creating, mode 0640), appends whole and closes.
void append_to_file(const std::string& path, const std::string& text);

// Whether files are written unnamed first (default: yes, where the system allows); off, every file
// goes through a named temporary. For tests of that path.
void use_unnamed_files(bool on);

// A file written in pieces that appears under its final name only when commit() succeeds;
// destroying it without commit removes what was written.
class AtomicFileWriter {
 public:
  explicit AtomicFileWriter(std::string path);  // throws IoError
  ~AtomicFileWriter();
  AtomicFileWriter(const AtomicFileWriter&) = delete;
  AtomicFileWriter& operator=(const AtomicFileWriter&) = delete;
  void write(const void* data, size_t size);  // buffered; throws IoError
  void write(const std::string& text) { write(text.data(), text.size()); }
  void commit();                              // flushes and renames; throws IoError

 private:
  void flush();
  std::string path_, temp_;  // temp_ empty: the file is unnamed until commit()
  int fd_ = -1;
  std::string buffer_;
};

}  // namespace opdump
