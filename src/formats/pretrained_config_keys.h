#pragma once
// The keys every transformers config.json may carry whatever its model (PretrainedConfig.__init__'s
// own arguments, the generation keys older versions stored there, save_pretrained's bookkeeping),
// in one table that every reader of a foreign config consults (check_known_keys, folder_io.h).
// Internal to src/formats.
#include <string>

#include <nlohmann/json.hpp>

namespace nf::formats {

// True when `key` is one of those generic keys and `value` leaves the model we build unchanged;
// false when it is not a generic key. A generic key that would change the architecture
// (is_encoder_decoder true, add_cross_attention true, pruned heads, ...) is an error naming
// `source`, the key and its value.
bool is_generic_pretrained_config_key(const std::string& key, const nlohmann::json& value, const std::string& source);

}  // namespace nf::formats
