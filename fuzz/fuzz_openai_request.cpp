// OpenAI request bodies (POST /v1/chat/completions, /v1/completions and /v1/embeddings), as
// `nanoformer serve` receives them from the network: the input is parsed for all three endpoints. Bad input must end in a
// 400 ApiError naming what is at fault; a request that parses holds only values the sampler and the
// scheduler accept (ranges as documented in serve/openai_request.h).
#include "fuzz_support.h"
#include "nanoformer/serve/api_error.h"
#include "nanoformer/serve/embedding_service.h"
#include "nanoformer/serve/openai_request.h"

using namespace nf;
using namespace nf::serve;

namespace {

void parse_one(std::string_view body, Endpoint endpoint) {
  try {
    const CompletionRequest r = parse_completion_request(body, endpoint);
    NF_FUZZ_CHECK(r.endpoint == endpoint, "endpoint");
    NF_FUZZ_CHECK(fuzz::expect_nf_error([&] { r.sampler.validate(); }), "sampler values out of range accepted");
    NF_FUZZ_CHECK(endpoint == Endpoint::completion || !r.messages.empty(), "a chat without messages accepted");
    NF_FUZZ_CHECK(!r.max_tokens || *r.max_tokens >= (r.echo ? 0 : 1), "max_tokens ", *r.max_tokens, " accepted");
    NF_FUZZ_CHECK(!r.echo || endpoint == Endpoint::completion, "echo accepted for a chat");
    NF_FUZZ_CHECK(r.n >= 1 && r.n <= 128, "n ", r.n, " accepted");
    NF_FUZZ_CHECK(r.stop.size() <= 4, r.stop.size(), " stop strings accepted");
    for (const std::string& s : r.stop) NF_FUZZ_CHECK(!s.empty(), "an empty stop string accepted");
    NF_FUZZ_CHECK(!r.tool_use.forced() || r.grammar, "a forced tool call without its grammar");
    NF_FUZZ_CHECK(endpoint == Endpoint::chat || r.tool_use.tools.empty(), "tools accepted for a text completion");
  } catch (const ApiError& e) {
    NF_FUZZ_CHECK(e.status() == 400, "status ", e.status(), " for a bad request body");
    NF_FUZZ_CHECK(std::string_view(e.what()).size() > 0, "an error without a message");
  }
}

void parse_embedding(std::string_view body) {
  try {
    const EmbeddingRequest r = parse_embedding_request(body);
    NF_FUZZ_CHECK(r.texts.empty() != r.ids.empty(), "an embedding request with no input, or with texts and ids");
    NF_FUZZ_CHECK(r.texts.size() + r.ids.size() <= 2048, "more than 2048 inputs accepted");
    for (const std::string& t : r.texts) NF_FUZZ_CHECK(!t.empty(), "an empty input accepted");
    for (const auto& ids : r.ids) {
      NF_FUZZ_CHECK(!ids.empty(), "an empty input of ids accepted");
      for (const int64_t id : ids) NF_FUZZ_CHECK(id >= 0, "token id ", id, " accepted");
    }
  } catch (const ApiError& e) {
    NF_FUZZ_CHECK(e.status() == 400, "status ", e.status(), " for a bad embeddings body");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view body = fuzz::as_text(data, size);
  parse_one(body, Endpoint::chat);
  parse_one(body, Endpoint::completion);
  parse_embedding(body);
  return 0;
}
