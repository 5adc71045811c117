// The dump engine: selection, layout, and hand-off to the writer.
#include "dumper/dumper.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <filesystem>
#include <thread>

#include <fmt/format.h>

#include "opdump/error.h"
#include "util/log.h"
#include "util/thread_budget.h"
#include "format/npy.h"
#include "format/ascend_bin.h"
#include "format/placeholders_csv.h"
#include "dumper/deferred_rows.h"
#include "dumper/execution_log.h"
#include "dumper/h5_dump.h"
#include "writer/atomic_file.h"

namespace opdump {
namespace {
std::atomic<uint64_t> dumpers_made{0};  // (Dumper::serial_)

constexpr size_t kPlaceholderBatchBytes = 16384;

void check_writable(const std::string& path) {
  make_dirs(path);
  if (::access(path.c_str(), W_OK | X_OK) != 0) throw IoError(path, "dump path is not writable", errno);
}

}  // namespace

Dumper::Dumper(DumpConfig config, DumperOptions options)
    : config_(std::move(config)), settings_(AdapterSettings::of(config_)), options_(options),
      serial_(dumpers_made.fetch_add(1, std::memory_order_relaxed) + 1),
      overflow_(config_.overflow_number) {
  stats_options_ = stats_options_for(config_.stat_categories);
  stats_options_.threads = 1;  // writer threads already run in parallel
  kernels_ = KernelFilter(config_.kernels, config_.kernels_field);
  for (size_t i = 0; i < config_.dump_list.size(); ++i) {
    const auto& m = config_.dump_list[i];
    if (!m.model_name.empty())
      model_layers_.emplace_back(m.model_name, KernelFilter(m.layers, "dump.dump_list[" + std::to_string(i) + "].layer"));
  }
  if (config_.scene == Scene::Watcher) {
    std::vector<std::string> nodes, layers;
    for (const auto& m : config_.dump_list) {
      nodes.insert(nodes.end(), m.watcher_nodes.begin(), m.watcher_nodes.end());
      layers.insert(layers.end(), m.layers.begin(), m.layers.end());
    }
    watch_nodes_ = KernelFilter(nodes, "dump.dump_list[].watcher_nodes");
    watch_layers_ = KernelFilter(layers, "dump.dump_list[].layer");
  }
  model_seen_ = std::make_unique<std::atomic<bool>[]>(model_layers_.size());
  for (size_t i = 0; i < model_layers_.size(); ++i) model_seen_[i].store(false);
  device_selected_ = config_.device_selected(options_.device_id) && config_.rank_selected(options_.rank);
  if (config_.dump_path.empty()) throw Error("dump path is empty (the config does not enable dumping)");
  check_writable(config_.dump_path);
  const int64_t start = options_.start_time ? options_.start_time : static_cast<int64_t>(std::time(nullptr));
  if (config_.layout == Layout::Ascend)
    run_root_ = join_path(config_.dump_path, dump_time_string(start) + "/" + std::to_string(options_.device_id));
  else
    run_root_ = join_path(config_.dump_path, "rank_" + std::to_string(options_.rank));
  make_dirs(run_root_);
  if (config_.layout == Layout::MindSporeSync) write_text(".dump_metadata/data_dump.json", config_.original_text);
  unsigned threads = config_.writer_threads;
  // Tensors written past the page cache leave the writers waiting for the device more than working:
  // four keep it busy whatever the cores (2 cores, resnet18: 1107-1135 MB/s with two writers,
  // 1239-1283 with four, same rounds). Through the page cache writing is CPU work (the kernel's copy,
  // inodes): a writer per core (320-340 MB/s with one writer, 440-570 with two, no more with four).
  // Statistics leave the writers little to do.
  const unsigned cores = std::max(1u, hardware_threads());
  if (threads == 0) {
    if (!config_.dumps_tensors()) threads = std::min(4u, std::max(1u, cores / 2));
    else threads = config_.direct_io ? 4u : std::min(4u, cores);
  }
  writer_ = std::make_unique<AsyncWriter>(
      WriterOptions{threads, config_.max_inflight_bytes, config_.direct_io ? PageCache::Bypass : PageCache::Use});
  statistics_ = std::make_unique<StatisticCsvWriter>(config_.stat_categories);
  deferred_rows_ = std::make_unique<DeferredRows>(*writer_, *statistics_, stat_rows_);
  execution_ = std::make_unique<ExecutionLog>(run_root_, *writer_, [this] { check_root(); });
  if (config_.file_format == FileFormat::H5) {
    make_dirs(std::filesystem::path(config_.h5_file).parent_path().string());
    h5_ = std::make_unique<H5Dump>(config_.h5_file, *writer_, config_.direct_io);
  }
}

Dumper::~Dumper() {
  try {
    finalize();
  } catch (const std::exception& e) {
    log_error(std::string("finalizing the dump failed: ") + e.what());
  }
}

bool Dumper::iteration_selected(uint64_t iteration) const {
  return config_.enabled && device_selected_ && config_.iterations.contains(iteration);
}

bool Dumper::op_selected(std::string_view model_name, std::string_view op_name, std::string_view op_type,
                         bool marked) const {
  // Overflow and exception dumps watch every op (MindSpore: a debug mode forces dump_mode 0);
  // the watcher selects by its own lists.
  if (config_.scene == Scene::Watcher) return watched_op(op_name, op_type);
  if (config_.scene != Scene::Normal) return true;
  switch (config_.dialect) {
    case Dialect::Acl: {
      if (model_layers_.empty()) return !model_name.empty() || config_.op_switch;
      if (model_name.empty()) return config_.op_switch;
      for (size_t i = 0; i < model_layers_.size(); ++i) {
        const auto& [name, layers] = model_layers_[i];
        if (name != model_name) continue;
        if (!model_seen_[i].load(std::memory_order_relaxed)) model_seen_[i].store(true, std::memory_order_relaxed);
        return layers.empty() || layers.matches(op_name, op_type);
      }
      return false;
    }
    case Dialect::MindSpore:
    case Dialect::Msprobe:  // its "list": the kernels filter
      if (config_.dump_marked_only) return marked;
      return config_.dump_all_ops || kernels_.matches(op_name, op_type);
    case Dialect::Session:
      return true;
  }
  return true;
}

namespace {
// The folder this thread's last op was given: an iteration's ops share it, and a lookup in the map
// below took a lock and a copy of the model's name per op. Kept by the serial of the dumper that
// made it, so that a later dumper at the same address never takes it.
struct LastFolder {
  uint64_t dumper = 0, model_id = 0, iteration = 0;
  std::string model;
  const std::string* folder = nullptr;
};
thread_local LastFolder last_folder;
}  // namespace

const std::string& Dumper::op_folder(const OpRecord& op) {
  LastFolder& last = last_folder;
  if (last.dumper == serial_ && last.model_id == op.model_id && last.iteration == op.iteration &&
      last.model == op.model_name)
    return *last.folder;
  const std::string& folder = made_folder(op);
  last.dumper = serial_;
  last.model_id = op.model_id;
  last.iteration = op.iteration;
  last.model = op.model_name;
  last.folder = &folder;
  return folder;
}

const std::string& Dumper::made_folder(const OpRecord& op) {
  // Every op of one model and iteration shares its folder (the list of folders made grew by one
  // per iteration, and each op compared its path with all of them).
  auto key = std::make_tuple(op.model_id, op.iteration, op.model_name);
  {
    std::lock_guard<std::mutex> lock(folders_mutex_);
    if (auto it = folders_made_.find(key); it != folders_made_.end()) return it->second;
  }
  std::string folder;
  if (config_.layout == Layout::Ascend) {
    folder = op.model_name.empty() ? run_root_
                                   : join_path(run_root_, folder_name(op.model_name) + "/" + std::to_string(op.model_id) +
                                                              "/" + std::to_string(op.iteration));
  } else {
    folder = join_path(run_root_, folder_name(config_.net_name) + "/" + std::to_string(op.model_id) + "/" +
                                      std::to_string(op.iteration));
  }
  std::lock_guard<std::mutex> lock(folders_mutex_);
  if (auto it = folders_made_.find(key); it != folders_made_.end()) return it->second;  // made by another thread meanwhile
  check_root();
  make_dirs(folder);
  // (never erased: the map's strings outlive every op that was given one)
  return folders_made_.emplace(std::move(key), std::move(folder)).first->second;
}

namespace {
// Memory a job holding `t` adds to what is in flight: nothing when the copy was counted as it was made.
uint64_t uncharged_bytes(const DumpTensor& t) { return t.owner && t.owner->charged() ? 0 : t.view.nbytes(); }
}  // namespace

void Dumper::dump_op(const OpRecord& op, const std::vector<DumpTensor>& inputs, const std::vector<DumpTensor>& outputs) {
  if (closed_.load(std::memory_order_acquire)) return;
  static const std::string kInTheFile;  // an .h5 dump has no folder per op
  dump_to(op, h5_ ? kInTheFile : op_folder(op), inputs, outputs);
}

TensorView Dumper::file_view(const TensorView& v) const {
  if (!config_.sample || v.numel() <= config_.sample_num) return v;
  return TensorView{v.data, v.dtype, Shape{static_cast<int64_t>(config_.sample_num)}};
}

void Dumper::record_placeholders(const OpRecord& op, const std::string& folder, const std::vector<DumpTensor>& inputs,
                                 const std::vector<DumpTensor>& outputs) {
  std::string rows;
  for (const auto* list : {&inputs, &outputs})
    for (size_t slot = 0; slot < list->size(); ++slot) {
      const DumpTensor& t = (*list)[slot];
      if (t.placeholder.empty()) continue;
      rows += placeholders_csv_row(op.id, list == &inputs ? IoKind::Input : IoKind::Output, static_cast<uint32_t>(slot),
                                   t.placeholder);
      if (t.data_lost) count_lost_data(op, t);
    }
  if (rows.empty()) return;
  bool full;
  {
    std::lock_guard<std::mutex> lock(placeholders_mutex_);
    if (pending_placeholders_.empty() || pending_placeholders_.back().first != folder)
      pending_placeholders_.emplace_back(folder, std::string());
    pending_placeholders_.back().second += rows;
    pending_placeholder_bytes_ += rows.size();
    full = pending_placeholder_bytes_ >= kPlaceholderBatchBytes;
  }
  if (full) flush_placeholders();
}

void Dumper::count_lost_data(const OpRecord& op, const DumpTensor& t) {
  std::lock_guard<std::mutex> lock(placeholders_mutex_);
  LostData& lost = lost_data_[t.placeholder];
  if (!lost.count++) lost.example = op.id.op_name;
}

void Dumper::flush_placeholders() {
  {
    std::lock_guard<std::mutex> lock(placeholders_mutex_);
    if (placeholder_flush_queued_ || pending_placeholder_bytes_ == 0) return;
    placeholder_flush_queued_ = true;
  }
  writer_->run(kPlaceholderBatchBytes, [this] {
    // The rows pending when the task runs, taken and written under one lock: files get them in the
    // order they came, and the header once, first.
    std::lock_guard<std::mutex> lock(placeholders_mutex_);
    for (const auto& [folder, rows] : pending_placeholders_) {
      const bool fresh = placeholder_files_.insert(folder).second;
      append_to_file(folder + "/" + kPlaceholdersFile, (fresh ? placeholders_csv_header() : "") + rows);
    }
    pending_placeholders_.clear();
    pending_placeholder_bytes_ = 0;
    placeholder_flush_queued_ = false;
  });
}

void Dumper::dump_to(const OpRecord& op, const std::string& folder, const std::vector<DumpTensor>& inputs,
                     const std::vector<DumpTensor>& outputs) {
  ops_.fetch_add(1, std::memory_order_relaxed);
  const std::vector<DumpTensor> none;
  const auto& ins = config_.dumps_inputs() ? inputs : none;
  const auto& outs = config_.dumps_outputs() ? outputs : none;
  if (h5_) {  // placeholders are the file's own (a Placeholder attribute); lost data is warned about at the end
    for (const auto* list : {&ins, &outs})
      for (const auto& t : *list) {
        tensor_bytes_.fetch_add(t.view.nbytes(), std::memory_order_relaxed);
        if (t.data_lost) count_lost_data(op, t);
      }
    tensors_.fetch_add(ins.size() + outs.size(), std::memory_order_relaxed);
    const uint64_t seqid = h5_->dump(op, ins, outs);
    if (config_.scene == Scene::Overflow) {  // the torch_npu 1.5 dumper's line for an overflowing op
      const std::string group = h5_op_group(op.arguments, op.id.op_type, seqid);
      const size_t slash = group.rfind('/');
      log_warning("IR: " + group.substr(1, slash - 1) + " SeqId: " + group.substr(slash + 1) + " is overflow!");
    }
    return;
  }
  record_placeholders(op, folder, ins, outs);
  if (config_.file_format == FileFormat::Bin) {
    dump_bin(op, folder, ins, outs);
    return;
  }
  if (config_.dumps_tensors()) {
    dump_tensor_files(op, folder, IoKind::Input, ins);
    dump_tensor_files(op, folder, IoKind::Output, outs);
  }
  if (config_.dumps_statistics()) {
    std::shared_ptr<const DeferredRows::Origin> origin;
    dump_statistics(op, folder, IoKind::Input, ins, origin);
    dump_statistics(op, folder, IoKind::Output, outs, origin);
  }
}

void Dumper::dump_tensor_files(const OpRecord& op, const std::string& folder, IoKind io,
                               const std::vector<DumpTensor>& tensors) {
  for (size_t slot = 0; slot < tensors.size(); ++slot) {
    DumpTensor t = tensors[slot];
    if (!t.view.data && t.view.nbytes() != 0) continue;  // statistics only
    t.view = file_view(t.view);
    const std::string path = folder + "/" + names_.map(folder, mindspore_file_name(op.id, io, static_cast<uint32_t>(slot)));
    std::string header = npy_header(npy_storage_dtype(t.view.dtype), t.view.shape);
    const uint64_t bytes = t.view.nbytes();
    tensors_.fetch_add(1, std::memory_order_relaxed);
    tensor_bytes_.fetch_add(bytes, std::memory_order_relaxed);
    if (t.view.dtype == DType::BFloat16) {
      // Widen to float32 on a writer thread, not on the caller's.
      writer_->run(uncharged_bytes(t) + npy_payload_size(t.view), [this, path, header = std::move(header), t] {
        t.owner->wait_ready();
        auto wide = std::make_shared<HeapBuffer>(npy_payload_size(t.view));
        npy_encode_payload(t.view, wide->mutable_data());
        writer_->write_now(path, header.data(), header.size(), wide->data(), wide->size());
      });
    } else {
      writer_->write_file(path, std::move(header), std::make_shared<ViewBuffer>(t.owner, t.view.data, bytes));
    }
  }
}

void Dumper::dump_bin(const OpRecord& op, const std::string& folder, const std::vector<DumpTensor>& inputs,
                      const std::vector<DumpTensor>& outputs) {
  uint64_t bytes = 0, uncharged = 0;
  for (const auto* list : {&inputs, &outputs})
    for (const auto& t : *list) {
      bytes += t.view.nbytes();
      uncharged += uncharged_bytes(t);
    }
  tensors_.fetch_add(inputs.size() + outputs.size(), std::memory_order_relaxed);
  tensor_bytes_.fetch_add(bytes, std::memory_order_relaxed);
  const std::string path = folder + "/" + names_.map(folder, ascend_file_name(op.id));
  // The payload is assembled into one buffer on the writer thread: as large as the tensors.
  writer_->run(uncharged + bytes, [this, path, op, inputs, outputs] {
    std::vector<BinWriteTensor> in, out;
    for (const auto& t : inputs) {
      if (t.owner) t.owner->wait_ready();
      in.push_back({file_view(t.view), 2, {}});
    }
    for (const auto& t : outputs) {
      if (t.owner) t.owner->wait_ready();
      out.push_back({file_view(t.view), 2, {}});
    }
    const std::string header = ascend_bin_header(op.id.op_name, op.id.timestamp, in, out);
    const auto payload = ascend_bin_payload(in, out);
    writer_->write_now(path, header.data(), header.size(), payload->data(), payload->size());
  });
}

CopyBytes Dumper::allocate_copy(size_t bytes) {
  std::shared_ptr<CopyMemory> memory = writer_->allocate_copy(bytes);
  uint8_t* data = memory->mutable_data();
  return CopyBytes{data, std::move(memory)};
}

void Dumper::dump_statistics(const OpRecord& op, const std::string& folder, IoKind io,
                             const std::vector<DumpTensor>& tensors,
                             std::shared_ptr<const DeferredRows::Origin>& origin) {
  const StatsOptions so = stats_options();
  for (size_t slot = 0; slot < tensors.size(); ++slot) {
    const DumpTensor& t = tensors[slot];
    stat_bytes_.fetch_add(t.view.nbytes(), std::memory_order_relaxed);
    // (without deferred statistics the writer computes them from the view: every byte is read)
    if (const uint64_t read = t.deferred_stats ? t.bytes_read : t.view.nbytes())
      stat_bytes_read_.fetch_add(read, std::memory_order_relaxed);
    if (t.deferred_stats || t.view.numel() == 0) {
      if (!origin) origin = std::make_shared<const DeferredRows::Origin>(DeferredRows::Origin{folder, op.id});
      bool full;
      if (t.deferred_stats) {
        full = deferred_rows_->add(origin, io, static_cast<uint32_t>(slot), t);
      } else {  // (a placeholder: an undefined gradient) nothing to read; batched, not a writer task of its own
        DumpTensor known = t;
        known.deferred_stats = std::make_shared<KnownStats>(compute_stats(t.view, so));
        full = deferred_rows_->add(origin, io, static_cast<uint32_t>(slot), known);
      }
      if (!full) continue;
    } else {
      writer_->run(uncharged_bytes(t), [this, folder, row = statistic_row(op.id, io, slot, t.view), t, so]() mutable {
        if (t.owner) t.owner->wait_ready();
        row.stats = compute_stats(t.view, so);
        statistics_->append(folder, row);
        stat_rows_.fetch_add(1, std::memory_order_relaxed);
      });
      continue;
    }
    flush_pending_rows();
  }
}

void Dumper::flush_pending_rows() {
  flush_placeholders();
  deferred_rows_->flush();
}

bool Dumper::wants_source(uint64_t graph) { return execution_->wants_source(graph); }

void Dumper::record_execution(const OpRecord& op, TensorIdList input_ids, TensorIdList output_ids,
                              const std::string& source, const std::vector<std::pair<uint64_t, std::string>>& named) {
  if (closed_.load(std::memory_order_acquire)) return;
  execution_->record(op, input_ids, output_ids, source, named);
}

void Dumper::name_tensors(const std::vector<std::pair<uint64_t, std::string>>& named) {
  if (closed_.load(std::memory_order_acquire) || named.empty()) return;
  execution_->name_tensors(named);
}

void Dumper::check_root() {
  if (::access(run_root_.c_str(), F_OK) != 0 && !root_lost_reported_.exchange(true))
    writer_->record_problem("the dump folder " + run_root_ +
                            " was deleted while dumping; it is created again, files written before are gone");
}

void Dumper::write_kernel_args(const OpRecord& op, std::string json) {
  if (closed_.load(std::memory_order_acquire) || h5_) return;  // an .h5 dump keeps them in the op's group
  const std::string folder = op_folder(op);
  const std::string base = sanitize_name(op.id.op_type) + "." + sanitize_name(op.id.op_name);
  bool repeated;
  {
    std::lock_guard<std::mutex> lock(kernel_args_mutex_);
    if (op.iteration != kernel_args_iteration_) {  // (folders are per iteration: the names of the last are done)
      kernel_args_written_.clear();
      kernel_args_iteration_ = op.iteration;
    }
    repeated = !kernel_args_written_.insert(folder + "/" + base).second;
  }
  const std::string task = std::to_string(op.id.task_id);
  const std::string path = folder + "/" + names_.map(folder, repeated ? base + "." + task + ".json" : base + ".json");
  // Which of the ops of one name the file describes: the task id of its tensor files.
  if (json.size() > 2 && json.front() == '{') json.insert(1, "\"task_id\":" + task + ",");
  const uint64_t bytes = json.size();
  writer_->run(bytes, [this, path, json = std::move(json)] {
    writer_->write_now(path, json.data(), json.size(), nullptr, 0);
  });
}

void Dumper::write_text(const std::string& relative_path, const std::string& text) {
  const std::string path = join_path(run_root_, relative_path);
  make_dirs(path.substr(0, path.find_last_of('/')));
  write_file_atomic(path, text.data(), text.size(), nullptr, 0);
}

DumpCounters Dumper::counters() const {
  return DumpCounters{ops_.load(),
                      tensors_.load(),
                      tensor_bytes_.load(),
                      stat_rows_.load(),
                      stat_bytes_.load(),
                      stat_bytes_read_.load(),
                      overflow_checks_.load(),
                      overflow_bytes_read_.load(),
                      overflow_bounded_.load(),
                      overflow_bytes_copied_.load()};
}

namespace {
// Leases this thread holds, per Dumper: finalize() on a thread inside an op must not wait for itself.
struct ThreadLeases {
  const Dumper* dumper = nullptr;
  int64_t count = 0;
};
thread_local std::vector<ThreadLeases> t_leases;

int64_t& leases_here(const Dumper* d) {
  for (auto& l : t_leases)
    if (l.dumper == d) return l.count;
  t_leases.push_back(ThreadLeases{d, 0});
  return t_leases.back().count;
}
}  // namespace

Dumper::OpLease& Dumper::OpLease::operator=(OpLease&& o) noexcept {
  if (this != &o) {
    release();
    dumper_ = std::exchange(o.dumper_, nullptr);
  }
  return *this;
}

void Dumper::OpLease::release() {
  if (!dumper_) return;
  dumper_->leave_op();
  dumper_ = nullptr;
}

Dumper::OpLease Dumper::enter_op() { return try_enter_op() ? OpLease(this) : OpLease(); }

bool Dumper::try_enter_op() {
  // Dekker-style with closing_: either finalize sees this op counted, or this op sees closing_.
  ops_in_flight_.fetch_add(1, std::memory_order_seq_cst);
  if (closing_.load(std::memory_order_seq_cst)) {
    ops_in_flight_.fetch_sub(1, std::memory_order_seq_cst);
    return false;
  }
  ++leases_here(this);
  return true;
}

void Dumper::leave_op() {
  if (--leases_here(this) == 0)
    t_leases.erase(std::remove_if(t_leases.begin(), t_leases.end(), [](const ThreadLeases& l) { return !l.count; }),
                   t_leases.end());
  ops_in_flight_.fetch_sub(1, std::memory_order_seq_cst);
}

void Dumper::stop_ops() {
  closing_.store(true, std::memory_order_seq_cst);
  const int64_t mine = leases_here(this);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(kOpDrainMilliseconds);
  while (ops_in_flight_.load(std::memory_order_seq_cst) > mine) {
    if (std::chrono::steady_clock::now() > deadline) {
      log_warning(std::to_string(ops_in_flight_.load() - mine) + " operators on other threads were still being " +
                  "dumped after " + std::to_string(kOpDrainMilliseconds / 1000) +
                  " s; the dump is closed without waiting for them (their files may be missing)");
      return;
    }
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
}

WriterReport Dumper::finalize(uint64_t last_iteration) {
  std::lock_guard<std::mutex> finalize_lock(finalize_mutex_);
  if (closed_.load(std::memory_order_acquire)) return final_report_;
  stop_ops();
  flush_pending_rows();
  execution_->flush();
  finalize_scenes();
  writer_->drain();
  deferred_rows_->release_written();
  statistics_->close_all();
  if (h5_) {
    try {
      h5_->close();
    } catch (const Error& e) {
      writer_->record_lost(1, 0, e.what());
    }
  }
  closed_.store(true, std::memory_order_release);
  final_report_ = writer_->report();
  final_report_.files_written += statistics_->files_written();  // statistic.csv files are appended in place
  final_report_.bytes_written += statistics_->bytes_written();
  auto& warnings = final_report_.warnings;
  for (const auto& e : kernels_.unmatched_entries())
    warnings.push_back(config_.kernels_field + " entry \"" + e + "\" matched no operator");
  for (size_t i = 0; i < model_layers_.size(); ++i) {
    const auto& [model, layers] = model_layers_[i];
    if (!model_seen_[i].load()) {
      warnings.push_back("dump_list model_name \"" + model + "\" matched no model that ran (registered models " +
                         "are named by register_model / ModelScope / ScriptModel; CANN dumps only models loaded " +
                         "after the config)");
      continue;
    }
    for (const auto& e : layers.unmatched_entries())
      warnings.push_back("dump_list layer \"" + e + "\" of model \"" + model + "\" matched no operator");
  }
  if (last_iteration == 0 && !config_.iterations.contains(0) && config_.iterations.next_after(0) != UINT64_MAX)
    warnings.push_back("the dump asks for iterations after 0 (" + config_.iterations.to_string() +
                       ") but no iteration ended: call opdump.step() after each one, or opdump.hook_optimizer(optimizer)");
  {
    std::lock_guard<std::mutex> lock(placeholders_mutex_);
    for (const auto& [why, lost] : lost_data_)
      warnings.push_back(std::to_string(lost.count) + " tensors are placeholders without their data: " + why +
                         " (first at " + lost.example + "; " +
                         (h5_ ? "empty datasets with a Placeholder attribute in " + h5_->path()
                              : "listed in each folder's " + std::string(kPlaceholdersFile)) + ")");
  }
  if (config_.scene == Scene::Normal && device_selected_ && ops_.load() == 0 && warnings.empty())
    warnings.push_back("nothing was dumped: no operator of the selected iterations, models and kernels ran");
  for (const auto& w : warnings) log_warning(w);
  if (!final_report_.ok())
    log_error("dump incomplete: " + std::to_string(final_report_.files_lost) + " files (" +
              std::to_string(final_report_.bytes_lost) + " bytes) lost, " + std::to_string(final_report_.tasks_failed) +
              " tasks failed; first error: " + final_report_.first_error);
  return final_report_;
}

}  // namespace opdump
