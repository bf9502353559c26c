#pragma once
// The final answer of a generated solution, as GSM8K is scored (lm-eval's gsm8k filters): the
// number after the last "#### ", else the last number in the text; both sides normalised before
// an exact match.
#include <optional>
#include <string>
#include <string_view>

namespace nf::eval {

// Drops ',' and '$' and surrounding white space, then one trailing '.': "$1,234." -> "1234".
std::string normalize_answer(std::string_view text);

// The normalised number after the last "#### " (-?[0-9.,]+), else the last run of [-$0-9.,]
// holding a digit; none when the text holds no digit.
std::optional<std::string> extract_answer(std::string_view text);

}  // namespace nf::eval
