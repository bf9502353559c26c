// Replays a corpus through a fuzz target without libFuzzer, so that `make test` runs every
// committed regression input with the compiler and flags of the build (no clang needed):
//   fuzz_replay <target> <file or directory>...
// Each input runs once through the target's LLVMFuzzerTestOneInput (renamed nf_fuzz_<target> in
// this build: fuzz/CMakeLists.txt links every target into this one program). A finding fails the run: an exception other
// than nf::Error escaping the target (named with its type), an NF_FUZZ_CHECK or sanitizer abort
// (the last "replay:" line names the input), an input taking over 10 s, or an allocation over
// 2 GiB (libFuzzer's -malloc_limit_mb=2048; checked in operator new here, by ASan's
// max_allocation_size_mb in sanitizer builds).
#include <cxxabi.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <fstream>
#include <new>
#include <string>
#include <typeinfo>
#include <vector>

#include <cstring>

#include "fuzz_replay_targets.h"

namespace {

constexpr double kMaxSeconds = 10;
constexpr size_t kMaxAllocation = size_t{2} << 30;

std::string type_name(const std::type_info& type) {
  int status = 0;
  char* name = abi::__cxa_demangle(type.name(), nullptr, nullptr, &status);
  std::string out = status == 0 && name ? name : type.name();
  std::free(name);
  return out;
}

std::vector<std::string> inputs(int argc, char** argv) {
  namespace fs = std::filesystem;
  std::vector<std::string> out;
  for (int i = 2; i < argc; ++i) {
    if (fs::is_directory(argv[i])) {
      std::vector<std::string> files;
      for (const auto& e : fs::recursive_directory_iterator(argv[i]))
        if (e.is_regular_file()) files.push_back(e.path().string());
      std::sort(files.begin(), files.end());
      out.insert(out.end(), files.begin(), files.end());
    } else {
      out.emplace_back(argv[i]);
    }
  }
  return out;
}

}  // namespace

#if defined(__SANITIZE_ADDRESS__)
#define NF_REPLAY_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define NF_REPLAY_ASAN 1
#endif
#endif

#ifdef NF_REPLAY_ASAN
extern "C" const char* __asan_default_options() { return "max_allocation_size_mb=2048:allocator_may_return_null=0"; }
#else
// The 2 GiB allocation limit. (Aligned new keeps the library's own pair of new and delete.)
void* operator new(std::size_t n) {
  if (n > kMaxAllocation) {
    std::fprintf(stderr, "replay: FINDING: an allocation of %zu bytes, over the 2 GiB limit\n", n);
    std::abort();
  }
  if (void* p = std::malloc(n ? n : 1)) return p;
  throw std::bad_alloc();
}
void* operator new[](std::size_t n) { return ::operator new(n); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
#endif

int main(int argc, char** argv) {
  const FuzzTarget* target = nullptr;
  for (const FuzzTarget& t : kFuzzTargets)
    if (argc > 1 && std::strcmp(argv[1], t.name) == 0) target = &t;
  const std::vector<std::string> files = inputs(argc, argv);
  if (target == nullptr || files.empty()) {
    std::string names;
    for (const FuzzTarget& t : kFuzzTargets) names += std::string(names.empty() ? "" : ", ") + t.name;
    std::fprintf(stderr, "usage: %s <target> <corpus file or directory>... (targets: %s)%s\n", argv[0], names.c_str(),
                 target == nullptr ? "" : " (no inputs found)");
    return 2;
  }
  int findings = 0;
  for (const std::string& path : files) {
    std::ifstream in(path, std::ios::binary);
    const std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::printf("replay: %s (%zu bytes)\n", path.c_str(), bytes.size());
    std::fflush(stdout);
    const auto start = std::chrono::steady_clock::now();
    try {
      target->test_one_input(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
    } catch (const std::exception& e) {
      std::printf("replay: FINDING: %s escaped: %s\n", type_name(typeid(e)).c_str(), e.what());
      ++findings;
    } catch (...) {
      std::printf("replay: FINDING: an exception of an unknown type escaped\n");
      ++findings;
    }
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (seconds > kMaxSeconds) {
      std::printf("replay: FINDING: took %.1f s (limit %.0f s)\n", seconds, kMaxSeconds);
      ++findings;
    }
  }
  std::printf("replay: %zu inputs, %d findings\n", files.size(), findings);
  return findings ? 1 : 0;
}
