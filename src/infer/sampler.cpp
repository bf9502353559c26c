// Logits processors, greedy choice and seeded sampling (infer/sampler.h).
#include "nanoformer/infer/sampler.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "nanoformer/autograd/grad_mode.h"
#include "nanoformer/core/error.h"
#include "nanoformer/ops/softmax.h"

namespace nf::infer {
namespace {

constexpr float kRemoved = -std::numeric_limits<float>::infinity();

// softmax(x) by the softmax op (its vectorised exp: a row of 50,257 logits in 0.03 ms where a
// scalar std::exp took 0.23); a removed token (-inf) gives exactly 0.
std::vector<float> probabilities(std::span<const float> logits) {
  NF_CHECK(!logits.empty(), "sampler: empty row of logits");
  NoGradGuard no_grad;
  Tensor row = Tensor::empty({static_cast<int64_t>(logits.size())});
  std::copy(logits.begin(), logits.end(), row.data<float>());
  const Tensor p = softmax(row, 0);  // p_i = e^(x_i - max) / sum_j e^(x_j - max)
  std::vector<float> out(p.data<float>(), p.data<float>() + logits.size());
  if (std::isnan(out[0])) {  // the largest logit is not finite (every p is NaN then): found only here, off the hot path
    const float max = *std::max_element(logits.begin(), logits.end());
    NF_CHECK(std::isfinite(max), "sampler: no token has a finite logit (the largest is ", max, ")");
    NF_CHECK(false, "sampler: a logit is NaN");
  }
  for (size_t i = 0; i < logits.size(); ++i)
    if (logits[i] == kRemoved) out[i] = 0.0f;  // never drawn, whatever e^-inf rounds to
  return out;
}

// A key whose ascending order is the order of decreasing likelihood, equal logits by decreasing
// id (HF's ascending stable sort, reversed): the f32's bits made monotone, then the id.
uint64_t likelihood_key(float logit, size_t id) {
  uint32_t bits;
  std::memcpy(&bits, &logit, sizeof bits);
  const uint32_t monotone = (bits & 0x80000000u) ? ~bits : bits | 0x80000000u;  // increasing with the float
  return (static_cast<uint64_t>(~monotone) << 32) | (0xFFFFFFFFu - static_cast<uint32_t>(id));
}
size_t id_of(uint64_t key) { return 0xFFFFFFFFu - static_cast<uint32_t>(key); }

}  // namespace

void SamplerConfig::validate() const {
  NF_CHECK(temperature >= 0 && std::isfinite(temperature), "--temperature ", temperature,
           ": the temperature must be >= 0 (0 = greedy)");
  NF_CHECK(top_k >= 0, "--top-k ", top_k, ": top_k must be >= 0 (0 = no top-k)");
  NF_CHECK(top_p > 0 && top_p <= 1, "--top-p ", top_p, ": top_p must be in (0, 1] (1 = no top-p)");
  NF_CHECK(min_p >= 0 && min_p <= 1, "--min-p ", min_p, ": min_p must be in [0, 1] (0 = no min-p)");
  NF_CHECK(repetition_penalty > 0 && std::isfinite(repetition_penalty), "--repetition-penalty ",
           repetition_penalty, ": the repetition penalty must be > 0 (1 = none)");
  NF_CHECK(std::abs(frequency_penalty) <= 2, "--frequency-penalty ", frequency_penalty,
           ": the frequency penalty must be in [-2, 2] (0 = none)");
  NF_CHECK(std::abs(presence_penalty) <= 2, "--presence-penalty ", presence_penalty,
           ": the presence penalty must be in [-2, 2] (0 = none)");
  NF_CHECK(vocab_limit >= 0, "sampler: vocab_limit ", vocab_limit, " must be >= 0 (0 = every id)");
}

void apply_vocab_limit(std::span<float> logits, int64_t vocab_limit) {
  if (vocab_limit <= 0) return;
  for (size_t i = static_cast<size_t>(vocab_limit); i < logits.size(); ++i) logits[i] = kRemoved;  // never drawn
}

void apply_repetition_penalty(std::span<float> logits, std::span<const int64_t> tokens, double penalty) {
  if (penalty == 1.0) return;
  const auto vocab = static_cast<int64_t>(logits.size());
  std::vector<int64_t> distinct(tokens.begin(), tokens.end());
  std::sort(distinct.begin(), distinct.end());
  distinct.erase(std::unique(distinct.begin(), distinct.end()), distinct.end());
  const auto f = static_cast<float>(penalty);
  for (int64_t t : distinct) {
    NF_CHECK(t >= 0 && t < vocab, "repetition penalty: token id ", t, " is outside the vocabulary (", vocab,
             " logits)");
    float& x = logits[static_cast<size_t>(t)];
    x = x < 0 ? x * f : x / f;  // CTRL: x < 0 ? x * penalty : x / penalty
  }
}

void apply_frequency_presence_penalties(std::span<float> logits, std::span<const int64_t> generated, double frequency,
                                        double presence) {
  if (frequency == 0.0 && presence == 0.0) return;
  const auto vocab = static_cast<int64_t>(logits.size());
  std::vector<int64_t> sorted(generated.begin(), generated.end());
  std::sort(sorted.begin(), sorted.end());
  for (size_t i = 0; i < sorted.size();) {
    const int64_t t = sorted[i];
    NF_CHECK(t >= 0 && t < vocab, "frequency/presence penalty: token id ", t, " is outside the vocabulary (", vocab,
             " logits)");
    size_t count = 0;
    for (; i < sorted.size() && sorted[i] == t; ++i) ++count;
    // OpenAI: x_t <- x_t - c_t * frequency - (c_t > 0) * presence, c_t = times t was generated
    logits[static_cast<size_t>(t)] -= static_cast<float>(static_cast<double>(count) * frequency + presence);
  }
}

void apply_temperature(std::span<float> logits, double temperature) {
  if (temperature == 1.0) return;
  const auto t = static_cast<float>(temperature);
  for (float& x : logits) x /= t;  // x_i / T
}

// The k-th largest logit (with multiplicity) from a min-heap of the k largest seen: one pass,
// nearly every logit only compared with the heap's minimum.
void apply_top_k(std::span<float> logits, int64_t top_k) {
  if (top_k <= 0 || top_k >= static_cast<int64_t>(logits.size())) return;
  const auto k = static_cast<size_t>(top_k);
  std::vector<float> heap(logits.begin(), logits.begin() + static_cast<std::ptrdiff_t>(k));
  std::make_heap(heap.begin(), heap.end(), std::greater<float>());
  for (size_t i = k; i < logits.size(); ++i) {
    if (!(logits[i] > heap.front())) continue;
    std::pop_heap(heap.begin(), heap.end(), std::greater<float>());
    heap.back() = logits[i];
    std::push_heap(heap.begin(), heap.end(), std::greater<float>());
  }
  const float kth = heap.front();
  for (float& x : logits)
    if (x < kth) x = kRemoved;  // keep x_i >= the k-th largest (every tie of it)
}

// Walks the tokens from the most likely down and cuts at the first whose ascending cumulative
// probability c_j = total - (mass above j) is <= 1 - p (in f32, as HF compares). Only the
// tokens near the cut are sorted: the tokens are binned by logit (bin 0 the most likely), the
// bins' masses locate the bin where the cut falls, and that bin alone is sorted and walked.
void apply_top_p(std::span<float> logits, double top_p) {
  if (top_p >= 1.0) return;
  constexpr size_t kBins = 1024;
  const std::vector<float> p = probabilities(logits);
  float high = -std::numeric_limits<float>::infinity(), low = -high;
  double total = 0;
  for (size_t i = 0; i < p.size(); ++i) {
    total += p[i];
    if (p[i] > 0) high = std::max(high, logits[i]), low = std::min(low, logits[i]);
  }
  const float scale = high > low ? static_cast<float>(kBins) / (high - low) : 0.0f;
  const auto bin_of = [&](size_t i) { return std::min(kBins - 1, static_cast<size_t>((high - logits[i]) * scale)); };
  std::vector<double> bin_mass(kBins, 0.0);
  for (size_t i = 0; i < p.size(); ++i)
    if (p[i] > 0) bin_mass[bin_of(i)] += p[i];  // a zero has c_j = 0 <= 1 - p: removed

  const auto threshold = static_cast<float>(1.0 - top_p);
  double above = 0;  // the mass of the bins before the cut's
  size_t cut_bin = 0;
  while (cut_bin + 1 < kBins && static_cast<float>(total - above - bin_mass[cut_bin]) > threshold)
    above += bin_mass[cut_bin++];  // the next bin's first token still has c > 1 - p

  std::vector<uint64_t> in_cut_bin;
  for (size_t i = 0; i < p.size(); ++i) {
    if (p[i] == 0) continue;
    const size_t bin = bin_of(i);
    if (bin == cut_bin) in_cut_bin.push_back(likelihood_key(logits[i], i));
    else if (bin > cut_bin) logits[i] = kRemoved;
  }
  std::sort(in_cut_bin.begin(), in_cut_bin.end());
  for (size_t r = 0; r < in_cut_bin.size(); ++r) {
    const auto c = static_cast<float>(total - above);  // c_j = sum of p over j and every less likely token
    const bool first_overall = cut_bin == 0 && r == 0;   // the most likely token is always kept
    if (!first_overall && c <= threshold) {
      for (size_t rest = r; rest < in_cut_bin.size(); ++rest) logits[id_of(in_cut_bin[rest])] = kRemoved;
      break;
    }
    above += p[id_of(in_cut_bin[r])];
  }
  for (size_t i = 0; i < p.size(); ++i)
    if (p[i] == 0) logits[i] = kRemoved;
}

void apply_min_p(std::span<float> logits, double min_p) {
  if (min_p <= 0.0) return;
  const std::vector<float> p = probabilities(logits);
  const float threshold = static_cast<float>(min_p) * *std::max_element(p.begin(), p.end());  // min_p * p_max
  for (size_t i = 0; i < logits.size(); ++i)
    if (p[i] < threshold) logits[i] = kRemoved;  // keep p_i >= min_p * p_max
}

void process_logits(std::span<float> logits, std::span<const int64_t> tokens, const SamplerConfig& config,
                    size_t generated) {
  NF_CHECK(generated <= tokens.size(), "sampler: ", generated, " tokens generated of a sequence of ", tokens.size());
  apply_vocab_limit(logits, config.vocab_limit);
  apply_repetition_penalty(logits, tokens, config.repetition_penalty);
  apply_frequency_presence_penalties(logits, tokens.last(generated), config.frequency_penalty, config.presence_penalty);
  if (config.greedy()) return;
  apply_temperature(logits, config.temperature);
  apply_top_k(logits, config.top_k);
  apply_top_p(logits, config.top_p);
  apply_min_p(logits, config.min_p);
}

int64_t argmax(std::span<const float> logits) {
  NF_CHECK(!logits.empty(), "argmax: empty row of logits");
  return std::max_element(logits.begin(), logits.end()) - logits.begin();  // first maximum
}

int64_t sample_from_logits(std::span<const float> logits, double u) {
  return sample_from_probabilities(probabilities(logits), u);
}

std::vector<float> softmax_probabilities(std::span<const float> logits) { return probabilities(logits); }

int64_t sample_from_probabilities(std::span<const float> p, double u) {
  double total = 0;
  for (float x : p) total += x;
  const double target = u * total;  // the first i with sum_{j <= i} p_j > u * sum_j p_j
  double cumulative = 0;
  int64_t last = -1;
  for (size_t i = 0; i < p.size(); ++i) {
    if (p[i] == 0) continue;
    cumulative += p[i];
    last = static_cast<int64_t>(i);
    if (cumulative > target) break;
  }
  return last;  // rounding can leave u * total above the last partial sum: the last token then
}

Sampler::Sampler(const SamplerConfig& config) : config_(config), generator_(config.seed) { config_.validate(); }

int64_t Sampler::next_row(std::span<const float> logits, std::span<const int64_t> tokens, size_t generated,
                          uint64_t counter) {
  NF_CHECK(!logits.empty(), "sampler: empty row of logits");
  row_.assign(logits.begin(), logits.end());
  process_logits(row_, tokens, config_, generated);
  if (config_.greedy()) return argmax(row_);
  const auto words = philox4x32(counter, 0, generator_.seed());
  return sample_from_logits(row_, uniform01_f64(words[0], words[1]));
}

std::vector<float> Sampler::distribution(std::span<const float> logits, std::span<const int64_t> tokens,
                                         size_t generated) {
  NF_CHECK(!logits.empty(), "sampler: empty row of logits");
  row_.assign(logits.begin(), logits.end());
  process_logits(row_, tokens, config_, generated);
  if (!config_.greedy()) return probabilities(row_);
  std::vector<float> one_hot(row_.size(), 0.0f);
  one_hot[static_cast<size_t>(argmax(row_))] = 1.0f;
  return one_hot;
}

double Sampler::uniform() {
  const auto words = philox4x32(generator_.reserve(1), 0, generator_.seed());
  return uniform01_f64(words[0], words[1]);
}

int64_t Sampler::next(std::span<const float> logits, std::span<const int64_t> tokens, size_t generated) {
  return next_row(logits, tokens, generated, generator_.reserve(1));
}

std::vector<int64_t> Sampler::next(const Tensor& logits, std::span<const std::vector<int64_t>> tokens, size_t generated) {
  NF_CHECK(logits.dim() == 2 && logits.dtype() == DType::f32, "sampler: logits must be (batch, vocab) f32, got ",
           shape_str(logits.shape()), " ", dtype_name(logits.dtype()));
  const int64_t batch = logits.size(0), vocab = logits.size(1);
  NF_CHECK(static_cast<int64_t>(tokens.size()) == batch, "sampler: ", batch, " rows of logits but ", tokens.size(),
           " token sequences");
  const Tensor rows = logits.contiguous();
  const uint64_t first = generator_.reserve(static_cast<uint64_t>(batch));
  std::vector<int64_t> out(static_cast<size_t>(batch));
  for (int64_t b = 0; b < batch; ++b)
    out[static_cast<size_t>(b)] = next_row({rows.data<float>() + b * vocab, static_cast<size_t>(vocab)},
                                           tokens[static_cast<size_t>(b)], generated, first + static_cast<uint64_t>(b));
  return out;
}

}  // namespace nf::infer
