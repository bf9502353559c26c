/* nanoformer's C API: load a model (any form nanoformer reads: GGUF, a Hugging Face, MiniMind or
 * nanochat folder, our checkpoints, llama2.c files, presets) with its tokenizer and chat template;
 * tokenize and detokenize; apply the chat template; run a forward pass to logits or to a pooled
 * embedding; generate with sampler settings, stop strings and a grammar or JSON schema, streaming
 * through a callback that can stop it; keep a KV cache across the turns of a chat (a session).
 *
 * Opaque handles, plain C types, no exceptions across the boundary. Every call that can fail
 * returns an nf_status; on failure nf_last_error() gives a one-line message naming the file, key
 * or argument at fault. Sizes and ids are int64_t, text is UTF-8 given as pointer and length.
 *
 * Thread safety: nf_version, nf_api_version and nf_last_error may be called from any thread at
 * any time (nf_last_error is per thread). A model and everything made from it (its sessions) may
 * be used by one thread at a time: calls on one model, or on sessions of one model, must not
 * overlap; distinct models may be used from distinct threads at once. Freeing a model frees
 * nothing that its sessions still use (they hold it), so the two may be freed in either order.
 *
 * Results that are arrays or text are written to buffers the caller gives, with the two-call
 * convention: pass the buffer's capacity; the call sets *count (or *length) to what the whole result
 * needs and returns NF_ERROR_BUFFER_TOO_SMALL, writing nothing, when it does not fit (call again
 * with a larger buffer; a NULL buffer with capacity 0 asks for the size). Text is not
 * NUL-terminated unless the capacity leaves room, in which case a NUL follows it.
 *
 * See docs/c-api.md for a complete example. Versioned: NF_API_VERSION changes its major number
 * when a declaration here changes incompatibly. */
#ifndef NANOFORMER_C_API_H
#define NANOFORMER_C_API_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define NF_API_VERSION_MAJOR 1
#define NF_API_VERSION_MINOR 0

typedef enum nf_status {
  NF_OK = 0,
  NF_ERROR_INVALID_ARGUMENT = 1, /* a NULL handle, a value out of range, a bad grammar or schema */
  NF_ERROR_LOAD = 2,             /* a file that cannot be read, or is not what it claims */
  NF_ERROR_OUT_OF_MEMORY = 3,
  NF_ERROR_BUFFER_TOO_SMALL = 4, /* the result did not fit: *count / *length says what it needs */
  NF_ERROR_UNSUPPORTED = 5,      /* the model cannot do that (no tokenizer, no chat template, ...) */
  NF_ERROR_INTERNAL = 6          /* anything else: a defect, reported with its message */
} nf_status;

typedef struct nf_model nf_model;
typedef struct nf_session nf_session;

/* "MAJOR.MINOR.PATCH" of the library; never NULL. */
const char* nf_version(void);
/* NF_API_VERSION_MAJOR * 1000 + NF_API_VERSION_MINOR of the library (compare with the header's). */
int nf_api_version(void);
/* The message of the last call that failed on this thread ("" when none did); valid until the next
 * failing call on this thread. */
const char* nf_last_error(void);

/* ---- models ---------------------------------------------------------------------------------- */

/* Loads a decoder language model from `path` and a tokenizer: `tokenizer_path`, or when NULL or ""
 * the model's own (a GGUF file's, or the tokenizer.json in the model's folder or beside its
 * file); a model without one loads, and the text calls then answer NF_ERROR_UNSUPPORTED. The chat
 * template is the tokenizer's own (tokenizer_config.json beside it, a GGUF's), else the one its
 * special tokens tell. `threads` > 0 sets the threads the process computes with, for every model
 * (0: leave it: $NANOFORMER_THREADS, else every core). */
nf_status nf_model_load(const char* path, const char* tokenizer_path, int threads, nf_model** out);
void nf_model_free(nf_model* model); /* NULL: nothing */

int64_t nf_model_vocab_size(const nf_model* model);    /* the model's (the tokenizer's may be smaller) */
int64_t nf_model_context_length(const nf_model* model); /* max_seq_len */
int64_t nf_model_embedding_size(const nf_model* model); /* the hidden size, the length of nf_embed's vectors */
/* The ids that end generation (the tokenizer's end tokens), up to `capacity`; *count: how many. */
nf_status nf_model_end_ids(const nf_model* model, int64_t* ids, size_t capacity, size_t* count);

/* ---- text ------------------------------------------------------------------------------------ */

/* `text` to token ids; with add_bos, the BOS a GGUF tokenizer puts before prompts is put first. */
nf_status nf_tokenize(const nf_model* model, const char* text, size_t text_length, int add_bos, int64_t* ids,
                      size_t capacity, size_t* count);
/* Ids to text (special tokens included; bytes that are not UTF-8 become U+FFFD). */
nf_status nf_detokenize(const nf_model* model, const int64_t* ids, size_t count, char* text, size_t capacity,
                        size_t* length);

typedef struct nf_chat_message {
  const char* role;    /* "system", "user", "assistant" or "tool" (NUL-terminated) */
  const char* content; /* NUL-terminated */
} nf_chat_message;

/* The chat's token ids as the model's template renders it (special tokens as single ids; decode
 * them with nf_detokenize for its text) with the offered `tools` (a JSON array of OpenAI tools, NULL
 * or "" for none; Jinja templates only); with add_generation_prompt, followed by the opening of the
 * assistant's turn; as transformers' apply_chat_template(tools=..., tokenize=True). */
nf_status nf_apply_chat_template(const nf_model* model, const nf_chat_message* messages, size_t count,
                                 const char* tools, int add_generation_prompt, int64_t* ids, size_t capacity,
                                 size_t* count_out);

/* ---- forward --------------------------------------------------------------------------------- */

/* The logits of `batch` sequences of `length` ids each (ids row-major, batch x length) at every
 * position: batch x length x vocab_size floats into `logits`, row-major. */
nf_status nf_forward(nf_model* model, const int64_t* ids, size_t batch, size_t length, float* logits,
                     size_t capacity, size_t* count);
/* One text's embedding: the mean over its tokens of the final hidden states (after the final
 * norm), L2-normalised when `normalize`; embedding_size floats. */
nf_status nf_embed(nf_model* model, const char* text, size_t text_length, int normalize, float* embedding,
                   size_t capacity, size_t* count);

/* ---- generation ------------------------------------------------------------------------------ */

typedef struct nf_generate_params {
  int64_t max_new_tokens;     /* > 0; default 256 */
  double temperature;         /* 0: greedy; default 0.8 */
  int64_t top_k;              /* 0: off (default) */
  double top_p;               /* (0, 1]; default 0.95 */
  double min_p;               /* [0, 1]; default 0 */
  double repetition_penalty;  /* > 0; 1: off (default) */
  uint64_t seed;              /* default 0 */
  const char* const* stop;    /* stop strings (never part of the answer), `stop_count` of them */
  size_t stop_count;
  const char* grammar;        /* GBNF the answer must follow (NULL: none) */
  const char* json_schema;    /* a JSON schema the answer must validate against (NULL: none); an assertion
                                 no grammar expresses is refused (docs/structured-output.md) */
  const char* tools;          /* nf_session_chat: tools offered to the template, a JSON array (NULL: none) */
} nf_generate_params;

/* The defaults above. */
nf_generate_params nf_generate_default_params(void);

/* Called with each piece of text as it becomes final (never a split UTF-8 character, never a stop
 * string) and the id of the token that completed it (-1 for what is released at the end). Return
 * 0 to go on, anything else to stop generation (nf_generate then returns NF_OK). */
typedef int (*nf_text_callback)(const char* piece, size_t length, int64_t token, void* user_data);

typedef struct nf_generate_result {
  int64_t prompt_tokens;      /* prefilled by this call */
  int64_t completion_tokens;  /* generated (an end token included) */
  int finish_reason;          /* 0: an end token or the grammar's end, 1: max_new_tokens, 2: a stop string or the callback */
} nf_generate_result;

/* Continues `prompt` (text, tokenized with add_bos) in a fresh cache of the model's context,
 * streaming the answer to `callback` (may be NULL); `result` may be NULL. */
nf_status nf_generate(nf_model* model, const char* prompt, size_t prompt_length, const nf_generate_params* params,
                      nf_text_callback callback, void* user_data, nf_generate_result* result);

/* ---- sessions: a KV cache across calls ------------------------------------------------------- */

/* A session of up to `context` tokens (0: the model's context), past which the context shifts. */
nf_status nf_session_new(nf_model* model, int64_t context, nf_session** out);
void nf_session_free(nf_session* session); /* NULL: nothing */
/* The chat so far, rendered by the template with the assistant's turn opened, generated into the
 * session's cache: what the cache already holds of it is not computed again, so each turn costs
 * its new messages. Append the answer as an assistant message before the next turn. */
nf_status nf_session_chat(nf_session* session, const nf_chat_message* messages, size_t count,
                          const nf_generate_params* params, nf_text_callback callback, void* user_data,
                          nf_generate_result* result);
/* Tokens the session's cache holds. */
int64_t nf_session_length(const nf_session* session);

#ifdef __cplusplus
}
#endif

#endif /* NANOFORMER_C_API_H */
