// Thread count and the BLAS library the engine loaded.
#include <strings.h>

#include <cstdlib>

#include "support/testing.h"

namespace nf {
namespace {

TEST(Parallel, ThreadCountComesFromEnvironmentAndSetter) {
  // ctest runs every test with NANOFORMER_THREADS=2 (CMakeLists.txt)
  if (const char* env = std::getenv("NANOFORMER_THREADS")) {
    EXPECT_EQ(num_threads(), std::atoi(env));
  }
  set_num_threads(1);
  EXPECT_EQ(num_threads(), 1);
  set_num_threads(0);  // clamped
  EXPECT_EQ(num_threads(), 1);
  set_num_threads(2);
  EXPECT_EQ(num_threads(), 2);
}

TEST(Parallel, ResultsDoNotDependOnThreadCount) {
  Generator gen(3);
  Tensor x = randn({300, 700}, gen);
  set_num_threads(1);
  const std::vector<float> one = (x * 3.0 + 1.0).to_vector<float>();
  set_num_threads(2);
  EXPECT_EQ((x * 3.0 + 1.0).to_vector<float>(), one);
}

TEST(Parallel, OpenBlasRunsTheCoreTypeInTheEnvironment) {
  const std::string info = blas_info();
  if (info.find("core=") == std::string::npos) GTEST_SKIP() << "not OpenBLAS: " << info;
  // Loading the library set OPENBLAS_CORETYPE from the CPU's features unless the user had set it;
  // either way OpenBLAS must be running that core, not its fallback.
  const char* core = std::getenv("OPENBLAS_CORETYPE");
  ASSERT_NE(core, nullptr) << info;
  const std::string in_use = info.substr(info.find("core=") + 5, std::string(core).size());
  EXPECT_EQ(strcasecmp(in_use.c_str(), core), 0) << info;
}

}  // namespace
}  // namespace nf
