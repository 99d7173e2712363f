/* polyk/math.h -- the forms polyk-emit prints for pow with a constant exponent (C99, C++ and CUDA,
 * host and device), as XLA's algebraic simplifier rewrites them. nvcc's powf is a long sequence
 * (N-body's pow(r2, -1.5) took 62 ms of its 65536 bodies; 4.3 ms in the forms below).
 *  - pow(x, 2) = x * x: the same number.
 *  - pow(x, 0.5) = sqrt(x), pow(x, 1.5) = x * sqrt(x): within an ulp or two of pow.
 *  - pow(x, -0.5) and pow(x, -1.5): on the host 1 / sqrt(x) and 1 / (x * sqrt(x)); on the device
 *    rsqrtf (2 ulp) and its cube (within 8 ulp; CUDA's powf is within 4). f64 takes 1 / sqrt on
 *    both.
 * They differ from pow at x = -inf (NaN instead of +inf / +0) and x = -0 (sqrt(-0) = -0; the
 * device's reciprocal forms give -inf).
 */
#ifndef POLYK_MATH_H
#define POLYK_MATH_H

#ifndef __CUDACC_RTC__
#include <math.h>
#else /* NVRTC: the math functions are built in, math.h's constants are not */
#define HUGE_VALF (__int_as_float(0x7f800000))
#define HUGE_VAL (__longlong_as_double(0x7ff0000000000000LL))
#endif

#ifdef __CUDACC__
#define POLYK_HD __host__ __device__
#else
#define POLYK_HD
#endif

static inline POLYK_HD float polyk_pow2f(float x) { return x * x; }
static inline POLYK_HD double polyk_pow2(double x) { return x * x; }
static inline POLYK_HD float polyk_pow1_5f(float x) { return x * sqrtf(x); }
static inline POLYK_HD double polyk_pow1_5(double x) { return x * sqrt(x); }
static inline POLYK_HD float polyk_powm0_5f(float x) {
#ifdef __CUDA_ARCH__
  return rsqrtf(x);
#else
  return 1.0f / sqrtf(x);
#endif
}
static inline POLYK_HD double polyk_powm0_5(double x) { return 1.0 / sqrt(x); }
static inline POLYK_HD float polyk_powm1_5f(float x) {
#ifdef __CUDA_ARCH__
  float r = rsqrtf(x);
  return r * r * r;
#else
  return 1.0f / (x * sqrtf(x));
#endif
}
static inline POLYK_HD double polyk_powm1_5(double x) { return 1.0 / (x * sqrt(x)); }

#undef POLYK_HD
#endif /* POLYK_MATH_H */
