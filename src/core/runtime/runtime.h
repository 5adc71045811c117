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
#include "opdump/report.h"
#include "opdump/scopes.h"

namespace opdump {

// What an adapter (e.g. the PyTorch observer) learns from the runtime.
class RuntimeListener {
 public:
  virtual ~RuntimeListener() = default;
  // Dumping turned on or off (a selected iteration began or ended, a config was set or finalized).
  virtual void on_activity(bool dumping) = 0;
  // A new iteration began (per-iteration counters restart).
  virtual void on_iteration(uint64_t iteration) {}
  // A dump is about to be finalized (finalize_dump, or replaced by set_dump): work the
  // adapter still holds for it is handed over now.
  virtual void on_dump_ending(Dumper& dumper) {}
};

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

// Where the environment asks a process to dump, and as which rank (read in this one place).
struct EnvironmentSettings {
  std::string config_path;  // OPDUMP_CONFIG, else MindSpore's MINDSPORE_DUMP_CONFIG; "" = none
  uint32_t rank = 0;        // RANK, else LOCAL_RANK
  uint32_t device_id = 0;   // LOCAL_RANK, else the rank
};
EnvironmentSettings read_environment();

class Runtime {
 public:
  // The process's runtime, which the public APIs and the adapters use. It is never destroyed
  // (finalize() runs from atexit handlers instead), so that forked children and late static
  // destructors never touch a dead writer. Other instances are for tests: everything that uses
  // a runtime takes it by reference.
  static Runtime& instance();
  Runtime();
  ~Runtime() { finalize_dump(); }
  Runtime(const Runtime&) = delete;
  Runtime& operator=(const Runtime&) = delete;

  // the CANN aclmdlSetDump reference: init(config path, or "" for none) once per process.
  void init(const std::string& config_path);
  bool initialized() const;
  void init_dump();
  // Loads a config; it applies to models registered afterwards (and to ops outside models at
  // once). A second call replaces the first.
  void set_dump(const std::string& config_path);
  void set_dump_config(DumpConfig config);
  // Drains and closes the current dump; returns what was written and lost.
  WriterReport finalize_dump();
  void finalize();

  // Iterations: step() ends the current one.
  void step();
  uint64_t iteration() const { return iteration_.load(std::memory_order_relaxed); }
  // The next op's task id: its execution index in the iteration, over every caller of the op path.
  uint64_t next_task_id() const { return task_counter_.fetch_add(1, std::memory_order_relaxed); }
  // True while a dump is configured, the current iteration is selected, the dump is not paused
  // and no error stopped it.
  bool dumping() const { return dumping_.load(std::memory_order_relaxed); }
  // msprobe's start()/stop(): ops run while paused are not reported (iterations still count).
  void set_paused(bool paused);
  bool paused() const { return paused_.load(std::memory_order_relaxed); }
  std::shared_ptr<Dumper> dumper() const;
  // The op path's view (thread-cached: one atomic load, no lock, while nothing changed).
  std::shared_ptr<const RuntimeSnapshot> snapshot() const;
  // Turns dumping off after an internal error (the user's program goes on).
  void disable_after_error(const std::string& what);

  // The environment's settings (read_environment) applied once per process: the rank, and a dump
  // when a config is named. Errors are logged, never thrown (a bad variable must not stop training).
  // Returns whether a dump was configured.
  bool activate_from_environment();
  // The environment's settings the first time they are asked for (by activate_from_environment
  // or a front end that applies them its own way, as the Python module does), nullopt afterwards.
  std::optional<EnvironmentSettings> claim_environment();

  // Models (TorchScript loads, register_model): returns the model id.
  uint64_t register_model(const std::string& name);
  bool model_enabled(const std::string& name) const;  // registered after the current set_dump
  std::optional<ModelInfo> find_model(const std::string& name) const;  // a copy: registering may move the list
  // What the tensors at these data addresses are ("parameter conv1.weight"), so that a report can
  // say which parameter differs. Replaces earlier names of the same addresses.
  void name_tensors(std::vector<std::pair<uint64_t, std::string>> tensors);
  std::string tensor_name(uint64_t address) const;  // "" when unknown

  // Process identity for the layouts and the support_device filter.
  void set_rank(uint32_t rank, uint32_t device_id);
  uint32_t rank() const { return rank_.load(std::memory_order_relaxed); }
  uint32_t device_id() const { return device_id_.load(std::memory_order_relaxed); }

  // What the Python module tells about the calling thread's Python code ("" without it, e.g.
  // in C++ programs, or on threads that run no Python).
  struct PythonHooks {
    std::function<std::string()> stack;     // the whole stack (exception dumps, aic_err_detail_dump)
    std::function<std::string()> location;  // "file.py:line" of the innermost user frame (graphs/)
  };
  void set_python_hooks(PythonHooks hooks);
  std::string python_stack() const;
  std::string python_location() const;

  void add_listener(RuntimeListener* listener);
  void remove_listener(RuntimeListener* listener);

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
