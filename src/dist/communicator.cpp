// Communicator: waiting with a deadline, and the single-process communicator.
#include "nanoformer/dist/communicator.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>

namespace nf::dist {
namespace {

class Done final : public Request {
 public:
  bool test() override { return true; }
};

class SingleProcess final : public Communicator {
 public:
  SingleProcess() : Communicator(0) {}
  int rank() const override { return 0; }
  int size() const override { return 1; }
  std::string describe() const override { return "one process"; }
  std::unique_ptr<Request> start_allreduce_sum(float*, int64_t) override { return std::make_unique<Done>(); }
  std::unique_ptr<Request> start_allreduce_sum(double*, int64_t) override { return std::make_unique<Done>(); }
  std::unique_ptr<Request> start_allgather(float*, const std::vector<int64_t>&, const std::vector<int64_t>&) override {
    return std::make_unique<Done>();
  }
  std::unique_ptr<Request> start_gather_to_root(float*, const std::vector<int64_t>&,
                                                const std::vector<int64_t>&) override {
    return std::make_unique<Done>();
  }
  [[noreturn]] void abort(const std::string& message) override {
    std::fprintf(stderr, "nanoformer: %s\n", message.c_str());
    std::exit(1);
  }
};

}  // namespace

void Communicator::wait(Request& request, const std::string& what) {
  if (request.test()) return;
  const auto start = std::chrono::steady_clock::now();
  const auto deadline = start + std::chrono::duration<double>(timeout_seconds_);
  while (!request.test()) {
    if (std::chrono::steady_clock::now() > deadline) {
      char seconds[32];
      std::snprintf(seconds, sizeof seconds, "%g", timeout_seconds_);
      abort(what + " did not complete within " + seconds + " s (--dist-timeout): another rank died or hangs; ending the job");
    }
    std::this_thread::yield();
  }
}

void Communicator::allreduce_sum(double* data, int64_t n, const std::string& what) {
  auto request = start_allreduce_sum(data, n);
  wait(*request, what);
}

void Communicator::allreduce_sum(float* data, int64_t n, const std::string& what) {
  auto request = start_allreduce_sum(data, n);
  wait(*request, what);
}

std::unique_ptr<Communicator> single_process() { return std::make_unique<SingleProcess>(); }

}  // namespace nf::dist
