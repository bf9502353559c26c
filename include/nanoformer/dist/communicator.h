#pragma once
// The ranks of a data-parallel run and the collectives they run together (docs/scaling.md).
// A Communicator is the one process of an ordinary run (single_process(): every collective is
// the identity) or, in an MPI build started by mpirun, MPI_COMM_WORLD (world()). Collectives are
// started non-blocking and finished with wait(), which polls them against a deadline: a rank that
// died or hangs ends the whole job with a message naming this rank and the collective, never a
// hang (MPI_Abort).
//   allreduce_sum  x = sum over ranks of x, in place
//   allgather      rank r contributes x[displs[r], displs[r] + counts[r]); every rank gets all parts
//   gather_to_root as allgather, but only rank 0 receives
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace nf::dist {

// A collective in flight.
class Request {
 public:
  virtual ~Request() = default;
  // True once it completed (drives MPI's progress; never blocks).
  virtual bool test() = 0;
};

class Communicator {
 public:
  explicit Communicator(double timeout_seconds) : timeout_seconds_(timeout_seconds) {}
  virtual ~Communicator() = default;
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;

  virtual int rank() const = 0;
  virtual int size() const = 0;
  // "MPI (Open MPI v4.1.4), 2 ranks" or "one process".
  virtual std::string describe() const = 0;

  virtual std::unique_ptr<Request> start_allreduce_sum(float* data, int64_t n) = 0;
  virtual std::unique_ptr<Request> start_allreduce_sum(double* data, int64_t n) = 0;
  // counts and displs have size() entries (elements); every rank's part must fit an int.
  virtual std::unique_ptr<Request> start_allgather(float* data, const std::vector<int64_t>& counts,
                                                   const std::vector<int64_t>& displs) = 0;
  virtual std::unique_ptr<Request> start_gather_to_root(float* data, const std::vector<int64_t>& counts,
                                                        const std::vector<int64_t>& displs) = 0;
  // Ends every rank of the job, after printing "nanoformer: rank R: message" to stderr.
  [[noreturn]] virtual void abort(const std::string& message) = 0;

  // Polls `request` until it completes; past timeout_seconds(), abort()s naming `what`.
  void wait(Request& request, const std::string& what);
  // Blocking forms: start, then wait.
  void allreduce_sum(double* data, int64_t n, const std::string& what);
  void allreduce_sum(float* data, int64_t n, const std::string& what);

  double timeout_seconds() const { return timeout_seconds_; }

 private:
  double timeout_seconds_;
};

// The communicator of a run in one process.
std::unique_ptr<Communicator> single_process();
// True when this build has MPI (CMake option NF_MPI).
bool mpi_built();
// The job this process belongs to: MPI's world when built with MPI and started by mpirun
// (OMPI_COMM_WORLD_SIZE or PMIX_RANK in the environment), else one process. MPI is initialised on
// the first call and finalised at exit; later calls return the same communicator.
Communicator& world(double timeout_seconds = 300);

}  // namespace nf::dist
