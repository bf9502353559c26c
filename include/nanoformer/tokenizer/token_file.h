#pragma once
// The binary token file the training data loader reads: a corpus already turned into ids.
//
// Layout (all integers little-endian):
//   offset  size  field
//        0     8  magic "NFTOKENS"
//        8     4  version (1)
//       12     4  bytes per token: 2 (uint16, when vocab_size <= 65536) or 4 (uint32)
//       16     4  vocab_size (every id is below it)
//       20     4  reserved (0)
//       24     8  token count N
//       32  N*2|4 the tokens
// The reader maps the file into memory and checks the header and the exact file size, so a
// truncated or foreign file is refused with an error naming it.
#include <cstdint>
#include <cstdio>
#include <span>
#include <string>
#include <vector>

#include "nanoformer/tokenizer/added_vocabulary.h"

namespace nf::tokenizer {

inline constexpr char kTokenFileMagic[8] = {'N', 'F', 'T', 'O', 'K', 'E', 'N', 'S'};
inline constexpr uint32_t kTokenFileVersion = 1;
inline constexpr size_t kTokenFileHeaderSize = 32;

// Bytes per token for a vocabulary size: 2 when every id fits in uint16, else 4.
inline unsigned token_width(uint64_t vocab_size) { return vocab_size <= 65536 ? 2 : 4; }

// Writes a token file; the data goes to "<path>.tmp", renamed to path by close(), so a crash
// never leaves a partial file under the final name.
class TokenFileWriter {
 public:
  TokenFileWriter(const std::string& path, uint64_t vocab_size);
  ~TokenFileWriter();
  TokenFileWriter(const TokenFileWriter&) = delete;
  TokenFileWriter& operator=(const TokenFileWriter&) = delete;

  // Appends ids; throws nf::Error naming an id that is not below vocab_size.
  void write(std::span<const TokenId> ids);
  uint64_t count() const { return count_; }
  // Finalises the header and moves the file into place.
  void close();

 private:
  std::string path_;
  std::string tmp_path_;
  uint64_t vocab_size_;
  unsigned width_;
  uint64_t count_ = 0;
  std::FILE* file_ = nullptr;
  std::vector<unsigned char> buffer_;
};

// A read-only, memory-mapped token file.
class TokenFile {
 public:
  // Opens and validates; throws nf::Error naming the file and the problem.
  explicit TokenFile(const std::string& path);
  ~TokenFile();
  TokenFile(TokenFile&& other) noexcept;
  TokenFile& operator=(TokenFile&& other) noexcept;
  TokenFile(const TokenFile&) = delete;
  TokenFile& operator=(const TokenFile&) = delete;

  uint64_t size() const { return count_; }
  uint64_t vocab_size() const { return vocab_size_; }
  unsigned token_width() const { return width_; }
  const std::string& path() const { return path_; }

  TokenId operator[](uint64_t i) const;
  // Copies tokens [start, start + out.size()); throws nf::Error when the range is out of bounds.
  void read(uint64_t start, std::span<TokenId> out) const;
  std::vector<TokenId> read_all() const;
  // The largest id (0 when there are none): one pass over the mapped tokens that the compiler
  // vectorises, reading them in place.
  TokenId max_id() const;
  // The index of the first id not below `limit`, or size() when there is none.
  uint64_t find_id_at_least(uint64_t limit) const;
  // Checks that every id is below vocab_size (a full scan); throws naming the first bad one.
  void validate_ids() const;

 private:
  void release();

  std::string path_;
  const unsigned char* data_ = nullptr;  // the whole mapped file
  size_t mapped_ = 0;
  uint64_t count_ = 0;
  uint64_t vocab_size_ = 0;
  unsigned width_ = 2;
};

}  // namespace nf::tokenizer
