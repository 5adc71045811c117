/* The C API from a C program: every function, its errors, and a dump written and read back.
 * Built in the tree (ctest: c_api_from_c) and against an installed opdump (tests/find-package-test).
 * The dumps go to a fresh folder under /tmp (MindSpore's path rules allow no '.', which a checkout's
 * path may hold), removed when every check passed. */
#define _XOPEN_SOURCE 700
#include <ftw.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "opdump/c_api.h"
#include "opdump/version.h"

static int failures = 0;

#define CHECK(cond)                                                                    \
  do {                                                                                 \
    if (!(cond)) {                                                                     \
      fprintf(stderr, "%s:%d: CHECK(%s) failed; last error: %s\n", __FILE__, __LINE__, #cond, \
              opdump_last_error());                                                    \
      ++failures;                                                                      \
    }                                                                                  \
  } while (0)

#define CHECK_CONTAINS(text, part) CHECK(strstr((text), (part)) != NULL)

/* ---- finding the files a dump wrote ------------------------------------------------------- */
static char found[4096];
static const char* wanted_a;
static const char* wanted_b;
static int found_count;

static int visit(const char* path, const struct stat* st, int type, struct FTW* ftw) {
  (void)st;
  (void)ftw;
  if (type == FTW_F && strstr(path, wanted_a) && (!wanted_b || strstr(path, wanted_b))) {
    ++found_count;
    snprintf(found, sizeof found, "%s", path);
  }
  return 0;
}

/* How many files below `root` have both parts in their path; `found` holds the last one. */
static int find_files(const char* root, const char* a, const char* b) {
  found[0] = 0;
  found_count = 0;
  wanted_a = a;
  wanted_b = b;
  nftw(root, visit, 16, FTW_PHYS);
  return found_count;
}

static char* read_all(const char* path, long* size) {
  FILE* f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  *size = ftell(f);
  fseek(f, 0, SEEK_SET);
  char* bytes = malloc((size_t)*size + 1);
  if (fread(bytes, 1, (size_t)*size, f) != (size_t)*size) *size = -1;
  bytes[*size < 0 ? 0 : *size] = 0;
  fclose(f);
  return bytes;
}

/* The float32 data of an npy file (header checked: little-endian float32 of the given shape text). */
static int npy_matches(const char* path, const char* shape_text, const float* expected, size_t n) {
  long size = 0;
  char* bytes = read_all(path, &size);
  if (!bytes || size < 10 || memcmp(bytes, "\x93NUMPY", 6) != 0) return free(bytes), 0;
  const unsigned header_len = (unsigned char)bytes[8] | ((unsigned char)bytes[9] << 8);
  const long data_at = 10 + (long)header_len;
  int ok = data_at + (long)(n * 4) == size && strstr(bytes + 10, "'descr': '<f4'") != NULL &&
           strstr(bytes + 10, shape_text) != NULL && memcmp(bytes + data_at, expected, n * 4) == 0;
  free(bytes);
  return ok;
}

static void write_config(char* out, size_t size, const char* path, const char* iteration, const char* saved_data) {
  snprintf(out, size,
           "{\"common_dump_settings\": {\"dump_mode\": 0, \"path\": \"%s\", \"net_name\": \"Net\", \"iteration\": \"%s\","
           " \"saved_data\": \"%s\", \"input_output\": 0, \"kernels\": [], \"support_device\": [0], \"op_debug_mode\": 0},"
           " \"e2e_dump_settings\": {\"enable\": true}}",
           path, iteration, saved_data);
}

/* One "matmul" of a 2x3 input by a 3x2 weight inside encoder-Encoder/fc-Linear, then a "relu" outside. */
static void run_two_ops(void) {
  const float x[6] = {1, 2, 3, 4, 5, 6}, w[6] = {0.5f, -1, 0.25f, 2, -0.125f, 1}, y[4] = {0.625f, 6, 1.625f, 12};
  const int64_t xs[2] = {2, 3}, ws[2] = {3, 2}, ys[2] = {2, 2};
  const opdump_tensor in[2] = {{"float32", 2, xs, x}, {"float32", 2, ws, w}};
  const opdump_tensor out[1] = {{"float32", 2, ys, y}};
  CHECK(opdump_push_scope("encoder-Encoder") == OPDUMP_OK);
  CHECK(opdump_push_scope("fc-Linear") == OPDUMP_OK);
  CHECK(opdump_dump_op("matmul", in, 2, out, 1) == OPDUMP_OK);
  CHECK(opdump_pop_scope() == OPDUMP_OK);
  CHECK(opdump_pop_scope() == OPDUMP_OK);
  CHECK(opdump_dump_op("relu", out, 1, out, 1) == OPDUMP_OK);
}

static int remove_entry(const char* path, const struct stat* st, int type, struct FTW* ftw) {
  (void)st;
  (void)type;
  (void)ftw;
  return remove(path);
}

int main(void) {
  char work[] = "/tmp/opdump_c_api_XXXXXX";
  if (!mkdtemp(work)) {
    perror("mkdtemp");
    return 2;
  }
  char path[2048], config[4096];

  /* The library is the one the headers describe. */
  CHECK(strcmp(opdump_version(), OPDUMP_VERSION) == 0);

  /* Errors: each a code and a message naming what is wrong; nothing is configured by them. */
  CHECK(opdump_set_dump(NULL) == OPDUMP_ERROR_CONFIG);
  CHECK(opdump_set_dump("/nonexistent/dump.json") == OPDUMP_ERROR_CONFIG);
  CHECK_CONTAINS(opdump_last_error(), "/nonexistent/dump.json");
  CHECK(opdump_set_dump_json("{\"dump\": ") == OPDUMP_ERROR_CONFIG);
  CHECK_CONTAINS(opdump_last_error(), "invalid JSON");
  CHECK(opdump_set_dump_json("{\"dump\": {\"dump_mode\": \"both\"}}") == OPDUMP_ERROR_CONFIG);
  CHECK_CONTAINS(opdump_last_error(), "dump.dump_mode");
  CHECK(strcmp(opdump_dump_root(), "") == 0);
  CHECK(opdump_pop_scope() != OPDUMP_OK);
  CHECK_CONTAINS(opdump_last_error(), "no scope");
  CHECK(opdump_push_scope("") != OPDUMP_OK);
  CHECK(opdump_register_model(NULL, NULL) == OPDUMP_ERROR_CONFIG);
  {
    const int64_t shape[1] = {2};
    const float v[2] = {1, 2};
    const opdump_tensor bad_dtype = {"float99", 1, shape, v};
    const opdump_tensor no_shape = {"float32", 1, NULL, v};
    const opdump_tensor no_data = {"float32", 1, shape, NULL};
    CHECK(opdump_dump_op(NULL, NULL, 0, NULL, 0) != OPDUMP_OK);
    CHECK(opdump_dump_op("relu", NULL, 1, NULL, 0) != OPDUMP_OK);
    CHECK_CONTAINS(opdump_last_error(), "inputs is NULL");
    /* No dump is configured: tensors are not even looked at. */
    CHECK(opdump_dump_op("relu", &bad_dtype, 1, NULL, 0) == OPDUMP_OK);

    /* Lifecycle: init once (a second init is a state error), then a dump of tensors. */
    CHECK(opdump_init(NULL) == OPDUMP_OK);
    CHECK(opdump_init(NULL) == OPDUMP_ERROR_STATE);
    CHECK(opdump_init_dump() == OPDUMP_OK);
    uint64_t model_id = 0;
    CHECK(opdump_register_model("Net", &model_id) == OPDUMP_OK);
    snprintf(path, sizeof path, "%s/tensors", work);
    write_config(config, sizeof config, path, "all", "tensor");
    CHECK(opdump_set_dump_json(config) == OPDUMP_OK);
    const char* root = opdump_dump_root();
    CHECK(strncmp(root, path, strlen(path)) == 0 && strstr(root, "rank_0") != NULL);
    CHECK(opdump_dump_op("relu", &bad_dtype, 1, NULL, 0) != OPDUMP_OK);
    CHECK_CONTAINS(opdump_last_error(), "float99");
    CHECK(opdump_dump_op("relu", &no_shape, 1, NULL, 0) != OPDUMP_OK);
    CHECK_CONTAINS(opdump_last_error(), "shape is NULL");
    CHECK(opdump_dump_op("relu", &no_data, 1, NULL, 0) != OPDUMP_OK);
    CHECK_CONTAINS(opdump_last_error(), "data is null");
  }
  run_two_ops();
  CHECK(opdump_step() == OPDUMP_OK);
  run_two_ops();  /* iteration 1: the same names */
  opdump_report report;
  memset(&report, 0xff, sizeof report);
  CHECK(opdump_finalize_dump_report(&report) == OPDUMP_OK);
  CHECK(report.files_lost == 0 && report.bytes_lost == 0);
  CHECK(report.files_written >= 10); /* (2 + 1 + 1 + 1) tensors in each of 2 iterations, and the metadata */

  /* Read back: names from the scopes, values byte for byte, each iteration in its folder. */
  CHECK(find_files(path, "Default_encoder-Encoder_fc-Linear_matmul-op0", ".output.0.") == 2);
  {
    const float y[4] = {0.625f, 6, 1.625f, 12}, w[6] = {0.5f, -1, 0.25f, 2, -0.125f, 1};
    CHECK(find_files(path, "/1/matmul.Default_encoder-Encoder_fc-Linear_matmul-op0", ".output.0.") == 1);
    CHECK(npy_matches(found, "'shape': (2, 2)", y, 4));
    CHECK(find_files(path, "/0/matmul.Default_encoder-Encoder_fc-Linear_matmul-op0", ".input.1.") == 1);
    CHECK(npy_matches(found, "'shape': (3, 2)", w, 6));
  }
  CHECK(find_files(path, "/0/relu.Default_relu-op0", ".input.0.") == 1);
  CHECK(find_files(path, "execution_order", ".csv") >= 1);

  /* Statistics only, of iteration 2 only (iterations count steps of the process, across dumps). */
  snprintf(path, sizeof path, "%s/statistics", work);
  write_config(config, sizeof config, path, "2", "statistic");
  CHECK(opdump_set_dump_json(config) == OPDUMP_OK);
  run_two_ops(); /* iteration 1: not selected */
  CHECK(opdump_step() == OPDUMP_OK);
  run_two_ops(); /* iteration 2 */
  CHECK(opdump_finalize_dump() == OPDUMP_OK);
  CHECK(find_files(path, "statistic.csv", NULL) == 1);
  CHECK(find_files(path, "/2/statistic.csv", NULL) == 1);
  {
    long size = 0;
    char* csv = read_all(found, &size);
    CHECK(csv != NULL && strstr(csv, "matmul,Default/encoder-Encoder/fc-Linear/matmul-op0") != NULL);
    CHECK(csv != NULL && strstr(csv, "relu,Default/relu-op0") != NULL);
    CHECK(csv != NULL && strstr(csv, ",12,") != NULL); /* the output's max */
    free(csv);
  }
  CHECK(find_files(path, ".npy", NULL) == 0);

  CHECK(opdump_finalize() == OPDUMP_OK);
  if (failures) {
    fprintf(stderr, "%d check(s) failed; the dumps are in %s\n", failures, work);
    return 1;
  }
  nftw(work, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
  printf("C API: all checks passed (opdump %s)\n", opdump_version());
  return 0;
}
