// Element types of the input language and how each is stored, computed and accumulated in C and
// CUDA. f16 / bf16 values are computed in float (the storage type is converted at loads and
// stores), which is what both the generated CUDA and the sequential C reference do.
#pragma once

#include <optional>
#include <string>

namespace polyk {

enum class DType { Bool, I32, I64, F16, BF16, F32, F64 };

std::optional<DType> parseDType(const std::string &name);
const char *dtypeName(DType t);
bool isFloat(DType t);
bool isHalf(DType t);    // f16, bf16: stored in 2 bytes, computed in f32
bool isInteger(DType t); // i32, i64
int dtypeBytes(DType t);
/// Type in which values of `t` are computed (f16 / bf16 -> f32).
DType computeType(DType t);
/// Result of a binary arithmetic operation on two compute types.
DType promote(DType a, DType b);

/// C spelling of the storage type in the sequential C (host.h types for f16 / bf16).
const char *cStorageType(DType t);
/// CUDA spelling of the storage type.
const char *cudaStorageType(DType t);
/// C / CUDA spelling of a compute type (never f16 / bf16).
const char *computeCType(DType t);

/// Reduction operators of `+=!`, `*=!`, `max=!`, `min=!`, `&&=!`, `||=!`.
enum class ReduceOp { Sum, Prod, Max, Min, And, Or };
std::optional<ReduceOp> parseReduceOp(const std::string &assignOp); // "+=" -> Sum, ...
/// The type a reduction into an output of type `out` accumulates in: the compute type, except f32
/// products, which accumulate in f64 (products of values near 1 round with a bias in f32: a
/// thread's chain of 23 f32 products put 60M elements 1.5% off, in f64 1e-7; docs/sizes.md).
DType accumulatorType(ReduceOp op, DType out);
const char *reduceOpName(ReduceOp op);                               // "sum", ...
std::optional<ReduceOp> reduceOpFromName(const std::string &name);
const char *reduceOpTag(ReduceOp op);                                // "polyk::OpSum", ...
/// Identity of `op` in compute type `t`, as a C expression.
std::string reduceIdentity(ReduceOp op, DType t);
/// `acc OP v` as a C expression in compute type `t`: for CUDA device code where `device`, else for C
/// with polyk/host.h (they differ only in the name of the floating max / min function).
std::string reduceApply(ReduceOp op, DType t, const std::string &acc, const std::string &v, bool device);
/// max(a, b) (or min) of floats in compute type `t` (f32 or f64): NaN is missing, -0 < +0. The
/// device's fmaxf / fmin... where `device`, else polyk/host.h's polyk_fmaxf / polyk_fmin...
std::string floatMinMax(bool isMax, DType t, const std::string &a, const std::string &b, bool device);

} // namespace polyk
