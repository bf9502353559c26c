#include "nanoformer/data/token_corpus.h"

#include <algorithm>
#include <chrono>

#include "nanoformer/core/error.h"

namespace nf::data {
namespace {

// The largest id in memory: a plain reduction the compiler vectorises.
TokenId max_id(const std::vector<TokenId>& ids) {
  TokenId m = 0;
  for (const TokenId id : ids) m = id > m ? id : m;
  return m;
}

// The first position of ids not below limit (ids.size() when none).
uint64_t find_id_at_least(const std::vector<TokenId>& ids, uint64_t limit) {
  return static_cast<uint64_t>(std::find_if(ids.begin(), ids.end(), [&](TokenId id) { return id >= limit; }) - ids.begin());
}

}  // namespace

void TokenCorpus::add_file(tokenizer::TokenFile file) {
  Part part;
  part.source = file.path();
  part.begin = size_;
  part.size = file.size();
  part.vocab_size = file.vocab_size();
  part.file.emplace(std::move(file));
  size_ += part.size;
  parts_.push_back(std::move(part));
}

void TokenCorpus::add_ids(std::string source, std::vector<TokenId> ids, uint64_t vocab_size) {
  Part part;
  part.source = std::move(source);
  part.begin = size_;
  part.size = ids.size();
  part.vocab_size = vocab_size;
  part.ids = std::move(ids);
  size_ += part.size;
  parts_.push_back(std::move(part));
}

const TokenCorpus::Part& TokenCorpus::part_at(uint64_t position) const {
  // The last part that begins at or before position (position < size_): never an empty part,
  // since the part after an empty one begins where it does.
  const auto it = std::upper_bound(parts_.begin(), parts_.end(), position,
                                   [](uint64_t p, const Part& part) { return p < part.begin; });
  return *(it - 1);
}

void TokenCorpus::read(uint64_t start, std::span<TokenId> out) const {
  NF_CHECK(start <= size_ && out.size() <= size_ - start, "tokens [", start, ", ", start + out.size(),
           ") are out of range of a corpus of ", size_, " tokens");
  for (size_t done = 0; done < out.size();) {
    const uint64_t position = start + done;
    const Part& part = part_at(position);
    const uint64_t offset = position - part.begin;
    const size_t n = static_cast<size_t>(std::min<uint64_t>(out.size() - done, part.size - offset));
    if (part.file)
      part.file->read(offset, out.subspan(done, n));
    else
      std::copy_n(part.ids.begin() + static_cast<std::ptrdiff_t>(offset), n, out.begin() + static_cast<std::ptrdiff_t>(done));
    done += n;
  }
}

std::string TokenCorpus::locate(uint64_t position) const {
  NF_CHECK(position < size_, "position ", position, " is out of range of a corpus of ", size_, " tokens");
  const Part& part = part_at(position);
  return part.source + ", token " + std::to_string(position - part.begin);
}

TokenCorpus::VocabCheck TokenCorpus::check_vocab(uint64_t vocab_size) const {
  const auto start = std::chrono::steady_clock::now();
  VocabCheck check;
  for (const Part& part : parts_) {
    if (part.file)
      NF_CHECK(part.vocab_size <= vocab_size, part.source, ": the token file's header gives a vocabulary of ",
               part.vocab_size, " ids, larger than the model's vocabulary size ", vocab_size,
               ": it was prepared with another tokenizer");
    const TokenId part_max = part.file ? part.file->max_id() : max_id(part.ids);
    if (part_max >= vocab_size) {
      const uint64_t i = part.file ? part.file->find_id_at_least(vocab_size) : find_id_at_least(part.ids, vocab_size);
      TokenId id = 0;
      read(part.begin + i, std::span<TokenId>(&id, 1));
      NF_FAIL(part.source, ", token ", i, ": id ", id, " is not below the model's vocabulary size ", vocab_size);
    }
    check.tokens += part.size;
    check.max_id = std::max(check.max_id, part_max);
  }
  check.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return check;
}

std::string TokenCorpus::sources() const {
  std::string out;
  for (const Part& part : parts_) out += (out.empty() ? "" : " + ") + part.source;
  return out;
}

}  // namespace nf::data
