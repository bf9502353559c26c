#pragma once
// OpenMP's wait on a shared machine (openmp_defaults.cpp).

namespace nf::cli {

// Runs this program again (same pid, argv and environment) with GOMP_SPINCOUNT=10000 when neither
// GOMP_SPINCOUNT nor OMP_WAIT_POLICY is set; returns when either is set or the exec fails (libgomp's
// defaults then stay). The first thing main does.
void reexec_with_openmp_defaults(char** argv);

}  // namespace nf::cli
