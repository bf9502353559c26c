// world(): MPI's world under mpirun in an MPI build, else the one process.
#include <cstdlib>

#include "nanoformer/dist/communicator.h"
#ifdef NF_HAVE_MPI
#include "dist/mpi_communicator.h"
#endif

namespace nf::dist {

bool mpi_built() {
#ifdef NF_HAVE_MPI
  return true;
#else
  return false;
#endif
}

Communicator& world(double timeout_seconds) {
  static const std::unique_ptr<Communicator> instance = [&]() -> std::unique_ptr<Communicator> {
#ifdef NF_HAVE_MPI
    if (std::getenv("OMPI_COMM_WORLD_SIZE") || std::getenv("PMIX_RANK")) return mpi_world(timeout_seconds);
#endif
    return single_process();
  }();
  return *instance;
}

}  // namespace nf::dist
