// The process-wide dump runtime.
#include "runtime/runtime.h"

#include "util/fork.h"

#include <pthread.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>

#include "opdump/error.h"
#include "util/log.h"

namespace opdump {
namespace {


}  // namespace

RuntimeInterface& runtime_interface() { return Runtime::instance(); }

Runtime& Runtime::instance() {
  static Runtime* runtime = [] {
    watch_forks();  // a forked child (a DataLoader worker) has no writer threads: it never dumps
    return new Runtime();
  }();
  return *runtime;
}

Runtime::Runtime() {
  std::lock_guard<std::mutex> lock(mutex_);
  publish_locked();
}

void Runtime::init(const std::string& config_path) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (initialized_) throw Error("opdump is already initialized in this process (init may be called once)");
    initialized_ = true;
  }
  if (!config_path.empty()) set_dump(config_path);
}

bool Runtime::initialized() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return initialized_;
}

void Runtime::init_dump() {
  std::lock_guard<std::mutex> lock(mutex_);
  initialized_ = true;
}

void Runtime::set_dump(const std::string& config_path) { set_dump_config(load_config(config_path)); }

void Runtime::set_dump_config(DumpConfig config) {
  if (config.msprobe_layout)  // PrecisionDebugger writes that layout without the engine
    throw ConfigError("opdump.layout",
                      "\"msprobe\" is written by the Python PrecisionDebugger (from opdump import PrecisionDebugger); "
                      "other routes write MindSpore's layout, which `opdump convert DUMP -o OUT --to msprobe` converts",
                      config.source);
  for (const auto& w : config.warnings) log_warning(config.source + ": " + w);
  const std::string source = config.source;
  std::shared_ptr<Dumper> replaced;
  bool no_adapter = false;
  if (config.enabled) {
    DumperOptions options;
    options.rank = rank();
    options.device_id = device_id();
    auto dumper = std::make_shared<Dumper>(std::move(config), options);  // throws before anything changes
    std::lock_guard<std::mutex> lock(mutex_);
    initialized_ = true;
    replaced = std::move(dumper_);
    dumper_ = std::move(dumper);
    ++generation_;
    broken_.store(false);
    publish_locked();
    no_adapter = listeners_.empty();
  } else {
    std::lock_guard<std::mutex> lock(mutex_);
    replaced = std::move(dumper_);
    ++generation_;
    publish_locked();
  }
  if (no_adapter)
    log_warning(source + ": no framework adapter is installed, so only operators reported with dump_op() are "
                "dumped (PyTorch: import opdump, or call opdump::pt::install() first)");
  update_activity();
  if (replaced) {
    replaced->stop_ops();  // ops in flight finish first; what they left with adapters is then complete
    notify_ending(*replaced);
    replaced->finalize(iteration_.load());
  }
}

WriterReport Runtime::finalize_dump() {
  std::shared_ptr<Dumper> d;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    d = std::move(dumper_);
    publish_locked();
  }
  update_activity();
  if (!d || in_forked_child()) return {};
  d->stop_ops();
  notify_ending(*d);
  return d->finalize(iteration_.load());
}

void Runtime::finalize() {
  finalize_dump();
  std::lock_guard<std::mutex> lock(mutex_);
  initialized_ = false;
}

void Runtime::step() {
  const uint64_t next = iteration_.fetch_add(1, std::memory_order_relaxed) + 1;
  task_counter_.store(0, std::memory_order_relaxed);
  notify_iteration(next);
  update_activity();
}

std::shared_ptr<Dumper> Runtime::dumper() const {
  if (in_forked_child()) return nullptr;  // as snapshot(): no dump after fork
  std::lock_guard<std::mutex> lock(mutex_);
  return dumper_;
}

void Runtime::set_paused(bool paused) {
  paused_.store(paused, std::memory_order_relaxed);
  update_activity();
}

void Runtime::disable_after_error(const std::string& what) {
  if (!broken_.exchange(true)) log_error("dumping turned off after an internal error; training goes on: " + what);
  update_activity();
}

uint64_t Runtime::register_model(const std::string& name) {
  std::lock_guard<std::mutex> lock(mutex_);
  for (auto& m : models_)
    if (m.name == name) {
      m.generation = generation_;  // re-registering (reloading) picks up the current config
      publish_locked();
      return m.id;
    }
  models_.push_back(ModelInfo{name, models_.size(), generation_});
  publish_locked();
  return models_.back().id;
}

bool Runtime::model_enabled(const std::string& name) const { return snapshot()->model_enabled(name); }

const ModelInfo* RuntimeSnapshot::find_model(const std::string& name) const {
  for (const auto& m : models)
    if (m.name == name) return &m;
  return nullptr;
}

bool RuntimeSnapshot::model_enabled(const std::string& name) const {
  const ModelInfo* m = find_model(name);
  return !m || m->generation == generation;
}

void Runtime::publish_locked() {
  auto next = std::make_shared<RuntimeSnapshot>();
  next->dumper = dumper_;
  next->generation = generation_;
  next->models = models_;
  next->tensor_names = tensor_names_;
  snapshot_ = std::move(next);
  // Versions are unique across runtimes (tests make several): a thread's cache is one entry.
  static std::atomic<uint64_t> versions{1};
  snapshot_version_.store(versions.fetch_add(1) + 1, std::memory_order_release);
}

std::shared_ptr<const RuntimeSnapshot> Runtime::snapshot() const {
  // A forked child (a DataLoader worker) sees no dump: the parent's writer threads did not come
  // along, and its locks and condition variables may be held by threads that are not there.
  if (in_forked_child()) {
    static const auto* nothing = new std::shared_ptr<const RuntimeSnapshot>(std::make_shared<RuntimeSnapshot>());
    return *nothing;
  }
  // Per thread: the snapshot last read and its version. A thread holds on to a dump's Dumper
  // until its next op after the change (finalize does not depend on that: it closes the files).
  struct Cached {
    uint64_t version = 0;
    std::shared_ptr<const RuntimeSnapshot> value;
    ~Cached() {  // a forked child never destroys a Dumper: its threads stayed in the parent
      if (in_forked_child()) new std::shared_ptr<const RuntimeSnapshot>(std::move(value));
    }
  };
  thread_local Cached cached;
  const uint64_t version = snapshot_version_.load(std::memory_order_acquire);
  if (cached.version != version || !cached.value) {
    std::lock_guard<std::mutex> lock(mutex_);
    cached.value = snapshot_;
    cached.version = snapshot_version_.load(std::memory_order_relaxed);
  }
  return cached.value;
}

std::optional<ModelInfo> Runtime::find_model(const std::string& name) const {
  const auto s = snapshot();
  if (const ModelInfo* m = s->find_model(name)) return *m;
  return std::nullopt;
}

void Runtime::name_tensors(std::vector<std::pair<uint64_t, std::string>> tensors) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto names = std::make_shared<std::unordered_map<uint64_t, std::string>>(*tensor_names_);
  for (auto& [address, name] : tensors) (*names)[address] = std::move(name);
  tensor_names_ = std::move(names);
  publish_locked();
}

std::string Runtime::tensor_name(uint64_t address) const { return snapshot()->tensor_name(address); }

std::string RuntimeSnapshot::tensor_name(uint64_t address) const {
  if (!tensor_names) return "";
  auto it = tensor_names->find(address);
  return it == tensor_names->end() ? std::string() : it->second;
}

void Runtime::set_rank(uint32_t rank, uint32_t device_id) {
  std::lock_guard<std::mutex> lock(mutex_);
  rank_ = rank;
  device_id_ = device_id;
}

std::optional<EnvironmentSettings> Runtime::claim_environment() {
  if (environment_read_.exchange(true)) return std::nullopt;
  return read_environment();
}

bool Runtime::activate_from_environment() {
  const std::optional<EnvironmentSettings> claimed = claim_environment();
  if (!claimed) return false;
  const EnvironmentSettings& env = *claimed;
  set_rank(env.rank, env.device_id);
  if (env.config_path.empty()) return false;
  try {
    if (initialized()) {
      log_warning("the environment names a dump config (" + env.config_path + ") but opdump was already initialized; " +
                  "it is not applied");
      return false;
    }
    init(env.config_path);
    log_info("dumping configured from " + env.config_path);
    return true;
  } catch (const std::exception& e) {
    log_error("cannot dump with " + env.config_path + ": " + e.what());
  }
  return false;
}

EnvironmentSettings read_environment() {
  auto text = [](const char* name) {
    const char* v = std::getenv(name);
    return std::string(v ? v : "");
  };
  auto number = [&](const char* name, uint32_t fallback) {
    const std::string v = text(name);
    if (v.empty()) return fallback;
    char* end = nullptr;
    const unsigned long x = std::strtoul(v.c_str(), &end, 10);
    if (end && *end == '\0' && x < (1u << 20)) return static_cast<uint32_t>(x);
    log_warning(std::string(name) + "=" + v + " is not a rank number; " + std::to_string(fallback) + " is used");
    return fallback;
  };
  EnvironmentSettings env;
  env.config_path = text("OPDUMP_CONFIG");
  if (env.config_path.empty()) env.config_path = text("MINDSPORE_DUMP_CONFIG");
  env.rank = number("RANK", number("LOCAL_RANK", 0));
  env.device_id = number("LOCAL_RANK", env.rank);
  return env;
}

void Runtime::add_listener(RuntimeListener* l) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    listeners_.push_back(l);
  }
  l->on_activity(dumping());
}

void Runtime::remove_listener(RuntimeListener* l) {
  std::lock_guard<std::mutex> lock(mutex_);
  listeners_.erase(std::remove(listeners_.begin(), listeners_.end(), l), listeners_.end());
}

void Runtime::update_activity() {
  std::lock_guard<std::recursive_mutex> order(notify_mutex_);  // decided and delivered in one order
  std::vector<RuntimeListener*> listeners;
  bool now;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    now = dumper_ && !broken_.load() && !paused_.load() && !in_forked_child() &&
          dumper_->iteration_selected(iteration_.load());
    if (now == dumping_.load()) return;
    dumping_.store(now);
    listeners = listeners_;
  }
  for (auto* l : listeners) l->on_activity(now);
}

void Runtime::notify_ending(Dumper& dumper) {
  std::vector<RuntimeListener*> listeners;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    listeners = listeners_;
  }
  for (auto* l : listeners) l->on_dump_ending(dumper);
}

void Runtime::set_python_hooks(PythonHooks hooks) {
  std::lock_guard<std::mutex> lock(mutex_);
  python_ = std::move(hooks);
}

namespace {
std::string call_hook(const std::function<std::string()>& hook) {
  try {
    return hook ? hook() : std::string();
  } catch (const std::exception& e) {
    return std::string("(unknown: ") + e.what() + ")";
  }
}
}  // namespace

std::string Runtime::python_stack() const {
  std::function<std::string()> hook;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    hook = python_.stack;
  }
  return call_hook(hook);
}

std::string Runtime::python_location() const {
  std::function<std::string()> hook;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    hook = python_.location;
  }
  return call_hook(hook);
}

void Runtime::notify_iteration(uint64_t it) {
  std::vector<RuntimeListener*> listeners;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    listeners = listeners_;
  }
  for (auto* l : listeners) l->on_iteration(it);
}

}  // namespace opdump
