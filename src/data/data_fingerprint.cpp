// Data file fingerprints (size + head and tail hash) and how a resume matches moved files.
#include "nanoformer/data/data_fingerprint.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>

#include "nanoformer/core/error.h"
#include "nanoformer/io/tensor_checksums.h"

namespace nf::data {
FileFingerprint fingerprint_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  NF_CHECK(in, path, ": cannot open data file: ", std::strerror(errno));
  FileFingerprint f{path, static_cast<uint64_t>(in.tellg()), 0};
  std::vector<char> buffer(static_cast<size_t>(std::min(f.size, kFingerprintSpan)));
  auto hash_at = [&](uint64_t offset) {
    in.seekg(static_cast<std::streamoff>(offset));
    in.read(buffer.data(), static_cast<std::streamsize>(buffer.size()));
    NF_CHECK(in, path, ": cannot read data file: ", std::strerror(errno));
    f.hash = io::bytes_checksum(buffer.data(), buffer.size(), f.hash);
  };
  hash_at(0);
  if (f.size > kFingerprintSpan) hash_at(f.size - kFingerprintSpan);
  return f;
}

std::string describe_content(const FileFingerprint& f) {
  return std::to_string(f.size) + " bytes, head and tail hash " + io::checksum_hex(f.hash);
}

std::vector<DataFile> data_files(DataOptions& o) {
  std::vector<DataFile> files;
  for (size_t i = 0; i < o.train_paths.size(); ++i)
    files.push_back({"data.train_paths[" + std::to_string(i) + "]", "--data", &o.train_paths[i]});
  for (size_t i = 0; i < o.val_paths.size(); ++i)
    files.push_back({"data.val_paths[" + std::to_string(i) + "]", "--val-data", &o.val_paths[i]});
  if (!o.tokenizer.empty()) files.push_back({"data.tokenizer", "--tokenizer", &o.tokenizer});
  return files;
}

std::vector<FileFingerprint> fingerprint_data_files(DataOptions options) {
  std::vector<FileFingerprint> out;
  for (const DataFile& file : data_files(options)) out.push_back(fingerprint_file(*file.path));
  return out;
}

std::vector<std::string> reconcile_data_files(DataOptions& saved, std::vector<FileFingerprint>& recorded,
                                              DataOptions requested, std::vector<std::string>& moved) {
  const std::vector<DataFile> ours = data_files(saved), theirs = data_files(requested);
  if (recorded.empty() || recorded.size() != ours.size() || ours.size() != theirs.size()) return {};
  std::vector<std::string> differ;
  for (size_t i = 0; i < ours.size(); ++i) {
    const std::string& path = *theirs[i].path;
    std::ifstream probe(path);
    NF_CHECK(probe, "train --resume: ", path, " (", ours[i].key, ", recorded when the run started) cannot be read: ",
             std::strerror(errno), "; if it moved, name its new place with ", ours[i].flag);
    const FileFingerprint now = fingerprint_file(path);
    if (!now.same_content(recorded[i])) {
      differ.push_back(ours[i].key + ": " + path +
                       (path == *ours[i].path ? " changed since the run started"
                                              : " is not the content of " + *ours[i].path + " (the run's)") +
                       ": " + describe_content(now) + ", recorded " + describe_content(recorded[i]));
    } else if (path != *ours[i].path) {
      moved.push_back(ours[i].key + ": " + *ours[i].path + " moved to " + path + " (the same " +
                      describe_content(now) + ")");
      recorded[i].path = path;
    }
    *ours[i].path = path;  // compared here: resume_conflicts need not name the path again
  }
  return differ;
}

}  // namespace nf::data
