#pragma once
// What a run's data files hold, in a few bytes: the size and a hash of the head and the tail of
// each file, recorded when the run starts (TrainState::data_files). A resume then accepts the same
// content at another path (the data moved, named with --data) and refuses content that differs.
//   hash = XXH3-64 of the last kFingerprintSpan bytes seeded with that of the first (the whole file
//          when smaller; io/tensor_checksums.h), stored as 16 hex digits
#include <cstdint>
#include <string>
#include <vector>

#include "nanoformer/data/data.h"

namespace nf::data {

inline constexpr uint64_t kFingerprintSpan = uint64_t{1} << 20;

struct FileFingerprint {
  std::string path;  // resolved, where the run read it
  uint64_t size = 0;
  uint64_t hash = 0;
  bool same_content(const FileFingerprint& other) const { return size == other.size && hash == other.hash; }
};

// Throws nf::Error naming a file that cannot be read.
FileFingerprint fingerprint_file(const std::string& path);
// "4000 bytes, head and tail hash 0123456789abcdef"
std::string describe_content(const FileFingerprint& fingerprint);

// A data file of a run: its key in the config, the flag that names it, and its path.
struct DataFile {
  std::string key;   // "data.train_paths[0]", "data.val_paths[0]", "data.tokenizer"
  std::string flag;  // "--data", "--val-data", "--tokenizer"
  std::string* path;
};
// The files whose content makes a run's data stream: training files, validation files, tokenizer.
std::vector<DataFile> data_files(DataOptions& options);
std::vector<FileFingerprint> fingerprint_data_files(DataOptions options);

// A resume's data files against the run's: `saved` (the run's, resolved) and `recorded` (their
// fingerprints) against `requested` (resolved). A file at another path with the recorded content
// is the run's file moved: `saved` takes the new path and `recorded` the new place, and `moved`
// gets a line. Returns one line per file whose content differs from the recorded one. Does nothing
// when the run recorded no fingerprints (older checkpoints) or the lists differ in length.
std::vector<std::string> reconcile_data_files(DataOptions& saved, std::vector<FileFingerprint>& recorded,
                                              DataOptions requested, std::vector<std::string>& moved);

}  // namespace nf::data
