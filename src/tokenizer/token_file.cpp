#include "nanoformer/tokenizer/token_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "nanoformer/core/error.h"

namespace nf::tokenizer {
namespace {

void put_le(unsigned char* p, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) p[i] = static_cast<unsigned char>(v >> (8 * i));
}

uint64_t get_le(const unsigned char* p, int bytes) {
  uint64_t v = 0;
  for (int i = bytes - 1; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

// max of n little-endian Word values at p: a plain reduction the compiler vectorises (memcpy
// loads: the mapped bytes are read in place, whatever their alignment)
template <class Word>
TokenId max_of(const unsigned char* p, uint64_t n) {
  static_assert(std::endian::native == std::endian::little, "token files are little-endian");
  Word m = 0;
  for (uint64_t i = 0; i < n; ++i) {
    Word v;
    std::memcpy(&v, p + i * sizeof(Word), sizeof(Word));
    m = v > m ? v : m;
  }
  return m;
}

std::vector<unsigned char> header(uint64_t vocab_size, unsigned width, uint64_t count) {
  std::vector<unsigned char> h(kTokenFileHeaderSize, 0);
  std::memcpy(h.data(), kTokenFileMagic, 8);
  put_le(h.data() + 8, kTokenFileVersion, 4);
  put_le(h.data() + 12, width, 4);
  put_le(h.data() + 16, vocab_size, 4);
  put_le(h.data() + 24, count, 8);
  return h;
}

}  // namespace

TokenFileWriter::TokenFileWriter(const std::string& path, uint64_t vocab_size)
    : path_(path), tmp_path_(path + ".tmp"), vocab_size_(vocab_size), width_(token_width(vocab_size)) {
  NF_CHECK(vocab_size > 0 && vocab_size <= 0xFFFFFFFFull, path, ": vocab size ", vocab_size,
           " does not fit a token file");
  file_ = std::fopen(tmp_path_.c_str(), "wb");
  NF_CHECK(file_, tmp_path_, ": cannot open for writing: ", std::strerror(errno));
  const auto h = header(vocab_size_, width_, 0);
  NF_CHECK(std::fwrite(h.data(), 1, h.size(), file_) == h.size(), tmp_path_, ": write failed");
}

TokenFileWriter::~TokenFileWriter() {
  if (file_) {  // not closed: an error happened, leave nothing behind
    std::fclose(file_);
    std::remove(tmp_path_.c_str());
  }
}

void TokenFileWriter::write(std::span<const TokenId> ids) {
  NF_CHECK(file_, path_, ": write after close");
  buffer_.resize(ids.size() * width_);
  unsigned char* p = buffer_.data();
  for (TokenId id : ids) {
    NF_CHECK(id < vocab_size_, path_, ": token id ", id, " is out of range (vocabulary size ", vocab_size_, ")");
    put_le(p, id, static_cast<int>(width_));
    p += width_;
  }
  NF_CHECK(std::fwrite(buffer_.data(), 1, buffer_.size(), file_) == buffer_.size(), tmp_path_,
           ": write failed: ", std::strerror(errno));
  count_ += ids.size();
}

void TokenFileWriter::close() {
  NF_CHECK(file_, path_, ": closed twice");
  const auto h = header(vocab_size_, width_, count_);
  const bool ok = std::fseek(file_, 0, SEEK_SET) == 0 && std::fwrite(h.data(), 1, h.size(), file_) == h.size();
  const bool closed = std::fclose(file_) == 0;
  file_ = nullptr;
  if (!ok || !closed) {
    std::remove(tmp_path_.c_str());
    NF_FAIL(tmp_path_, ": write failed: ", std::strerror(errno));
  }
  NF_CHECK(std::rename(tmp_path_.c_str(), path_.c_str()) == 0, path_, ": cannot move ", tmp_path_,
           " into place: ", std::strerror(errno));
}

TokenFile::TokenFile(const std::string& path) : path_(path) {
  const int fd = ::open(path.c_str(), O_RDONLY);
  NF_CHECK(fd >= 0, path, ": cannot open token file: ", std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    NF_FAIL(path, ": not a regular file");
  }
  const auto file_size = static_cast<uint64_t>(st.st_size);
  if (file_size < kTokenFileHeaderSize) {
    ::close(fd);
    NF_FAIL(path, ": truncated token file: ", file_size, " bytes, shorter than the ", kTokenFileHeaderSize,
            "-byte header");
  }
  void* m = ::mmap(nullptr, file_size, PROT_READ, MAP_PRIVATE, fd, 0);
  ::close(fd);
  NF_CHECK(m != MAP_FAILED, path, ": cannot map token file: ", std::strerror(errno));
  data_ = static_cast<const unsigned char*>(m);
  mapped_ = file_size;
  try {
    NF_CHECK(std::memcmp(data_, kTokenFileMagic, 8) == 0, path, ": not a nanoformer token file (bad magic)");
    const uint64_t version = get_le(data_ + 8, 4);
    NF_CHECK(version == kTokenFileVersion, path, ": unsupported token file version ", version, " (expected ",
             kTokenFileVersion, ")");
    width_ = static_cast<unsigned>(get_le(data_ + 12, 4));
    NF_CHECK(width_ == 2 || width_ == 4, path, ": bad token width ", width_, " (expected 2 or 4)");
    vocab_size_ = get_le(data_ + 16, 4);
    NF_CHECK(vocab_size_ > 0, path, ": vocab size is 0");
    NF_CHECK(width_ == 4 || vocab_size_ <= 65536, path, ": vocab size ", vocab_size_, " does not fit 2-byte tokens");
    count_ = get_le(data_ + 24, 8);
    const uint64_t body = file_size - kTokenFileHeaderSize;
    NF_CHECK(count_ <= body / width_ && body == count_ * width_, path,
             ": truncated or corrupt token file: the header says ", count_, " tokens (", count_ * width_,
             " bytes) but ", body, " bytes follow it");
  } catch (...) {
    release();
    throw;
  }
}

TokenFile::~TokenFile() { release(); }

TokenFile::TokenFile(TokenFile&& other) noexcept { *this = std::move(other); }

TokenFile& TokenFile::operator=(TokenFile&& other) noexcept {
  if (this != &other) {
    release();
    path_ = std::move(other.path_);
    data_ = other.data_;
    mapped_ = other.mapped_;
    count_ = other.count_;
    vocab_size_ = other.vocab_size_;
    width_ = other.width_;
    other.data_ = nullptr;
    other.mapped_ = 0;
  }
  return *this;
}

void TokenFile::release() {
  if (data_) ::munmap(const_cast<unsigned char*>(data_), mapped_);
  data_ = nullptr;
  mapped_ = 0;
}

TokenId TokenFile::operator[](uint64_t i) const {
  NF_CHECK(i < count_, path_, ": token index ", i, " is out of range (", count_, " tokens)");
  return static_cast<TokenId>(get_le(data_ + kTokenFileHeaderSize + i * width_, static_cast<int>(width_)));
}

void TokenFile::read(uint64_t start, std::span<TokenId> out) const {
  NF_CHECK(start <= count_ && out.size() <= count_ - start, path_, ": tokens [", start, ", ", start + out.size(),
           ") are out of range (", count_, " tokens)");
  const unsigned char* p = data_ + kTokenFileHeaderSize + start * width_;
  if (width_ == 2)
    for (size_t i = 0; i < out.size(); ++i) out[i] = static_cast<TokenId>(p[2 * i] | (p[2 * i + 1] << 8));
  else
    for (size_t i = 0; i < out.size(); ++i) out[i] = static_cast<TokenId>(get_le(p + 4 * i, 4));
}

std::vector<TokenId> TokenFile::read_all() const {
  std::vector<TokenId> out(count_);
  read(0, out);
  return out;
}

TokenId TokenFile::max_id() const {
  const unsigned char* p = data_ + kTokenFileHeaderSize;
  return width_ == 2 ? max_of<uint16_t>(p, count_) : max_of<uint32_t>(p, count_);
}

uint64_t TokenFile::find_id_at_least(uint64_t limit) const {
  std::vector<TokenId> block(1 << 16);
  for (uint64_t start = 0; start < count_; start += block.size()) {
    const size_t n = static_cast<size_t>(std::min<uint64_t>(block.size(), count_ - start));
    read(start, std::span<TokenId>(block.data(), n));
    for (size_t i = 0; i < n; ++i)
      if (block[i] >= limit) return start + i;
  }
  return count_;
}

void TokenFile::validate_ids() const {
  if (max_id() < vocab_size_) return;
  const uint64_t i = find_id_at_least(vocab_size_);
  NF_FAIL(path_, ": token ", i, " has id ", (*this)[i], ", not below the vocabulary size ", vocab_size_);
}

}  // namespace nf::tokenizer
