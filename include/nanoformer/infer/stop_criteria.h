#pragma once
// When generation stops: an end-of-sequence id, a stop string in the generated text, or the
// maximum number of new tokens. Ids are checked by StopCriteria::after_token; stop strings are
// matched on the decoded text by StopStringMatcher, which also holds back text that could still
// become a stop string, so that a stop string is never printed (a stop string may span several
// tokens; the text before it is the answer, what follows it in the same token is dropped).
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace nf::infer {

// context_full: the context cannot make room for another token (--keep holds all of it).
enum class StopReason { none, end_of_sequence, stop_string, max_new_tokens, context_full };
const char* stop_reason_name(StopReason reason);  // "none", "end of sequence", ...

struct StopCriteria {
  std::vector<int64_t> eos_ids = {};           // stop at one of these ids (its text is not printed)
  std::vector<std::string> stop_strings = {};  // --stop: stop when the generated text contains one
  int64_t max_new_tokens = 256;                // --max-new-tokens: stop after this many new tokens

  // Throws nf::Error naming the flag: max_new_tokens < 1 or an empty stop string.
  void validate() const;
  // Why to stop after `id`, the `count`-th new token (end of sequence before max new tokens).
  StopReason after_token(int64_t id, int64_t count) const;
};

// Finds the first stop string to complete in text that arrives in pieces (as Hugging Face's
// StopStringCriteria, which stops as soon as the text ends with one); the answer is the text
// before where that stop string starts.
class StopStringMatcher {
 public:
  explicit StopStringMatcher(std::vector<std::string> stop_strings);

  // Appends text; returns the text that is final: no stop string can start in it any more. When
  // a stop string is complete, returns the text before it, and stopped() turns true; after that
  // push() returns nothing.
  std::string push(std::string_view text);
  bool stopped() const { return stopped_; }
  // The text held back (when generation ends for another reason); empty after a stop.
  std::string flush();

 private:
  std::vector<std::string> stop_strings_;
  std::string pending_;  // a suffix that is a proper prefix of some stop string
  bool stopped_ = false;
};

}  // namespace nf::infer
