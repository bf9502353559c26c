// "key=value" overrides of a model config (--set): a value is JSON or a bare string, a malformed
// item is named, and a misspelled key is left for the parser to refuse by name.
#include <gtest/gtest.h>

#include "nanoformer/models/config/config_overrides.h"
#include "nanoformer/models/config/model_config.h"
#include "support/testing.h"

namespace nf::models {
namespace {

TEST(ConfigOverrides, ModelOverridesAreChecked) {
  EXPECT_THROW_WITH(model_config_with_overrides("gpt-mini", {"vocab_size"}), "--set 'vocab_size'", "key=value");
  EXPECT_THROW_WITH(parse_model_config(model_config_with_overrides("gpt-mini", {"vocab_sise=3"}), "gpt-mini"),
                    "vocab_sise");
  const auto c = parse_model_config(model_config_with_overrides("gpt-mini", {"vocab_size=65", "norm=rmsnorm"}));
  EXPECT_EQ(c.vocab_size, 65);
  EXPECT_EQ(c.norm, nn::NormKind::rmsnorm);
}

}  // namespace
}  // namespace nf::models
