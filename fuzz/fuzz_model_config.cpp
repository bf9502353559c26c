// Model config: parse the input as a decoder-LM config JSON; when it parses, writing it and parsing
// that again gives the same config (the writer's JSON is a fixed point), and its parameter count is
// computed without overflow (UBSan) or an error other than nf::Error.
#include "fuzz_support.h"
#include "nanoformer/models/model_config.h"

using namespace nf;
using namespace nf::models;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(fuzz::as_text(data, size));
  fuzz::expect_nf_error_naming("fuzz.json", [&] {
    const DecoderLMConfig config = parse_model_config(text, "fuzz.json");
    const std::string written = model_config_to_json(config);
    NF_FUZZ_CHECK(model_config_to_json(parse_model_config(written, "fuzz.json")) == written, "write, parse, write");
    (void)count_parameters(config);
  });
  return 0;
}
