// Model configs of every architecture: the input is parsed by each architecture's parser (only the
// one its "architecture" key names can accept it). A config that parses writes JSON that parses
// back to the same config (the writer's JSON is a fixed point), and its parameter count from the
// config alone runs without overflow (UBSan) or an error other than nf::Error.
#include "fuzz_support.h"
#include "nanoformer/models/config/encoder_config.h"
#include "nanoformer/models/config/encoder_decoder_config.h"
#include "nanoformer/models/config/model_config.h"
#include "nanoformer/models/config/vit_config.h"
#include "nanoformer/models/model.h"

using namespace nf;
using namespace nf::models;

namespace {

// parse(text) -> config; its JSON is a fixed point of write(parse(.)).
template <class Parse, class Write>
void round_trip(const std::string& text, Parse parse, Write write) {
  fuzz::expect_nf_error_naming("fuzz.json", [&] {
    const std::string written = write(parse(text, "fuzz.json"));
    NF_FUZZ_CHECK(write(parse(written, "fuzz.json")) == written, "write, parse, write");
  });
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(fuzz::as_text(data, size));
  round_trip(text, parse_model_config, model_config_to_json);
  round_trip(text, parse_encoder_config, encoder_config_to_json);
  round_trip(text, parse_encoder_decoder_config, encoder_decoder_config_to_json);
  round_trip(text, parse_vit_config, vit_config_to_json);
  fuzz::expect_nf_error_naming("fuzz.json", [&] { (void)config_parameter_count(text, "fuzz.json"); });
  return 0;
}
