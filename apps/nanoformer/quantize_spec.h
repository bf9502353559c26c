#pragma once
// The weight types of `quantize` and `convert --to gguf --type`, checked before anything loads, and
// the quantising they share (defined in quantize.cpp).
#include <string>

#include "nanoformer/models/quantize.h"

namespace nf::cli {

// --type, --output-type and --embedding-type ("" = the default) as a spec; throws naming the flag
// when a type is unknown or no weight type of llama.cpp's.
models::QuantizeSpec quantize_spec(const std::string& type, const std::string& output_type = "",
                                   const std::string& embedding_type = "");
// models::quantize_weights, after making any weight the model already holds quantised dense again
// (a GGUF requantised, as llama.cpp's quantize --allow-requantize: the new blocks approximate the old
// ones, not the original weights); prints a note to stderr when it does.
void requantize(models::DecoderLM& model, const models::QuantizeSpec& spec);

}  // namespace nf::cli
