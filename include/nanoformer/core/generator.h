#pragma once
// Seeded random numbers whose results do not depend on the thread count: a counter-based
// generator (Philox4x32-10). Element i of a draw uses counter (offset + i), so any thread can
// compute any element; each draw advances the offset by the number of counters it used.
#include <array>
#include <cstdint>

namespace nf {

// Philox4x32-10: four 32-bit random words from a 128-bit counter and a 64-bit key.
std::array<uint32_t, 4> philox4x32(uint64_t counter_lo, uint64_t counter_hi, uint64_t key);

class Generator {
 public:
  explicit Generator(uint64_t seed = 0) : seed_(seed) {}
  uint64_t seed() const { return seed_; }
  uint64_t offset() const { return offset_; }
  void set_state(uint64_t seed, uint64_t offset) { seed_ = seed; offset_ = offset; }
  // Reserves `n` counters for one draw and returns the first; the draw uses [first, first + n).
  uint64_t reserve(uint64_t n) { uint64_t first = offset_; offset_ += n; return first; }

 private:
  uint64_t seed_ = 0;
  uint64_t offset_ = 0;
};

// A 64-bit seed for a new generator, drawn from `gen` (one counter).
inline uint64_t draw_seed(Generator& gen) {
  const auto words = philox4x32(gen.reserve(1), 0, gen.seed());
  return (static_cast<uint64_t>(words[0]) << 32) | words[1];
}

// The generator used when an op is not handed one (seeded 0; reseed with manual_seed).
Generator& default_generator();
void manual_seed(uint64_t seed);

// Uniform float in [0, 1) from a 32-bit random word (24 significant bits).
inline float uniform01(uint32_t word) { return static_cast<float>(word >> 8) * (1.0f / 16777216.0f); }
inline double uniform01_f64(uint32_t hi, uint32_t lo) {
  uint64_t bits = (static_cast<uint64_t>(hi) << 21) ^ (lo >> 11);  // 53 bits
  return static_cast<double>(bits & ((1ull << 53) - 1)) * (1.0 / 9007199254740992.0);
}

}  // namespace nf
