#include "runtime/op_report.h"

#include "dumper/dumper.h"
#include "dumper/h5_dump.h"
#include "layout/layout.h"
#include "opdump/scopes.h"
#include "runtime/runtime.h"

namespace opdump {

namespace {
// The engine behind the sink the report holds (the runtime only ever hands out its Dumper).
Dumper& engine(const std::shared_ptr<DumpSink>& sink) { return static_cast<Dumper&>(*sink); }
}  // namespace

OpReport::OpReport() = default;
OpReport::~OpReport() {
  if (sink_) engine(sink_).leave_op();
}
OpReport::OpReport(OpReport&& o) noexcept = default;  // a moved-from report holds no sink: no lease

OpReport& OpReport::operator=(OpReport&& o) noexcept {
  if (this != &o) {
    if (sink_) engine(sink_).leave_op();
    snapshot_ = std::move(o.snapshot_);
    sink_ = std::move(o.sink_);
    record_ = std::move(o.record_);
    runtime_ = std::exchange(o.runtime_, nullptr);
  }
  return *this;
}

OpReport OpReport::begin(const Runtime& runtime) {
  OpReport report;
  report.snapshot_ = runtime.snapshot();
  const std::shared_ptr<Dumper>& dumper = report.snapshot_->dumper;
  if (!dumper || runtime.paused() || !dumper->iteration_selected(runtime.iteration())) return report;
  if (!dumper->try_enter_op()) return report;  // the dump is closing
  report.sink_ = dumper;
  report.runtime_ = &runtime;
  return report;
}

uint64_t OpReport::model_id(const std::string& model) const {
  if (model.empty()) return 0;
  const ModelInfo* m = snapshot_->find_model(model);
  return m ? m->id : 0;
}

void OpReport::identify(std::string_view op_type, std::string name, std::string model, uint64_t model_id) {
  record_.id = OpIdentity{std::string(op_type), std::move(name), runtime_->next_task_id(), 0, now_microseconds()};
  record_.model_name = std::move(model);
  record_.model_id = model_id;
  record_.iteration = runtime_->iteration();
  // .h5 dumps number every op they see (their seqid); other dumps keep the shared counter off the op path
  if (engine(sink_).config().file_format == FileFormat::H5) record_.sequence = engine(sink_).next_op_sequence();
}

OpPlan OpReport::decide() const {
  OpPlan plan;
  const DumpConfig& config = engine(sink_).config();
  const std::string& model = record_.model_name;
  if (!model.empty() && config.model_dump_needs_reload() && !snapshot_->model_enabled(model)) return plan;
  plan.scene = config.scene != Scene::Normal;
  // Outside the watcher, a debug scene dumps nothing unless one of its checks fires.
  if (plan.scene && config.scene != Scene::Watcher) return plan;
  if (!engine(sink_).op_selected(model, record_.id.op_name, record_.id.op_type, scopes::marked())) return plan;
  plan.dump = true;
  plan.inputs = config.dumps_inputs();
  plan.outputs = config.dumps_outputs();
  plan.kernel_args = config.save_kernel_args || config.file_format == FileFormat::H5;
  return plan;
}

void OpReport::record_execution(TensorIdList input_ids, TensorIdList output_ids,
                                const std::string& source, const std::vector<std::pair<uint64_t, std::string>>& named) {
  engine(sink_).record_execution(record_, input_ids, output_ids, source, named);
}

void OpReport::name_tensors(const std::vector<std::pair<uint64_t, std::string>>& named) {
  engine(sink_).name_tensors(named);
}

void OpReport::write_kernel_args(std::string json) {
  if (engine(sink_).config().file_format == FileFormat::H5) record_.arguments = std::move(json);
  else engine(sink_).write_kernel_args(record_, std::move(json));
}

void OpReport::add_output_layouts(const std::string& json_array) { opdump::add_output_layouts(record_.arguments, json_array); }

}  // namespace opdump
