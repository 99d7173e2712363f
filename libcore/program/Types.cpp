// Element types and reduction operators (see Types.h).
#include "polyk/Types.h"

#include <stdexcept>

namespace polyk {

std::optional<DType> parseDType(const std::string &n) {
  if (n == "bool") return DType::Bool;
  if (n == "i32") return DType::I32;
  if (n == "i64") return DType::I64;
  if (n == "f16") return DType::F16;
  if (n == "bf16") return DType::BF16;
  if (n == "f32") return DType::F32;
  if (n == "f64") return DType::F64;
  return std::nullopt;
}

const char *dtypeName(DType t) {
  switch (t) {
  case DType::Bool: return "bool";
  case DType::I32: return "i32";
  case DType::I64: return "i64";
  case DType::F16: return "f16";
  case DType::BF16: return "bf16";
  case DType::F32: return "f32";
  case DType::F64: return "f64";
  }
  return "?";
}

bool isFloat(DType t) { return t == DType::F16 || t == DType::BF16 || t == DType::F32 || t == DType::F64; }
bool isHalf(DType t) { return t == DType::F16 || t == DType::BF16; }
bool isInteger(DType t) { return t == DType::I32 || t == DType::I64; }

int dtypeBytes(DType t) {
  switch (t) {
  case DType::Bool: return 1;
  case DType::F16:
  case DType::BF16: return 2;
  case DType::I32:
  case DType::F32: return 4;
  case DType::I64:
  case DType::F64: return 8;
  }
  return 0;
}

DType computeType(DType t) { return isHalf(t) ? DType::F32 : t; }

DType accumulatorType(ReduceOp op, DType out) { return op == ReduceOp::Prod && out == DType::F32 ? DType::F64 : computeType(out); }

DType promote(DType a, DType b) {
  a = computeType(a);
  b = computeType(b);
  auto rank = [](DType t) {
    switch (t) {
    case DType::Bool: return 0;
    case DType::I32: return 1;
    case DType::I64: return 2;
    case DType::F32: return 3;
    case DType::F64: return 4;
    default: return 3;
    }
  };
  return rank(a) >= rank(b) ? a : b;
}

const char *cStorageType(DType t) {
  switch (t) {
  case DType::Bool: return "bool";
  case DType::I32: return "int32_t";
  case DType::I64: return "int64_t";
  case DType::F16: return "polyk_f16_t";
  case DType::BF16: return "polyk_bf16_t";
  case DType::F32: return "float";
  case DType::F64: return "double";
  }
  return "?";
}

const char *cudaStorageType(DType t) {
  switch (t) {
  case DType::F16: return "__half";
  case DType::BF16: return "__nv_bfloat16";
  default: return cStorageType(t);
  }
}

const char *computeCType(DType t) { return cStorageType(computeType(t)); }

std::optional<ReduceOp> parseReduceOp(const std::string &a) {
  if (a == "+=") return ReduceOp::Sum;
  if (a == "*=") return ReduceOp::Prod;
  if (a == "max=") return ReduceOp::Max;
  if (a == "min=") return ReduceOp::Min;
  if (a == "&&=") return ReduceOp::And;
  if (a == "||=") return ReduceOp::Or;
  return std::nullopt;
}

const char *reduceOpName(ReduceOp op) {
  switch (op) {
  case ReduceOp::Sum: return "sum";
  case ReduceOp::Prod: return "prod";
  case ReduceOp::Max: return "max";
  case ReduceOp::Min: return "min";
  case ReduceOp::And: return "and";
  case ReduceOp::Or: return "or";
  }
  return "?";
}

std::optional<ReduceOp> reduceOpFromName(const std::string &n) {
  for (ReduceOp op : {ReduceOp::Sum, ReduceOp::Prod, ReduceOp::Max, ReduceOp::Min, ReduceOp::And, ReduceOp::Or})
    if (n == reduceOpName(op)) return op;
  return std::nullopt;
}

const char *reduceOpTag(ReduceOp op) {
  switch (op) {
  case ReduceOp::Sum: return "polyk::OpSum";
  case ReduceOp::Prod: return "polyk::OpProd";
  case ReduceOp::Max: return "polyk::OpMax";
  case ReduceOp::Min: return "polyk::OpMin";
  case ReduceOp::And: return "polyk::OpAnd";
  case ReduceOp::Or: return "polyk::OpOr";
  }
  return "?";
}

std::string reduceIdentity(ReduceOp op, DType t) {
  t = computeType(t);
  bool f = isFloat(t);
  switch (op) {
  case ReduceOp::Sum: return f ? (t == DType::F64 ? "0.0" : "0.0f") : (t == DType::Bool ? "false" : "0");
  case ReduceOp::Prod: return f ? (t == DType::F64 ? "1.0" : "1.0f") : (t == DType::Bool ? "true" : "1");
  case ReduceOp::And: return t == DType::Bool ? "true" : "1";
  case ReduceOp::Or: return t == DType::Bool ? "false" : "0";
  case ReduceOp::Max:
    switch (t) {
    case DType::Bool: return "false";
    case DType::I32: return "INT32_MIN";
    case DType::I64: return "INT64_MIN";
    case DType::F64: return "(-HUGE_VAL)";
    default: return "(-HUGE_VALF)";
    }
  case ReduceOp::Min:
    switch (t) {
    case DType::Bool: return "true";
    case DType::I32: return "INT32_MAX";
    case DType::I64: return "INT64_MAX";
    case DType::F64: return "HUGE_VAL";
    default: return "HUGE_VALF";
    }
  }
  throw std::logic_error("reduceIdentity");
}

std::string floatMinMax(bool isMax, DType t, const std::string &a, const std::string &b, bool device) {
  return std::string(device ? "" : "polyk_") + (isMax ? "fmax" : "fmin") + (t == DType::F64 ? "" : "f") + "(" + a + ", " +
         b + ")";
}

std::string reduceApply(ReduceOp op, DType t, const std::string &a, const std::string &v, bool device) {
  t = computeType(t);
  // Floating max / min: NaN is missing and -0 < +0 (IEEE 754-2019 maximumNumber), as polyk::OpMax
  // in the block reductions: the device's fmaxf is one instruction (max.f32) with these semantics,
  // polyk_fmaxf in polyk/host.h is the C one.  `v > a ? v : a` kept -0 over +0 and took a compare,
  // a select and, for f16, a branch per element.
  if ((op == ReduceOp::Max || op == ReduceOp::Min) && isFloat(t)) return floatMinMax(op == ReduceOp::Max, t, a, v, device);
  // Logical operators without short circuit: `acc && x[i]` would make each load wait for the
  // previous element's value (no loads in flight: bool reductions ran at a third of the
  // bandwidth); `(acc != 0) & (x[i] != 0)` loads every element unconditionally.
  auto logical = [&](const char *bitOp) { return "((" + a + " != 0) " + bitOp + " (" + v + " != 0))"; };
  switch (op) {
  case ReduceOp::Sum: return t == DType::Bool ? logical("|") : "(" + a + " + " + v + ")";
  case ReduceOp::Prod: return t == DType::Bool ? logical("&") : "(" + a + " * " + v + ")";
  case ReduceOp::Max: return "(" + v + " > " + a + " ? " + v + " : " + a + ")";
  case ReduceOp::Min: return "(" + v + " < " + a + " ? " + v + " : " + a + ")";
  case ReduceOp::And: return logical("&");
  case ReduceOp::Or: return logical("|");
  }
  throw std::logic_error("reduceApply");
}

} // namespace polyk
