// polyk/IntMath.h -- integer helpers of the size rules (schedule and tuning spaces).
#pragma once

namespace polyk {

/// ceil(a / b) for a >= 0, b > 0.
inline long long ceilDiv(long long a, long long b) { return (a + b - 1) / b; }
/// The least multiple of b (> 0) not below a (>= 0).
inline long long roundUp(long long a, long long b) { return ceilDiv(a, b) * b; }
/// The least power of 2 not below a (1 for a <= 1).
inline long long pow2Ceil(long long a) {
  long long p = 1;
  while (p < a) p *= 2;
  return p;
}
/// The greatest power of 2 not above a (1 for a <= 1).
inline long long pow2Floor(long long a) { return a <= 1 ? 1 : pow2Ceil(a + 1) / 2; }

} // namespace polyk
