// Expressions of the input language printed as C or CUDA in their compute types (f16 / bf16 are
// computed in float; literals take their context's type), identically for the generated kernels
// and the sequential references so that both compute the same function (but pow with a constant
// exponent, polyk/math.h: on the device rsqrtf where the reference divides by sqrt).
#include "CodegenInternal.h"

#include <cstdlib>
#include <stdexcept>

namespace polyk::codegen {

namespace {

std::string literalIn(const std::string &text, bool isFloat, DType t) {
  // A negated literal, `(-1.5)`: spelled in `t` inside (`(-1.5f)`, not `(-1.5)f`).
  if (text.size() > 3 && text.compare(0, 2, "(-") == 0 && text.back() == ')')
    return "(-" + literalIn(text.substr(2, text.size() - 3), isFloat, t) + ")";
  switch (t) {
  case DType::F32: {
    std::string s = text;
    if (!isFloat) s += ".0";
    if (s.find_first_of("eE") == std::string::npos && s.find('.') == std::string::npos) s += ".0";
    return s + "f";
  }
  case DType::F64: return isFloat ? text : text + ".0";
  case DType::Bool: return "(" + text + " != 0)";
  case DType::I64: return isFloat ? "((int64_t)" + text + ")" : text + "LL";
  default: return isFloat ? "((int32_t)" + text + ")" : text;
  }
}

DType combine(const Value &a, const Value &b) {
  if (a.weak && b.weak) return (a.type == DType::F32 || b.type == DType::F32) ? DType::F32 : DType::I32;
  if (a.weak) return (a.type == DType::F32 && !isFloat(b.type)) ? DType::F32 : b.type;
  if (b.weak) return (b.type == DType::F32 && !isFloat(a.type)) ? DType::F32 : a.type;
  return promote(a.type, b.type);
}

bool floatingType(DType t) { return t == DType::F32 || t == DType::F64; }

std::string mathFn(const std::string &name, DType t) { return t == DType::F64 ? name : name + "f"; }

/// pow(A, b) for a literal exponent b that has a cheaper form (polyk/math.h says how close), or
/// "": x * x, sqrt and its reciprocal, x * sqrt(x) and its reciprocal (nvcc's powf is a long
/// sequence: N-body's pow(r2, -1.5)).
std::string powForm(const Value &b, DType t, const std::string &A) {
  if (!b.weak) return "";
  std::string text = b.text;
  bool negative = text.size() > 3 && text.compare(0, 2, "(-") == 0 && text.back() == ')';
  if (negative) text = text.substr(2, text.size() - 3);
  char *end = nullptr;
  double v = std::strtod(text.c_str(), &end);
  if (end == text.c_str() || *end != '\0') return "";
  if (negative) v = -v;
  if (v == 2) return mathFn("polyk_pow2", t) + "(" + A + ")";
  if (v == 0.5) return mathFn("sqrt", t) + "(" + A + ")";
  if (v == -0.5) return mathFn("polyk_powm0_5", t) + "(" + A + ")";
  if (v == 1.5) return mathFn("polyk_pow1_5", t) + "(" + A + ")";
  if (v == -1.5) return mathFn("polyk_powm1_5", t) + "(" + A + ")";
  return "";
}

} // namespace

std::string convert(const Value &v, DType t) {
  if (v.type == t && !v.weak) return v.text;
  if (v.weak) {
    // A literal keeps its own spelling and gets the suffix of t.
    bool isFloatLit = v.type == DType::F32;
    std::string raw = v.text;
    return literalIn(raw, isFloatLit, t);
  }
  if (t == DType::Bool) return "(" + v.text + " != 0)";
  return "((" + std::string(computeCType(t)) + ")" + v.text + ")";
}

Value printValue(const ExprPtr &e, Dialect d, const AccessPrinter &access, const std::map<std::string, DType> &types) {
  size_t counter = 0;
  std::function<Value(const ExprPtr &)> go = [&](const ExprPtr &x) -> Value {
    switch (x->kind) {
    case Expr::Kind::Number: return {x->text, x->isFloatLiteral ? DType::F32 : DType::I32, true};
    case Expr::Kind::Access: {
      DType t = computeType(types.at(x->access.tensor));
      return {access(x->access, counter++), t, false};
    }
    case Expr::Kind::Unary: {
      Value a = go(x->args[0]);
      if (x->text == "!") return {"(!" + convert(a, DType::Bool) + ")", DType::Bool, false};
      DType t = a.weak ? (a.type == DType::F32 ? DType::F32 : DType::I32) : a.type;
      if (t == DType::Bool) t = DType::I32;
      // A negated literal stays a literal, spelled in its context's type when converted.
      if (a.weak) return {"(-" + a.text + ")", t, true};
      return {"(-" + convert(a, t) + ")", t, false};
    }
    case Expr::Kind::Binary: {
      Value a = go(x->args[0]), b = go(x->args[1]);
      const std::string &op = x->text;
      if (op == "&&" || op == "||")
        return {"(" + convert(a, DType::Bool) + " " + op + " " + convert(b, DType::Bool) + ")", DType::Bool, false};
      DType t = combine(a, b);
      if (op == "==" || op == "!=" || op == "<" || op == "<=" || op == ">" || op == ">=")
        return {"(" + convert(a, t) + " " + op + " " + convert(b, t) + ")", DType::Bool, false};
      if (t == DType::Bool) t = DType::I32; // arithmetic on booleans is integer arithmetic
      if (op == "%" && floatingType(t))
        return {mathFn("fmod", t) + "(" + convert(a, t) + ", " + convert(b, t) + ")", t, false};
      return {"(" + convert(a, t) + " " + op + " " + convert(b, t) + ")", t, false};
    }
    case Expr::Kind::Select: {
      Value c = go(x->args[0]), a = go(x->args[1]), b = go(x->args[2]);
      DType t = combine(a, b);
      return {"(" + convert(c, DType::Bool) + " ? " + convert(a, t) + " : " + convert(b, t) + ")", t, false};
    }
    case Expr::Kind::Call: {
      const std::string &f = x->text;
      if (auto cast = parseDType(f)) {
        Value a = go(x->args[0]);
        DType ct = computeType(*cast);
        std::string v = convert(a, ct);
        return {roundToStorage(d, *cast, v), ct, false};
      }
      if (f == "max" || f == "min") {
        Value a = go(x->args[0]), b = go(x->args[1]);
        DType t = combine(a, b);
        std::string A = convert(a, t), B = convert(b, t);
        // Floats as the reductions' max / min (NaN is missing, -0 < +0, either order): fmaxf is
        // one max.f32 on the device, polyk_fmaxf the C of polyk/host.h. `A > B ? A : B` gave
        // max(0, NaN) = NaN but max(NaN, 0) = 0.
        if (floatingType(t)) return {floatMinMax(f == "max", t, A, B, d == Dialect::Cuda), t, false};
        return {"(" + A + (f == "max" ? " > " : " < ") + B + " ? " + A + " : " + B + ")", t, false};
      }
      if (f == "pow") {
        Value a = go(x->args[0]), b = go(x->args[1]);
        DType t = combine(a, b);
        if (!floatingType(t)) t = DType::F32;
        if (std::string f = powForm(b, t, convert(a, t)); !f.empty()) return {f, t, false};
        return {mathFn("pow", t) + "(" + convert(a, t) + ", " + convert(b, t) + ")", t, false};
      }
      Value a = go(x->args[0]);
      DType t = a.weak ? DType::F32 : a.type;
      if (f == "abs") {
        if (t == DType::Bool) t = DType::I32;
        std::string A = convert(a, t);
        return {"(" + A + " < 0 ? -" + A + " : " + A + ")", t, false};
      }
      if (f == "relu") {
        if (t == DType::Bool) t = DType::I32;
        std::string A = convert(a, t);
        return {"(" + A + " > 0 ? " + A + " : " + convert({"0", DType::I32, true}, t) + ")", t, false};
      }
      if (!floatingType(t)) t = DType::F32;
      std::string A = convert(a, t);
      std::string one = t == DType::F64 ? "1.0" : "1.0f";
      if (f == "sigmoid") return {"(" + one + " / (" + one + " + " + mathFn("exp", t) + "(-" + A + ")))", t, false};
      if (f == "rsqrt") return {"(" + one + " / " + mathFn("sqrt", t) + "(" + A + "))", t, false};
      return {mathFn(f, t) + "(" + A + ")", t, false};
    }
    }
    throw std::logic_error("printValue");
  };
  return go(e);
}

std::string loadElement(Dialect d, DType t, const std::string &lv) {
  if (t == DType::F16) return (d == Dialect::Cuda ? "__half2float(" : "polyk_f16_to_f32(") + lv + ")";
  if (t == DType::BF16) return (d == Dialect::Cuda ? "__bfloat162float(" : "polyk_bf16_to_f32(") + lv + ")";
  return lv;
}

std::string storeValue(Dialect d, DType t, const std::string &v) {
  if (t == DType::F16) return (d == Dialect::Cuda ? "__float2half_rn(" : "polyk_f32_to_f16(") + v + ")";
  if (t == DType::BF16) return (d == Dialect::Cuda ? "__float2bfloat16_rn(" : "polyk_f32_to_bf16(") + v + ")";
  return v;
}

std::string roundToStorage(Dialect d, DType t, const std::string &v) {
  if (t != DType::F16 && t != DType::BF16) return v;
  return loadElement(d, t, storeValue(d, t, v));
}

} // namespace polyk::codegen
