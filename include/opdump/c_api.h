/* The C API: the CANN aclmdlSetDump reference's lifecycle with error codes. 0 means success; on failure
 * opdump_last_error() describes the problem (thread-local, valid until the next call). */
#ifndef OPDUMP_C_API_H
#define OPDUMP_C_API_H
#include <stddef.h>
#include <stdint.h>

#include "opdump/api.h"

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

/* What finalize_dump wrote and lost (lost files are absent, never half-written). */
typedef struct opdump_report {
  uint64_t files_written;
  uint64_t bytes_written;
  uint64_t files_lost;
  uint64_t bytes_lost;
} opdump_report;

/* One tensor of an operator reported with opdump_dump_op: contiguous host memory, copied before the call
 * returns. dtype is numpy's name: "float32", "float16", "bfloat16", "int64", "bool", ... */
typedef struct opdump_tensor {
  const char* dtype;
  int32_t ndim;
  const int64_t* shape; /* ndim entries; may be NULL when ndim is 0 */
  const void* data;
} opdump_tensor;

OPDUMP_API int opdump_init(const char* config_path_or_null);
OPDUMP_API int opdump_init_dump(void);
OPDUMP_API int opdump_set_dump(const char* config_path);
/* The config as JSON text (any dialect). */
OPDUMP_API int opdump_set_dump_json(const char* json_text);
OPDUMP_API int opdump_finalize_dump(void);
/* The same, filling *report (may be NULL). */
OPDUMP_API int opdump_finalize_dump_report(opdump_report* report);
OPDUMP_API int opdump_finalize(void);
OPDUMP_API int opdump_step(void);
OPDUMP_API int opdump_register_model(const char* name, uint64_t* model_id);
/* Module scopes for the names of the ops that follow ("encoder-Encoder", then "layer0-Linear"). */
OPDUMP_API int opdump_push_scope(const char* element);
OPDUMP_API int opdump_pop_scope(void);
/* Reports an operator that ran: named "{scopes}/{op_type}-op{n}" and dumped as the config selects
 * (nothing happens when no dump is active). For runtimes without an adapter. */
OPDUMP_API int opdump_dump_op(const char* op_type, const opdump_tensor* inputs, size_t num_inputs, const opdump_tensor* outputs,
                   size_t num_outputs);
/* The folder this process dumps into; "" when no dump is configured (valid until the next call). */
OPDUMP_API const char* opdump_dump_root(void);
/* The library's version, "MAJOR.MINOR.PATCH". */
OPDUMP_API const char* opdump_version(void);
OPDUMP_API const char* opdump_last_error(void);

#ifdef __cplusplus
}
#endif
#endif
