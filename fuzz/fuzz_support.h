#pragma once
// Shared by the fuzz targets (fuzz/fuzz_*.cpp; see docs/FUZZING.md). A target is one
// LLVMFuzzerTestOneInput that feeds its input to one parser. Bad input must end in nf::Error,
// which is the expected outcome and is swallowed; anything else is a finding: another exception
// type (it escapes, and libFuzzer or the replay reports it), a sanitizer report, a failed
// NF_FUZZ_CHECK (an oracle such as decode(encode(x)) == x), an allocation over 2 GB or a run
// over 10 s (libFuzzer's -malloc_limit_mb / -timeout, the replay's own checks).
//
// The same sources build two ways: with clang and -fsanitize=fuzzer (make fuzz) and with any
// compiler against fuzz/replay_main.cpp, which runs the committed corpus under ctest (make test).
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "nanoformer/core/error.h"
#include "nanoformer/tokenizer/tokenizer.h"

namespace nf::fuzz {

inline std::string_view as_text(const uint8_t* data, size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

// Reports a finding and aborts (libFuzzer saves the input as a crash artifact; the replay names it).
[[noreturn]] void finding(const std::string& what);

// Runs fn, swallowing nf::Error: the expected outcome of a bad input. Returns whether fn completed.
template <class F>
bool expect_nf_error(F&& fn) {
  try {
    fn();
    return true;
  } catch (const nf::Error&) {
    return false;
  }
}

// Like expect_nf_error, and the error must name the file (its path or source name): a finding if not.
template <class F>
bool expect_nf_error_naming(std::string_view name, F&& fn) {
  try {
    fn();
    return true;
  } catch (const nf::Error& e) {
    if (std::string_view(e.what()).find(name) == std::string_view::npos)
      finding("an error does not name " + std::string(name) + ": " + e.what());
    return false;
  }
}

// Writes the input to a scratch file private to this process (in /dev/shm when there is one)
// and returns its path, for parsers that read a path. The file is removed at exit.
const std::string& scratch_file(const uint8_t* data, size_t size);

// A directory private to this process (in /dev/shm when there is one), created empty on the first
// call for `name` and removed with its contents at exit, for parsers that read a folder.
const std::string& scratch_directory(const std::string& name);

// The fixture tokenizers, trained by Hugging Face on tests/fixtures/tokenizer/corpus.txt.
std::string fixture_path(const std::string& name);

// Decodes ids that encode produced: every id is below vocab_size(), decoding cannot fail, and a
// StreamDecoder fed the ids one by one gives the same bytes (byte-level and character tokenizers).
std::string decode_checked(const tokenizer::Tokenizer& tok, const std::vector<tokenizer::TokenId>& ids);

// Encodes and decodes kSampleTexts and `extra` (encode may refuse a text with nf::Error); when
// `exact`, decode(encode(x)) must give x back.
void exercise_tokenizer(const tokenizer::Tokenizer& tok, std::string_view extra, bool exact);

// A few fixed texts every tokenizer target encodes and decodes.
inline constexpr std::string_view kSampleTexts[] = {
    "Hello world! It's 2024.\n", " <|endoftext|>cat <tool> caté\r\n\t", "\xff\xfe invalid \xc3 UTF-8 \xe2\x82",
    "机器学习 🦙 naïve", ""};

}  // namespace nf::fuzz

// Oracle check inside a target: reports a finding naming the condition when it is false.
#define NF_FUZZ_CHECK(cond, ...)                                                                      \
  do {                                                                                                \
    if (!(cond)) ::nf::fuzz::finding(::nf::detail::concat("check failed: " #cond ": ", __VA_ARGS__)); \
  } while (0)
