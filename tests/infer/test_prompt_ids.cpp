// Prompts given as ids (--prompt-ids): parsed, and ids outside the vocabulary refused by name.
#include <gtest/gtest.h>

#include "nanoformer/infer/prompt_ids.h"
#include "support/testing.h"

namespace nf::infer {
namespace {

TEST(PromptIds, ParsesIdsSeparatedBySpacesOrCommas) {
  EXPECT_EQ(parse_prompt_ids("1 2  3", 10), (std::vector<int64_t>{1, 2, 3}));
  EXPECT_EQ(parse_prompt_ids(" 0,9 ,4\n", 10), (std::vector<int64_t>{0, 9, 4}));
  EXPECT_TRUE(parse_prompt_ids("  ", 10).empty());
}

TEST(PromptIds, UnknownIdOrWordIsAClearError) {
  EXPECT_THROW_WITH(parse_prompt_ids("1 512 3", 512), "--prompt-ids", "token id 512", "position 1", "[0, 512)");
  EXPECT_THROW_WITH(parse_prompt_ids("1 -2", 512), "--prompt-ids", "token id -2");
  EXPECT_THROW_WITH(parse_prompt_ids("1 two", 512), "--prompt-ids", "'two' is not a token id");
  EXPECT_THROW_WITH(parse_prompt_ids("7x", 512), "'7x'");
  EXPECT_THROW_WITH(check_token_ids(std::vector<int64_t>{3, 70000}, 6400, "the prompt"), "the prompt",
                    "token id 70000", "[0, 6400)");
}

}  // namespace
}  // namespace nf::infer
