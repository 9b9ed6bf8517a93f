/* Serving a saved gpuml classifier from plain C, through the C ABI only: loads a model written by
 * gpuml's serializer (Python's estimator.save_model(path)), reads rows of comma-separated numbers
 * from a CSV file or standard input, classifies them in batches, and prints per row its line
 * number, class and that class's probability. Bad rows (wrong width, something that is not a
 * number) are reported by line number and skipped. Every gpuml call's status is checked and its
 * message printed (gpuml_last_error).
 *
 *   classify_c MODEL [CSV | -] [DEVICE]      DEVICE: "auto" (default), "cpu", "cuda", "cuda:N" */
#include <gpuml/gpuml.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BATCH 4096

static int failed(gpuml_status_t status, const char* what) {
  if (status == GPUML_OK) return 0;
  fprintf(stderr, "classify_c: %s failed (status %d): %s\n", what, (int)status, gpuml_last_error());
  return 1;
}

static gpuml_array_t host_matrix(double* data, int64_t rows, int64_t cols) {
  gpuml_array_t a;
  memset(&a, 0, sizeof a);
  a.data = data;
  a.dtype = GPUML_FLOAT64;
  a.device_type = GPUML_DEVICE_CPU;
  a.ndim = cols > 0 ? 2 : 1;
  a.shape[0] = rows;
  a.shape[1] = cols;
  a.strides[0] = cols > 0 ? cols : 1;
  a.strides[1] = 1;
  return a;
}

/* Parses one CSV line into exactly `width` doubles; returns 0 and says why otherwise. */
static int parse_row(char* line, int64_t width, double* row, char* why, size_t why_size) {
  int64_t count = 0;
  char* field = line;
  for (;;) {
    char* comma = strchr(field, ',');
    if (comma) *comma = '\0';
    char* stop = NULL;
    errno = 0;
    double v = strtod(field, &stop);
    while (stop && (*stop == ' ' || *stop == '\t' || *stop == '\r' || *stop == '\n')) ++stop;
    if (stop == field || *stop != '\0' || errno == ERANGE) {
      snprintf(why, why_size, "field %lld (\"%s\") is not a number", (long long)count + 1, field);
      return 0;
    }
    if (count < width) row[count] = v;
    ++count;
    if (!comma) break;
    field = comma + 1;
  }
  if (count != width) {
    snprintf(why, why_size, "%lld values, the model takes %lld", (long long)count, (long long)width);
    return 0;
  }
  return 1;
}

static int classify_batch(gpuml_context_t ctx, gpuml_estimator_t model, double* rows, int64_t count, int64_t width,
                          const double* classes, int64_t k, const long long* lines) {
  double* proba = malloc((size_t)(count * k) * sizeof(double));
  if (!proba) return 1;
  gpuml_array_t X = host_matrix(rows, count, width), out = host_matrix(proba, count, k);
  int bad = failed(gpuml_estimator_predict_proba(ctx, model, &X, &out), "predict_proba");
  for (int64_t i = 0; !bad && i < count; ++i) {
    int64_t best = 0;
    for (int64_t c = 1; c < k; ++c)
      if (proba[i * k + c] > proba[i * k + best]) best = c;
    printf("%lld,%g,%.4f\n", lines[i], classes[best], proba[i * k + best]);
  }
  free(proba);
  return bad;
}

int main(int argc, char** argv) {
  if (argc < 2 || argc > 4) {
    fprintf(stderr, "usage: classify_c MODEL [CSV | -] [DEVICE]\n");
    return 2;
  }
  const char* input = argc > 2 ? argv[2] : "-";
  const char* device = argc > 3 ? argv[3] : "auto";

  FILE* f = fopen(argv[1], "rb");
  if (!f) {
    fprintf(stderr, "classify_c: cannot open the model file %s\n", argv[1]);
    return 2;
  }
  fseek(f, 0, SEEK_END);
  long size = ftell(f);
  fseek(f, 0, SEEK_SET);
  void* bytes = malloc(size > 0 ? (size_t)size : 1);
  size_t got = bytes ? fread(bytes, 1, (size_t)size, f) : 0;
  fclose(f);
  gpuml_estimator_t model = NULL;
  gpuml_context_t ctx = NULL;
  if (!bytes || got != (size_t)size) {
    fprintf(stderr, "classify_c: cannot read %s\n", argv[1]);
    return 1;
  }
  int status = failed(gpuml_estimator_deserialize(bytes, (uint64_t)size, &model), "loading the model");
  free(bytes);
  if (status || failed(gpuml_context_create(device, &ctx), "creating the context")) return 1;

  /* The model's width and classes, from its attributes. */
  int32_t dtype = 0, ndim = 0;
  int64_t shape[2] = {0, 0};
  int64_t width = 0;
  gpuml_array_t width_out = host_matrix(NULL, 1, 0);
  width_out.dtype = GPUML_INT64;
  width_out.data = &width;
  width_out.ndim = 0;
  if (failed(gpuml_estimator_get_attribute(ctx, model, "n_features_in_", &width_out), "reading n_features_in_") ||
      failed(gpuml_estimator_attribute_shape(model, "classes_", &dtype, &ndim, shape), "reading classes_"))
    return 1;
  int64_t k = shape[0];
  double* classes = malloc((size_t)k * sizeof(double));
  gpuml_array_t classes_out = host_matrix(classes, k, 0);
  if (!classes || failed(gpuml_estimator_get_attribute(ctx, model, "classes_", &classes_out), "reading classes_")) return 1;

  FILE* in = strcmp(input, "-") == 0 ? stdin : fopen(input, "r");
  if (!in) {
    fprintf(stderr, "classify_c: cannot open %s\n", input);
    return 2;
  }
  double* rows = malloc((size_t)(BATCH * width) * sizeof(double));
  long long* lines = malloc(BATCH * sizeof(long long));
  size_t capacity = 1 << 16;
  char* line = malloc(capacity);
  char why[256];
  long long number = 0, done = 0, skipped = 0;
  int64_t count = 0;
  if (!rows || !lines || !line) return 1;
  printf("line,class,probability\n");
  for (;;) {
    /* One whole line, however long. */
    size_t length = 0;
    int c = 0;
    while ((c = fgetc(in)) != EOF && c != '\n') {
      if (length + 1 >= capacity) {
        char* bigger = realloc(line, capacity *= 2);
        if (!bigger) return 1;
        line = bigger;
      }
      line[length++] = (char)c;
    }
    if (c == EOF && length == 0) break;
    line[length] = '\0';
    ++number;
    if (strspn(line, " \t\r") == length) continue; /* blank */
    if (!parse_row(line, width, rows + count * width, why, sizeof why)) {
      fprintf(stderr, "line %lld skipped: %s\n", number, why);
      ++skipped;
      continue;
    }
    lines[count++] = number;
    if (count == BATCH) {
      if (classify_batch(ctx, model, rows, count, width, classes, k, lines)) return 1;
      done += count;
      count = 0;
    }
  }
  if (count > 0 && classify_batch(ctx, model, rows, count, width, classes, k, lines)) return 1;
  done += count;
  fprintf(stderr, "classified %lld rows (%lld skipped) on %s\n", done, skipped, device);
  if (in != stdin) fclose(in);
  free(rows);
  free(lines);
  free(line);
  free(classes);
  gpuml_context_free(ctx);
  gpuml_estimator_free(model);
  return 0;
}
