// Data file fingerprints (size, hash of the first and last MiB) and how a resume matches a run's
// recorded data files against those it is given: moved files found by their content, other
// content refused, checkpoints of older runs (no fingerprints) left to the path comparison.
#include "nanoformer/data/data_fingerprint.h"
#include "nanoformer/io/tensor_checksums.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "support/testing.h"
#include "tokenizer/fixtures.h"

namespace nf::data {
namespace {

using tokenizer::testing::temp_path;

void write(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

TEST(DataFingerprint, SizeAndHeadAndTailTellContentsApart) {
  std::string bytes(3 * kFingerprintSpan, '\0');
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<char>(i * 2654435761u >> 13);
  const std::string path = temp_path("fingerprint.bin");
  write(path, bytes);
  const FileFingerprint original = fingerprint_file(path);
  EXPECT_EQ(original.size, bytes.size());
  EXPECT_EQ(describe_content(original), std::to_string(bytes.size()) + " bytes, head and tail hash " +
                                            io::checksum_hex(original.hash));
  EXPECT_EQ(io::checksum_from_hex(io::checksum_hex(original.hash), "hash"), original.hash);
  auto changed_at = [&](size_t i) {
    std::string other = bytes;
    other[i] = static_cast<char>(other[i] ^ 1);
    write(path, other);
    return !fingerprint_file(path).same_content(original);
  };
  EXPECT_TRUE(changed_at(0));
  EXPECT_TRUE(changed_at(kFingerprintSpan - 1));
  EXPECT_TRUE(changed_at(bytes.size() - kFingerprintSpan));
  EXPECT_TRUE(changed_at(bytes.size() - 1));
  EXPECT_FALSE(changed_at(bytes.size() / 2));  // the middle is not read: the cost stays two MiB a file
  write(path, bytes + "x");
  EXPECT_FALSE(fingerprint_file(path).same_content(original));
  EXPECT_THROW_WITH(fingerprint_file(temp_path("absent.bin")), "absent.bin", "cannot open");
  EXPECT_THROW_WITH(io::checksum_from_hex("12z", "hash"), "'12z' is not 16 hex digits");
  std::filesystem::remove(path);
}

TEST(DataFingerprint, ReconcileAcceptsMovedFilesAndRefusesOtherContent) {
  const std::string a = temp_path("run_a.txt"), moved = temp_path("run_moved.txt"), other = temp_path("run_other.txt");
  write(a, "the run's data\n");
  DataOptions run;
  run.train_paths = {a};
  std::vector<FileFingerprint> recorded = fingerprint_data_files(run);
  ASSERT_EQ(recorded.size(), 1u);
  EXPECT_EQ(recorded[0].path, a);

  std::filesystem::rename(a, moved);
  DataOptions requested = run;
  requested.train_paths = {moved};
  DataOptions saved = run;
  std::vector<std::string> notes;
  EXPECT_TRUE(reconcile_data_files(saved, recorded, requested, notes).empty());
  EXPECT_EQ(saved.train_paths, requested.train_paths);
  EXPECT_EQ(recorded[0].path, moved);
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_EQ(notes[0].rfind("data.train_paths[0]: " + a + " moved to " + moved + " (the same 15 bytes", 0), 0u)
      << notes[0];

  write(other, "other data, too\n");
  requested.train_paths = {other};
  saved = run;
  saved.train_paths = {moved};
  const auto differ = reconcile_data_files(saved, recorded, requested, notes);
  ASSERT_EQ(differ.size(), 1u);
  EXPECT_NE(differ[0].find(other + " is not the content of " + moved + " (the run's): 16 bytes"), std::string::npos)
      << differ[0];

  // A run that recorded nothing (an older checkpoint): the paths are left to resume_conflicts.
  std::vector<FileFingerprint> none;
  saved = run;
  EXPECT_TRUE(reconcile_data_files(saved, none, requested, notes).empty());
  EXPECT_EQ(saved.train_paths, run.train_paths);
  std::filesystem::remove(moved);
  std::filesystem::remove(other);
}

}  // namespace
}  // namespace nf::data
