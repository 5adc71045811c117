// The C API over the C++ lifecycle: exceptions become error codes.
#include "opdump/c_api.h"

#include <string>

#include "opdump/error.h"
#include "opdump/opdump.h"

namespace {

thread_local std::string g_last_error;

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

int opdump_finalize_dump(void) {
  return guarded([] {
    opdump::WriterReport r = opdump::finalize_dump();
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

const char* opdump_last_error(void) { return g_last_error.c_str(); }

}  // extern "C"
