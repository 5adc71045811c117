// The watcher scene: snapshots of watched outputs on the host, compared after layer ops.
#include "watcher_scene.h"

#include <algorithm>

#include "capture.h"
#include "debug_scenes/debug_scenes.h"

namespace opdump::pt::detail {
namespace {

at::Tensor host_snapshot(const at::Tensor& t) {
  at::Tensor copy = at::empty(t.sizes(), t.options().device(at::kCPU).memory_format(at::MemoryFormat::Contiguous));
  copy.copy_(t);
  return copy;
}

TensorView view_of(const at::Tensor& host) {
  DType dtype = DType::Float32;
  dtype_of(host.scalar_type(), &dtype);
  return TensorView{host.numel() ? host.data_ptr() : nullptr, dtype, Shape(host.sizes().begin(), host.sizes().end())};
}

bool has_layers(const DumpSink& dumper) { return dumper.settings().watch_has_layers; }

}  // namespace

void WatcherScene::watch(const OpRecord& record, const std::vector<at::Tensor>& outputs) {
  std::vector<Watched> entries;
  DType dtype;
  for (size_t i = 0; i < outputs.size(); ++i) {
    const at::Tensor& t = outputs[i];
    if (!t.defined() || t.layout() != at::kStrided || !dtype_of(t.scalar_type(), &dtype)) continue;
    entries.push_back(Watched{record, static_cast<uint32_t>(i), t, host_snapshot(t)});
  }
  std::lock_guard<std::mutex> lock(mutex_);
  watched_.erase(std::remove_if(watched_.begin(), watched_.end(),
                                [&](const Watched& w) { return w.record.id.op_name == record.id.op_name; }),
                 watched_.end());
  for (Watched& w : entries) watched_.push_back(std::move(w));
}

void WatcherScene::check_after(DumpSink& dumper, const OpRecord& layer) {
  std::lock_guard<std::mutex> lock(mutex_);
  const bool layers_named = has_layers(dumper);
  std::vector<std::pair<OpRecord, std::vector<DumpTensor>>> dumps;  // per watched op, outputs by slot
  for (Watched& w : watched_) {
    at::Tensor now = w.live.device().is_cpu() && w.live.is_contiguous() ? w.live : host_snapshot(w.live);
    WatchResult r;
    r.iteration = layer.iteration;
    r.layer_op = layer.id;
    r.watched_op = w.record.id;
    r.slot = w.slot;
    r.diff = diff_tensors(view_of(w.snapshot), view_of(now));
    dumper.record_watch(r);
    if (r.diff.changed) w.snapshot = host_snapshot(w.live);  // later changes are someone else's
    if (!layers_named && !r.diff.changed) continue;  // checked after every op: dump changes only
    // Entries of one op are adjacent (watch() adds them together).
    if (dumps.empty() || dumps.back().first.id.op_name != w.record.id.op_name) dumps.push_back({w.record, {}});
    auto& slots = dumps.back().second;
    while (slots.size() < w.slot)  // a slot not watched: written as an empty tensor
      slots.push_back(data_tensor(TensorView{nullptr, DType::Float32, {0}}, nullptr));
    slots.push_back(dump_copy(w.live));
  }
  for (auto& [record, outputs] : dumps) dumper.dump_watched(record, layer, outputs);
}

void WatcherScene::clear() {
  std::lock_guard<std::mutex> lock(mutex_);
  watched_.clear();
}

}  // namespace opdump::pt::detail
