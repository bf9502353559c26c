#pragma once
// The name maps of hf_checkpoint.cpp (GPT2LMHeadModel / LLaMA-family names <- ours), for the
// formats that name tensors after those of transformers (GGUF renames them, gguf_checkpoint.cpp).
// Internal to src/formats.
#include "formats/name_map.h"
#include "nanoformer/models/config/model_config.h"

namespace nf::formats {

// The map of the Hugging Face class that holds `config` (learned positions: GPT-2, RoPE: the LLaMA
// family), in transformers' tensor order; throws naming the first option no class can express.
NameMap hf_decoder_name_map(const models::DecoderLMConfig& config);

}  // namespace nf::formats
