#pragma once
// A directory of its own for a test, removed when it goes: made by mkdtemp under the system's
// temporary directory, so tests that run side by side (ctest -j, `make test` beside
// `make test-asan`) never share a path.
#include <stdlib.h>

#include <filesystem>
#include <string>

#include <gtest/gtest.h>

namespace nf::testing {

class TempDir {
 public:
  TempDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "nf_test_XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr) ADD_FAILURE() << "mkdtemp failed for " << pattern;
    path_ = pattern;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::filesystem::path& path() const { return path_; }
  // A path inside the directory.
  std::string file(const std::string& name) const { return (path_ / name).string(); }

 private:
  std::filesystem::path path_;
};

}  // namespace nf::testing
