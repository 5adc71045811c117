// Batched statistics rows (deferred_rows.h).
#include "dumper/deferred_rows.h"

#include <algorithm>
#include <utility>

namespace opdump {
namespace {

// Each batch wakes a writer thread, a futex system call and an inter-processor interrupt on the
// training thread (64-row batches: 22 per resnet18 step, about 1 ms).
constexpr size_t kBatch = 256;

}  // namespace

DeferredRows::DeferredRows(AsyncWriter& writer, StatisticCsvWriter& csv, std::atomic<uint64_t>& rows_written)
    : writer_(writer), csv_(csv), rows_written_(rows_written) {}

DeferredRows::Row::Row(std::shared_ptr<const Origin> o, IoKind i, uint32_t s, const DumpTensor& tensor)
    : origin(std::move(o)),
      io(i),
      slot(s),
      dtype(tensor.view.dtype),
      data_size(tensor.view.nbytes()),
      ndim(static_cast<uint32_t>(tensor.view.shape.size())),
      owner(tensor.owner),
      deferred_stats(tensor.deferred_stats),
      pending_bytes(tensor.pending_bytes) {
  if (ndim <= kInlineDims) std::copy(tensor.view.shape.begin(), tensor.view.shape.end(), dims);
  else more_dims = tensor.view.shape;
}

StatisticRowHead DeferredRows::Row::head() const {
  return StatisticRowHead{origin->op, io, slot, data_size, dtype, ndim <= kInlineDims ? dims : more_dims.data(), ndim};
}

bool DeferredRows::add(std::shared_ptr<const Origin> origin, IoKind io, uint32_t slot, const DumpTensor& tensor) {
  std::lock_guard<std::mutex> lock(mutex_);
  pending_.emplace_back(std::move(origin), io, slot, tensor);
  return pending_.size() >= kBatch;
}

void DeferredRows::flush() {
  auto batch = std::make_shared<std::vector<Row>>();
  std::vector<std::shared_ptr<std::vector<Row>>> written;  // freed here, on leaving
  {
    std::lock_guard<std::mutex> lock(mutex_);
    written.swap(written_);
    if (pending_.empty()) return;
    batch->swap(pending_);
    pending_.reserve(kBatch);
  }
  uint64_t bytes = 0;
  for (const auto& r : *batch) bytes += 64 + r.pending_bytes;
  writer_.run(bytes, [this, batch]() mutable {
    // Rows of one folder go out in one write(), in the order they were dumped; an op's rows share
    // their origin, so folders are compared once per op, not per row.
    const Origin* origin = nullptr;
    const std::string* folder = nullptr;
    std::string text;
    size_t rows = 0;
    auto append = [&] {
      if (!rows) return;
      csv_.append_text(*folder, std::move(text));
      rows_written_.fetch_add(rows, std::memory_order_relaxed);
      text = std::string();
      rows = 0;
    };
    for (auto& r : *batch) {
      if (r.origin.get() != origin) {
        origin = r.origin.get();
        if (!folder || origin->folder != *folder) {
          append();
          folder = &origin->folder;
          text.reserve(160 * batch->size());
        }
      }
      if (r.owner) r.owner->wait_ready();
      append_statistic_csv_row(text, r.head(), r.deferred_stats->get(), csv_.categories());
      ++rows;
    }
    append();
    std::lock_guard<std::mutex> lock(mutex_);
    written_.push_back(std::move(batch));
  });
}

void DeferredRows::release_written() {
  std::vector<std::shared_ptr<std::vector<Row>>> written;  // freed here, on leaving
  std::lock_guard<std::mutex> lock(mutex_);
  written.swap(written_);
}

}  // namespace opdump
