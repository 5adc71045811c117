// Statistics rows whose values the adapter computes itself (DumpTensor::deferred_stats), batched:
// one writer task and one write() per batch instead of one per tensor. The rows themselves are made
// on the writer thread: what a training thread allocates per row it pays for twice, in malloc and in
// the frees that do not come back to its cache.
#pragma once
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "dumper/dump_tensor.h"
#include "format/statistic_csv.h"
#include "layout/layout.h"
#include "writer/async_writer.h"

namespace opdump {

class DeferredRows {
 public:
  struct Origin {  // one per op and side, shared by its rows
    std::string folder;
    OpIdentity op;
  };
  // `rows_written` counts the rows appended to the statistic.csv files.
  DeferredRows(AsyncWriter& writer, StatisticCsvWriter& csv, std::atomic<uint64_t>& rows_written);

  // Queues one row; true when the batch is full and should be flushed.
  bool add(std::shared_ptr<const Origin> origin, IoKind io, uint32_t slot, const DumpTensor& tensor);
  // Hands the queued rows to the writer (a full batch, the end of a dumped iteration, finalize):
  // their statistics are computed there while training goes on.
  void flush();
  // Frees the batches the writer is done with (finalize, once the writer has drained): a finished dump
  // holds none of the adapter's memory (host copies, device reductions with their CUDA events) -- one
  // freed at thread exit, after the CUDA runtime unloaded, aborted the process.
  void release_written();

 private:
  // What a row needs of its tensor, with the shape held inline up to kInlineDims dimensions: a
  // row is made on the training thread, and a copied Shape was an allocation per row there.
  struct Row {
    static constexpr size_t kInlineDims = 8;
    Row(std::shared_ptr<const Origin> origin, IoKind io, uint32_t slot, const DumpTensor& tensor);
    StatisticRowHead head() const;
    std::shared_ptr<const Origin> origin;
    IoKind io;
    uint32_t slot;
    DType dtype;
    uint64_t data_size;
    uint32_t ndim;
    int64_t dims[kInlineDims];
    Shape more_dims;  // the whole shape when it has more than kInlineDims dimensions
    std::shared_ptr<const Buffer> owner;
    std::shared_ptr<DeferredStats> deferred_stats;
    uint64_t pending_bytes;
  };
  AsyncWriter& writer_;
  StatisticCsvWriter& csv_;
  std::atomic<uint64_t>& rows_written_;
  std::mutex mutex_;
  std::vector<Row> pending_;
  // Batches the writer is done with, freed by the thread that made them (the next flush): memory
  // a training thread allocates and a writer thread frees never comes back to the training thread's
  // cache, and glibc's slow path took a third of a tiny-op model's dumped step.
  std::vector<std::shared_ptr<std::vector<Row>>> written_;
};

}  // namespace opdump
