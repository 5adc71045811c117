// HDF5's C library has memory errors on hostile files (fuzzing 1.10.8 finds heap overflows within
// seconds), which no check of ours can prevent: readers of untrusted .h5 files run it in child
// processes, so that such a file ends a child, not the caller. A child that ends abnormally, or
// sends nothing for OPDUMP_H5_READ_TIMEOUT seconds (default 300; then it is killed), is a
// FormatError naming the file; an opdump::Error thrown in the child comes back as a FormatError
// with its message.
#pragma once
#include <sys/types.h>

#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <vector>

namespace opdump::h5 {

// Runs `work` in a child process of its own and returns what it returned.
std::string isolated(const std::string& file, const std::function<std::string()>& work);

// Child processes that each serve any number of requests with `serve` (run in the child, which
// keeps whatever `serve` opened: one fork per child instead of one per tensor). At most
// `max_children` at once; a request waits for an idle one. A child that fails is ended and the
// next request starts another.
class IsolatedReaders {
 public:
  IsolatedReaders(std::string file, std::function<std::string(const std::string& request)> serve,
                  unsigned max_children);
  ~IsolatedReaders();  // ends the children
  IsolatedReaders(const IsolatedReaders&) = delete;
  IsolatedReaders& operator=(const IsolatedReaders&) = delete;

  std::string call(const std::string& request);
  // Children started so far (tests: one per reader, not one per request).
  unsigned started() const;

 private:
  struct Child {
    pid_t pid = -1;
    int fd = -1;  // a socket: requests out, replies in
  };
  Child start();

  const std::string file_;
  const std::function<std::string(const std::string&)> serve_;
  const unsigned max_children_;
  mutable std::mutex mutex_;
  std::condition_variable idle_changed_;
  std::vector<Child> idle_;
  unsigned running_ = 0;  // idle or serving a request
  unsigned started_ = 0;
};

}  // namespace opdump::h5
