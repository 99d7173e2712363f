/* Floating max / min reductions on special values, checked bit for bit: NaN is missing data (where
 * every element is NaN, the result is the identity -inf / +inf, as for no elements) and -0 < +0,
 * whatever the order in which threads, blocks and the sequential code meet the elements.  The
 * program (check-specials.sh writes it) reduces x[R][L] into `out` over dim 1 (RED 1), dim 0
 * (RED 0) or both (RED 2).  Built with
 *   -DPOLYK_GEN='"gen.c"' -DPOLYK_FN=polyk_NAME_c -DDTYPE=POLYK_F32 -DIS_MAX=1 -DRED=1
 * and, for a CUDA build (nvcc -x cu), -DPOLYK_CUDA -DSTORE=float: the launcher runs on the GPU.
 * The expected result comes from this file's own rule, not from polyk's functions. */
#include POLYK_GEN
#include "polyk/harness.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { R = 37, L = 1000 };

static size_t elemSize(void) {
  return DTYPE == POLYK_F64 ? 8 : DTYPE == POLYK_F32 ? 4 : 2;
}

/* One element of value class c: 0 -> -0, 1 -> +0, 2 -> NaN, 3 -> a random value in (-1, 1). */
static void put(unsigned char *buf, size_t i, int c, double v) {
  double d = c == 0 ? -0.0 : c == 1 ? 0.0 : c == 2 ? NAN : v;
  switch (DTYPE) {
  case POLYK_F16: { uint16_t h = polyk_f32_to_f16((float)d); memcpy(buf + 2 * i, &h, 2); break; }
  case POLYK_BF16: { uint16_t h = polyk_f32_to_bf16((float)d); memcpy(buf + 2 * i, &h, 2); break; }
  case POLYK_F32: { float f = (float)d; memcpy(buf + 4 * i, &f, 4); break; }
  default: memcpy(buf + 8 * i, &d, 8); break;
  }
}

static int signBit(const unsigned char *buf, size_t i) {
  unsigned char top = buf[(i + 1) * elemSize() - 1]; /* little endian: the sign is the last byte's top bit */
  return top >> 7;
}

/* max (or min) of the elements idx[0..n) without their NaNs, from the identity -inf (+inf): where
 * all are NaN, the result is the identity, as for no elements; a zero result is +0 (max) / -0 (min)
 * if any zero of that sign is present. */
static void expect(const unsigned char *x, const size_t *idx, size_t n, double *value, int *neg) {
  int found = 0, sawPos = 0, sawNeg = 0;
  double best = 0;
  for (size_t k = 0; k < n; ++k) {
    double v = polyk_element(x, idx[k], DTYPE);
    if (isnan(v)) continue;
    if (!found || (IS_MAX ? v > best : v < best)) best = v;
    found = 1;
  }
  for (size_t k = 0; found && best == 0 && k < n; ++k) {
    double v = polyk_element(x, idx[k], DTYPE);
    if (v == 0 && signBit(x, idx[k])) sawNeg = 1;
    else if (v == 0) sawPos = 1;
  }
  *value = found ? best : IS_MAX ? -INFINITY : INFINITY;
  *neg = *value == 0 ? (IS_MAX ? !sawPos : sawNeg) : *value < 0;
}

static void run(const unsigned char *x, unsigned char *out, size_t outN) {
#ifdef POLYK_CUDA
  void *dx, *dout;
  cudaMalloc(&dx, (size_t)R * L * elemSize());
  cudaMalloc(&dout, outN * elemSize());
  cudaMemcpy(dx, x, (size_t)R * L * elemSize(), cudaMemcpyHostToDevice);
  cudaError_t err = POLYK_FN((const STORE *)dx, (STORE *)dout, 0);
  if (err == cudaSuccess) err = cudaDeviceSynchronize();
  if (err != cudaSuccess) {
    fprintf(stderr, "CUDA error: %s\n", cudaGetErrorString(err));
    exit(1);
  }
  cudaMemcpy(out, dout, outN * elemSize(), cudaMemcpyDeviceToHost);
  cudaFree(dx);
  cudaFree(dout);
#else
  POLYK_FN((const void *)x, (void *)out);
#endif
}

/* Uniform in [0, 1), as polyk_fill draws it. */
static double uniform(uint64_t *s) { return (double)(polyk_splitmix64(s) >> 11) * (1.0 / 9007199254740992.0); }

int main(void) {
  static unsigned char x[(size_t)R * L * 8], out[(size_t)L * 8];
  static size_t idx[(size_t)R * L];
  const size_t outN = RED == 1 ? R : RED == 0 ? L : 1;
  /* Data sets: signed zeros with a few NaNs; NaN with a few values (and all-NaN rows / columns);
   * values with some zeros and NaNs. */
  const double mix[3][4] = {{0.90, 0.05, 0.05, 0.0}, {0.0, 0.0, 0.998, 0.002}, {0.05, 0.05, 0.05, 0.85}};
  int bad = 0;
  for (int set = 0; set < 3; ++set) {
    uint64_t s = 1234 + 77 * (uint64_t)set;
    for (size_t i = 0; i < (size_t)R * L; ++i) {
      double u = uniform(&s), v = 2 * uniform(&s) - 1;
      int c = 0;
      for (double acc = mix[set][0]; c < 3 && u >= acc; acc += mix[set][++c]) {}
      /* For min, swap the zeros' roles so that the rare zero is the one that wins. */
      if (!IS_MAX && c < 2) c = 1 - c;
      put(x, i, c, v);
    }
    memset(out, 0x55, sizeof out);
    run(x, out, outN);
    for (size_t o = 0; o < outN; ++o) {
      size_t n = 0;
      for (size_t a = 0; a < R; ++a)
        for (size_t b = 0; b < L; ++b)
          if (RED == 2 || (RED == 1 && a == o) || (RED == 0 && b == o)) idx[n++] = a * L + b;
      double want, got = polyk_element(out, o, DTYPE);
      int neg;
      expect(x, idx, n, &want, &neg);
      int ok = !isnan(got) && got == want && signBit(out, o) == neg;
      if (!ok && bad++ < 5)
        fprintf(stderr, "set %d out[%zu]: got %g (sign bit %d), want %s%g\n", set, o, got, signBit(out, o),
                neg ? "-" : "+", fabs(want));
    }
  }
  printf("%s %s\n", bad ? "FAIL" : "PASS", POLYK_NAME);
  return bad != 0;
}
