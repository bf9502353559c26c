// libgomp's default wait spins up to 300,000 times at each hand-off before the thread sleeps; at a
// decode step's ~130 hand-offs, a thread spinning while its partner waits for a core took 2-thread
// decode of minimind2-small Q8_0 from 190 tokens/s to 3 beside a 2-job build on 2 cores. With
// GOMP_SPINCOUNT=10000 an idle machine decodes and trains as fast as before (minimind2-small fp32
// training: 0.99-1.03x). libgomp reads its environment in its constructor, before main: setting
// the variable later changes nothing, and setting it earlier (.preinit_array) is undone by libc's
// own initialisation, which installs the environment after it. So the program runs itself again.
#include "openmp_defaults.h"

#include <unistd.h>

#include <cstdlib>

namespace nf::cli {

void reexec_with_openmp_defaults(char** argv) {
  if (std::getenv("GOMP_SPINCOUNT") != nullptr || std::getenv("OMP_WAIT_POLICY") != nullptr) return;
  if (::setenv("GOMP_SPINCOUNT", "10000", 0) != 0) return;
  ::execv("/proc/self/exe", argv);  // returns only on failure: go on with libgomp's defaults
}

}  // namespace nf::cli
