// load_tokenizer by path: the input is a file, read as a character vocabulary when it says so
// and as a tokenizer.json otherwise; every refusal must be an nf::Error naming the file.
#include "fuzz_support.h"
#include "nanoformer/tokenizer/tokenizer.h"

using namespace nf;
using namespace nf::tokenizer;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string& path = fuzz::scratch_file(data, size);
  std::unique_ptr<Tokenizer> tok;
  fuzz::expect_nf_error_naming(path, [&] { tok = load_tokenizer(path); });
  if (tok) fuzz::exercise_tokenizer(*tok, fuzz::as_text(data, std::min<size_t>(size, 256)), tok->kind() == "char");
  return 0;
}
