/* Generate with streaming through nanoformer's C API: the text appears as it is decided.
 *   generate MODEL PROMPT [MAX_NEW_TOKENS]      (greedy; MODEL: a GGUF file, a model folder, ...)
 * Built against an installed nanoformer: cc generate.c $(pkg-config --cflags --libs nanoformer). */
#include <nanoformer/c_api.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int on_text(const char* piece, size_t length, int64_t token, void* user_data) {
  (void)token;
  fwrite(piece, 1, length, stdout);
  fflush(stdout);
  ++*(int*)user_data;
  return 0; /* go on */
}

int main(int argc, char** argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: %s MODEL PROMPT [MAX_NEW_TOKENS]\n", argv[0]);
    return 2;
  }
  nf_model* model = NULL;
  if (nf_model_load(argv[1], NULL, 0, &model) != NF_OK) {
    fprintf(stderr, "generate: %s\n", nf_last_error());
    return 1;
  }
  nf_generate_params params = nf_generate_default_params();
  params.temperature = 0; /* greedy */
  params.max_new_tokens = argc > 3 ? atoi(argv[3]) : 32;
  int pieces = 0;
  nf_generate_result result;
  printf("%s", argv[2]);
  const nf_status status = nf_generate(model, argv[2], strlen(argv[2]), &params, on_text, &pieces, &result);
  if (status != NF_OK) {
    fprintf(stderr, "\ngenerate: %s\n", nf_last_error());
    nf_model_free(model);
    return 1;
  }
  printf("\n[nanoformer %s: %lld prompt tokens, %lld generated in %d pieces]\n", nf_version(),
         (long long)result.prompt_tokens, (long long)result.completion_tokens, pieces);
  nf_model_free(model);
  return 0;
}
