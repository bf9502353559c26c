#pragma once
// The weight types of `quantize` and `convert --to gguf --type`, checked before anything loads
// (defined in quantize.cpp).
#include <string>

#include "nanoformer/models/quantize.h"

namespace nf::cli {

// --type, --output-type and --embedding-type ("" = the default) as a spec; throws naming the flag
// when a type is unknown or this build cannot quantise to it (also the head's default type).
models::QuantizeSpec quantize_spec(const std::string& type, const std::string& output_type = "",
                                   const std::string& embedding_type = "");

}  // namespace nf::cli
