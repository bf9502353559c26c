#pragma once
// "key=value" overrides of a model config, as `nanoformer train --set key=value` gives them: each
// value is JSON (numbers, true/false, null, quoted strings), else a bare string (--set norm=rmsnorm),
// and replaces or adds its key in the config's JSON object before the config is parsed.
#include <memory>
#include <string>
#include <vector>

#include "nanoformer/core/generator.h"
#include "nanoformer/models/decoder_lm.h"

namespace nf::models {

// The model config JSON a fresh run builds: the preset or file, with "key=value" overrides.
std::string model_config_with_overrides(const std::string& name_or_path, const std::vector<std::string>& overrides);
// `model` (the --init-from model, loaded from `source`) with "key=value" overrides (--set) applied:
// a setting that keeps every weight's name and shape (dropout, rope_theta, ...) changes (the model is
// rebuilt from `gen` and given the weights); one that would change a weight is refused, naming the
// changed keys. The model itself when nothing changes.
std::shared_ptr<DecoderLM> with_model_overrides(std::shared_ptr<DecoderLM> model,
                                                const std::vector<std::string>& overrides, const std::string& source,
                                                Generator& gen);

}  // namespace nf::models
