/* The C API: the CANN aclmdlSetDump reference's lifecycle with error codes. 0 means success; on failure
 * opdump_last_error() describes the problem (thread-local, valid until the next call). */
#ifndef OPDUMP_C_API_H
#define OPDUMP_C_API_H
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

enum {
  OPDUMP_OK = 0,
  OPDUMP_ERROR_CONFIG = 1,    /* the config is invalid */
  OPDUMP_ERROR_IO = 2,        /* a file or folder cannot be read or written */
  OPDUMP_ERROR_STATE = 3,     /* called in the wrong order (e.g. init twice) */
  OPDUMP_ERROR_DATA_LOST = 4, /* finalize: some dump files could not be written */
  OPDUMP_ERROR_INTERNAL = 5
};

int opdump_init(const char* config_path_or_null);
int opdump_init_dump(void);
int opdump_set_dump(const char* config_path);
int opdump_finalize_dump(void);
int opdump_finalize(void);
int opdump_step(void);
int opdump_register_model(const char* name, uint64_t* model_id);
const char* opdump_last_error(void);

#ifdef __cplusplus
}
#endif
#endif
