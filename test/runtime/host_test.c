/* Tests for polyk/host.h (f16 / bf16 conversions, max/min helpers).
 * Build: gcc -std=c99 -O2 -Wall -Wextra -I libcore/runtime test/runtime/host_test.c -o host_test
 */
#include "polyk/host.h"

#include <math.h>
#include <stdio.h>

static int g_pass = 0, g_fail = 0;

static void check(int ok, const char* what) {
  if (ok) {
    g_pass++;
  } else {
    g_fail++;
    printf("FAIL %s\n", what);
  }
}

static void check_f2h(float f, uint16_t want, const char* what) {
  uint16_t got = polyk_f32_to_f16(f);
  if (got != want) printf("  f32_to_f16(%.9g) = 0x%04X, want 0x%04X\n", (double)f, got, want);
  check(got == want, what);
}
static void check_h2f(uint16_t h, float want, const char* what) {
  float got = polyk_f16_to_f32(h);
  int ok = polyk_f32_bits(got) == polyk_f32_bits(want);
  if (!ok) printf("  f16_to_f32(0x%04X) = %.9g, want %.9g\n", h, (double)got, (double)want);
  check(ok, what);
}
static void check_f2b(float f, uint16_t want, const char* what) {
  uint16_t got = polyk_f32_to_bf16(f);
  if (got != want) printf("  f32_to_bf16(%.9g) = 0x%04X, want 0x%04X\n", (double)f, got, want);
  check(got == want, what);
}
static int f16_is_nan(uint16_t h) { return (h & 0x7C00u) == 0x7C00u && (h & 0x3FFu) != 0; }
static int bf16_is_nan(uint16_t h) { return (h & 0x7F80u) == 0x7F80u && (h & 0x7Fu) != 0; }
static int same_bits(float a, float b) { return polyk_f32_bits(a) == polyk_f32_bits(b); }

/* |x - value(h)| <= |x - value(neighbours)|, ties to even: generic RNE check */
static int rne_ok_f16(float x) {
  uint16_t h = polyk_f32_to_f16(x);
  uint16_t mag = h & 0x7FFFu;
  double v = polyk_f16_to_f32(h), d = fabs((double)x - v);
  if (fabs((double)x) >= 65520.0) return mag == 0x7C00u && ((h >> 15) == (polyk_f32_bits(x) >> 31));
  if (mag >= 0x7C00u) return 0;
  if (mag < 0x7BFFu) { /* next away from zero */
    double vn = polyk_f16_to_f32((uint16_t)(h + 1)), dn = fabs((double)x - vn);
    if (dn < d || (dn == d && (h & 1u))) return 0;
  }
  if (mag > 0) { /* next toward zero */
    double vn = polyk_f16_to_f32((uint16_t)(h - 1)), dn = fabs((double)x - vn);
    if (dn < d || (dn == d && (h & 1u))) return 0;
  } else if (fabs((double)x) > ldexp(1.0, -25)) { /* +-0 only up to half the min subnormal */
    return 0;
  }
  return 1;
}
static int rne_ok_bf16(float x) {
  uint16_t h = polyk_f32_to_bf16(x);
  uint16_t mag = h & 0x7FFFu;
  double v = polyk_bf16_to_f32(h), d;
  if (mag == 0x7F80u) return fabs((double)x) >= 3.3961775292304876e38; /* >= max + half ulp */
  d = fabs((double)x - v);
  if (mag < 0x7F7Fu) {
    double vn = polyk_bf16_to_f32((uint16_t)(h + 1)), dn = fabs((double)x - vn);
    if (dn < d || (dn == d && (h & 1u))) return 0;
  }
  if (mag > 0) {
    double vn = polyk_bf16_to_f32((uint16_t)(h - 1)), dn = fabs((double)x - vn);
    if (dn < d || (dn == d && (h & 1u))) return 0;
  }
  return 1;
}

int main(void) {
  float two_m24 = ldexpf(1.0f, -24), two_m25 = ldexpf(1.0f, -25), two_m14 = ldexpf(1.0f, -14);
  float inf = polyk_bits_f32(0x7F800000u), nan = polyk_bits_f32(0x7FC00000u);

  /* ---- f32 -> f16 known values ---- */
  check_f2h(1.0f, 0x3C00, "f16 1.0");
  check_f2h(-2.0f, 0xC000, "f16 -2.0");
  check_f2h(0.0f, 0x0000, "f16 +0");
  check_f2h(-0.0f, 0x8000, "f16 -0");
  check_f2h(0.1f, 0x2E66, "f16 0.1");
  check_f2h(65504.0f, 0x7BFF, "f16 65504 (max)");
  check_f2h(65519.0f, 0x7BFF, "f16 65519 -> max");
  check_f2h(65520.0f, 0x7C00, "f16 65520 -> inf (tie to even)");
  check_f2h(1e6f, 0x7C00, "f16 1e6 -> inf");
  check_f2h(inf, 0x7C00, "f16 +inf");
  check_f2h(-inf, 0xFC00, "f16 -inf");
  check(f16_is_nan(polyk_f32_to_f16(nan)), "f16 nan");
  check(f16_is_nan(polyk_f32_to_f16(-nan)) && (polyk_f32_to_f16(-nan) & 0x8000u), "f16 -nan");
  check(f16_is_nan(polyk_f32_to_f16(polyk_bits_f32(0x7F800001u))), "f16 nan low payload stays nan");
  check_f2h(1e-8f, 0x0000, "f16 1e-8 -> 0");
  check_f2h(-1e-8f, 0x8000, "f16 -1e-8 -> -0");
  check_f2h(two_m24, 0x0001, "f16 2^-24 (min subnormal)");
  check_f2h(two_m25, 0x0000, "f16 2^-25 tie -> 0 (even)");
  check_f2h(1.5f * two_m25, 0x0001, "f16 1.5*2^-25 -> min subnormal");
  check_f2h(3.0f * two_m25, 0x0002, "f16 1.5*2^-24 tie -> 2 (even)");
  check_f2h(5.0f * two_m25, 0x0002, "f16 2.5*2^-24 tie -> 2 (even)");
  check_f2h(two_m14, 0x0400, "f16 2^-14 (min normal)");
  check_f2h(two_m14 - two_m25, 0x0400, "f16 max subnormal + half ulp tie -> min normal");
  check_f2h(1023.0f * two_m24, 0x03FF, "f16 max subnormal");
  check_f2h(1.0f + ldexpf(1.0f, -11), 0x3C00, "f16 1+2^-11 tie -> 1.0 (even)");
  check_f2h(1.0f + 3.0f * ldexpf(1.0f, -11), 0x3C02, "f16 1+3*2^-11 tie -> up (even)");
  check_f2h(1.0f + ldexpf(1.0f, -11) + ldexpf(1.0f, -20), 0x3C01, "f16 above tie rounds up");
  check_f2h(2049.0f, 0x6800, "f16 2049 -> 2048");
  check_f2h(2051.0f, 0x6802, "f16 2051 -> 2052");
  check_f2h(2047.0f, 0x67FF, "f16 2047 exact");

  /* ---- f16 -> f32 known values ---- */
  check_h2f(0x3C00, 1.0f, "f16->f32 1.0");
  check_h2f(0x0001, two_m24, "f16->f32 min subnormal");
  check_h2f(0x03FF, 1023.0f * two_m24, "f16->f32 max subnormal");
  check_h2f(0x7BFF, 65504.0f, "f16->f32 max");
  check_h2f(0xFC00, -inf, "f16->f32 -inf");
  check_h2f(0x8000, -0.0f, "f16->f32 -0");
  check(polyk_f16_to_f32(0x7E00) != polyk_f16_to_f32(0x7E00), "f16->f32 nan");
  check(polyk_f16_to_f32(0x7C01) != polyk_f16_to_f32(0x7C01), "f16->f32 signalling nan stays nan");

  /* ---- bf16 ---- */
  check_f2b(1.0f, 0x3F80, "bf16 1.0");
  check_f2b(-2.0f, 0xC000, "bf16 -2.0");
  check_f2b(3.0f, 0x4040, "bf16 3.0");
  check_f2b(-0.0f, 0x8000, "bf16 -0");
  check_f2b(1.0f + ldexpf(1.0f, -8), 0x3F80, "bf16 1+2^-8 tie -> 1.0 (even)");
  check_f2b(1.0f + 3.0f * ldexpf(1.0f, -8), 0x3F82, "bf16 1+3*2^-8 tie -> up (even)");
  check_f2b(polyk_bits_f32(0x7F7FFFFFu), 0x7F80, "bf16 FLT_MAX -> inf");
  check_f2b(inf, 0x7F80, "bf16 +inf");
  check_f2b(-inf, 0xFF80, "bf16 -inf");
  check_f2b(polyk_bits_f32(0x00000001u), 0x0000, "bf16 min f32 subnormal -> 0");
  check_f2b(polyk_bits_f32(0x00018000u), 0x0002, "bf16 subnormal tie -> even");
  check(bf16_is_nan(polyk_f32_to_bf16(nan)), "bf16 nan");
  check(bf16_is_nan(polyk_f32_to_bf16(polyk_bits_f32(0x7F800001u))), "bf16 nan low payload stays nan");
  check(same_bits(polyk_bf16_to_f32(0x3F80), 1.0f), "bf16->f32 1.0");
  check(same_bits(polyk_bf16_to_f32(0xFF80), -inf), "bf16->f32 -inf");

  /* ---- exhaustive round trips ---- */
  {
    int bad = 0;
    uint32_t h;
    for (h = 0; h < 0x10000u; ++h) {
      if (f16_is_nan((uint16_t)h)) {
        if (!f16_is_nan(polyk_f32_to_f16(polyk_f16_to_f32((uint16_t)h)))) bad++;
        continue;
      }
      if (polyk_f32_to_f16(polyk_f16_to_f32((uint16_t)h)) != h) {
        if (bad < 5) printf("  f16 round trip 0x%04X failed\n", h);
        bad++;
      }
    }
    check(bad == 0, "f16 -> f32 -> f16 identity (all 65536 patterns)");
  }
  {
    int bad = 0;
    uint32_t h;
    for (h = 0; h < 0x10000u; ++h) {
      if (bf16_is_nan((uint16_t)h)) {
        if (!bf16_is_nan(polyk_f32_to_bf16(polyk_bf16_to_f32((uint16_t)h)))) bad++;
        continue;
      }
      if (polyk_f32_to_bf16(polyk_bf16_to_f32((uint16_t)h)) != h) bad++;
    }
    check(bad == 0, "bf16 -> f32 -> bf16 identity (all 65536 patterns)");
  }
  /* ---- sampled RNE property over the f32 range ---- */
  {
    int bad16 = 0, badb = 0;
    uint64_t u;
    for (u = 0; u < 0x100000000ull; u += 4099u) { /* ~1M samples, all exponents */
      float x = polyk_bits_f32((uint32_t)u);
      if (x != x) continue;
      if (!rne_ok_f16(x)) {
        if (bad16 < 5) printf("  f16 RNE failed for %.9g (0x%08X)\n", (double)x, (uint32_t)u);
        bad16++;
      }
      if (!rne_ok_bf16(x)) {
        if (badb < 5) printf("  bf16 RNE failed for %.9g (0x%08X)\n", (double)x, (uint32_t)u);
        badb++;
      }
    }
    /* all exact midpoints between adjacent halves */
    for (u = 0; u < 0x7C00u; ++u) {
      float lo = polyk_f16_to_f32((uint16_t)u), hi = polyk_f16_to_f32((uint16_t)(u + 1));
      float mid = (float)(((double)lo + (double)hi) / 2.0); /* exact in f32 */
      uint16_t want = (u & 1u) ? (uint16_t)(u + 1) : (uint16_t)u;
      if (polyk_f32_to_f16(mid) != want) {
        if (bad16 < 5) printf("  f16 midpoint 0x%04X failed\n", (unsigned)u);
        bad16++;
      }
    }
    check(bad16 == 0, "f32 -> f16 round-to-nearest-even (sampled + all midpoints)");
    check(badb == 0, "f32 -> bf16 round-to-nearest-even (sampled)");
  }

  /* ---- max / min semantics ---- */
  check(polyk_fmaxf(nan, 1.0f) == 1.0f && polyk_fmaxf(1.0f, nan) == 1.0f, "fmaxf ignores nan");
  check(polyk_fminf(nan, 1.0f) == 1.0f && polyk_fminf(1.0f, nan) == 1.0f, "fminf ignores nan");
  check(polyk_fmaxf(nan, nan) != polyk_fmaxf(nan, nan), "fmaxf nan,nan -> nan");
  check(same_bits(polyk_fmaxf(-0.0f, 0.0f), 0.0f) && same_bits(polyk_fmaxf(0.0f, -0.0f), 0.0f), "fmaxf +0 > -0");
  check(same_bits(polyk_fminf(-0.0f, 0.0f), -0.0f) && same_bits(polyk_fminf(0.0f, -0.0f), -0.0f), "fminf -0 < +0");
  check(polyk_fmaxf(-inf, 3.0f) == 3.0f && polyk_fminf(inf, 3.0f) == 3.0f, "fmaxf/fminf inf");
  check(polyk_fmax(2.0, 3.0) == 3.0 && polyk_fmin(2.0, 3.0) == 2.0 && polyk_fmax((double)nan, 5.0) == 5.0,
        "fmax/fmin double");
  check((polyk_f64_bits(polyk_fmax(-0.0, 0.0)) >> 63) == 0 && (polyk_f64_bits(polyk_fmin(0.0, -0.0)) >> 63) == 1,
        "fmax/fmin double signed zeros");

  printf("%d passed, %d failed\n", g_pass, g_fail);
  return g_fail == 0 ? 0 : 1;
}
