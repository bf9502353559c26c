// apps/nanoformer/openmp_defaults.cpp: a program that calls reexec_with_openmp_defaults first runs
// with GOMP_SPINCOUNT=10000 unless its environment sets GOMP_SPINCOUNT or OMP_WAIT_POLICY. Each
// case starts this binary's Probe case (which calls it, as the CLI's main does) under a controlled
// environment and reads what the probe saw.
#include <gtest/gtest.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "../apps/nanoformer/openmp_defaults.h"

namespace {

std::string self_path() {
  std::array<char, 4096> self{};
  const ssize_t n = ::readlink("/proc/self/exe", self.data(), self.size() - 1);
  return n > 0 ? std::string(self.data(), static_cast<size_t>(n)) : std::string();
}

// What the probe saw of GOMP_SPINCOUNT and its pid when started with `env` (env -i: nothing else inherited).
std::string spin_count_seen_with(const std::string& env) {
  const std::string cmd = "env -i NF_OPENMP_PROBE=1 " + env + " '" + self_path() + "' --gtest_filter=OpenMPDefaults.Probe 2>&1";
  FILE* pipe = ::popen(cmd.c_str(), "r");
  if (pipe == nullptr) return "popen failed";
  std::string out;
  for (int c; (c = std::fgetc(pipe)) != EOF;) out.push_back(static_cast<char>(c));
  ::pclose(pipe);
  const std::string marker = "GOMP_SPINCOUNT=[";
  const size_t at = out.find(marker);
  if (at == std::string::npos) return "no probe output: " + out;
  return out.substr(at + marker.size(), out.find(']', at) - at - marker.size());
}

TEST(OpenMPDefaults, Probe) {
  if (std::getenv("NF_OPENMP_PROBE") == nullptr) GTEST_SKIP() << "run by the other cases";
  std::ifstream cmdline("/proc/self/cmdline", std::ios::binary);
  const std::string raw((std::istreambuf_iterator<char>(cmdline)), std::istreambuf_iterator<char>());
  std::vector<std::string> args;
  for (size_t at = 0; at < raw.size(); at = raw.find('\0', at) + 1) args.emplace_back(raw.c_str() + at);
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  nf::cli::reexec_with_openmp_defaults(argv.data());
  const char* value = std::getenv("GOMP_SPINCOUNT");
  std::printf("GOMP_SPINCOUNT=[%s]\n", value ? value : "unset");
}

TEST(OpenMPDefaults, SpinCountIs10000UnlessTheEnvironmentSaysOtherwise) {
  EXPECT_EQ(spin_count_seen_with(""), "10000");
  EXPECT_EQ(spin_count_seen_with("GOMP_SPINCOUNT=300000"), "300000");
  EXPECT_EQ(spin_count_seen_with("OMP_WAIT_POLICY=active"), "unset");
}

}  // namespace
