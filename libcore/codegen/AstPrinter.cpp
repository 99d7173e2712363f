// isl AST -> C text (loops, guards, blocks, marks, statement calls), the linearised indices of
// tensor accesses, and the helpers every generated file starts with.
#include "CodegenInternal.h"

#include <isl/aff.h>
#include <isl/ast.h>
#include <isl/ast_build.h>
#include <isl/set.h>
#include <isl/space.h>
#include <algorithm>
#include <stdexcept>

namespace polyk::codegen {

namespace {

std::string pad(int n) { return std::string(2 * n, ' '); }

std::string idName(isl_id *id) {
  std::string s = isl_id_get_name(id);
  isl_id_free(id);
  return s;
}

std::string exprText(isl_ast_expr *e) { return islExprToC(e); }

std::string arg(isl_ast_expr *e, int i) {
  isl_ast_expr *a = isl_ast_expr_get_op_arg(e, i);
  std::string s = exprText(a);
  isl_ast_expr_free(a);
  return s;
}

} // namespace


namespace {

/// Folds the operation `op` over the argument values (all known).
std::optional<long long> fold(isl_ast_expr_op_type op, const std::vector<long long> &a) {
  auto floorDiv = [](long long x, long long y) { return x / y - ((x % y != 0) && ((x < 0) != (y < 0))); };
  switch (op) {
  case isl_ast_expr_op_max: return *std::max_element(a.begin(), a.end());
  case isl_ast_expr_op_min: return *std::min_element(a.begin(), a.end());
  case isl_ast_expr_op_minus: return -a[0];
  case isl_ast_expr_op_add: return a[0] + a[1];
  case isl_ast_expr_op_sub: return a[0] - a[1];
  case isl_ast_expr_op_mul: return a[0] * a[1];
  case isl_ast_expr_op_div:
  case isl_ast_expr_op_pdiv_q: return a[1] ? std::optional<long long>(a[0] / a[1]) : std::nullopt;
  case isl_ast_expr_op_fdiv_q: return a[1] ? std::optional<long long>(floorDiv(a[0], a[1])) : std::nullopt;
  case isl_ast_expr_op_pdiv_r:
  case isl_ast_expr_op_zdiv_r: return a[1] ? std::optional<long long>(a[0] % a[1]) : std::nullopt;
  case isl_ast_expr_op_eq: return a[0] == a[1];
  case isl_ast_expr_op_le: return a[0] <= a[1];
  case isl_ast_expr_op_lt: return a[0] < a[1];
  case isl_ast_expr_op_ge: return a[0] >= a[1];
  case isl_ast_expr_op_gt: return a[0] > a[1];
  default: return std::nullopt;
  }
}

isl_ast_expr *opArg(isl_ast_expr *e, int i) { return isl_ast_expr_get_op_arg(e, i); }

} // namespace

std::optional<long long> exprValue(isl_ast_expr *e, const IteratorValues &values) {
  switch (isl_ast_expr_get_type(e)) {
  case isl_ast_expr_int: {
    isl_val *v = isl_ast_expr_get_val(e);
    long long n = isl_val_get_num_si(v);
    isl_val_free(v);
    return n;
  }
  case isl_ast_expr_id: {
    auto it = values.find(idName(isl_ast_expr_get_id(e)));
    return it == values.end() ? std::nullopt : std::optional<long long>(it->second);
  }
  case isl_ast_expr_op: break;
  default: return std::nullopt;
  }
  isl_ast_expr_op_type op = isl_ast_expr_get_op_type(e);
  int n = isl_ast_expr_get_op_n_arg(e);
  auto value = [&](int i) {
    isl_ast_expr *a = opArg(e, i);
    std::optional<long long> v = exprValue(a, values);
    isl_ast_expr_free(a);
    return v;
  };
  switch (op) {
  case isl_ast_expr_op_and:
  case isl_ast_expr_op_and_then:
  case isl_ast_expr_op_or:
  case isl_ast_expr_op_or_else: {
    // (Known where either side decides it: false for and, true for or.)
    bool isAnd = op == isl_ast_expr_op_and || op == isl_ast_expr_op_and_then;
    std::optional<long long> l = value(0), r = value(1);
    if ((l && (*l != 0) != isAnd) || (r && (*r != 0) != isAnd)) return isAnd ? 0 : 1;
    if (l && r) return isAnd ? 1 : 0;
    return std::nullopt;
  }
  case isl_ast_expr_op_cond:
  case isl_ast_expr_op_select: {
    std::optional<long long> c = value(0);
    return c ? value(*c ? 1 : 2) : std::nullopt;
  }
  default: break;
  }
  std::vector<long long> args;
  for (int i = 0; i < n; ++i) {
    std::optional<long long> v = value(i);
    if (!v) return std::nullopt;
    args.push_back(*v);
  }
  return args.empty() ? std::nullopt : fold(op, args);
}

std::string exprWithValues(isl_ast_expr *e, const IteratorValues &values) {
  if (values.empty()) return islExprToC(e);
  if (std::optional<long long> v = exprValue(e, values)) return std::to_string(*v);
  if (isl_ast_expr_get_type(e) != isl_ast_expr_op) return islExprToC(e);
  auto text = [&](int i) {
    isl_ast_expr *a = opArg(e, i);
    std::string t = exprWithValues(a, values);
    isl_ast_expr_free(a);
    return t;
  };
  auto value = [&](int i) {
    isl_ast_expr *a = opArg(e, i);
    std::optional<long long> v = exprValue(a, values);
    isl_ast_expr_free(a);
    return v;
  };
  // (A known side of and / or does not decide it here, as exprValue found: the other side does;
  // + 0, - 0 and * 1 drop. The rest in islExprToC's format.)
  switch (isl_ast_expr_get_op_type(e)) {
  case isl_ast_expr_op_and:
  case isl_ast_expr_op_and_then:
  case isl_ast_expr_op_or:
  case isl_ast_expr_op_or_else:
    if (value(0)) return text(1);
    if (value(1)) return text(0);
    break;
  case isl_ast_expr_op_add: {
    std::optional<long long> l = value(0), r = value(1);
    if (l && *l == 0) return text(1);
    if (r && *r == 0) return text(0);
    break;
  }
  case isl_ast_expr_op_sub:
    if (std::optional<long long> r = value(1); r && *r == 0) return text(0);
    break;
  case isl_ast_expr_op_mul: {
    std::optional<long long> l = value(0), r = value(1);
    if (l && *l == 1) return text(1);
    if (r && *r == 1) return text(0);
    break;
  }
  default: break;
  }
  return islOpToC(e, text);
}

std::string AstPrinter::print(const isl::ast_node &nodeObj, int indent) const { return print(nodeObj, indent, {}, false); }

namespace {

/// The iterations of an unrolled loop: its first value, step and last value at most, and the
/// parts of its bounds that are not constant (checked per iteration).
struct Unrolling {
  long long first = 0, step = 1, last = -1;
  isl_ast_expr *lower = nullptr; // (the lower bound, where it is not constant)
};

/// Where `node`'s loop has a constant step and its bounds a constant cap: its iterations.
std::optional<Unrolling> unrolling(isl_ast_node *node, const std::string &it, const IteratorValues &values) {
  constexpr long long kMaxTrip = 4096;
  Unrolling u;
  isl_ast_expr *init = isl_ast_node_for_get_init(node), *cond = isl_ast_node_for_get_cond(node), *inc = isl_ast_node_for_get_inc(node);
  std::optional<long long> lo = exprValue(init, values), step = exprValue(inc, values);
  std::optional<Unrolling> out;
  auto capOf = [&](isl_ast_expr *e, bool upper) -> std::optional<long long> {
    // A constant, or the min (upper) / max (lower) of terms some of which are constant.
    if (std::optional<long long> v = exprValue(e, values)) return v;
    if (isl_ast_expr_get_type(e) != isl_ast_expr_op ||
        isl_ast_expr_get_op_type(e) != (upper ? isl_ast_expr_op_min : isl_ast_expr_op_max))
      return std::nullopt;
    std::optional<long long> cap;
    for (int i = 0; i < isl_ast_expr_get_op_n_arg(e); ++i) {
      isl_ast_expr *a = isl_ast_expr_get_op_arg(e, i);
      if (std::optional<long long> v = exprValue(a, values)) cap = cap ? (upper ? std::min(*cap, *v) : std::max(*cap, *v)) : *v;
      isl_ast_expr_free(a);
    }
    return cap;
  };
  if (!lo) lo = capOf(init, false);
  bool shaped = isl_ast_expr_get_type(cond) == isl_ast_expr_op && isl_ast_expr_get_op_n_arg(cond) == 2 &&
                (isl_ast_expr_get_op_type(cond) == isl_ast_expr_op_le || isl_ast_expr_get_op_type(cond) == isl_ast_expr_op_lt);
  if (lo && step && *step > 0 && shaped) {
    isl_ast_expr *left = isl_ast_expr_get_op_arg(cond, 0), *bound = isl_ast_expr_get_op_arg(cond, 1);
    bool isIt = isl_ast_expr_get_type(left) == isl_ast_expr_id && islExprToC(left) == it;
    std::optional<long long> hi = isIt ? capOf(bound, true) : std::nullopt;
    if (hi && isl_ast_expr_get_op_type(cond) == isl_ast_expr_op_lt) --*hi;
    if (hi && *hi - *lo <= kMaxTrip * *step) {
      u.first = *lo, u.step = *step, u.last = *hi;
      if (!exprValue(init, values)) u.lower = isl_ast_expr_copy(init);
      out = u;
    }
    isl_ast_expr_free(left);
    isl_ast_expr_free(bound);
  }
  isl_ast_expr_free(init);
  isl_ast_expr_free(cond);
  isl_ast_expr_free(inc);
  return out;
}

/// An interval of values (inclusive; the ends at +-kFar where unbounded).
struct Interval {
  static constexpr long long kFar = 1LL << 60;
  long long lo = -kFar, hi = kFar;
};

/// The values an isl AST expression can take with `values` put in and the ids in `ranges`
/// (a block id is never negative, a thread id below its block's extent); others unbounded.
Interval interval(isl_ast_expr *e, const IteratorValues &values, const IdRanges &ranges) {
  constexpr long long F = Interval::kFar;
  if (std::optional<long long> v = exprValue(e, values)) return {*v, *v};
  if (isl_ast_expr_get_type(e) == isl_ast_expr_id) {
    auto r = ranges.find(idName(isl_ast_expr_get_id(e)));
    return r == ranges.end() ? Interval() : Interval{r->second.first, r->second.second};
  }
  if (isl_ast_expr_get_type(e) != isl_ast_expr_op) return {};
  auto arg = [&](int i) {
    isl_ast_expr *a = isl_ast_expr_get_op_arg(e, i);
    Interval r = interval(a, values, ranges);
    isl_ast_expr_free(a);
    return r;
  };
  auto clamp = [&](long long x) { return std::max(-F, std::min(F, x)); };
  auto far = [&](long long x) { return x <= -F || x >= F; };
  int n = isl_ast_expr_get_op_n_arg(e);
  switch (isl_ast_expr_get_op_type(e)) {
  case isl_ast_expr_op_add: {
    Interval a = arg(0), b = arg(1);
    return {far(a.lo) || far(b.lo) ? -F : clamp(a.lo + b.lo), far(a.hi) || far(b.hi) ? F : clamp(a.hi + b.hi)};
  }
  case isl_ast_expr_op_sub: {
    Interval a = arg(0), b = arg(1);
    return {far(a.lo) || far(b.hi) ? -F : clamp(a.lo - b.hi), far(a.hi) || far(b.lo) ? F : clamp(a.hi - b.lo)};
  }
  case isl_ast_expr_op_minus: {
    Interval a = arg(0);
    return {far(a.hi) ? -F : -a.hi, far(a.lo) ? F : -a.lo};
  }
  case isl_ast_expr_op_mul: {
    // (By a constant: isl's products have one.)
    Interval a = arg(0), b = arg(1);
    if (b.lo == b.hi) std::swap(a, b);
    if (a.lo != a.hi || std::llabs(a.lo) > (1LL << 20)) return {};
    long long c = a.lo;
    auto times = [&](long long x) { return far(x) ? (((x > 0) == (c > 0)) ? F : -F) : clamp(x * c); };
    if (c == 0) return {0, 0};
    return c > 0 ? Interval{times(b.lo), times(b.hi)} : Interval{times(b.hi), times(b.lo)};
  }
  case isl_ast_expr_op_div:
  case isl_ast_expr_op_pdiv_q:
  case isl_ast_expr_op_fdiv_q: {
    // (By a positive constant; isl's pdiv_q and div divide what it knows is not negative.)
    Interval a = arg(0), b = arg(1);
    if (b.lo != b.hi || b.lo <= 0) return {};
    long long d = b.lo;
    auto down = [&](long long x) { return far(x) ? x : x / d - ((x % d != 0) && (x < 0)); };
    return {down(a.lo), down(a.hi)};
  }
  case isl_ast_expr_op_pdiv_r:
  case isl_ast_expr_op_zdiv_r: {
    Interval b = arg(1);
    if (b.lo != b.hi || b.lo <= 0) return {};
    return {isl_ast_expr_get_op_type(e) == isl_ast_expr_op_pdiv_r ? 0 : -(b.lo - 1), b.lo - 1};
  }
  case isl_ast_expr_op_min:
  case isl_ast_expr_op_max: {
    bool isMin = isl_ast_expr_get_op_type(e) == isl_ast_expr_op_min;
    Interval r = arg(0);
    for (int i = 1; i < n; ++i) {
      Interval x = arg(i);
      r = isMin ? Interval{std::min(r.lo, x.lo), std::min(r.hi, x.hi)} : Interval{std::max(r.lo, x.lo), std::max(r.hi, x.hi)};
    }
    return r;
  }
  default: return {};
  }
}

/// The guard of an unrolled iteration at `v` under a loop condition `it <= bound` (or <) that is
/// not known there: where the bound is a min, each of its terms not known to hold.
std::string boundGuard(isl_ast_expr *cond, long long v, const IteratorValues &at, const IdRanges &ranges) {
  const bool lt = isl_ast_expr_get_op_type(cond) == isl_ast_expr_op_lt;
  const char *op = lt ? " < " : " <= ";
  isl::ast_expr bound = isl::manage(isl_ast_expr_get_op_arg(cond, 1));
  if (isl_ast_expr_get_type(bound.get()) != isl_ast_expr_op || isl_ast_expr_get_op_type(bound.get()) != isl_ast_expr_op_min) {
    Interval t = interval(bound.get(), at, ranges);
    return (lt ? v < t.lo : v <= t.lo) ? "1" : exprWithValues(cond, at);
  }
  std::string guard;
  for (int i = 0; i < isl_ast_expr_get_op_n_arg(bound.get()); ++i) {
    isl::ast_expr term = isl::manage(isl_ast_expr_get_op_arg(bound.get(), i));
    if (Interval t = interval(term.get(), at, ranges); lt ? v < t.lo : v <= t.lo) continue;
    guard += (guard.empty() ? "(" : " && (") + std::to_string(v) + op + exprWithValues(term.get(), at) + ")";
  }
  return guard.empty() ? "1" : guard;
}

/// The guard of an unrolled iteration at `v` under a lower bound that is not constant: where it
/// is a max, each of its terms not known to hold ("" where all are).
std::string lowerGuard(isl_ast_expr *lower, long long v, const IteratorValues &at, const IdRanges &ranges) {
  bool isMax = isl_ast_expr_get_type(lower) == isl_ast_expr_op && isl_ast_expr_get_op_type(lower) == isl_ast_expr_op_max;
  int n = isMax ? isl_ast_expr_get_op_n_arg(lower) : 1;
  std::string guard;
  for (int i = 0; i < n; ++i) {
    isl::ast_expr term = isMax ? isl::manage(isl_ast_expr_get_op_arg(lower, i)) : isl::manage(isl_ast_expr_copy(lower));
    if (Interval t = interval(term.get(), at, ranges); v >= t.hi) continue;
    guard += (guard.empty() ? "(" : " && (") + std::to_string(v) + " >= " + exprWithValues(term.get(), at) + ")";
  }
  return guard;
}

} // namespace

std::string AstPrinter::unrollLoop(const isl::ast_node &nodeObj, int indent, const IteratorValues &values) const {
  const bool under = true;
  isl_ast_node *node = nodeObj.get();
  std::string it = exprText(isl::manage(isl_ast_node_for_get_iterator(node)).get());
  if (isl_ast_node_for_is_degenerate(node) == isl_bool_true) {
    std::optional<long long> v = exprValue(isl::manage(isl_ast_node_for_get_init(node)).get(), values);
    if (!v) throw UnrollRefused("the single value of " + it + " is not a constant");
    IteratorValues at = values;
    at[it] = *v;
    return print(isl::manage(isl_ast_node_for_get_body(node)), indent, at, under);
  }
  std::optional<Unrolling> u = unrolling(node, it, values);
  if (!u) throw UnrollRefused("the loop over " + it + " has no constant bounds to unroll");
  isl::ast_expr lower = u->lower ? isl::manage(u->lower) : isl::ast_expr();
  isl::ast_expr cond = isl::manage(isl_ast_node_for_get_cond(node));
  isl::ast_node body = isl::manage(isl_ast_node_for_get_body(node));
  // Where only the upper bound needs a guard, an iteration's guard implies every earlier one's:
  // each later iteration is nested in the one before (isl's unrolling does the same; flat guards
  // made ptxas's code for Gaussian2D's whole tiles 10% slower, 205 -> 225 us on the H200).
  std::string out;
  int open = 0;
  for (long long v = u->first; v <= u->last; v += u->step) {
    IteratorValues at = values;
    at[it] = v;
    // The iteration runs where the loop's own bounds hold at it (a guard where they are not known).
    std::optional<long long> upper = exprValue(cond.get(), at);
    if (upper && !*upper) break; // (and every later one: the upper bound only grows less true)
    std::string guard = upper ? "" : boundGuard(cond.get(), v, at, ranges), low;
    if (guard == "1") guard.clear();
    if (!lower.is_null()) low = lowerGuard(lower.get(), v, at, ranges);
    if (!low.empty()) {
      guard = guard.empty() ? low : guard + " && " + low;
      out += pad(indent + open) + "if (" + guard + ") {\n" + print(body, indent + open + 1, at, under) + pad(indent + open) + "}\n";
    } else if (!guard.empty()) {
      out += pad(indent + open) + "if (" + guard + ") {\n" + print(body, indent + open + 1, at, under);
      ++open;
    } else {
      out += print(body, indent + open, at, under);
    }
  }
  while (open > 0) out += pad(indent + --open) + "}\n";
  return out;
}

std::string AstPrinter::noteText(isl_ast_node *node, const IteratorValues &values) const {
  isl_id *note = isl_ast_node_get_annotation(node);
  if (!note) return "";
  std::string name = idName(note);
  if (this->note && !notePrefix.empty() && name.rfind(notePrefix, 0) == 0) return this->note(name, values);
  return name;
}

std::string AstPrinter::print(const isl::ast_node &nodeObj, int indent, const IteratorValues &values, bool under) const {
  isl_ast_node *node = nodeObj.get();
  std::string out;
  auto expr = [&](isl_ast_expr *e) {
    std::string t = exprWithValues(e, values);
    isl_ast_expr_free(e);
    return t;
  };
  switch (isl_ast_node_get_type(node)) {
  case isl_ast_node_for: {
    std::string it = exprText(isl::manage(isl_ast_node_for_get_iterator(node)).get());
    if (under && unrolled.count(it)) return unrollLoop(nodeObj, indent, values);
    std::string init = expr(isl_ast_node_for_get_init(node));
    isl::ast_node body = isl::manage(isl_ast_node_for_get_body(node));
    if (isl_ast_node_for_is_degenerate(node) == isl_bool_true) {
      out += pad(indent) + "{\n" + pad(indent + 1) + "const polyk_idx " + it + " = " + init + ";\n";
      out += print(body, indent + 1, values, under) + pad(indent) + "}\n";
      return out;
    }
    if (replace)
      if (std::optional<std::string> text = replace(nodeObj, indent)) return *text;
    std::string cond = expr(isl_ast_node_for_get_cond(node));
    std::string inc = expr(isl_ast_node_for_get_inc(node));
    std::pair<std::string, std::string> wrap = around ? around(nodeObj, indent + 1) : std::pair<std::string, std::string>{};
    bool wrapped = !wrap.first.empty() || !wrap.second.empty();
    if (wrapped) out += pad(indent) + "{\n" + wrap.first, ++indent;
    if (!loopPrefix.empty()) out += pad(indent) + loopPrefix + "\n";
    out += pad(indent) + "for (polyk_idx " + it + " = " + init + "; " + cond + "; " + it + " += " + inc + ") {\n";
    out += print(body, indent + 1, values, under) + pad(indent) + "}\n";
    if (wrapped) out += wrap.second + pad(--indent) + "}\n";
    return out;
  }
  case isl_ast_node_if: {
    isl_ast_expr *c = isl_ast_node_if_get_cond(node);
    std::optional<long long> known = values.empty() ? std::nullopt : exprValue(c, values);
    bool hasElse = isl_ast_node_if_has_else_node(node) == isl_bool_true;
    if (known) {
      isl_ast_expr_free(c);
      if (*known) return print(isl::manage(isl_ast_node_if_get_then_node(node)), indent, values, under);
      return hasElse ? print(isl::manage(isl_ast_node_if_get_else_node(node)), indent, values, under) : "";
    }
    std::string cond = expr(c);
    out += pad(indent) + "if (" + cond + ") {\n" + print(isl::manage(isl_ast_node_if_get_then_node(node)), indent + 1, values, under);
    if (hasElse) out += pad(indent) + "} else {\n" + print(isl::manage(isl_ast_node_if_get_else_node(node)), indent + 1, values, under);
    return out + pad(indent) + "}\n";
  }
  case isl_ast_node_block: {
    isl_ast_node_list *list = isl_ast_node_block_get_children(node);
    for (int i = 0; i < isl_ast_node_list_n_ast_node(list); ++i)
      out += print(isl::manage(isl_ast_node_list_get_at(list, i)), indent, values, under);
    isl_ast_node_list_free(list);
    return out;
  }
  case isl_ast_node_mark: {
    std::string name = idName(isl_ast_node_mark_get_id(node));
    // A build callback may name the mark's instance (an annotation): the printer sees that name.
    if (annotations)
      if (std::string note = noteText(node, values); !note.empty()) name = note;
    bool inside = under || (!unrollMark.empty() && idName(isl_ast_node_mark_get_id(node)) == unrollMark);
    std::string body = print(isl::manage(isl_ast_node_mark_get_node(node)), indent, values, inside);
    return mark ? mark(name, body, indent) : body;
  }
  case isl_ast_node_user: {
    isl_ast_expr *call = isl_ast_node_user_get_expr(node);
    std::string stmt = arg(call, 0);
    std::vector<std::string> args;
    for (int i = 1; i < isl_ast_expr_get_op_n_arg(call); ++i) args.push_back(expr(isl_ast_expr_get_op_arg(call, i)));
    isl_ast_expr_free(call);
    // A build callback may attach text to the call (an annotation): it comes as a last argument.
    if (annotations)
      if (std::string note = noteText(node, values); !note.empty()) args.push_back(note);
    std::string text = user(stmt, args);
    return text.empty() ? text : pad(indent) + text;
  }
  default: throw std::runtime_error("unexpected isl AST node");
  }
}

std::optional<std::vector<AstPrinter::Call>> AstPrinter::calls(const isl::ast_node &node) const {
  std::vector<Call> out;
  if (!calls(node, {}, false, out)) return std::nullopt;
  return out;
}

bool AstPrinter::calls(const isl::ast_node &nodeObj, const IteratorValues &values, bool under, std::vector<Call> &out) const {
  isl_ast_node *node = nodeObj.get();
  switch (isl_ast_node_get_type(node)) {
  case isl_ast_node_for: {
    std::string it = exprText(isl::manage(isl_ast_node_for_get_iterator(node)).get());
    if (!under || !unrolled.count(it)) return false;
    if (isl_ast_node_for_is_degenerate(node) == isl_bool_true) {
      std::optional<long long> v = exprValue(isl::manage(isl_ast_node_for_get_init(node)).get(), values);
      if (!v) return false;
      IteratorValues at = values;
      at[it] = *v;
      return calls(isl::manage(isl_ast_node_for_get_body(node)), at, under, out);
    }
    std::optional<Unrolling> u = unrolling(node, it, values);
    if (!u || u->lower) {
      if (u) isl_ast_expr_free(u->lower);
      return false;
    }
    isl::ast_expr cond = isl::manage(isl_ast_node_for_get_cond(node));
    isl::ast_node body = isl::manage(isl_ast_node_for_get_body(node));
    for (long long v = u->first; v <= u->last; v += u->step) {
      IteratorValues at = values;
      at[it] = v;
      std::optional<long long> upper = exprValue(cond.get(), at);
      if (!upper) return false;
      if (!*upper) break;
      if (!calls(body, at, under, out)) return false;
    }
    return true;
  }
  case isl_ast_node_block: {
    isl_ast_node_list *list = isl_ast_node_block_get_children(node);
    bool ok = true;
    for (int i = 0; ok && i < isl_ast_node_list_n_ast_node(list); ++i) ok = calls(isl::manage(isl_ast_node_list_get_at(list, i)), values, under, out);
    isl_ast_node_list_free(list);
    return ok;
  }
  case isl_ast_node_mark: {
    std::string name = idName(isl_ast_node_mark_get_id(node));
    if (name == "shared") return false;
    return calls(isl::manage(isl_ast_node_mark_get_node(node)), values, under || name == unrollMark, out);
  }
  case isl_ast_node_user: {
    isl_ast_expr *call = isl_ast_node_user_get_expr(node);
    Call c;
    c.stmt = arg(call, 0);
    for (int i = 1; i < isl_ast_expr_get_op_n_arg(call); ++i) {
      isl_ast_expr *a = isl_ast_expr_get_op_arg(call, i);
      c.args.push_back(exprWithValues(a, values));
      isl_ast_expr_free(a);
    }
    isl_ast_expr_free(call);
    c.note = noteText(node, values);
    out.push_back(c);
    return true;
  }
  default: return false;
  }
}

namespace {

/// The C text of an isl expression of a statement's domain iterators (and the parameters), with
/// each iterator spelled `(name)` for use inside a macro.
std::string iteratorExpr(isl_pw_aff *pa) {
  unsigned nIn = isl_pw_aff_dim(pa, isl_dim_in);
  std::vector<std::string> names;
  for (unsigned i = 0; i < nIn; ++i) {
    isl_id *id = isl_pw_aff_get_dim_id(pa, isl_dim_in, i);
    names.push_back(id ? idName(id) : "d" + std::to_string(i));
    if (!id) pa = isl_pw_aff_set_dim_id(pa, isl_dim_in, i, isl_id_alloc(islCtx().get(), names.back().c_str(), nullptr));
  }
  // The domain iterators become parameters so a build over no loops prints them by name.
  pa = isl_pw_aff_move_dims(pa, isl_dim_param, isl_pw_aff_dim(pa, isl_dim_param), isl_dim_in, 0, nIn);
  isl_set *context = isl_pw_aff_domain(isl_pw_aff_copy(pa));
  isl_ast_build *build = isl_ast_build_from_context(context);
  isl_ast_expr *e = isl_ast_build_expr_from_pw_aff(build, pa);
  isl_ast_build_free(build);
  std::string text = exprText(e);
  isl_ast_expr_free(e);
  std::string out;
  for (size_t i = 0; i < text.size();) {
    bool matched = false;
    for (const auto &n : names) {
      bool startOk = i == 0 || !(std::isalnum((unsigned char)text[i - 1]) || text[i - 1] == '_');
      size_t end = i + n.size();
      bool endOk = end >= text.size() || !(std::isalnum((unsigned char)text[end]) || text[end] == '_');
      if (startOk && endOk && text.compare(i, n.size(), n) == 0) {
        out += "(" + n + ")";
        i = end;
        matched = true;
        break;
      }
    }
    if (!matched) out += text[i++];
  }
  return out;
}

} // namespace

std::string subscriptC(const std::string &accessMap, size_t d) {
  isl_pw_multi_aff *pma = isl_pw_multi_aff_from_map(isl::map(islCtx(), accessMap).release());
  std::string text = iteratorExpr(isl_pw_multi_aff_get_pw_aff(pma, (int)d));
  isl_pw_multi_aff_free(pma);
  return text;
}

std::string linearIndex(const std::string &accessMap, const TensorDecl &tensor) {
  isl::map m(islCtx(), accessMap);
  if (tensor.shape.empty()) return "0";
  isl_pw_multi_aff *pma = isl_pw_multi_aff_from_map(m.copy());
  bool symbolic = false;
  for (size_t d = 1; d < tensor.shape.size(); ++d) symbolic |= !tensor.shape[d].param.empty();
  std::string text;
  if (!symbolic) {
    text = iteratorExpr(linearIndexAff(accessMap, tensor).release());
  } else {
    // A symbolic extent times an iterator is not affine: Horner in C over isl's subscripts.
    text = "(polyk_idx)" + iteratorExpr(isl_pw_multi_aff_get_pw_aff(pma, 0));
    for (size_t d = 1; d < tensor.shape.size(); ++d)
      text = "(" + text + " * " + tensor.shape[d].str() + " + " + iteratorExpr(isl_pw_multi_aff_get_pw_aff(pma, (int)d)) + ")";
  }
  isl_pw_multi_aff_free(pma);
  return text;
}

std::string indexHelpers(Dialect d, bool wide) {
  std::string hd = d == Dialect::Cuda ? "__host__ __device__ " : "";
  std::string s;
  s += std::string("typedef ") + (wide ? "long long" : "int") + " polyk_idx;\n";
  s += "static inline __attribute__((unused)) " + hd + "polyk_idx polyk_floord(polyk_idx a, polyk_idx b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }\n";
  s += "static inline __attribute__((unused)) " + hd + "polyk_idx polyk_min(polyk_idx a, polyk_idx b) { return a < b ? a : b; }\n";
  s += "static inline __attribute__((unused)) " + hd + "polyk_idx polyk_max(polyk_idx a, polyk_idx b) { return a > b ? a : b; }\n";
  return s;
}

bool needsWideIndices(const Scop &s) {
  if (!s.params.empty()) return true; // symbolic extents: any size at run time
  for (const auto &t : s.tensors)
    if (t.elements() >= (1LL << 31) - 1024) return true;
  return false;
}


} // namespace polyk::codegen
