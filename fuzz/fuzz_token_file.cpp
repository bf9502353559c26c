// Token file: the input is a file. Open it; when it opens, its size must match the header, and
// read_all, operator[], read and validate_ids must agree and refuse out-of-range requests.
#include <vector>

#include "fuzz_support.h"
#include "nanoformer/tokenizer/token_file.h"

using namespace nf;
using namespace nf::tokenizer;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string& path = fuzz::scratch_file(data, size);
  fuzz::expect_nf_error_naming(path, [&] {
    TokenFile opened(path);
    const TokenFile file(std::move(opened));
    NF_FUZZ_CHECK(kTokenFileHeaderSize + file.size() * file.token_width() == size, file.size(), " tokens");
    const std::vector<TokenId> all = file.read_all();
    NF_FUZZ_CHECK(all.size() == file.size(), all.size());
    for (uint64_t i = 0; i < all.size(); i += 1 + all.size() / 64) NF_FUZZ_CHECK(file[i] == all[i], i);
    if (!all.empty()) {
      std::vector<TokenId> tail(std::min<size_t>(all.size(), 7));
      file.read(all.size() - tail.size(), tail);
      NF_FUZZ_CHECK(std::equal(tail.begin(), tail.end(), all.end() - static_cast<std::ptrdiff_t>(tail.size())), "read");
    }
    std::vector<TokenId> one(1);
    NF_FUZZ_CHECK(!fuzz::expect_nf_error([&] { (void)file[file.size()]; }), "index past the end accepted");
    NF_FUZZ_CHECK(!fuzz::expect_nf_error([&] { file.read(file.size(), one); }), "read past the end accepted");
    NF_FUZZ_CHECK(!fuzz::expect_nf_error([&] { file.read(UINT64_MAX, one); }), "read at 2^64-1 accepted");
    if (fuzz::expect_nf_error([&] { file.validate_ids(); }))
      for (TokenId id : all) NF_FUZZ_CHECK(id < file.vocab_size(), "validate_ids passed id ", id);
  });
  return 0;
}
