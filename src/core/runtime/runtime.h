// Process-wide dump state shared by the runtime adapters and the public API, independent of
// any framework: the CANN aclmdlSetDump reference's lifecycle (init / set_dump / finalize), iteration counting,
// registered models and the module scopes that name operators.
#pragma once
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "dumper/dumper.h"
#include "runtime/runtime_interface.h"
#include "opdump/report.h"
#include "opdump/scopes.h"

namespace opdump {

struct ModelInfo {
  std::string name;
  uint64_t id = 0;
  uint64_t generation = 0;  // set_dump generation in force when the model was registered
};

// What the op path reads of the runtime, as one immutable value: republished whenever a dump is
// set or finalized or a model registered, so that an op reads it without taking a lock.
struct RuntimeSnapshot {
  std::shared_ptr<Dumper> dumper;  // null: no dump configured
  uint64_t generation = 0;         // set_dump generation
  std::vector<ModelInfo> models;
  // Names of tensors by data address ("parameter conv1.weight"): shared between snapshots.
  std::shared_ptr<const std::unordered_map<uint64_t, std::string>> tensor_names;
  const ModelInfo* find_model(const std::string& name) const;
  std::string tensor_name(uint64_t address) const;  // "" when unknown
  // Registered after the current set_dump (or never registered: an ad-hoc model name).
  bool model_enabled(const std::string& name) const;
};

// The process-wide runtime. The framework side reaches it as a RuntimeInterface (whose comments say
// what each member does); the public API and the core use it directly.
class Runtime final : public RuntimeInterface {
 public:
  // The process's runtime, which the public APIs and the adapters use. It is never destroyed
  // (finalize() runs from atexit handlers instead), so that forked children and late static
  // destructors never touch a dead writer. Other instances are for tests: everything that uses
  // a runtime takes it by reference.
  static Runtime& instance();
  Runtime();
  ~Runtime() override { finalize_dump(); }
  Runtime(const Runtime&) = delete;
  Runtime& operator=(const Runtime&) = delete;

  void init(const std::string& config_path) override;
  bool initialized() const override;
  void init_dump() override;
  void set_dump(const std::string& config_path) override;
  void set_dump_config(DumpConfig config) override;
  WriterReport finalize_dump() override;
  void finalize() override;

  void step() override;
  uint64_t iteration() const override { return iteration_.load(std::memory_order_relaxed); }
  // The next op's task id: its execution index in the iteration, over every caller of the op path.
  uint64_t next_task_id() const { return task_counter_.fetch_add(1, std::memory_order_relaxed); }
  bool dumping() const override { return dumping_.load(std::memory_order_relaxed); }
  void set_paused(bool paused) override;
  bool paused() const { return paused_.load(std::memory_order_relaxed); }
  std::shared_ptr<Dumper> dumper() const;
  std::shared_ptr<DumpSink> dump_sink() const override { return dumper(); }
  OpReport begin_op() const override { return OpReport::begin(*this); }
  // The op path's view (thread-cached: one atomic load, no lock, while nothing changed).
  std::shared_ptr<const RuntimeSnapshot> snapshot() const;
  void disable_after_error(const std::string& what) override;

  bool activate_from_environment() override;
  std::optional<EnvironmentSettings> claim_environment() override;

  uint64_t register_model(const std::string& name) override;
  bool model_enabled(const std::string& name) const;  // registered after the current set_dump
  std::optional<ModelInfo> find_model(const std::string& name) const;  // a copy: registering may move the list
  void name_tensors(std::vector<std::pair<uint64_t, std::string>> tensors) override;
  std::string tensor_name(uint64_t address) const override;

  void set_rank(uint32_t rank, uint32_t device_id) override;
  uint32_t rank() const override { return rank_.load(std::memory_order_relaxed); }
  uint32_t device_id() const { return device_id_.load(std::memory_order_relaxed); }

  void set_python_hooks(PythonHooks hooks) override;
  std::string python_stack() const override;
  std::string python_location() const override;

  void add_listener(RuntimeListener* listener) override;
  void remove_listener(RuntimeListener* listener) override;

 private:
  void update_activity();
  void publish_locked();  // a new snapshot of dumper_, generation_ and models_
  void notify_iteration(uint64_t it);
  void notify_ending(Dumper& dumper);

  mutable std::mutex mutex_;
  bool initialized_ = false;
  std::shared_ptr<Dumper> dumper_;
  uint64_t generation_ = 0;
  std::vector<ModelInfo> models_;
  std::shared_ptr<const RuntimeSnapshot> snapshot_;  // under mutex_
  std::atomic<uint64_t> snapshot_version_{0};  // unique across runtimes
  std::atomic<bool> environment_read_{false};
  std::shared_ptr<const std::unordered_map<uint64_t, std::string>> tensor_names_ =
      std::make_shared<std::unordered_map<uint64_t, std::string>>();  // replaced whole, never changed
  std::vector<RuntimeListener*> listeners_;
  std::atomic<uint64_t> iteration_{0};
  mutable std::atomic<uint64_t> task_counter_{0};  // restarts with each iteration
  std::atomic<bool> dumping_{false};
  std::atomic<bool> broken_{false};
  std::atomic<bool> paused_{false};
  std::atomic<uint32_t> rank_{0}, device_id_{0};
  // Activity changes reach listeners in the order they were decided (recursive: a listener that
  // turns dumping off after an error decides again).
  std::recursive_mutex notify_mutex_;
  PythonHooks python_;
};

}  // namespace opdump
