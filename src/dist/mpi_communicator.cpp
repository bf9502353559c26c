// The MPI communicator: non-blocking collectives on MPI_COMM_WORLD, polled by Communicator::wait.
#include "dist/mpi_communicator.h"

#include <mpi.h>

#include <climits>
#include <cstdio>

#include "nanoformer/core/error.h"

namespace nf::dist {
namespace {

class MpiRequest final : public Request {
 public:
  ~MpiRequest() override {
    // a request dropped unfinished (an exception unwinding) must not leave MPI writing into freed memory
    if (request_ != MPI_REQUEST_NULL) MPI_Wait(&request_, MPI_STATUS_IGNORE);
  }
  bool test() override {
    if (request_ == MPI_REQUEST_NULL) return true;
    int done = 0;
    MPI_Test(&request_, &done, MPI_STATUS_IGNORE);
    return done != 0;
  }
  MPI_Request* get() { return &request_; }

 private:
  MPI_Request request_ = MPI_REQUEST_NULL;
};

int as_int(int64_t n, const char* what) {
  NF_CHECK(n >= 0 && n <= INT_MAX, "MPI ", what, ": ", n, " elements do not fit one MPI count (at most ", INT_MAX, ")");
  return static_cast<int>(n);
}

std::vector<int> as_ints(const std::vector<int64_t>& values, const char* what) {
  std::vector<int> out;
  for (int64_t v : values) out.push_back(as_int(v, what));
  return out;
}

class MpiWorld final : public Communicator {
 public:
  explicit MpiWorld(double timeout_seconds) : Communicator(timeout_seconds) {
    int provided = 0;
    MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &size_);
  }
  ~MpiWorld() override { MPI_Finalize(); }

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string describe() const override {
    char version[MPI_MAX_LIBRARY_VERSION_STRING];
    int length = 0;
    MPI_Get_library_version(version, &length);
    std::string name(version, static_cast<size_t>(length));
    name = name.substr(0, name.find(','));
    return "MPI (" + name + "), " + std::to_string(size_) + " ranks";
  }

  std::unique_ptr<Request> start_allreduce_sum(float* data, int64_t n) override { return allreduce(data, n, MPI_FLOAT); }
  std::unique_ptr<Request> start_allreduce_sum(double* data, int64_t n) override {
    return allreduce(data, n, MPI_DOUBLE);
  }
  std::unique_ptr<Request> start_allgather(float* data, const std::vector<int64_t>& counts,
                                           const std::vector<int64_t>& displs) override {
    counts_ = as_ints(counts, "all-gather");
    displs_ = as_ints(displs, "all-gather");
    auto r = std::make_unique<MpiRequest>();
    MPI_Iallgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, data, counts_.data(), displs_.data(), MPI_FLOAT,
                    MPI_COMM_WORLD, r->get());
    return r;
  }
  std::unique_ptr<Request> start_gather_to_root(float* data, const std::vector<int64_t>& counts,
                                                const std::vector<int64_t>& displs) override {
    counts_ = as_ints(counts, "gather");
    displs_ = as_ints(displs, "gather");
    auto r = std::make_unique<MpiRequest>();
    const auto self = static_cast<size_t>(rank_);
    if (rank_ == 0)
      MPI_Igatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, data, counts_.data(), displs_.data(), MPI_FLOAT, 0,
                   MPI_COMM_WORLD, r->get());
    else
      MPI_Igatherv(data + displs[self], counts_[self], MPI_FLOAT, nullptr, nullptr, nullptr, MPI_FLOAT, 0,
                   MPI_COMM_WORLD, r->get());
    return r;
  }
  [[noreturn]] void abort(const std::string& message) override {
    std::fprintf(stderr, "nanoformer: rank %d: %s\n", rank_, message.c_str());
    std::fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, 1);
    std::abort();
  }

 private:
  std::unique_ptr<Request> allreduce(void* data, int64_t n, MPI_Datatype type) {
    auto r = std::make_unique<MpiRequest>();
    MPI_Iallreduce(MPI_IN_PLACE, data, as_int(n, "all-reduce"), type, MPI_SUM, MPI_COMM_WORLD, r->get());
    return r;
  }

  int rank_ = 0, size_ = 1;
  // the count arrays of the latest v-collective, alive until it completes (one in flight at a time)
  std::vector<int> counts_, displs_;
};

}  // namespace

std::unique_ptr<Communicator> mpi_world(double timeout_seconds) { return std::make_unique<MpiWorld>(timeout_seconds); }

}  // namespace nf::dist
