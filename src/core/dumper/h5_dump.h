// A dump into one `.h5` file, as the torch_npu 1.5 dumper wrote it (the PyTorch 1.5.0 accuracy
// comparison guide): /<ir>/<seqid>/input/<argument> and /<ir>/<seqid>/output/<return>, a tensor list
// as /<argument>/<argument>_<i>, non-tensor arguments as typed datasets. The op's recorded arguments
// (the adapter's save_kernel_args JSON) give the names; every op of the dump gets the next seqid of
// one counter. Unlike 1.5: float16 and bfloat16 stored exactly, a tensor's own strides and storage
// offset kept, and no argument dropped (strings, None, devices get datasets of their own). Each op
// group also records opdump's name for the op and its full arguments, so that compare matches an
// `.h5` against an npy dump of the same run and replay re-runs its ops.
#pragma once
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "dumper/dump_tensor.h"
#include "dumper/op_record.h"
#include "opdump/api.h"
#include "opdump/report.h"
#include "writer/async_writer.h"

namespace opdump {
namespace h5 {
class Writer;
}

class H5Dump {
 public:
  // Creates the file (a temporary beside `path` until close()). Throws opdump::Error naming it.
  // `bypass_page_cache`: large tensors written past the page cache (direct_io).
  H5Dump(std::string path, AsyncWriter& writer, bool bypass_page_cache = false);
  ~H5Dump();
  // Queues the op's datasets on the writer under its seqid (op.sequence: its number among the ops
  // the dump saw, so that an overflow check's file keeps the numbers of the run). op.arguments: its
  // arguments JSON ("" when the runtime recorded none: tensors are named input_<slot>, result_<slot>).
  uint64_t dump(const OpRecord& op, const std::vector<DumpTensor>& inputs, const std::vector<DumpTensor>& outputs);
  // After the writer drained: the finished file moves into place.
  void close();
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  AsyncWriter& writer_;
  std::shared_ptr<h5::Writer> file_;
  std::atomic<uint64_t> unnumbered_{0};  // ops without a sequence number (dump_op of runtimes without an adapter)
};

// An .h5 file the framework side writes on its own, with a writer of its own (the torch_npu
// dumper's load mode stores the calls it re-ran): H5Dump and its AsyncWriter behind an interface.
class H5Output {
 public:
  virtual ~H5Output() = default;
  // As H5Dump::dump.
  virtual uint64_t dump(const OpRecord& op, const std::vector<DumpTensor>& inputs,
                        const std::vector<DumpTensor>& outputs) = 0;
  // Drains the writer, then moves the finished file into place (throws opdump::Error naming it).
  virtual void close() = 0;
  // What the writer wrote and lost.
  virtual WriterReport report() const = 0;
};
OPDUMP_ADAPTER_API std::unique_ptr<H5Output> open_h5_output(const std::string& path, WriterOptions options);

// Adds where an op's outputs sit in memory (`json_array`: {stride, offset, device_type} per output) to
// its arguments JSON, the text of one object; the .h5 file stores outputs' strides from there.
OPDUMP_ADAPTER_API void add_output_layouts(std::string& arguments, const std::string& json_array);

// The 1.5 dumper's name for an operator: its name without the namespace, "_" and the overload
// ("aten::add" "Tensor" -> "add_Tensor"; no overload: "relu").
OPDUMP_ADAPTER_API std::string h5_ir_name(const std::string& op, const std::string& overload);

// The group an op call is stored under, "/add_Tensor/3": the operator's name with its overload, as
// the 1.5 dumper named its IR ops (`arguments` JSON's "operator" and "overload"; else `op_type`).
std::string h5_op_group(const std::string& arguments, const std::string& op_type, uint64_t seqid);

}  // namespace opdump
