// The C API over the C++ lifecycle: exceptions become error codes.
#include "opdump/c_api.h"

#include <string>
#include <vector>

#include "opdump/error.h"
#include "opdump/opdump.h"
#include "opdump/version.h"

namespace {

thread_local std::string g_last_error;
thread_local std::string g_dump_root;

std::vector<opdump::HostTensor> host_tensors(const opdump_tensor* tensors, size_t n, const char* what) {
  if (n > 0 && !tensors) throw opdump::Error(std::string("opdump_dump_op: ") + what + " is NULL with " + std::to_string(n) + " tensors");
  std::vector<opdump::HostTensor> out(n);
  for (size_t i = 0; i < n; ++i) {
    const opdump_tensor& t = tensors[i];
    const std::string where = std::string(what) + "[" + std::to_string(i) + "]";
    if (!t.dtype) throw opdump::Error("opdump_dump_op: " + where + ".dtype is NULL");
    if (t.ndim < 0 || t.ndim > 64) throw opdump::Error("opdump_dump_op: " + where + ".ndim is " + std::to_string(t.ndim) + "; 0 to 64");
    if (t.ndim > 0 && !t.shape) throw opdump::Error("opdump_dump_op: " + where + ".shape is NULL");
    out[i].dtype = t.dtype;
    out[i].shape.assign(t.shape, t.shape + t.ndim);
    out[i].data = t.data;
  }
  return out;
}

template <typename F>
int guarded(F&& f) {
  try {
    g_last_error.clear();
    return f();
  } catch (const opdump::ConfigError& e) {
    g_last_error = e.what();
    return OPDUMP_ERROR_CONFIG;
  } catch (const opdump::IoError& e) {
    g_last_error = e.what();
    return OPDUMP_ERROR_IO;
  } catch (const opdump::FormatError& e) {
    g_last_error = e.what();
    return OPDUMP_ERROR_IO;
  } catch (const opdump::Error& e) {
    g_last_error = e.what();
    return OPDUMP_ERROR_STATE;
  } catch (const std::exception& e) {
    g_last_error = e.what();
    return OPDUMP_ERROR_INTERNAL;
  }
}

}  // namespace

extern "C" {

int opdump_init(const char* config_path_or_null) {
  return guarded([&] {
    opdump::init(config_path_or_null ? config_path_or_null : "");
    return OPDUMP_OK;
  });
}

int opdump_init_dump(void) {
  return guarded([] {
    opdump::init_dump();
    return OPDUMP_OK;
  });
}

int opdump_set_dump(const char* config_path) {
  return guarded([&] {
    if (!config_path) throw opdump::ConfigError("", "config path is NULL");
    opdump::set_dump(config_path);
    return OPDUMP_OK;
  });
}

int opdump_set_dump_json(const char* json_text) {
  return guarded([&] {
    if (!json_text) throw opdump::ConfigError("", "config text is NULL");
    opdump::set_dump_json(json_text, "opdump_set_dump_json");
    return OPDUMP_OK;
  });
}

int opdump_finalize_dump(void) { return opdump_finalize_dump_report(nullptr); }

int opdump_finalize_dump_report(opdump_report* report) {
  return guarded([&] {
    opdump::WriterReport r = opdump::finalize_dump();
    if (report) *report = opdump_report{r.files_written, r.bytes_written, r.files_lost, r.bytes_lost};
    if (!r.ok()) {
      g_last_error = std::to_string(r.files_lost) + " file(s) lost: " + r.first_error;
      return static_cast<int>(OPDUMP_ERROR_DATA_LOST);
    }
    return static_cast<int>(OPDUMP_OK);
  });
}

int opdump_finalize(void) {
  return guarded([] {
    opdump::finalize();
    return OPDUMP_OK;
  });
}

int opdump_step(void) {
  return guarded([] {
    opdump::step();
    return OPDUMP_OK;
  });
}

int opdump_register_model(const char* name, uint64_t* model_id) {
  return guarded([&] {
    if (!name) throw opdump::ConfigError("", "model name is NULL");
    uint64_t id = opdump::register_model(name);
    if (model_id) *model_id = id;
    return OPDUMP_OK;
  });
}

int opdump_push_scope(const char* element) {
  return guarded([&] {
    if (!element || !*element) throw opdump::Error("opdump_push_scope: the scope element is NULL or empty");
    opdump::scopes::push(element);
    return OPDUMP_OK;
  });
}

int opdump_pop_scope(void) {
  return guarded([] {
    if (opdump::scopes::depth() == 0) throw opdump::Error("opdump_pop_scope: no scope was pushed on this thread");
    opdump::scopes::pop();
    return OPDUMP_OK;
  });
}

int opdump_dump_op(const char* op_type, const opdump_tensor* inputs, size_t num_inputs, const opdump_tensor* outputs,
                   size_t num_outputs) {
  return guarded([&] {
    if (!op_type) throw opdump::Error("opdump_dump_op: op_type is NULL");
    opdump::dump_op(op_type, host_tensors(inputs, num_inputs, "inputs"), host_tensors(outputs, num_outputs, "outputs"));
    return OPDUMP_OK;
  });
}

const char* opdump_dump_root(void) {
  try {
    g_dump_root = opdump::dump_root();
  } catch (const std::exception&) {
    g_dump_root.clear();
  }
  return g_dump_root.c_str();
}

const char* opdump_version(void) { return OPDUMP_VERSION; }

const char* opdump_last_error(void) { return g_last_error.c_str(); }

}  // extern "C"
