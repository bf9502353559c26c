#include "fuzz_support.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>

#include "nanoformer/tokenizer/stream_decoder.h"

namespace nf::fuzz {
namespace {

std::string scratch_dir() {
  std::error_code ec;
  if (std::filesystem::is_directory("/dev/shm", ec) && ::access("/dev/shm", W_OK) == 0) return "/dev/shm";
  const char* tmp = std::getenv("TMPDIR");
  return tmp && *tmp ? tmp : "/tmp";
}

const std::string& scratch_path() {
  static const std::string path = scratch_dir() + "/nf_fuzz_" + std::to_string(::getpid());
  return path;
}

void remove_scratch() { std::remove(scratch_path().c_str()); }

}  // namespace

const std::string& scratch_file(const uint8_t* data, size_t size) {
  const std::string& path = scratch_path();
  static const bool registered = std::atexit(remove_scratch) == 0;  // after path: runs before it dies
  (void)registered;
  // A new file each time: rewriting a mapped file in place would change views still alive.
  std::remove(path.c_str());
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) finding("cannot create the scratch file " + path);
  for (size_t done = 0; done < size;) {
    const ssize_t n = ::write(fd, data + done, size - done);
    if (n <= 0) finding("cannot write the scratch file " + path);
    done += static_cast<size_t>(n);
  }
  ::close(fd);
  return path;
}

const std::string& scratch_directory(const std::string& name) {
  static std::map<std::string, std::string> made;
  auto it = made.find(name);
  if (it != made.end()) return it->second;
  const std::string dir = scratch_path() + "_" + name;
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
  if (!std::filesystem::create_directories(dir, ec)) finding("cannot create the scratch directory " + dir);
  static const bool registered = std::atexit([] {
    std::error_code ignored;
    for (const auto& [n, d] : made) std::filesystem::remove_all(d, ignored);
  }) == 0;
  (void)registered;
  return made.emplace(name, dir).first->second;
}

std::string fixture_path(const std::string& name) { return std::string(NF_TEST_DATA_DIR) + "/tokenizer/" + name; }

void finding(const std::string& what) {
  std::fprintf(stderr, "\n==nanoformer fuzz finding== %s\n", what.c_str());
  std::fflush(stderr);
  std::abort();
}

std::string decode_checked(const tokenizer::Tokenizer& tok, const std::vector<tokenizer::TokenId>& ids) {
  for (tokenizer::TokenId id : ids)
    NF_FUZZ_CHECK(id < tok.vocab_size(), "encode gave id ", id, " for a vocabulary of ", tok.vocab_size());
  std::string decoded;
  try {
    decoded = tok.decode(ids);
  } catch (const Error& e) {
    finding(std::string("ids from encode do not decode: ") + e.what());
  }
  // WordPiece decoding joins pieces with spaces (not the tokens' bytes back to back): no streaming
  if (tok.kind() == "wordpiece") return decoded;
  tokenizer::StreamDecoder stream(tok);
  std::string streamed;
  for (tokenizer::TokenId id : ids) streamed += stream.push(id);
  streamed += stream.flush();
  NF_FUZZ_CHECK(streamed == decoded, "the stream decoder gives other bytes");
  return decoded;
}

void exercise_tokenizer(const tokenizer::Tokenizer& tok, std::string_view extra, bool exact) {
  const auto run = [&](std::string_view text) {
    std::vector<tokenizer::TokenId> ids;
    if (!expect_nf_error([&] { ids = tok.encode(text); })) return;  // e.g. a character not in the vocabulary
    const std::string decoded = decode_checked(tok, ids);
    NF_FUZZ_CHECK(!exact || decoded == text, "decode(encode(x)) != x: ", decoded.size(), " bytes back for ",
                  text.size());
  };
  for (std::string_view text : kSampleTexts) run(text);
  run(extra);
}

}  // namespace nf::fuzz
