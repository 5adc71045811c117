// The one header through which the framework side (the PyTorch adapter, the Python module) reaches
// the process's runtime, as Kineto's framework side reaches its profiler through
// ActivityProfilerInterface.h: an interface implemented by the Runtime, called through its vtable,
// so that libopdump.so exports none of the Runtime's or the Dumper's members. The op protocol
// (runtime/op_report.h) and the dump in progress (dumper/dump_sink.h) come with it.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "config/config.h"
#include "dumper/dump_sink.h"
#include "opdump/api.h"
#include "opdump/report.h"
#include "runtime/op_report.h"

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
  virtual void on_dump_ending(DumpSink& dump) {}
};

// Where the environment asks a process to dump, and as which rank (read in this one place).
struct EnvironmentSettings {
  std::string config_path;  // OPDUMP_CONFIG, else MindSpore's MINDSPORE_DUMP_CONFIG; "" = none
  uint32_t rank = 0;        // RANK, else LOCAL_RANK
  uint32_t device_id = 0;   // LOCAL_RANK, else the rank
};
OPDUMP_ADAPTER_API EnvironmentSettings read_environment();

// What the Python module tells about the calling thread's Python code ("" without it, e.g.
// in C++ programs, or on threads that run no Python).
struct PythonHooks {
  std::function<std::string()> stack;     // the whole stack (exception dumps, aic_err_detail_dump)
  std::function<std::string()> location;  // "file.py:line" of the innermost user frame (graphs/)
};

class RuntimeInterface {
 public:
  virtual ~RuntimeInterface() = default;

  // the CANN aclmdlSetDump reference: init(config path, or "" for none) once per process.
  virtual void init(const std::string& config_path) = 0;
  virtual bool initialized() const = 0;
  virtual void init_dump() = 0;
  // Loads a config; it applies to models registered afterwards (and to ops outside models at
  // once). A second call replaces the first.
  virtual void set_dump(const std::string& config_path) = 0;
  virtual void set_dump_config(DumpConfig config) = 0;
  // Drains and closes the current dump; returns what was written and lost.
  virtual WriterReport finalize_dump() = 0;
  virtual void finalize() = 0;

  // Iterations: step() ends the current one.
  virtual void step() = 0;
  virtual uint64_t iteration() const = 0;
  // True while a dump is configured, the current iteration is selected, the dump is not paused
  // and no error stopped it.
  virtual bool dumping() const = 0;
  // msprobe's start()/stop(): ops run while paused are not reported (iterations still count).
  virtual void set_paused(bool paused) = 0;
  // The dump in progress (null: none configured).
  virtual std::shared_ptr<DumpSink> dump_sink() const = 0;
  // One op's passage through the core (empty when it is not reported at all).
  virtual OpReport begin_op() const = 0;
  // Turns dumping off after an internal error (the user's program goes on).
  virtual void disable_after_error(const std::string& what) = 0;

  // The environment's settings (read_environment) applied once per process: the rank, and a dump
  // when a config is named. Errors are logged, never thrown (a bad variable must not stop training).
  // Returns whether a dump was configured.
  virtual bool activate_from_environment() = 0;
  // The environment's settings the first time they are asked for (by activate_from_environment
  // or a front end that applies them its own way, as the Python module does), nullopt afterwards.
  virtual std::optional<EnvironmentSettings> claim_environment() = 0;

  // Models (TorchScript loads, register_model): returns the model id.
  virtual uint64_t register_model(const std::string& name) = 0;
  // What the tensors at these data addresses are ("parameter conv1.weight"), so that a report can
  // say which parameter differs. Replaces earlier names of the same addresses.
  virtual void name_tensors(std::vector<std::pair<uint64_t, std::string>> tensors) = 0;
  virtual std::string tensor_name(uint64_t address) const = 0;  // "" when unknown

  // Process identity for the layouts and the support_device filter.
  virtual void set_rank(uint32_t rank, uint32_t device_id) = 0;
  virtual uint32_t rank() const = 0;

  virtual void set_python_hooks(PythonHooks hooks) = 0;
  virtual std::string python_stack() const = 0;
  virtual std::string python_location() const = 0;

  virtual void add_listener(RuntimeListener* listener) = 0;
  virtual void remove_listener(RuntimeListener* listener) = 0;
};

// The process's runtime, which the public API uses too: never destroyed (Runtime::instance).
OPDUMP_ADAPTER_API RuntimeInterface& runtime_interface();

}  // namespace opdump
