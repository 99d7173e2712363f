/* Host-side helpers of the test harnesses that polyk-emit writes (C99; also compiles as C++ and
 * under nvcc): a seeded generator that fills tensors of every dtype with random, never all-zero
 * data, the comparison of an output with its sequential reference, and the median of timings. */
#ifndef POLYK_HARNESS_H
#define POLYK_HARNESS_H

#include "polyk/host.h"

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum polyk_dtype { POLYK_BOOL, POLYK_I32, POLYK_I64, POLYK_F16, POLYK_BF16, POLYK_F32, POLYK_F64 };

static inline uint64_t polyk_splitmix64(uint64_t *state) {
  uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

/* Uniform in [lo, hi) for floats; integers uniform in [lo, hi]; bools true with probability
 * `lo` (so an and-reduction can be made to come out either way). */
static inline void polyk_fill(void *buf, size_t n, int dtype, uint64_t seed, double lo, double hi) {
  uint64_t s = seed;
  for (size_t i = 0; i < n; ++i) {
    uint64_t r = polyk_splitmix64(&s);
    double u = (double)(r >> 11) * (1.0 / 9007199254740992.0);
    double v = lo + (hi - lo) * u;
    switch (dtype) {
    case POLYK_BOOL: ((unsigned char *)buf)[i] = u < lo; break;
    case POLYK_I32: ((int32_t *)buf)[i] = (int32_t)(lo + (int64_t)(r % (uint64_t)(hi - lo + 1))); break;
    case POLYK_I64: ((int64_t *)buf)[i] = (int64_t)(lo + (int64_t)(r % (uint64_t)(hi - lo + 1))); break;
    case POLYK_F16: ((uint16_t *)buf)[i] = polyk_f32_to_f16((float)v); break;
    case POLYK_BF16: ((uint16_t *)buf)[i] = polyk_f32_to_bf16((float)v); break;
    case POLYK_F32: ((float *)buf)[i] = (float)v; break;
    case POLYK_F64: ((double *)buf)[i] = v; break;
    }
  }
}

static inline double polyk_element(const void *buf, size_t i, int dtype) {
  switch (dtype) {
  case POLYK_BOOL: return ((const unsigned char *)buf)[i] != 0;
  case POLYK_I32: return ((const int32_t *)buf)[i];
  case POLYK_I64: return (double)((const int64_t *)buf)[i];
  case POLYK_F16: return polyk_f16_to_f32(((const uint16_t *)buf)[i]);
  case POLYK_BF16: return polyk_bf16_to_f32(((const uint16_t *)buf)[i]);
  case POLYK_F32: return ((const float *)buf)[i];
  default: return ((const double *)buf)[i];
  }
}

/* Floats: the norm-wise relative error max|got - ref| / max|ref| (NaN or inf: INFINITY).
 * Integers and bools: the number of elements that differ. */
static inline double polyk_compare(const void *got, const void *ref, size_t n, int dtype) {
  int exact = dtype == POLYK_BOOL || dtype == POLYK_I32 || dtype == POLYK_I64;
  double maxDiff = 0, maxRef = 0, bad = 0;
  for (size_t i = 0; i < n; ++i) {
    if (exact) {
      int differ;
      if (dtype == POLYK_I64) differ = ((const int64_t *)got)[i] != ((const int64_t *)ref)[i];
      else if (dtype == POLYK_I32) differ = ((const int32_t *)got)[i] != ((const int32_t *)ref)[i];
      else differ = (((const unsigned char *)got)[i] != 0) != (((const unsigned char *)ref)[i] != 0);
      bad += differ;
      continue;
    }
    double g = polyk_element(got, i, dtype), r = polyk_element(ref, i, dtype);
    if (isnan(g) || isinf(g)) {
      if (!(isinf(g) && isinf(r) && (g > 0) == (r > 0))) return INFINITY;
      continue;
    }
    if (fabs(g - r) > maxDiff) maxDiff = fabs(g - r);
    if (fabs(r) > maxRef) maxRef = fabs(r);
  }
  if (exact) return bad;
  return maxRef > 0 ? maxDiff / maxRef : maxDiff;
}

/* Tolerance of polyk_compare by dtype, for reductions over `length` elements (1 for none): the
 * output's own rounding, or the accumulation's rounding error, which grows like sqrt(length)
 * eps for random data and orders (f16 / bf16 accumulate in f32 unless accumulateInInputType). */
static inline double polyk_tolerance(int dtype, double length, int accumulateInInputType) {
  double growth = 16.0 * sqrt(length > 1 ? length : 1);
  switch (dtype) {
  case POLYK_F16: return fmax(1e-2, growth * (accumulateInInputType ? 9.8e-4 : 1.2e-7));
  case POLYK_BF16: return fmax(5e-2, growth * (accumulateInInputType ? 7.8e-3 : 1.2e-7));
  case POLYK_F32: return fmax(1e-4, growth * 1.2e-7);
  case POLYK_F64: return fmax(1e-10, growth * 2.3e-16);
  default: return 0;
  }
}

static inline int polyk_cmp_float(const void *a, const void *b) {
  float x = *(const float *)a, y = *(const float *)b;
  return (x > y) - (x < y);
}

static inline double polyk_median(float *v, int n) {
  qsort(v, (size_t)n, sizeof(float), polyk_cmp_float);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* polyk-tune's reference cache (`ref=PATH` on a harness's command line): the sequential
 * reference's outputs, kept in PATH.<output> by the first variant that computes them and read by
 * the others (one program, sizes and seed: polyk-tune keeps one PATH per search). */
static inline int polyk_ref_load(const char *path, const char *name, void *buf, size_t bytes) {
  char file[4096];
  snprintf(file, sizeof file, "%s.%s", path, name);
  FILE *f = fopen(file, "rb");
  if (!f) return 0;
  int ok = fread(buf, 1, bytes, f) == bytes && fgetc(f) == EOF;
  fclose(f);
  return ok;
}

static inline void polyk_ref_save(const char *path, const char *name, const void *buf, size_t bytes) {
  char file[4096], part[4200];
  snprintf(file, sizeof file, "%s.%s", path, name);
  snprintf(part, sizeof part, "%s.part", file);
  FILE *f = fopen(part, "wb");
  if (!f) return;
  int ok = fwrite(buf, 1, bytes, f) == bytes;
  if (fclose(f) == 0 && ok) rename(part, file); /* whole or absent */
}

#endif
