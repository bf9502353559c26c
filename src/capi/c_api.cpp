// The C API (include/nanoformer/c_api.h) over the library: handles that own C++ objects, every
// exception turned into a status and a per-thread message, results copied into the caller's buffers.
#include "nanoformer/c_api.h"

#include <nlohmann/json.hpp>
#include <algorithm>
#include <cstring>
#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <vector>

#include "nanoformer/autograd/grad_mode.h"
#include "nanoformer/core/error.h"
#include "nanoformer/core/parallel.h"
#include "nanoformer/formats/model_io.h"
#include "nanoformer/grammar/constraint.h"
#include "nanoformer/grammar/json_schema.h"
#include "nanoformer/infer/loaded_model.h"
#include "nanoformer/infer/session.h"
#include "nanoformer/infer/text_streamer.h"
#include "nanoformer/models/sentence_embedding.h"
#include "nanoformer/tokenizer/chat_template.h"

namespace {

using namespace nf;

thread_local std::string last_error;

// A failure the API itself names, with its status.
struct Failure : std::runtime_error {
  Failure(nf_status s, const std::string& message) : std::runtime_error(message), status(s) {}
  nf_status status;
};

void require(bool condition, const std::string& message, nf_status status = NF_ERROR_INVALID_ARGUMENT) {
  if (!condition) throw Failure(status, message);
}

// Runs `body`, turning whatever it throws into a status and last_error; nf::Error (the library's
// one-line errors: bad input, a bad file) becomes `library_status`.
template <class Body>
nf_status guarded(nf_status library_status, Body&& body) {
  try {
    body();
    return NF_OK;
  } catch (const Failure& e) {
    last_error = e.what();
    return e.status;
  } catch (const OutOfMemory& e) {
    last_error = e.what();
    return NF_ERROR_OUT_OF_MEMORY;
  } catch (const Error& e) {
    last_error = e.what();
    return library_status;
  } catch (const std::bad_alloc&) {
    last_error = "out of memory";
    return NF_ERROR_OUT_OF_MEMORY;
  } catch (const std::exception& e) {
    last_error = e.what();
    return NF_ERROR_INTERNAL;
  } catch (...) {
    last_error = "an exception of an unknown type";
    return NF_ERROR_INTERNAL;
  }
}

// Copies n values to out (*count = n first), or fails with BUFFER_TOO_SMALL when capacity is less.
template <class T>
void copy_out(const T* values, size_t n, T* out, size_t capacity, size_t* count, const char* what) {
  require(count != nullptr, std::string(what) + ": the count pointer is NULL");
  *count = n;
  require(n <= capacity, std::string(what) + ": the result needs " + std::to_string(n) + " values, the buffer holds " +
                             std::to_string(capacity), NF_ERROR_BUFFER_TOO_SMALL);
  require(n == 0 || out != nullptr, std::string(what) + ": the buffer is NULL");
  std::copy(values, values + n, out);
}

std::string text_of(const char* text, size_t length, const char* what) {
  require(text != nullptr || length == 0, std::string(what) + ": the text is NULL");
  return length ? std::string(text, length) : std::string();
}

// What a model handle and its sessions share.
struct ModelState {
  infer::LoadedModel loaded;
  std::once_flag template_once, trie_once;
  std::unique_ptr<tokenizer::ChatTemplate> chat_template;
  std::string chat_template_error;
  std::shared_ptr<const grammar::TokenTrie> trie;

  const tokenizer::Tokenizer& tokenizer(const char* what) const {
    require(loaded.tokenizer != nullptr,
            std::string(what) + ": the model has no tokenizer (give one to nf_model_load)", NF_ERROR_UNSUPPORTED);
    return *loaded.tokenizer;
  }
  const tokenizer::ChatTemplate& chat(const char* what) {
    const tokenizer::Tokenizer& tok = tokenizer(what);
    std::call_once(template_once, [&] {
      try {
        chat_template = tokenizer::make_chat_template(tokenizer::default_chat_template(tok, loaded.tokenizer_path), tok);
      } catch (const Error& e) {
        chat_template_error = e.what();
      }
    });
    require(chat_template != nullptr, std::string(what) + ": the model has no chat template: " + chat_template_error,
            NF_ERROR_UNSUPPORTED);
    return *chat_template;
  }
  const std::shared_ptr<const grammar::TokenTrie>& token_trie(const char* what) {
    const tokenizer::Tokenizer& tok = tokenizer(what);
    std::call_once(trie_once, [&] { trie = grammar::TokenTrie::of(tok); });
    return trie;
  }
};

std::vector<tokenizer::ChatMessage> chat_messages(const nf_chat_message* messages, size_t count, const char* what) {
  require(messages != nullptr || count == 0, std::string(what) + ": the messages are NULL");
  std::vector<tokenizer::ChatMessage> out;
  for (size_t i = 0; i < count; ++i) {
    const std::string at = std::string(what) + ": message " + std::to_string(i);
    require(messages[i].role != nullptr, at + " has no role");
    require(messages[i].content != nullptr, at + " has no content");
    out.push_back({.role = messages[i].role, .content = messages[i].content});
  }
  return out;
}

// One generation into `session`: `prompt` continued under `params`, each final piece of text to
// `callback`; `end_ids`: the ids that end it.
void run_generation(ModelState& state, infer::Session& session, const std::vector<int64_t>& prompt,
                    const nf_generate_params* given, std::vector<int64_t> end_ids, nf_text_callback callback,
                    void* user_data, nf_generate_result* result) {
  const nf_generate_params params = given ? *given : nf_generate_default_params();
  const tokenizer::Tokenizer& tok = state.tokenizer("nf_generate");
  infer::SamplerConfig config{.temperature = params.temperature, .top_k = params.top_k, .top_p = params.top_p,
                              .min_p = params.min_p, .repetition_penalty = params.repetition_penalty,
                              .seed = params.seed};
  config.vocab_limit = static_cast<int64_t>(tok.vocab_size());
  infer::Sampler sampler(config);
  infer::StopCriteria stop{.eos_ids = std::move(end_ids), .stop_strings = {}, .max_new_tokens = params.max_new_tokens};
  require(params.stop != nullptr || params.stop_count == 0, "nf_generate: stop is NULL but stop_count is not 0");
  for (size_t i = 0; i < params.stop_count; ++i) {
    require(params.stop[i] != nullptr, "nf_generate: stop string " + std::to_string(i) + " is NULL");
    stop.stop_strings.emplace_back(params.stop[i]);
  }
  stop.validate();
  std::unique_ptr<grammar::GrammarConstraint> constraint;
  require(!(params.grammar && params.json_schema), "nf_generate: give grammar or json_schema, not both");
  if (params.grammar || params.json_schema) {
    std::string gbnf = params.grammar ? params.grammar : "";
    if (params.json_schema) {
      const auto schema = nlohmann::ordered_json::parse(params.json_schema, nullptr, /*allow_exceptions=*/false);
      require(!schema.is_discarded(), "nf_generate: json_schema is not valid JSON");
      gbnf = grammar::json_schema_grammar(schema).gbnf;
    }
    constraint = std::make_unique<grammar::GrammarConstraint>(std::make_shared<const grammar::Grammar>(grammar::compile_gbnf(gbnf)),
                                                            state.token_trie("nf_generate"), stop.eos_ids);
  }
  infer::TextStreamer streamer(tok, stop);
  bool stopped_by_callback = false;
  const auto give = [&](const std::string& piece, int64_t id) {
    if (callback && !piece.empty() && !stopped_by_callback)
      stopped_by_callback = callback(piece.data(), piece.size(), id, user_data) != 0;
  };
  const infer::GenerationResult r = session.generate(
      prompt, sampler, stop,
      [&](int64_t id) {
        give(streamer.push(id), id);
        return !streamer.stopped() && !stopped_by_callback;
      },
      constraint.get());
  give(streamer.finish(), -1);
  if (result) {
    result->prompt_tokens = r.prompt_tokens;
    result->completion_tokens = static_cast<int64_t>(r.tokens.size());
    const bool length = r.reason == infer::StopReason::max_new_tokens || r.reason == infer::StopReason::context_full;
    result->finish_reason = r.reason == infer::StopReason::end_of_sequence ? 0 : length ? 1 : 2;
  }
}

}  // namespace

struct nf_model {
  std::shared_ptr<ModelState> state;
};

struct nf_session {
  std::shared_ptr<ModelState> state;  // keeps the model alive
  infer::Session session;
};

extern "C" {

const char* nf_version(void) { return NANOFORMER_VERSION; }
int nf_api_version(void) { return NF_API_VERSION_MAJOR * 1000 + NF_API_VERSION_MINOR; }
const char* nf_last_error(void) { return last_error.c_str(); }

nf_status nf_model_load(const char* path, const char* tokenizer_path, int threads, nf_model** out) {
  return guarded(NF_ERROR_LOAD, [&] {
    require(out != nullptr, "nf_model_load: the out pointer is NULL");
    *out = nullptr;
    require(path != nullptr && *path, "nf_model_load: the path is NULL or empty");
    require(threads >= 0, "nf_model_load: threads must be >= 0, got " + std::to_string(threads));
    if (threads > 0) set_num_threads(threads);
    auto state = std::make_shared<ModelState>();
    state->loaded = infer::with_tokenizer(formats::load_model(path), path, tokenizer_path ? tokenizer_path : "", false);
    state->loaded.model->eval();
    *out = new nf_model{std::move(state)};
  });
}

void nf_model_free(nf_model* model) { delete model; }

int64_t nf_model_vocab_size(const nf_model* model) { return model ? model->state->loaded.model->config().vocab_size : 0; }
int64_t nf_model_context_length(const nf_model* model) { return model ? model->state->loaded.model->config().max_seq_len : 0; }
int64_t nf_model_embedding_size(const nf_model* model) { return model ? model->state->loaded.model->config().dim : 0; }

nf_status nf_model_end_ids(const nf_model* model, int64_t* ids, size_t capacity, size_t* count) {
  return guarded(NF_ERROR_INVALID_ARGUMENT, [&] {
    require(model != nullptr, "nf_model_end_ids: the model is NULL");
    model->state->tokenizer("nf_model_end_ids");
    const std::vector<int64_t> end = infer::default_end_ids(model->state->loaded);
    copy_out(end.data(), end.size(), ids, capacity, count, "nf_model_end_ids");
  });
}

nf_status nf_tokenize(const nf_model* model, const char* text, size_t text_length, int add_bos, int64_t* ids,
                      size_t capacity, size_t* count) {
  return guarded(NF_ERROR_INVALID_ARGUMENT, [&] {
    require(model != nullptr, "nf_tokenize: the model is NULL");
    const infer::LoadedModel& loaded = model->state->loaded;
    const auto encoded = model->state->tokenizer("nf_tokenize").encode(text_of(text, text_length, "nf_tokenize"));
    std::vector<int64_t> out;
    if (add_bos && loaded.prompt_bos) out.push_back(*loaded.prompt_bos);
    out.insert(out.end(), encoded.begin(), encoded.end());
    copy_out(out.data(), out.size(), ids, capacity, count, "nf_tokenize");
  });
}

nf_status nf_detokenize(const nf_model* model, const int64_t* ids, size_t count, char* text, size_t capacity,
                        size_t* length) {
  return guarded(NF_ERROR_INVALID_ARGUMENT, [&] {
    require(model != nullptr, "nf_detokenize: the model is NULL");
    require(ids != nullptr || count == 0, "nf_detokenize: the ids are NULL");
    const tokenizer::Tokenizer& tok = model->state->tokenizer("nf_detokenize");
    std::vector<tokenizer::TokenId> in;
    for (size_t i = 0; i < count; ++i) {
      require(ids[i] >= 0 && ids[i] < static_cast<int64_t>(tok.vocab_size()),
              "nf_detokenize: id " + std::to_string(ids[i]) + " (position " + std::to_string(i) +
                  ") is outside the tokenizer's " + std::to_string(tok.vocab_size()) + " ids");
      in.push_back(static_cast<tokenizer::TokenId>(ids[i]));
    }
    const std::string out = tok.decode(in);
    copy_out(out.data(), out.size(), text, capacity, length, "nf_detokenize");
    if (capacity > out.size()) text[out.size()] = '\0';
  });
}

nf_status nf_apply_chat_template(const nf_model* model, const nf_chat_message* messages, size_t count, const char* tools,
                                 int add_generation_prompt, int64_t* ids, size_t capacity, size_t* count_out) {
  return guarded(NF_ERROR_INVALID_ARGUMENT, [&] {
    require(model != nullptr, "nf_apply_chat_template: the model is NULL");
    const tokenizer::ChatTemplate& chat = model->state->chat("nf_apply_chat_template");
    const auto list = chat_messages(messages, count, "nf_apply_chat_template");
    const std::string offered = tools ? tools : "";
    const std::vector<tokenizer::TokenId> rendered =
        add_generation_prompt ? chat.render_for_completion(list, offered) : chat.render(list, offered).ids;
    const std::vector<int64_t> out(rendered.begin(), rendered.end());
    copy_out(out.data(), out.size(), ids, capacity, count_out, "nf_apply_chat_template");
  });
}

nf_status nf_forward(nf_model* model, const int64_t* ids, size_t batch, size_t length, float* logits, size_t capacity,
                     size_t* count) {
  return guarded(NF_ERROR_INVALID_ARGUMENT, [&] {
    require(model != nullptr, "nf_forward: the model is NULL");
    require(batch > 0 && length > 0, "nf_forward: batch and length must be positive, got " + std::to_string(batch) + " and " +
                                         std::to_string(length));
    require(ids != nullptr, "nf_forward: the ids are NULL");
    models::DecoderLM& lm = *model->state->loaded.model;
    const auto vocab = static_cast<size_t>(lm.config().vocab_size), context = static_cast<size_t>(lm.config().max_seq_len);
    require(length <= context, "nf_forward: length " + std::to_string(length) + " exceeds the model's context " +
                                   std::to_string(context));
    require(batch <= SIZE_MAX / (length * vocab), "nf_forward: batch " + std::to_string(batch) + " is too large");
    const size_t needed = batch * length * vocab;
    require(count != nullptr, "nf_forward: the count pointer is NULL");
    *count = needed;
    require(needed <= capacity, "nf_forward: the logits need " + std::to_string(needed) + " floats, the buffer holds " +
                                    std::to_string(capacity), NF_ERROR_BUFFER_TOO_SMALL);
    require(logits != nullptr, "nf_forward: the logits buffer is NULL");
    NoGradGuard no_grad;
    const std::vector<int64_t> in(ids, ids + batch * length);
    const Tensor out = lm.forward(Tensor::from_vector(in, {static_cast<int64_t>(batch), static_cast<int64_t>(length)}))
                           .logits.to(DType::f32)
                           .contiguous();
    std::memcpy(logits, out.data<float>(), needed * sizeof(float));
  });
}

nf_status nf_embed(nf_model* model, const char* text, size_t text_length, int normalize, float* embedding, size_t capacity,
                   size_t* count) {
  return guarded(NF_ERROR_INVALID_ARGUMENT, [&] {
    require(model != nullptr, "nf_embed: the model is NULL");
    const auto encoded = model->state->tokenizer("nf_embed").encode(text_of(text, text_length, "nf_embed"));
    require(!encoded.empty(), "nf_embed: the text is empty");
    const std::vector<std::vector<int64_t>> inputs{{encoded.begin(), encoded.end()}};
    const auto vectors = models::embed(*model->state->loaded.model, inputs,
                                       {.pooling = models::Pooling::mean, .normalize = normalize != 0, .max_tokens = 0});
    copy_out(vectors[0].data(), vectors[0].size(), embedding, capacity, count, "nf_embed");
  });
}

nf_generate_params nf_generate_default_params(void) {
  return {.max_new_tokens = 256, .temperature = 0.8, .top_k = 0, .top_p = 0.95, .min_p = 0.0,
          .repetition_penalty = 1.0, .seed = 0, .stop = nullptr, .stop_count = 0, .grammar = nullptr,
          .json_schema = nullptr, .tools = nullptr};
}

nf_status nf_generate(nf_model* model, const char* prompt, size_t prompt_length, const nf_generate_params* params,
                      nf_text_callback callback, void* user_data, nf_generate_result* result) {
  return guarded(NF_ERROR_INVALID_ARGUMENT, [&] {
    require(model != nullptr, "nf_generate: the model is NULL");
    ModelState& state = *model->state;
    const infer::LoadedModel& loaded = state.loaded;
    const auto encoded = state.tokenizer("nf_generate").encode(text_of(prompt, prompt_length, "nf_generate"));
    std::vector<int64_t> ids;
    if (loaded.prompt_bos) ids.push_back(*loaded.prompt_bos);  // as llama.cpp tokenises a prompt
    ids.insert(ids.end(), encoded.begin(), encoded.end());
    require(!ids.empty(), "nf_generate: the prompt is empty");
    infer::Session session(*loaded.model);
    run_generation(state, session, ids, params, infer::default_end_ids(loaded), callback, user_data, result);
  });
}

nf_status nf_session_new(nf_model* model, int64_t context, nf_session** out) {
  return guarded(NF_ERROR_INVALID_ARGUMENT, [&] {
    require(out != nullptr, "nf_session_new: the out pointer is NULL");
    *out = nullptr;
    require(model != nullptr, "nf_session_new: the model is NULL");
    require(context >= 0, "nf_session_new: context must be >= 0, got " + std::to_string(context));
    *out = new nf_session{model->state, infer::Session(*model->state->loaded.model, context)};
  });
}

void nf_session_free(nf_session* session) { delete session; }

int64_t nf_session_length(const nf_session* session) {
  return session ? static_cast<int64_t>(session->session.cached_tokens().size()) : 0;
}

nf_status nf_session_chat(nf_session* session, const nf_chat_message* messages, size_t count, const nf_generate_params* params,
                          nf_text_callback callback, void* user_data, nf_generate_result* result) {
  return guarded(NF_ERROR_INVALID_ARGUMENT, [&] {
    require(session != nullptr, "nf_session_chat: the session is NULL");
    ModelState& state = *session->state;
    const tokenizer::ChatTemplate& chat = state.chat("nf_session_chat");
    const auto rendered =
        chat.render_for_completion(chat_messages(messages, count, "nf_session_chat"), params && params->tools ? params->tools : "");
    std::vector<int64_t> end_ids{chat.end_token()};
    for (const int64_t id : infer::default_end_ids(state.loaded))
      if (id != end_ids[0]) end_ids.push_back(id);
    run_generation(state, session->session, {rendered.begin(), rendered.end()}, params, std::move(end_ids), callback,
                   user_data, result);
  });
}

}  // extern "C"
