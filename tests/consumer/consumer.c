/* A tiny outside C program: links the installed gpuml and checks the ABI version. */
#include <gpuml/gpuml.h>
#include <stdio.h>

int main(void) {
  gpuml_context_t ctx = NULL;
  if (gpuml_abi_version() != GPUML_ABI_VERSION) { fprintf(stderr, "ABI version mismatch\n"); return 1; }
  if (gpuml_context_create("cpu", &ctx) != GPUML_OK) { fprintf(stderr, "%s\n", gpuml_last_error()); return 1; }
  gpuml_context_free(ctx);
  printf("consumer_c: %s\n", gpuml_build_info());
  return 0;
}
