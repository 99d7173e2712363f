// polyk/runtime.cuh -- device runtime included by every kernel that polyk
// generates.  It provides the pieces of the Panamera reduction scheme (§5) that
// are independent of the polyhedral schedule: the reduction operators
// (OpSum/OpProd/OpMax/OpMin/OpAnd/OpOr with apply()/identity()), Part 2 -- the
// intra-block reductions along threadIdx.x, along threadIdx.y, or over the whole
// block (CUB or an own warp-shuffle + shared-memory implementation) --, and
// Part 3 -- the "Atomic_Return" of a block's partial result to global memory,
// atomic_combine<Op,T>, available for every dtype/op pair (bool, int32_t,
// int64_t, __half, __nv_bfloat16, float, double x the six ops), using native
// atomics where the hardware has them and compare-and-swap loops otherwise.  It
// also offers ordered_combine, a deterministic (fixed combination order,
// bit-reproducible) alternative to the atomic return.
//
// Semantics shared by host and device (so a CPU reference computed with
// Op::apply matches the GPU bit for bit where the op is exact):
//  * integer Sum/Prod wrap modulo 2^bits (computed in the unsigned type);
//  * And/Or on non-bool types are *logical*: the result is 0 or 1;
//  * bool: Sum == Or, Prod == And, Max == Or, Min == And;
//  * float/double/half/bf16 Max/Min treat NaN as missing data (C99 fmax/fmin:
//    max(NaN, x) == x, NaN only if both are NaN) and order -0.0 < +0.0, which
//    makes them commutative and associative, so the atomic and the block
//    versions are order independent.  A reduction folds from the identity, so
//    one over NaNs only gives -inf / +inf.  On the device they are the
//    hardware's max / min (see device_max below); polyk/host.h has polyk_fmaxf
//    & co with the same semantics for C host code.  (Do not compile with
//    flush-to-zero if subnormals must compare exactly.)
//  * __half / __nv_bfloat16 arithmetic goes through float and rounds once to
//    nearest even (the native atomicAdd rounds the exact sum instead; both
//    agree except for rare double-rounding cases).
//  * identities: Sum 0, Prod 1, Max lowest / -inf, Min max / +inf, And 1, Or 0.
#pragma once

#include <cuda_fp16.h>
#include <cuda_bf16.h>
#ifdef __CUDACC_RTC__
// NVRTC (polyk-tune's resource checks: libcore/tune/Nvrtc.cpp) compiles the kernels alone: no host
// standard library there, libcu++'s in its place, and none of the host side below.
#include <cuda/std/cstdint>
#include <cuda/std/type_traits>
namespace std { using namespace cuda::std; }
#else
#include <cstdint>
#include <cstring>
#include <mutex>
#include <thread>
#include <type_traits>
#include <vector>
#endif

#include "polyk/math.h"

#ifdef POLYK_BLOCK_REDUCE_CUB
#include <cub/block/block_reduce.cuh>
#include <cub/warp/warp_reduce.cuh>
#endif

#define POLYK_HD __host__ __device__ __forceinline__

namespace polyk {

/// A device-scope fetch-add with acquire-release order: what
/// cuda::atomic_ref<unsigned, cuda::thread_scope_device>::fetch_add(v, cuda::memory_order_acq_rel)
/// compiles to on sm_70 and later (the same PTX), without <cuda/atomic>, which took 3.5 of the
/// 5.5 s that nvcc spends on this header in each compile.
__device__ __forceinline__ unsigned fetch_add_acq_rel(unsigned *p, unsigned v) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 700
  unsigned old;
  asm volatile("atom.add.acq_rel.gpu.u32 %0,[%1],%2;" : "=r"(old) : "l"(p), "r"(v) : "memory");
  return old;
#else
  __threadfence();
  unsigned old = atomicAdd(p, v);
  __threadfence();
  return old;
#endif
}

/// Asynchronous copies global -> shared of BYTES (4, 8 or 16) bytes, both addresses aligned to it
/// (cp.async, sm_80 and later; a plain copy before), their commit into a group, and the wait
/// until at most N groups are in flight (the affine path's double-buffered staging).
template <int BYTES> __device__ __forceinline__ void cp_async(void *shared, const void *global) {
  static_assert(BYTES == 4 || BYTES == 8 || BYTES == 16, "cp.async copies 4, 8 or 16 bytes");
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  unsigned to = (unsigned)__cvta_generic_to_shared(shared);
  if constexpr (BYTES == 16) asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(to), "l"(global) : "memory");
  else asm volatile("cp.async.ca.shared.global [%0], [%1], %2;" ::"r"(to), "l"(global), "n"(BYTES) : "memory");
#else
  if constexpr (BYTES == 4) *(unsigned *)shared = *(const unsigned *)global;
  else if constexpr (BYTES == 8) *(uint2 *)shared = *(const uint2 *)global;
  else *(uint4 *)shared = *(const uint4 *)global;
#endif
}
__device__ __forceinline__ void cp_async_commit() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.commit_group;" ::: "memory");
#endif
}
template <int N> __device__ __forceinline__ void cp_async_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.wait_group %0;" ::"n"(N) : "memory");
#endif
}

/// f32 products on the tensor cores at f32 accuracy (3xTF32, as CUTLASS's "fast accurate" f32
/// GEMMs do): each operand is split into a tf32 value and its remainder (truncated to tf32 by the mma), and a product
/// is the sum of three tf32 products (the small x small term, below f32's rounding, is left out).
/// `mma_tf32x3` adds A B to a 16 x 8 tile D of a warp (mma.sync m16n8k8: lane l holds D's rows
/// l / 4 and l / 4 + 8, columns 2 (l % 4) and 2 (l % 4) + 1; A's rows l / 4 (+ 8), columns
/// l % 4 (+ 4); B's rows l % 4 (+ 4), column l / 4). Before sm_80 the same sums are taken in f32
/// through warp shuffles (slow, for correctness only).
struct Tf32x2 {
  unsigned big, small;
};
__device__ __forceinline__ Tf32x2 tf32_split(float x) {
  Tf32x2 r;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  // (satfinite: an infinity's big part is the greatest finite tf32 and its remainder the infinity,
  // so a product of an infinity is one, not inf - inf = NaN; a NaN stays one. A test of the
  // value instead cost 14% at GEMM 4096^3.)
  asm("cvt.rna.satfinite.tf32.f32 %0, %1;" : "=r"(r.big) : "f"(x));
  // The remainder truncated to tf32 (its top 19 bits) instead of rounded by one more cvt per value:
  // GEMM 4096^3 2790 -> 2553 us, max_err 2.79e-06 -> 2.72e-06 at 500 x 520 x 333; the mask, which
  // the H100 does not need (it reads a tf32 operand's top bits) but PTX does not promise, costs
  // nothing measurable (bench/results/2026-11-26-h100-mma.txt, calls 17 and 22).
  r.small = __float_as_uint(x - __uint_as_float(r.big)) & 0xffffe000u;
#else
  r.big = __float_as_uint(x), r.small = 0u;
#endif
  return r;
}
/// An f16 / bf16 value (as f32): a tf32 exactly, no remainder.
__device__ __forceinline__ Tf32x2 tf32_exact(float x) { return Tf32x2{__float_as_uint(x), 0u}; }
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
__device__ __forceinline__ void mma_tf32(float &d0, float &d1, float &d2, float &d3, unsigned a0, unsigned a1, unsigned a2,
                                         unsigned a3, unsigned b0, unsigned b1) {
  asm("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};"
      : "+f"(d0), "+f"(d1), "+f"(d2), "+f"(d3)
      : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}
#endif
/// ASMALL / BSMALL: whether A's / B's values have remainders (else tf32_exact's: their products
/// with the other's remainder are the only ones taken besides big x big).
template <bool ASMALL, bool BSMALL>
__device__ __forceinline__ void mma_tf32x(float &d0, float &d1, float &d2, float &d3, const Tf32x2 (&a)[4], const Tf32x2 (&b)[2]) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  if constexpr (ASMALL) mma_tf32(d0, d1, d2, d3, a[0].small, a[1].small, a[2].small, a[3].small, b[0].big, b[1].big);
  if constexpr (BSMALL) mma_tf32(d0, d1, d2, d3, a[0].big, a[1].big, a[2].big, a[3].big, b[0].small, b[1].small);
  mma_tf32(d0, d1, d2, d3, a[0].big, a[1].big, a[2].big, a[3].big, b[0].big, b[1].big);
#else
  const unsigned lane = (threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z)) % 32u, g = lane / 4u, t = lane % 4u;
  for (unsigned k = 0; k < 4; ++k) {
    // A[g][k], A[g][k + 4], A[g + 8][k], A[g + 8][k + 4]; B[k][c], B[k + 4][c] for c = 2t, 2t + 1.
    float x0 = __uint_as_float(__shfl_sync(0xffffffffu, a[0].big, g * 4 + k));
    float x2 = __uint_as_float(__shfl_sync(0xffffffffu, a[2].big, g * 4 + k));
    float x1 = __uint_as_float(__shfl_sync(0xffffffffu, a[1].big, g * 4 + k));
    float x3 = __uint_as_float(__shfl_sync(0xffffffffu, a[3].big, g * 4 + k));
    float y00 = __uint_as_float(__shfl_sync(0xffffffffu, b[0].big, 2 * t * 4 + k));
    float y10 = __uint_as_float(__shfl_sync(0xffffffffu, b[1].big, 2 * t * 4 + k));
    float y01 = __uint_as_float(__shfl_sync(0xffffffffu, b[0].big, (2 * t + 1) * 4 + k));
    float y11 = __uint_as_float(__shfl_sync(0xffffffffu, b[1].big, (2 * t + 1) * 4 + k));
    d0 += x0 * y00 + x2 * y10, d1 += x0 * y01 + x2 * y11;
    d2 += x1 * y00 + x3 * y10, d3 += x1 * y01 + x3 * y11;
  }
#endif
}
__device__ __forceinline__ void mma_tf32x3(float &d0, float &d1, float &d2, float &d3, const Tf32x2 (&a)[4], const Tf32x2 (&b)[2]) {
  mma_tf32x<true, true>(d0, d1, d2, d3, a, b);
}

struct OpSum;
struct OpProd;
struct OpMax;
struct OpMin;
struct OpAnd;
struct OpOr;

namespace detail {

template <class T>
inline constexpr bool is_half_v = std::is_same_v<T, __half>;
template <class T>
inline constexpr bool is_bf16_v = std::is_same_v<T, __nv_bfloat16>;
template <class T>
inline constexpr bool is_f16_v = is_half_v<T> || is_bf16_v<T>;
template <class T>
inline constexpr bool is_bool_v = std::is_same_v<T, bool>;
template <class T>
inline constexpr bool is_int_v = std::is_integral_v<T> && !is_bool_v<T>;

template <int N> struct uint_of;
template <> struct uint_of<1> { using type = unsigned char; };
template <> struct uint_of<2> { using type = unsigned short; };
template <> struct uint_of<4> { using type = unsigned int; };
template <> struct uint_of<8> { using type = unsigned long long; };
template <class T> using uint_of_t = typename uint_of<sizeof(T)>::type;

template <class To, class From>
POLYK_HD To bit_cast(const From& f) {
  static_assert(sizeof(To) == sizeof(From), "bit_cast size mismatch");
  To t;
  memcpy(static_cast<void*>(&t), static_cast<const void*>(&f), sizeof(To));
  return t;
}

template <class T>
POLYK_HD float f16_to_float(T x) {
  if constexpr (is_half_v<T>) return __half2float(x);
  else return __bfloat162float(x);
}
template <class T>
POLYK_HD T float_to_f16(float f) {
  if constexpr (is_half_v<T>) return __float2half_rn(f);
  else return __float2bfloat16_rn(f);
}
template <class T>
POLYK_HD T f16_from_bits(unsigned short b) { return bit_cast<T>(b); }

template <class F> POLYK_HD bool is_nan(F x) { return x != x; }
template <class F> POLYK_HD bool sign_bit(F x) {
  if constexpr (sizeof(F) == 4) return (bit_cast<uint32_t>(x) >> 31) != 0;
  else return (bit_cast<uint64_t>(x) >> 63) != 0;
}
// true if max(a, b) is a (NaN = missing, -0 < +0): a > b or b is NaN; else not when b > a or a
// is NaN; else (equal) a when it is +0. Bitwise, not short-circuit, so it compiles to predicates
// and selects: branches here made every step of a warp's shuffle reduction diverge and reconverge.
template <class F> POLYK_HD bool max_picks_a(F a, F b) {
  return (a > b) | is_nan(b) | (!(b > a) & !is_nan(a) & !sign_bit(a));
}
// true if min(a, b) is a (NaN = missing, -0 < +0), as max_picks_a.
template <class F> POLYK_HD bool min_picks_a(F a, F b) {
  return (a < b) | is_nan(b) | (!(b < a) & !is_nan(a) & sign_bit(a));
}

// The device's own max / min (PTX max / min without .NaN, sm_80+ for f16 / bf16) follow IEEE
// 754-2019 maximumNumber / minimumNumber: NaN is missing and -0 < +0, the semantics above, in one
// instruction where max_picks_a is a chain of compares and selects (0.5 us of a 4 MB all-reduce on
// the H100).
// The runtime test's apply cases check them bit for bit against the host's max_picks_a on every
// pair of special values (NaN, +-inf, +-0, ...).  Host code keeps max_picks_a.
#if defined(__CUDA_ARCH__)
template <class T>
inline constexpr bool native_min_max_v = std::is_same_v<T, float> || std::is_same_v<T, double> ||
                                         (__CUDA_ARCH__ >= 800 && is_f16_v<T>);
template <class T> __device__ __forceinline__ T device_max(T a, T b) {
  if constexpr (std::is_same_v<T, float>) return fmaxf(a, b);
  else if constexpr (std::is_same_v<T, double>) return fmax(a, b);
  else return __hmax(a, b);
}
template <class T> __device__ __forceinline__ T device_min(T a, T b) {
  if constexpr (std::is_same_v<T, float>) return fminf(a, b);
  else if constexpr (std::is_same_v<T, double>) return fmin(a, b);
  else return __hmin(a, b);
}
#endif

// Arithmetic type used for integer wrap-around (never narrower than unsigned).
template <class T>
using wrap_t = std::conditional_t<(sizeof(T) < sizeof(unsigned)), unsigned,
                                  std::make_unsigned_t<T>>;

template <class T> POLYK_HD T int_max() {
  if constexpr (std::is_signed_v<T>) return T(std::make_unsigned_t<T>(~std::make_unsigned_t<T>(0)) >> 1);
  else return T(~T(0));
}
template <class T> POLYK_HD T int_lowest() {
  if constexpr (std::is_signed_v<T>) return T(-int_max<T>() - T(1));
  else return T(0);
}

template <class T> POLYK_HD bool truthy(T x) {
  if constexpr (is_f16_v<T>) return f16_to_float(x) != 0.0f;
  else return x != T(0);
}
template <class T> POLYK_HD T from_truth(bool b) {
  if constexpr (is_f16_v<T>) return float_to_f16<T>(b ? 1.0f : 0.0f);
  else return b ? T(1) : T(0);
}

// 0: not a bool-like op, 1: or-like on bool, 2: and-like on bool
template <class Op> inline constexpr int bool_kind =
    (std::is_same_v<Op, OpSum> || std::is_same_v<Op, OpMax> || std::is_same_v<Op, OpOr>) ? 1
  : (std::is_same_v<Op, OpProd> || std::is_same_v<Op, OpMin> || std::is_same_v<Op, OpAnd>) ? 2
  : 0;

}  // namespace detail

// ---------------------------------------------------------------------------
// Reduction operators
// ---------------------------------------------------------------------------
struct OpSum {
  template <class T> POLYK_HD static T apply(T a, T b) {
    using namespace detail;
    if constexpr (is_bool_v<T>) return a || b;
    else if constexpr (is_f16_v<T>) return float_to_f16<T>(f16_to_float(a) + f16_to_float(b));
    else if constexpr (is_int_v<T>) return T(wrap_t<T>(a) + wrap_t<T>(b));
    else return a + b;
  }
  template <class T> POLYK_HD static T identity() {
    using namespace detail;
    if constexpr (is_f16_v<T>) return f16_from_bits<T>(0);
    else return T(0);
  }
};

struct OpProd {
  template <class T> POLYK_HD static T apply(T a, T b) {
    using namespace detail;
    if constexpr (is_bool_v<T>) return a && b;
    else if constexpr (is_f16_v<T>) return float_to_f16<T>(f16_to_float(a) * f16_to_float(b));
    else if constexpr (is_int_v<T>) return T(wrap_t<T>(a) * wrap_t<T>(b));
    else return a * b;
  }
  template <class T> POLYK_HD static T identity() {
    using namespace detail;
    if constexpr (is_half_v<T>) return f16_from_bits<T>(0x3C00);
    else if constexpr (is_bf16_v<T>) return f16_from_bits<T>(0x3F80);
    else return T(1);
  }
};

struct OpMax {
  template <class T> POLYK_HD static T apply(T a, T b) {
    using namespace detail;
    if constexpr (is_bool_v<T>) return a || b;
#if defined(__CUDA_ARCH__)
    else if constexpr (native_min_max_v<T>) return device_max(a, b);
#endif
    else if constexpr (is_f16_v<T>) return max_picks_a(f16_to_float(a), f16_to_float(b)) ? a : b;
    else if constexpr (std::is_floating_point_v<T>) return max_picks_a(a, b) ? a : b;
    else return a < b ? b : a;
  }
  template <class T> POLYK_HD static T identity() {
    using namespace detail;
    if constexpr (is_bool_v<T>) return false;
    else if constexpr (is_half_v<T>) return f16_from_bits<T>(0xFC00);
    else if constexpr (is_bf16_v<T>) return f16_from_bits<T>(0xFF80);
    else if constexpr (std::is_same_v<T, float>) return bit_cast<float>(0xFF800000u);
    else if constexpr (std::is_same_v<T, double>) return bit_cast<double>(0xFFF0000000000000ull);
    else return int_lowest<T>();
  }
};

struct OpMin {
  template <class T> POLYK_HD static T apply(T a, T b) {
    using namespace detail;
    if constexpr (is_bool_v<T>) return a && b;
#if defined(__CUDA_ARCH__)
    else if constexpr (native_min_max_v<T>) return device_min(a, b);
#endif
    else if constexpr (is_f16_v<T>) return min_picks_a(f16_to_float(a), f16_to_float(b)) ? a : b;
    else if constexpr (std::is_floating_point_v<T>) return min_picks_a(a, b) ? a : b;
    else return b < a ? b : a;
  }
  template <class T> POLYK_HD static T identity() {
    using namespace detail;
    if constexpr (is_bool_v<T>) return true;
    else if constexpr (is_half_v<T>) return f16_from_bits<T>(0x7C00);
    else if constexpr (is_bf16_v<T>) return f16_from_bits<T>(0x7F80);
    else if constexpr (std::is_same_v<T, float>) return bit_cast<float>(0x7F800000u);
    else if constexpr (std::is_same_v<T, double>) return bit_cast<double>(0x7FF0000000000000ull);
    else return int_max<T>();
  }
};

struct OpAnd {
  template <class T> POLYK_HD static T apply(T a, T b) {
    using namespace detail;
    if constexpr (is_bool_v<T>) return a && b;
    else return from_truth<T>(truthy(a) && truthy(b));
  }
  template <class T> POLYK_HD static T identity() { return detail::from_truth<T>(true); }
};

struct OpOr {
  template <class T> POLYK_HD static T apply(T a, T b) {
    using namespace detail;
    if constexpr (is_bool_v<T>) return a || b;
    else return from_truth<T>(truthy(a) || truthy(b));
  }
  template <class T> POLYK_HD static T identity() { return detail::from_truth<T>(false); }
};

// ---------------------------------------------------------------------------
// Part 3: atomic return
// ---------------------------------------------------------------------------
namespace detail {

// CAS loop on the value's own bit pattern (sizeof(T) in {2 (sm_70+), 4, 8}).
template <class Op, class T>
__device__ __forceinline__ void cas_combine(T* addr, T val) {
  using U = uint_of_t<T>;
  U* p = reinterpret_cast<U*>(addr);
  U old = *reinterpret_cast<volatile U*>(p);
  while (true) {
    const U nv = bit_cast<U>(Op::apply(bit_cast<T>(old), val));
    if (nv == old) return;  // no change: linearizes at the read
    const U prev = atomicCAS(p, old, nv);
    if (prev == old) return;
    old = prev;
  }
}

// CAS loop on the aligned 32-bit word containing a 1- or 2-byte value
// (little endian; the containing word must be addressable, which holds for any
// cudaMalloc / shared allocation).
template <class Op, class T>
__device__ __forceinline__ void subword_cas_combine(T* addr, T val) {
  static_assert(sizeof(T) == 1 || sizeof(T) == 2, "subword only");
  using S = uint_of_t<T>;
  const uintptr_t a = reinterpret_cast<uintptr_t>(addr);
  unsigned int* w = reinterpret_cast<unsigned int*>(a & ~uintptr_t(3));
  const unsigned shift = unsigned(a & 3u) * 8u;
  constexpr unsigned M = sizeof(T) == 1 ? 0xFFu : 0xFFFFu;
  unsigned old = *reinterpret_cast<volatile unsigned*>(w);
  while (true) {
    const T cur = bit_cast<T>(S((old >> shift) & M));
    const unsigned nb = unsigned(bit_cast<S>(Op::apply(cur, val)));
    const unsigned nw = (old & ~(M << shift)) | (nb << shift);
    if (nw == old) return;
    const unsigned prev = atomicCAS(w, old, nw);
    if (prev == old) return;
    old = prev;
  }
}

// Stores `target` unless the location already holds it (used for logical
// And/Or where the result does not depend on the old value).
template <class T>
__device__ __forceinline__ void exch_if_different(T* addr, T target) {
  using U = uint_of_t<T>;
  U* p = reinterpret_cast<U*>(addr);
  const U t = bit_cast<U>(target);
  if (*reinterpret_cast<volatile U*>(p) == t) return;
  atomicExch(p, t);
}

// Max / min of float or double without a CAS loop: a non-negative value orders like its bits
// as a signed integer (max -> atomicMax, min -> atomicMin), a negative one inversely to its bits
// as an unsigned integer (max -> atomicMin, min -> atomicMax), and each ordering also places the
// other sign correctly (+0 above -0). NaN is missing data: a NaN value changes nothing, and a
// NaN found in memory (which the integer order may have kept) is replaced through the CAS loop.
template <class Op, class T>
__device__ __forceinline__ void float_minmax_atomic(T* addr, T val) {
  using S = std::conditional_t<sizeof(T) == 4, int, long long>;
  using U = std::conditional_t<sizeof(T) == 4, unsigned int, unsigned long long>;
  if (is_nan(val)) return;
  constexpr bool is_max = std::is_same_v<Op, OpMax>;
  T old;
  if (!sign_bit(val)) {  // a non-negative value: signed order of the bits
    if constexpr (is_max) old = bit_cast<T>(atomicMax(reinterpret_cast<S*>(addr), bit_cast<S>(val)));
    else old = bit_cast<T>(atomicMin(reinterpret_cast<S*>(addr), bit_cast<S>(val)));
  } else {
    if constexpr (is_max) old = bit_cast<T>(atomicMin(reinterpret_cast<U*>(addr), bit_cast<U>(val)));
    else old = bit_cast<T>(atomicMax(reinterpret_cast<U*>(addr), bit_cast<U>(val)));
  }
  if (is_nan(old)) cas_combine<Op>(addr, val);
}

}  // namespace detail

// *addr = Op::apply(*addr, val), atomically.  All 7 types x 6 ops.
template <class Op, class T>
__device__ __forceinline__ void atomic_combine(T* addr, T val) {
  using namespace detail;
  if constexpr (is_bool_v<T>) {
    const uintptr_t a = reinterpret_cast<uintptr_t>(addr);
    unsigned int* w = reinterpret_cast<unsigned int*>(a & ~uintptr_t(3));
    const unsigned shift = unsigned(a & 3u) * 8u;
    if constexpr (bool_kind<Op> == 1) {
      if (val) atomicOr(w, 1u << shift);
    } else if constexpr (bool_kind<Op> == 2) {
      if (!val) atomicAnd(w, ~(0xFFu << shift));
    } else {
      subword_cas_combine<Op>(addr, val);
    }
  } else if constexpr ((std::is_same_v<Op, OpAnd> || std::is_same_v<Op, OpOr>) &&
                       sizeof(T) >= 4) {
    // logical and/or: the result is fixed when val decides it
    constexpr bool is_or = std::is_same_v<Op, OpOr>;
    if (truthy(val) == is_or) exch_if_different(addr, from_truth<T>(is_or));
    else cas_combine<Op>(addr, val);  // only normalises 5 -> 1; usually no write
  } else if constexpr (std::is_same_v<Op, OpSum> && !is_f16_v<T>) {
    if constexpr (is_int_v<T> && sizeof(T) == 4)
      atomicAdd(reinterpret_cast<unsigned int*>(addr), unsigned(val));
    else if constexpr (is_int_v<T> && sizeof(T) == 8)
      atomicAdd(reinterpret_cast<unsigned long long*>(addr), (unsigned long long)(val));
    else if constexpr (std::is_same_v<T, float>)
      atomicAdd(addr, val);
    else if constexpr (std::is_same_v<T, double>) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 600
      cas_combine<Op>(addr, val);
#else
      atomicAdd(addr, val);
#endif
    } else {
      cas_combine<Op>(addr, val);
    }
  } else if constexpr (std::is_same_v<Op, OpSum> && is_f16_v<T>) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 700
    subword_cas_combine<Op>(addr, val);
#else
    atomicAdd(addr, val);
#endif
  } else if constexpr ((std::is_same_v<Op, OpMax> || std::is_same_v<Op, OpMin>) &&
                       is_int_v<T> && (sizeof(T) == 4 || sizeof(T) == 8)) {
    using S = std::conditional_t<sizeof(T) == 4,
                                 std::conditional_t<std::is_signed_v<T>, int, unsigned int>,
                                 std::conditional_t<std::is_signed_v<T>, long long, unsigned long long>>;
    if constexpr (std::is_same_v<Op, OpMax>) atomicMax(reinterpret_cast<S*>(addr), S(val));
    else atomicMin(reinterpret_cast<S*>(addr), S(val));
  } else if constexpr ((std::is_same_v<Op, OpMax> || std::is_same_v<Op, OpMin>) &&
                       (std::is_same_v<T, float> || std::is_same_v<T, double>)) {
    float_minmax_atomic<Op>(addr, val);
  } else if constexpr (sizeof(T) == 2) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 700
    subword_cas_combine<Op>(addr, val);
#else
    cas_combine<Op>(addr, val);
#endif
  } else if constexpr (sizeof(T) == 1) {
    subword_cas_combine<Op>(addr, val);
  } else {
    cas_combine<Op>(addr, val);
  }
}

// ---------------------------------------------------------------------------
// Part 2: block reductions (own warp-shuffle + shared-memory implementation)
// ---------------------------------------------------------------------------
// V consecutive elements of a read-only tensor, read with one load of V * sizeof(T) bytes (4, 8
// or 16) through the non-coherent path. Generated code uses it where a thread's vector loop reads
// `p[base + lane]` with `p + base` aligned to the vector's size (EmitCuda.cpp proves it with
// isl); nvcc's own vectoriser does not merge __half loads, nor keeps `__restrict__` through
// __builtin_assume_aligned (which let it reuse loads across a fused kernel's barriers).
// `Stream`: the program reads these elements once, so the load allocates nothing in L1 and
// marks its L2 lines evict-first (what Triton's eviction_policy='evict_first' emits), leaving
// the lines other kernels wrote or will read in L2 (EmitCuda.cpp, streamedTensors).
namespace detail {
// The unsigned word of a B-byte access (B = 4, 8 or 16).
template <int B>
using word_t = std::conditional_t<B == 16, uint4, std::conditional_t<B == 8, uint2, unsigned int>>;
}  // namespace detail

template <class T, int V>
struct Vec {
  alignas(sizeof(T) * V) T v[V];
  __device__ __forceinline__ T operator[](int i) const { return v[i]; }
};

template <int V, bool Stream = false, class T>
__device__ __forceinline__ Vec<T, V> load_vec(const T* p) {
  constexpr int B = int(sizeof(T)) * V;
  static_assert(B == 4 || B == 8 || B == 16, "polyk: a vector load is 4, 8 or 16 bytes");
  using W = detail::word_t<B>;
  W w;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  if constexpr (Stream) {
    unsigned long long policy;
    asm("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(policy));
    if constexpr (B == 16)
      asm("ld.global.nc.L1::no_allocate.L2::cache_hint.v4.u32 {%0, %1, %2, %3}, [%4], %5;"
          : "=r"(w.x), "=r"(w.y), "=r"(w.z), "=r"(w.w)
          : "l"(p), "l"(policy));
    else if constexpr (B == 8)
      asm("ld.global.nc.L1::no_allocate.L2::cache_hint.v2.u32 {%0, %1}, [%2], %3;"
          : "=r"(w.x), "=r"(w.y)
          : "l"(p), "l"(policy));
    else
      asm("ld.global.nc.L1::no_allocate.L2::cache_hint.u32 %0, [%1], %2;" : "=r"(w) : "l"(p), "l"(policy));
  } else
#endif
  {
    w = *reinterpret_cast<const W*>(p);
  }
  Vec<T, V> r;
  memcpy(&r, &w, B);
  return r;
}

/// Stores V consecutive elements at `p` (4, 8 or 16 bytes, aligned to that) as one vector store: a
/// copy of the Vec itself is split into element stores by nvcc.
template <int V, class T>
__device__ __forceinline__ void store_vec(T* p, const Vec<T, V>& v) {
  constexpr int B = int(sizeof(T)) * V;
  static_assert(B == 4 || B == 8 || B == 16, "polyk: a vector store is 4, 8 or 16 bytes");
  using W = detail::word_t<B>;
  W w;
  memcpy(&w, &v, B);
#if defined(__CUDA_ARCH__)
  // (In asm: nvcc splits a uint4 assembled from floats into element stores.)
  if constexpr (B == 16)
    asm volatile("st.global.v4.b32 [%0], {%1, %2, %3, %4};" ::"l"(p), "r"(w.x), "r"(w.y), "r"(w.z), "r"(w.w) : "memory");
  else if constexpr (B == 8)
    asm volatile("st.global.v2.b32 [%0], {%1, %2};" ::"l"(p), "r"(w.x), "r"(w.y) : "memory");
  else
    asm volatile("st.global.b32 [%0], %1;" ::"l"(p), "r"(w) : "memory");
#else
  *reinterpret_cast<W*>(p) = w;
#endif
}

namespace detail {

__host__ __device__ constexpr int cmin(int a, int b) { return a < b ? a : b; }

__device__ __forceinline__ unsigned lanes_below(int n) {  // n in [0, 32]
  return n >= 32 ? 0xFFFFFFFFu : ((1u << n) - 1u);
}

template <class T>
__device__ __forceinline__ T shfl_down(unsigned mask, T v, int d) {
  if constexpr (sizeof(T) == 8) {
    return bit_cast<T>(__shfl_down_sync(mask, bit_cast<unsigned long long>(v), d));
  } else if constexpr (sizeof(T) == 4) {
    return bit_cast<T>(__shfl_down_sync(mask, bit_cast<unsigned int>(v), d));
  } else if constexpr (sizeof(T) == 2) {
    const unsigned u = __shfl_down_sync(mask, unsigned(bit_cast<unsigned short>(v)), d);
    return bit_cast<T>((unsigned short)u);
  } else {
    static_assert(sizeof(T) == 1, "polyk: shuffle of types of 1, 2, 4 or 8 bytes only");
    const unsigned u = __shfl_down_sync(mask, unsigned(bit_cast<unsigned char>(v)), d);
    return bit_cast<T>((unsigned char)u);
  }
}

// Bit pattern with bits 0, S, 2S, ... (< 32).
__host__ __device__ constexpr unsigned stride_pattern(int S) {
  unsigned p = 0;
  for (int i = 0; i < 32; i += S) p |= 1u << i;
  return p;
}

// Segmented warp reduction: lane l reduces lanes l, l+S, l+2S, ... < seg_end
// (lane numbers within the warp; seg_end may differ between lanes).  The
// result is valid in the first lane of each segment.  MAXLEN bounds the number
// of elements of a segment.  All lanes in `mask` must call it.
template <class Op, class T, int S, int MAXLEN>
__device__ __forceinline__ T warp_seg_reduce(T v, unsigned mask, int lane, int seg_end) {
  if constexpr (MAXLEN <= 1) {
    return v;
  } else if constexpr (is_bool_v<T> && bool_kind<Op> != 0) {
    const unsigned b = __ballot_sync(mask, v);
    const unsigned m = (stride_pattern(S) << lane) & lanes_below(seg_end);
    if constexpr (bool_kind<Op> == 1) return (b & m) != 0u;
    else return (b & m) == m;
  } else {
#pragma unroll
    for (int k = 1; k < MAXLEN; k <<= 1) {
      const T o = shfl_down(mask, v, k * S);
      if (lane + k * S < seg_end) v = Op::apply(v, o);
    }
    return v;
  }
}

// Static shared scratch of N elements of T (raw storage: __half etc. have
// constructors, which __shared__ variables may not run).
template <class T, int N>
struct SmemArray {
  alignas(16) unsigned char raw[N * sizeof(T)];
  __device__ __forceinline__ T& operator[](int i) { return reinterpret_cast<T*>(raw)[i]; }
};

template <class Op, class T, int BX, int BY>
__device__ __forceinline__ T shfl_block_reduce_all(T v) {
  constexpr int N = BX * BY;
  static_assert(BX >= 1 && BY >= 1 && N <= 1024, "polyk: bad block shape");
  constexpr int W = (N + 31) / 32;
  const int tid = int(threadIdx.x) + int(threadIdx.y) * BX;
  const int lane = tid & 31, warp = tid >> 5;
  const int wn = cmin(32, N - warp * 32);
  v = warp_seg_reduce<Op, T, 1, cmin(32, N)>(v, lanes_below(wn), lane, wn);
  if constexpr (W == 1) {
    return v;
  } else {
    __shared__ SmemArray<T, W> sm;
    if (lane == 0) sm[warp] = v;
    __syncthreads();
    if (warp == 0) {
      if (lane < W) v = sm[lane];
      v = warp_seg_reduce<Op, T, 1, W>(v, 0xFFFFFFFFu, lane, W);
    }
    __syncthreads();  // sm may be reused by the next call
    return v;
  }
}

template <class Op, class T, int BX, int BY>
__device__ __forceinline__ T shfl_block_reduce_x(T v) {
  constexpr int N = BX * BY;
  static_assert(BX >= 1 && BY >= 1 && N <= 1024, "polyk: bad block shape");
  if constexpr (BX == 1) {
    return v;
  } else if constexpr (BY == 1) {
    return shfl_block_reduce_all<Op, T, BX, 1>(v);
  } else {
    const int x = int(threadIdx.x), y = int(threadIdx.y);
    const int tid = x + y * BX;
    const int lane = tid & 31, warp = tid >> 5;
    const int wn = cmin(32, N - warp * 32);
    const int row_start = y * BX, row_end = row_start + BX;
    const int seg_end = cmin(wn, row_end - warp * 32);
    v = warp_seg_reduce<Op, T, 1, cmin(BX, 32)>(v, lanes_below(wn), lane, seg_end);
    if constexpr (32 % BX == 0) {
      return v;  // rows never straddle warps
    } else {
      constexpr int SEGS = (BX - 1) / 32 + 2;  // max warps touched by one row
      __shared__ SmemArray<T, BY * SEGS> sm;
      const int first_warp = row_start >> 5;
      if (x == 0 || lane == 0) sm[y * SEGS + (warp - first_warp)] = v;
      __syncthreads();
      if (x == 0) {
        const int nseg = ((row_end - 1) >> 5) - first_warp + 1;
#pragma unroll
        for (int k = 1; k < SEGS; ++k)
          if (k < nseg) v = Op::apply(v, sm[y * SEGS + k]);
      }
      __syncthreads();
      return v;
    }
  }
}

template <class Op, class T, int BX, int BY>
__device__ __forceinline__ T shfl_block_reduce_y(T v) {
  constexpr int N = BX * BY;
  static_assert(BX >= 1 && BY >= 1 && N <= 1024, "polyk: bad block shape");
  if constexpr (BY == 1) {
    return v;
  } else if constexpr (BX == 1) {
    return shfl_block_reduce_all<Op, T, 1, BY>(v);
  } else if constexpr (BX < 32) {
    constexpr int W = (N + 31) / 32;
    const int x = int(threadIdx.x), y = int(threadIdx.y);
    const int tid = x + y * BX;
    const int lane = tid & 31, warp = tid >> 5;
    const int wn = cmin(32, N - warp * 32);
    // column x inside a warp: lanes l0, l0+BX, ...; head l0 < BX
    v = warp_seg_reduce<Op, T, BX, (32 + BX - 1) / BX>(v, lanes_below(wn), lane, wn);
    if constexpr (W == 1) {
      return v;
    } else {
      __shared__ SmemArray<T, W * BX> sm;
      if (lane < BX) sm[warp * BX + x] = v;  // lane < wn holds: the thread exists
      __syncthreads();
      if (y == 0) {  // tid == x < 32: warp 0, head of column x
#pragma unroll
        for (int w = 1; w < W; ++w) {
          const int l0 = (x - (32 * w) % BX + BX) % BX;  // first lane of column x in warp w
          if (32 * w + l0 < N) v = Op::apply(v, sm[w * BX + x]);
        }
      }
      __syncthreads();
      return v;
    }
  } else {
    // BX >= 32: a warp holds at most one element per column
    const int x = int(threadIdx.x), y = int(threadIdx.y);
    __shared__ SmemArray<T, N> sm;
    sm[x + y * BX] = v;
    __syncthreads();
    if (y == 0) {
#pragma unroll
      for (int k = 1; k < BY; ++k) v = Op::apply(v, sm[x + k * BX]);
    }
    __syncthreads();
    return v;
  }
}

#ifdef POLYK_BLOCK_REDUCE_CUB
template <class Op>
struct CubOp {
  template <class T>
  __device__ __forceinline__ T operator()(const T& a, const T& b) const { return Op::apply(a, b); }
};

template <class Op, class T, int BX, int BY>
__device__ __forceinline__ T cub_block_reduce_all(T v) {
  using BR = cub::BlockReduce<T, BX, cub::BLOCK_REDUCE_WARP_REDUCTIONS, BY>;
  __shared__ typename BR::TempStorage tmp;
  const T r = BR(tmp).Reduce(v, CubOp<Op>{});
  __syncthreads();  // tmp may be reused by the next call
  return r;
}

template <class Op, class T, int BX, int BY>
__device__ __forceinline__ T cub_block_reduce_x(T v) {
  if constexpr (BX == 1) {
    return v;
  } else if constexpr (BY == 1) {
    return cub_block_reduce_all<Op, T, BX, 1>(v);
  } else if constexpr (BX <= 32 && (BX & (BX - 1)) == 0) {
    using WR = cub::WarpReduce<T, BX>;
    __shared__ typename WR::TempStorage tmp[BY];
    return WR(tmp[threadIdx.y]).Reduce(v, CubOp<Op>{});
  } else {
    return shfl_block_reduce_x<Op, T, BX, BY>(v);
  }
}

template <class Op, class T, int BX, int BY>
__device__ __forceinline__ T cub_block_reduce_y(T v) {
  if constexpr (BY == 1) return v;
  else if constexpr (BX == 1) return cub_block_reduce_all<Op, T, 1, BY>(v);
  else return shfl_block_reduce_y<Op, T, BX, BY>(v);
}
#endif  // POLYK_BLOCK_REDUCE_CUB

}  // namespace detail

// Block of BX x BY threads (threadIdx.x, threadIdx.y; blockDim.z == 1).  Every
// thread of the block must call these at the same program point.
// Reduce over threadIdx.x within each row; valid where threadIdx.x == 0.
template <class Op, class T, int BX, int BY>
__device__ __forceinline__ T block_reduce_x(T v) {
#ifdef POLYK_BLOCK_REDUCE_CUB
  return detail::cub_block_reduce_x<Op, T, BX, BY>(v);
#else
  return detail::shfl_block_reduce_x<Op, T, BX, BY>(v);
#endif
}

// Reduce over threadIdx.y within each column; valid where threadIdx.y == 0.
template <class Op, class T, int BX, int BY>
__device__ __forceinline__ T block_reduce_y(T v) {
#ifdef POLYK_BLOCK_REDUCE_CUB
  return detail::cub_block_reduce_y<Op, T, BX, BY>(v);
#else
  return detail::shfl_block_reduce_y<Op, T, BX, BY>(v);
#endif
}

// Reduce each of a thread's V lane values over threadIdx.y (a y-reduce whose thread owns V
// consecutive outputs); valid where threadIdx.y == 0. One pass through shared memory for all
// lanes: V calls of block_reduce_y would take 2 V barriers (H100, bool [131072, 1024] over dim 0
// with vector[16]: the per-lane epilogue took 100 of 160 us).
template <class Op, class T, int BX, int BY, int V>
__device__ __forceinline__ void block_reduce_y_lanes(T (&v)[V]) {
  static_assert(BX >= 1 && BY >= 1 && BX * BY <= 1024 && V >= 1, "polyk: bad block shape");
  if constexpr (BY == 1) {
    return;
  } else if constexpr (V == 1) {
    v[0] = block_reduce_y<Op, T, BX, BY>(v[0]);
  } else {
    static_assert(BX * BY * V * sizeof(T) <= 32768, "polyk: lanes of a y-reduce take too much shared memory");
    __shared__ detail::SmemArray<T, BX * BY * V> sm;  // lane-major: a row of BX threads per (lane, y)
    const int x = int(threadIdx.x), y = int(threadIdx.y);
#pragma unroll
    for (int l = 0; l < V; ++l) sm[(l * BY + y) * BX + x] = v[l];
    __syncthreads();
    if (y == 0) {
#pragma unroll
      for (int k = 1; k < BY; ++k)
#pragma unroll
        for (int l = 0; l < V; ++l) v[l] = Op::apply(v[l], sm[(l * BY + k) * BX + x]);
    }
    __syncthreads();  // sm may be reused by the next call
  }
}

// Reduce over the whole block; valid in thread (0, 0).
template <class Op, class T, int BX, int BY>
__device__ __forceinline__ T block_reduce_all(T v) {
#ifdef POLYK_BLOCK_REDUCE_CUB
  return detail::cub_block_reduce_all<Op, T, BX, BY>(v);
#else
  return detail::shfl_block_reduce_all<Op, T, BX, BY>(v);
#endif
}

// The value of the thread at threadIdx.x == 0 of the caller's row (Axis 0) or at threadIdx.y == 0
// of its column (Axis 1), in every thread of that row or column: where block_reduce_x / _y left
// their result. A row inside a warp takes one shuffle; otherwise shared memory and two barriers.
// Every thread of the block must call it at the same program point.
template <int Axis, class T, int BX, int BY>
__device__ __forceinline__ T block_broadcast(T v) {
  static_assert(Axis == 0 || Axis == 1, "polyk: broadcast along x (0) or y (1)");
  if constexpr ((Axis == 0 ? BX : BY) == 1) {
    return v;
  } else if constexpr (Axis == 0 && 32 % BX == 0 && BX * BY % 32 == 0) {
    using W = detail::uint_of_t<T>;  // the value's bits, shuffled as a 32- or 64-bit word
    using U = std::conditional_t<sizeof(T) == 8, unsigned long long, unsigned int>;
    const U u = __shfl_sync(0xFFFFFFFFu, U(detail::bit_cast<W>(v)), 0, BX);
    return detail::bit_cast<T>(W(u));
  } else {
    __shared__ detail::SmemArray<T, Axis == 0 ? BY : BX> sm;
    const int x = int(threadIdx.x), y = int(threadIdx.y);
    if ((Axis == 0 ? x : y) == 0) sm[Axis == 0 ? y : x] = v;
    __syncthreads();
    const T r = sm[Axis == 0 ? y : x];
    __syncthreads();  // sm may be reused by the next call
    return r;
  }
}

// ---------------------------------------------------------------------------
// Deterministic multi-block combination
// ---------------------------------------------------------------------------
namespace detail {
template <class T>
__device__ __forceinline__ T load_cg(const T* p) {
  using U = uint_of_t<T>;
  return bit_cast<T>(__ldcg(reinterpret_cast<const U*>(p)));
}
}  // namespace detail

namespace detail {
// How V consecutive T move: `bytes` in pieces of `piece` bytes (16, 8 or 4; 0: element by
// element), each a word P (as load_vec's).
template <class T, int V>
struct LanePieces {
  static constexpr int bytes = int(sizeof(T)) * V;
  static constexpr int piece = bytes % 16 == 0 ? 16 : bytes % 8 == 0 ? 8 : bytes % 4 == 0 ? 4 : 0;
  using P = word_t<piece>;
};

// V consecutive elements at p (aligned to their size) through L2.
template <class T, int V>
__device__ __forceinline__ void load_lanes_cg(const T* p, T (&v)[V]) {
  using L = LanePieces<T, V>;
  if constexpr (L::piece == 0) {
#pragma unroll
    for (int l = 0; l < V; ++l) v[l] = load_cg(p + l);
  } else {
#pragma unroll
    for (int i = 0; i < L::bytes / L::piece; ++i) {
      const typename L::P u = __ldcg(reinterpret_cast<const typename L::P*>(p) + i);
      memcpy(reinterpret_cast<char*>(v) + L::piece * i, &u, L::piece);
    }
  }
}

// The store of load_lanes_cg.
template <class T, int V>
__device__ __forceinline__ void store_lanes(T* p, const T (&v)[V]) {
  using L = LanePieces<T, V>;
  if constexpr (L::piece == 0) {
#pragma unroll
    for (int l = 0; l < V; ++l) p[l] = v[l];
  } else {
#pragma unroll
    for (int i = 0; i < L::bytes / L::piece; ++i) {
      typename L::P u;
      memcpy(&u, reinterpret_cast<const char*>(v) + L::piece * i, L::piece);
      reinterpret_cast<typename L::P*>(p)[i] = u;
    }
  }
}

// The ordered return of ordered_combine_block and ordered_combine_block_lanes: each line's leader
// owns V outputs oidx[0..V) (V > 1 only for a y-reduce, AXIS 1, whose every block reduces into all
// of them with the same thread). It publishes its V partials behind one fence and counts them
// once, in counters[oidx[0]]; the block that counts last loads every lane's partials of one slot
// together, in the fixed order, and reduces them as the block reduction does.
// The partials of output o from slot s lie where the combining threads read them side by side:
//  - AXIS 0 at partials[o * nslots + s]: a line's threads read consecutive slots;
//  - AXIS 1 at partials[s * nouts + o]: a warp's threads (lines) read consecutive outputs, and a
//    thread's V lanes, when they are V consecutive outputs from a multiple of V (every generated
//    kernel's), as one vector. Output-major, each partial took its own 32-byte sector: the last
//    block's loads cost about 1 ns a partial (H100, f16 [131072, 1024] over dim 0 with vector[4]:
//    9.4 us of 112; bench/results/2026-11-22-h100-epilogue.txt, A and B).
template <class Op, class T, int BX, int BY, int AXIS, int V, class TOut, class Idx>
__device__ __forceinline__ void ordered_combine_lines(T* partials, unsigned int* counters, int nslots, long long nouts,
                                                      int slot, bool leader, const Idx (&oidx)[V], const T (&value)[V],
                                                      TOut* out) {
  static_assert(V == 1 || AXIS == 1, "polyk: several outputs per line only in a y-reduce");
  constexpr int LINES = AXIS == 0 ? BY : BX;
  constexpr int B = AXIS == 0 ? BX : BY;
  const int line = AXIS == 0 ? int(threadIdx.y) : int(threadIdx.x);
  const int k = AXIS == 0 ? int(threadIdx.x) : int(threadIdx.y);
  auto at = [&](long long o, long long s) { return AXIS == 0 ? o * nslots + s : s * nouts + o; };
  auto packed = [&](const auto& o) {
    bool p = V > 1 && nouts % V == 0 && (long long)o[0] % V == 0;
#pragma unroll
    for (int l = 1; l < V; ++l) p = p && (long long)o[l] == (long long)o[0] + l;
    return p;
  };
  __shared__ long long last_of[LINES][V];  // the outputs this line combines; [0] is -1 if none
  if (leader) {
    if (packed(oidx)) {
      store_lanes(partials + at(oidx[0], slot), value);
    } else {
#pragma unroll
      for (int l = 0; l < V; ++l) partials[at(oidx[l], slot)] = value[l];
    }
    // Counting releases this block's partials and acquires those of the blocks counted before
    // (the counts form a release sequence); the barrier below hands them to the whole block.
    const bool last = fetch_add_acq_rel(&counters[oidx[0]], 1u) == unsigned(nslots - 1);
#pragma unroll
    for (int l = 0; l < V; ++l) last_of[line][l] = last ? (long long)oidx[l] : -1;
  } else if (k == 0) {
    last_of[line][0] = -1;
  }
  __syncthreads();
  // Most blocks combine nothing and skip the rest (block-uniform). H100, with the acq_rel count in
  // place of a fence on each side: all-reduces of 1M elements 0.3-0.4 us faster (max f32 9.1 ->
  // 8.8 us, sum i32 8.6 -> 8.2; bench/results/2026-11-23-h100-rows.txt, C).
  bool any = false;
#pragma unroll
  for (int q = 0; q < LINES; ++q) any = any || last_of[q][0] >= 0;
  if (!any) return;
  const bool mine = last_of[line][0] >= 0;
  T acc[V];
#pragma unroll
  for (int l = 0; l < V; ++l) acc[l] = Op::template identity<T>();
  if (mine) {
    long long o[V];
#pragma unroll
    for (int l = 0; l < V; ++l) o[l] = last_of[line][l];
    if (packed(o)) {
      for (int s = k; s < nslots; s += B) {
        T v[V];
        load_lanes_cg(partials + at(o[0], s), v);
#pragma unroll
        for (int l = 0; l < V; ++l) acc[l] = Op::apply(acc[l], v[l]);
      }
    } else {
      for (int s = k; s < nslots; s += B)
#pragma unroll
        for (int l = 0; l < V; ++l) acc[l] = Op::apply(acc[l], load_cg(partials + at(o[l], s)));
    }
  }
  if constexpr (AXIS == 0) acc[0] = block_reduce_x<Op, T, BX, BY>(acc[0]);
  else block_reduce_y_lanes<Op, T, BX, BY, V>(acc);
  if (mine && k == 0) {
#pragma unroll
    for (int l = 0; l < V; ++l) out[last_of[line][l]] = static_cast<TOut>(acc[l]);
    counters[last_of[line][0]] = 0u;
  }
}
}  // namespace detail

// The block-wide form of the ordered return, called by every thread of a BX x BY block at the
// same point (it holds barriers). Along the reduction's thread axis AXIS (0: x, 1: y), the threads
// with the same index on the other axis form a line that reduced into one output element
// `oidx`; the line's leader (index 0 on AXIS, live) publishes the block's value as partial
// `slot` of that element (of nslots; partials holds nouts * nslots, laid out as
// detail::ordered_combine_lines says) and counts it in counters[oidx]. The
// block that publishes an element's last partial combines all of them with the whole line:
// thread k takes partials k, k + B, k + 2B, ... in that order, then the line reduces as the block
// reduction does. The order is fixed, so every run gives the same bits, and the combine costs
// nslots / B loads per thread instead of nslots in one thread. The last block writes out[oidx]
// (converted once to TOut: f16 / bf16 outputs of f32 partials) and resets the counter for the
// next launch; no initialisation of `out` is needed.
template <class Op, class T, int BX, int BY, int AXIS, class TOut, class Idx>
__device__ __forceinline__ void ordered_combine_block(T* partials, unsigned int* counters, int nslots, long long nouts,
                                                      int slot, bool leader, Idx oidx, T value, TOut* out) {
  const Idx o[1] = {oidx};
  const T v[1] = {value};
  detail::ordered_combine_lines<Op, T, BX, BY, AXIS, 1>(partials, counters, nslots, nouts, slot, leader, o, v, out);
}

// ordered_combine_block for a y-reduce whose thread owns V outputs `oidx[0..V)` (the lanes of its
// columns), their values block-reduced already (block_reduce_y_lanes): the same partials and the
// same fixed order per output, but one fence, one count and one block reduction per block instead
// of V of each.
template <class Op, class T, int BX, int BY, int V, class TOut, class Idx>
__device__ __forceinline__ void ordered_combine_block_lanes(T* partials, unsigned int* counters, int nslots,
                                                            long long nouts, int slot, bool leader, const Idx (&oidx)[V],
                                                            const T (&value)[V], TOut* out) {
  detail::ordered_combine_lines<Op, T, BX, BY, 1, V>(partials, counters, nslots, nouts, slot, leader, oidx, value, out);
}

// One thread per (block, output) calls this.  `partials` (global, nslots
// elements) and `*counter` (global, must be 0 before the first launch) belong
// to this output element.  The block that arrives last combines
// partials[0..nslots-1] in index order -- bit-identical results from run to
// run -- and writes *out (overwrite_out ? result : Op::apply(*out, result)),
// then resets *counter to 0 for the next launch.  Returns nothing; *out is
// only complete after the kernel has finished.
template <class Op, class T>
__device__ void ordered_combine(T* partials, unsigned int* counter, int slot, int nslots,
                                T block_value, T* out, bool overwrite_out) {
  partials[slot] = block_value;
  __threadfence();  // publish the partial before announcing it
  const unsigned old = atomicAdd(counter, 1u);
  if (old == unsigned(nslots - 1)) {
    __threadfence();  // all partials published before their increments
    T acc = detail::load_cg(&partials[0]);
    for (int i = 1; i < nslots; ++i) acc = Op::apply(acc, detail::load_cg(&partials[i]));
    if (overwrite_out) *out = acc;
    else *out = Op::apply(*out, acc);
    atomicExch(counter, 0u);
  }
}

#ifndef __CUDACC_RTC__
// A launcher's temporaries (host side): allocated and freed in stream order from a pool of polyk's
// own on each device, which keeps its memory mapped between calls (release threshold: all of it).
// The device's default pool hands memory back to the OS at every synchronisation (its threshold is
// 0), so a launcher called between synchronisations mapped its temporaries afresh each call
// (H100, bench/results/2026-11-27-h100-temp-pool.txt: softmax 23.2 -> 21.6 us, layernorm 22.6 ->
// 21.1, Fousek's F 31.3 -> 29.9). The pools live until the process ends and keep the largest
// temporaries any call needed, as torch's caching allocator does; polyk::tempTrim() hands what
// no launch holds back to the device (torch.cuda.empty_cache()'s counterpart).
struct TempPools {
  std::mutex mutex;
  std::vector<cudaMemPool_t> pools;
  static TempPools& get() {
    static TempPools p;
    return p;
  }
};

inline cudaError_t tempTrim() {
  TempPools& t = TempPools::get();
  std::lock_guard<std::mutex> lock(t.mutex);
  for (cudaMemPool_t pool : t.pools) {
    cudaError_t err;
    if (pool && (err = cudaMemPoolTrimTo(pool, 0)) != cudaSuccess) return err;
  }
  return cudaSuccess;
}

inline cudaError_t tempMalloc(void** p, size_t bytes, cudaStream_t stream) {
  TempPools& t = TempPools::get();
  int device = 0;
  cudaError_t err;
  if ((err = cudaGetDevice(&device)) != cudaSuccess) return err;
  cudaMemPool_t pool;
  {
    std::lock_guard<std::mutex> lock(t.mutex);
    if ((size_t)device >= t.pools.size()) t.pools.resize((size_t)device + 1, nullptr);
    if (!t.pools[device]) {
      cudaMemPoolProps props = {};
      props.allocType = cudaMemAllocationTypePinned;
      props.location.type = cudaMemLocationTypeDevice;
      props.location.id = device;
      cudaMemPool_t made;
      if ((err = cudaMemPoolCreate(&made, &props)) != cudaSuccess) return err;
      uint64_t keep = UINT64_MAX;
      if ((err = cudaMemPoolSetAttribute(made, cudaMemPoolAttrReleaseThreshold, &keep)) != cudaSuccess) {
        cudaMemPoolDestroy(made);
        return err;
      }
      t.pools[device] = made;
    }
    pool = t.pools[device];
  }
  return cudaMallocFromPoolAsync(p, bytes, pool, stream);
}

// The scratch of one launcher's ordered return (host side): partials and their counters, one set
// per device and stream. Launches on one stream run in order and share the stream's set (the last
// block of each output resets its counter for the next launch); launches on other streams or
// devices get their own, so a launcher may run on several streams at once and be called from
// several host threads. A set is allocated, grown and zeroed in stream order (cudaMallocAsync /
// cudaFreeAsync / cudaMemsetAsync on the launch's stream), so a launch after a growth never sees
// memory that an earlier launch on the stream still uses. Streams are told apart by handle (CUDA
// frees a destroyed stream, and so its handle, only once its work is done; cudaStreamGetId is not
// allowed during a graph capture) and, for a per-thread default stream, by host thread. A set
// cannot be made or grown while the stream is being captured into a graph: call the launcher once
// on that stream before capturing. Sets live until the process ends.
template <class T>
class OrderedScratch {
 public:
  cudaError_t get(cudaStream_t stream, long long npartials, long long ncounters, T** partials,
                  unsigned int** counters) {
    int device = 0;
    cudaError_t err;
    if ((err = cudaGetDevice(&device)) != cudaSuccess) return err;
#ifdef CUDA_API_PER_THREAD_DEFAULT_STREAM
    const bool per_thread = stream == cudaStreamPerThread || stream == nullptr;
#else
    const bool per_thread = stream == cudaStreamPerThread;
#endif
    const std::thread::id thread = per_thread ? std::this_thread::get_id() : std::thread::id();
    std::lock_guard<std::mutex> lock(mutex_);
    size_t i = 0;
    while (i < sets_.size() && !(sets_[i].device == device && sets_[i].stream == stream && sets_[i].thread == thread)) ++i;
    if (i == sets_.size()) sets_.push_back(Set{device, stream, thread});
    Set& set = sets_[i];
    if (npartials > set.npartials || ncounters > set.ncounters) {
      cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
      if ((err = cudaStreamIsCapturing(stream, &capture)) != cudaSuccess) return err;
      if (capture != cudaStreamCaptureStatusNone) return cudaErrorStreamCaptureUnsupported;
    }
    if ((err = grow(set.partials, set.npartials, npartials, false, stream)) != cudaSuccess ||
        (err = grow(set.counters, set.ncounters, ncounters, true, stream)) != cudaSuccess)
      return err;
    *partials = set.partials;
    *counters = set.counters;
    return cudaSuccess;
  }

 private:
  // Replaces p (of `have` elements) by `need` elements, zeroed if asked, where it is too small.
  template <class E>
  static cudaError_t grow(E*& p, long long& have, long long need, bool zero, cudaStream_t stream) {
    if (need <= have) return cudaSuccess;
    cudaError_t err;
    if (p && (err = cudaFreeAsync(p, stream)) != cudaSuccess) return err;
    p = nullptr;
    have = 0;
    if ((err = cudaMallocAsync((void**)&p, sizeof(E) * need, stream)) != cudaSuccess ||
        (zero && (err = cudaMemsetAsync(p, 0, sizeof(E) * need, stream)) != cudaSuccess))
      return err;
    have = need;
    return cudaSuccess;
  }

  struct Set {
    int device;
    cudaStream_t stream;
    std::thread::id thread;  // the host thread of a per-thread default stream, else none
    T* partials = nullptr;
    unsigned int* counters = nullptr;
    long long npartials = 0, ncounters = 0;
  };
  std::mutex mutex_;
  std::vector<Set> sets_;
};
#endif  // __CUDACC_RTC__

}  // namespace polyk

#undef POLYK_HD
