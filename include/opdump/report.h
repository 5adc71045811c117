// What a dump did: the report finalize_dump() returns and the counters of a dump in progress.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace opdump {

// Files and bytes the writer wrote or lost. Lost files are never half-written: they are absent.
struct WriterReport {
  uint64_t files_written = 0;
  uint64_t bytes_written = 0;
  uint64_t files_lost = 0;
  uint64_t bytes_lost = 0;
  uint64_t tasks_failed = 0;
  // The most memory the dump held at once for writing: copies made and not yet written, queued
  // work (max_inflight_mb caps it, except that an op's own copies go ahead when nothing queued can
  // make room).
  uint64_t peak_inflight_bytes = 0;
  std::string first_error;  // empty when nothing went wrong
  // What was probably a mistake (nothing dumped, a model name that matched nothing, ...); each
  // was also logged. They do not make the dump incomplete.
  std::vector<std::string> warnings;
  bool ok() const { return files_lost == 0 && tasks_failed == 0 && first_error.empty(); }
};

// Operators and tensors a dump has taken so far.
struct DumpCounters {
  uint64_t ops = 0;
  uint64_t tensors = 0;
  uint64_t tensor_bytes = 0;
  uint64_t stat_rows = 0;
  uint64_t stat_bytes = 0;  // bytes of the tensors those rows summarize
  uint64_t stat_bytes_read = 0;  // ...of them, those read to summarize them (the rest known from earlier statistics)
  // Overflow mode: ops whose outputs were checked, and of them those whose outputs were read (the
  // bytes read: on the host or the device) or known clean from their operands' bounds without
  // reading (an optimizer's add_ and mul_ on checked tensors); the bytes of inputs copied before an
  // op wrote them in place (so that an overflowing op's dump shows them as it read them).
  uint64_t overflow_checks = 0;
  uint64_t overflow_bytes_read = 0;
  uint64_t overflow_bounded = 0;
  uint64_t overflow_bytes_copied = 0;
};

}  // namespace opdump
