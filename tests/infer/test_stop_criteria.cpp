// Stopping: end-of-sequence ids before max new tokens, and stop strings found in text that
// arrives in pieces (spanning several of them), never releasing the start of a stop string.
#include <gtest/gtest.h>

#include "nanoformer/infer/stop_criteria.h"
#include "support/testing.h"

namespace nf::infer {
namespace {

// Pushes every piece; returns the concatenated output and whether the matcher stopped.
std::pair<std::string, bool> run(StopStringMatcher& matcher, const std::vector<std::string>& pieces) {
  std::string out;
  for (const std::string& p : pieces) out += matcher.push(p);
  const bool stopped = matcher.stopped();
  out += matcher.flush();
  return {out, stopped};
}

TEST(StopCriteria, EndOfSequenceBeforeMaxNewTokens) {
  const StopCriteria criteria{.eos_ids = {2, 7}, .max_new_tokens = 3};
  EXPECT_EQ(criteria.after_token(5, 1), StopReason::none);
  EXPECT_EQ(criteria.after_token(7, 1), StopReason::end_of_sequence);
  EXPECT_EQ(criteria.after_token(5, 3), StopReason::max_new_tokens);
  EXPECT_EQ(criteria.after_token(2, 3), StopReason::end_of_sequence);
  EXPECT_STREQ(stop_reason_name(StopReason::stop_string), "stop string");
}

TEST(StopCriteria, RejectsBadValuesNamingTheFlag) {
  EXPECT_THROW_WITH((StopCriteria{.max_new_tokens = -1}.validate()), "--max-new-tokens -1", ">= 1");
  EXPECT_THROW_WITH((StopCriteria{.max_new_tokens = 0}.validate()), "--max-new-tokens 0", ">= 1");
  EXPECT_THROW_WITH((StopCriteria{.stop_strings = {"a", ""}}.validate()), "--stop", "empty");
  EXPECT_THROW_WITH(StopStringMatcher({""}), "--stop", "empty");
}

TEST(StopStringMatcher, HoldsBackAPossibleStartAndStopsOnAStringSpanningPieces) {
  StopStringMatcher matcher({"\nUser:"});
  EXPECT_EQ(matcher.push("Hel"), "Hel");
  EXPECT_EQ(matcher.push("lo\nUs"), "lo");  // "\nUs" may begin the stop string
  EXPECT_FALSE(matcher.stopped());
  EXPECT_EQ(matcher.push("er: and more"), "");  // complete: the text before it was all released
  EXPECT_TRUE(matcher.stopped());
  EXPECT_EQ(matcher.push("later"), "");
  EXPECT_EQ(matcher.flush(), "");
}

TEST(StopStringMatcher, ReleasesAHeldPrefixThatDoesNotComplete) {
  StopStringMatcher matcher({"\nUser:"});
  EXPECT_EQ(matcher.push("a\nUs"), "a");
  EXPECT_EQ(matcher.push("ual"), "\nUsual");
  EXPECT_EQ(matcher.push("\n"), "");
  EXPECT_EQ(matcher.flush(), "\n");  // generation ended for another reason
}

TEST(StopStringMatcher, EarliestStopStringWinsAndTheRestOfThePieceIsDropped) {
  StopStringMatcher matcher({"abc", "bd", "</s>"});
  EXPECT_EQ(run(matcher, {"xa", "b", "d tail"}), std::make_pair(std::string("xa"), true));
  StopStringMatcher overlapping({"aab"});
  EXPECT_EQ(run(overlapping, {"a", "a", "a", "b!"}), std::make_pair(std::string("a"), true));
  StopStringMatcher one_piece({"STOP"});
  EXPECT_EQ(run(one_piece, {"text STOP more STOP"}), std::make_pair(std::string("text "), true));
}

TEST(StopStringMatcher, WithoutStopStringsPassesEverythingThrough) {
  StopStringMatcher matcher({});
  EXPECT_EQ(run(matcher, {"a", "\n", "b"}), std::make_pair(std::string("a\nb"), false));
}

// Byte by byte, a stop string is never in the output, and the output is the text before it.
TEST(StopStringMatcher, NeverPrintsAStopStringWhateverThePieces) {
  const std::string text = "one <|im_end|>\n\ntwo", stop = "<|im_end|>";
  for (size_t cut = 1; cut < text.size(); ++cut) {
    StopStringMatcher matcher({stop, "\n\n"});
    std::string out;
    for (size_t pos = 0; pos < text.size(); pos += cut) {
      out += matcher.push(text.substr(pos, cut));
      EXPECT_EQ(out.find('<', 4), std::string::npos) << "cut " << cut << ": printed " << out;
    }
    EXPECT_TRUE(matcher.stopped());
    EXPECT_EQ(out + matcher.flush(), "one ") << "cut " << cut;
  }
}

}  // namespace
}  // namespace nf::infer
