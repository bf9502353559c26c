#pragma once
// Ranks of a data-parallel run inside one test process: FakeRanks(n) gives n communicators, one
// per rank, each to be driven by its own thread. Collectives are matched as MPI matches them: the
// k-th collective a rank starts meets the k-th of every other rank. A match of different kinds or
// element counts is recorded as an error (where MPI says MPI_ERR_TRUNCATE or worse) and completes
// at once, so a test fails instead of hanging; a collective some rank never starts times out after
// the communicator's deadline with an nf::Error. All-reduces sum in rank order.
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "nanoformer/dist/communicator.h"

namespace nf::testing {

class FakeRanks {
 public:
  explicit FakeRanks(int ranks, double timeout_seconds = 60);
  ~FakeRanks();
  dist::Communicator& rank(int r) { return *ranks_.at(static_cast<size_t>(r)); }
  int size() const { return static_cast<int>(ranks_.size()); }
  // The mismatches seen so far, one line each ("collective 3: rank 0 started an all-reduce of 40
  // f32, rank 1 an all-reduce of 12 f32").
  std::vector<std::string> errors() const;
  // Collectives each rank started, in order ("all-reduce 40 f32"), for tests of the order itself.
  std::vector<std::string> started_by(int rank) const;

  struct Posted;
  struct Match;

 private:
  friend class FakeRank;
  // Called by rank r's communicator; returns the match its request waits on.
  std::shared_ptr<Match> post(int r, Posted posted);
  void complete(Match& m, size_t index);

  mutable std::mutex mutex_;
  std::vector<std::unique_ptr<dist::Communicator>> ranks_;
  std::vector<std::vector<std::string>> started_;
  std::vector<std::shared_ptr<Match>> matches_;
  std::vector<std::string> errors_;
};

}  // namespace nf::testing
