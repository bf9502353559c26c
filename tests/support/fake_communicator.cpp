// FakeRanks: collectives matched by start order across threads of one process.
#include "support/fake_communicator.h"

#include <algorithm>
#include <cstring>
#include <optional>

#include "nanoformer/core/error.h"

namespace nf::testing {

enum class Kind { allreduce_f32, allreduce_f64, allgather, gather_to_root };

struct FakeRanks::Posted {
  Kind kind = Kind::allreduce_f32;
  void* data = nullptr;
  int64_t n = 0;  // elements (all-reduce); the whole buffer (gathers)
  std::vector<int64_t> counts, displs;
  std::string describe() const {
    switch (kind) {
      case Kind::allreduce_f32: return "all-reduce " + std::to_string(n) + " f32";
      case Kind::allreduce_f64: return "all-reduce " + std::to_string(n) + " f64";
      case Kind::allgather: return "all-gather " + std::to_string(n) + " f32";
      case Kind::gather_to_root: return "gather " + std::to_string(n) + " f32";
    }
    return "?";
  }
};

struct FakeRanks::Match {
  std::vector<std::optional<Posted>> posted;  // by rank
  bool done = false;
};

namespace {

int64_t total(const std::vector<int64_t>& counts, const std::vector<int64_t>& displs) {
  int64_t n = 0;
  for (size_t r = 0; r < counts.size(); ++r) n = std::max(n, displs[r] + counts[r]);
  return n;
}

}  // namespace

class FakeRank final : public dist::Communicator {
 public:
  FakeRank(FakeRanks& group, int rank, double timeout) : Communicator(timeout), group_(group), rank_(rank) {}
  int rank() const override { return rank_; }
  int size() const override { return group_.size(); }
  std::string describe() const override { return "fake, " + std::to_string(group_.size()) + " ranks"; }

  std::unique_ptr<dist::Request> start_allreduce_sum(float* data, int64_t n) override {
    return post({Kind::allreduce_f32, data, n, {}, {}});
  }
  std::unique_ptr<dist::Request> start_allreduce_sum(double* data, int64_t n) override {
    return post({Kind::allreduce_f64, data, n, {}, {}});
  }
  std::unique_ptr<dist::Request> start_allgather(float* data, const std::vector<int64_t>& counts,
                                                 const std::vector<int64_t>& displs) override {
    return post({Kind::allgather, data, total(counts, displs), counts, displs});
  }
  std::unique_ptr<dist::Request> start_gather_to_root(float* data, const std::vector<int64_t>& counts,
                                                      const std::vector<int64_t>& displs) override {
    return post({Kind::gather_to_root, data, total(counts, displs), counts, displs});
  }
  [[noreturn]] void abort(const std::string& message) override {
    throw Error("rank " + std::to_string(rank_) + ": " + message);
  }

 private:
  class FakeRequest final : public dist::Request {
   public:
    FakeRequest(FakeRanks& group, std::shared_ptr<FakeRanks::Match> match) : group_(group), match_(std::move(match)) {}
    bool test() override {
      std::lock_guard<std::mutex> lock(group_.mutex_);
      return match_->done;
    }

   private:
    FakeRanks& group_;
    std::shared_ptr<FakeRanks::Match> match_;
  };
  std::unique_ptr<dist::Request> post(FakeRanks::Posted posted) {
    return std::make_unique<FakeRequest>(group_, group_.post(rank_, std::move(posted)));
  }

  FakeRanks& group_;
  int rank_;
};

FakeRanks::FakeRanks(int ranks, double timeout_seconds) {
  for (int r = 0; r < ranks; ++r) ranks_.push_back(std::make_unique<FakeRank>(*this, r, timeout_seconds));
  started_.resize(static_cast<size_t>(ranks));
}

FakeRanks::~FakeRanks() = default;

std::vector<std::string> FakeRanks::errors() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return errors_;
}

std::vector<std::string> FakeRanks::started_by(int rank) const {
  std::lock_guard<std::mutex> lock(mutex_);
  return started_.at(static_cast<size_t>(rank));
}

std::shared_ptr<FakeRanks::Match> FakeRanks::post(int r, Posted posted) {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<std::string>& mine = started_[static_cast<size_t>(r)];
  const size_t k = mine.size();
  mine.push_back(posted.describe());
  if (matches_.size() <= k) {
    matches_.resize(k + 1);
  }
  if (!matches_[k]) {
    matches_[k] = std::make_shared<Match>();
    matches_[k]->posted.resize(ranks_.size());
  }
  Match& m = *matches_[k];
  m.posted[static_cast<size_t>(r)] = std::move(posted);
  if (std::all_of(m.posted.begin(), m.posted.end(), [](const auto& p) { return p.has_value(); })) complete(m, k);
  return matches_[k];
}

// Every rank has posted: check they agree, then compute the collective into their buffers.
void FakeRanks::complete(Match& m, size_t index) {
  m.done = true;
  const Posted& first = *m.posted[0];
  for (size_t r = 1; r < m.posted.size(); ++r) {
    const Posted& other = *m.posted[r];
    if (other.kind != first.kind || other.n != first.n || other.counts != first.counts) {
      errors_.push_back("collective " + std::to_string(index) + ": rank 0 started " +
                        first.describe() + ", rank " + std::to_string(r) + " " + other.describe());
      return;
    }
  }
  const size_t n = static_cast<size_t>(first.n);
  switch (first.kind) {
    case Kind::allreduce_f32: {
      std::vector<float> sum(n, 0.0f);
      for (const auto& p : m.posted)
        for (size_t i = 0; i < n; ++i) sum[i] += static_cast<const float*>(p->data)[i];
      for (const auto& p : m.posted) std::memcpy(p->data, sum.data(), n * sizeof(float));
      break;
    }
    case Kind::allreduce_f64: {
      std::vector<double> sum(n, 0.0);
      for (const auto& p : m.posted)
        for (size_t i = 0; i < n; ++i) sum[i] += static_cast<const double*>(p->data)[i];
      for (const auto& p : m.posted) std::memcpy(p->data, sum.data(), n * sizeof(double));
      break;
    }
    case Kind::allgather:
    case Kind::gather_to_root: {
      for (size_t to = 0; to < m.posted.size(); ++to) {
        if (first.kind == Kind::gather_to_root && to != 0) continue;
        for (size_t from = 0; from < m.posted.size(); ++from) {
          if (from == to) continue;
          const auto at = static_cast<size_t>(first.displs[from]), count = static_cast<size_t>(first.counts[from]);
          std::memcpy(static_cast<float*>(m.posted[to]->data) + at, static_cast<const float*>(m.posted[from]->data) + at,
                      count * sizeof(float));
        }
      }
      break;
    }
  }
}

}  // namespace nf::testing
