#pragma once
// MPI_COMM_WORLD as a Communicator (built only with NF_MPI; world.cpp chooses it under mpirun).
#include <memory>

#include "nanoformer/dist/communicator.h"

namespace nf::dist {

// Initialises MPI (MPI_Init_thread, funneled) and returns its world; MPI_Finalize runs when the
// communicator is destroyed.
std::unique_ptr<Communicator> mpi_world(double timeout_seconds);

}  // namespace nf::dist
