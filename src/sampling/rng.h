// PCG32 (O'Neill, pcg-random.org): a small seedable generator whose stream is
// bit-identical on every platform (native, WASM). No std::*_distribution anywhere:
// their output differs between standard libraries.
#pragma once

#include <cstdint>

namespace specdec {

class Rng {
 public:
  // seed: any 64-bit value; stream: selects one of 2^63 independent sequences.
  explicit Rng(uint64_t seed = 0x853c49e6748fea9bULL, uint64_t stream = 0xda3e39cb94b95bdbULL) {
    state_ = 0;
    inc_ = (stream << 1u) | 1u;
    next_u32();
    state_ += seed;
    next_u32();
  }

  // Uniform on [0, 2^32).
  uint32_t next_u32() {
    uint64_t old = state_;
    state_ = old * 6364136223846793005ULL + inc_;
    uint32_t xorshifted = static_cast<uint32_t>(((old >> 18u) ^ old) >> 27u);
    uint32_t rot = static_cast<uint32_t>(old >> 59u);
    return (xorshifted >> rot) | (xorshifted << ((-rot) & 31u));
  }

  // Uniform on [0, 1) with 53 random bits (two draws); exact in double.
  double uniform() {
    uint64_t a = next_u32() >> 5;  // 27 bits
    uint64_t b = next_u32() >> 6;  // 26 bits
    return static_cast<double>((a << 26) | b) * (1.0 / 9007199254740992.0);
  }

  // Number of 32-bit draws so far is not tracked; the full state is (state, inc).
  uint64_t state() const { return state_; }

 private:
  uint64_t state_;
  uint64_t inc_;
};

}  // namespace specdec
