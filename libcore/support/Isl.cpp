// isl helpers (see Isl.h).
#include "polyk/Isl.h"

#include <isl/ast.h>
#include <isl/ast_build.h>
#include <isl/aff.h>
#include <isl/space.h>
#include <isl/options.h>
#include <isl/printer.h>
#include <isl/schedule.h>
#include <isl/schedule_node.h>
#include <isl/point.h>
#include <isl/map.h>
#include <isl/union_map.h>
#include <isl/union_set.h>
#include <isl/aff.h>
#include <cstdlib>
#include <map>
#include <set>
#include <functional>
#include <vector>
#include <yaml-cpp/yaml.h>

namespace polyk {

namespace {

isl_ctx *newIslCtx() {
  isl_ctx *c = isl_ctx_alloc();
  isl_options_set_on_error(c, ISL_ON_ERROR_CONTINUE);
  // Tile loops count tiles (what a mapping to blockIdx wants); point loops start at 0.
  isl_options_set_tile_scale_tile_loops(c, 0);
  isl_options_set_tile_shift_point_loops(c, 1);
  // Outer parallelism: a y-reduce comes out as an x-reduce (Panamera §4.1).
  isl_options_set_schedule_outer_coincidence(c, 1);
  unsigned long budget = kIslOperationBudget;
  if (const char *env = std::getenv("POLYK_ISL_OPERATIONS")) budget = std::strtoul(env, nullptr, 10);
  isl_ctx_set_max_operations(c, budget);
  return c;
}

thread_local isl_ctx *threadCtx = nullptr;

} // namespace

isl::ctx islCtx() {
  if (threadCtx) return isl::ctx(threadCtx);
  static isl_ctx *ctx = newIslCtx();
  return isl::ctx(ctx);
}

IslThreadContext::IslThreadContext() : ctx_(newIslCtx()) { threadCtx = ctx_; }
IslThreadContext::~IslThreadContext() {
  threadCtx = nullptr;
  isl_ctx_free(ctx_);
}

void resetIslBudget() { isl_ctx_reset_operations(islCtx().get()); }

namespace {

/// The shape of a schedule tree in isl's YAML form, checked with yaml-cpp before isl reads it:
/// isl 0.25's stream reader loops without end, allocating, on some truncated trees (a final
/// `child:` with nothing below it). Returns what is wrong, or "".
std::string scheduleTreeShapeError(const std::string &text, const YAML::Node &node, int depth);

/// A value isl's tree reader takes as a string: double-quoted (isl reads a plain scalar as tokens,
/// and 0.25 crashes on some: `schedule: 128[{ ... }]`), and parsed here first by isl's reader of
/// what it holds.
std::string treeValueError(const std::string &text, const std::string &key, const YAML::Node &v) {
  if (key == "permutable") return v.Scalar() == "0" || v.Scalar() == "1" ? "" : "'permutable' is 0 or 1";
  size_t pos = v.Mark().pos;
  if (pos >= text.size() || text[pos] != '"') return "the value of '" + key + "' must be a double-quoted string";
  if (key == "mark") return "";
  isl_ctx *ctx = islCtx().get();
  const char *str = v.Scalar().c_str();
  bool ok = true;
  if (key == "schedule") {
    isl_multi_union_pw_aff *m = isl_multi_union_pw_aff_read_from_str(ctx, str);
    ok = m != nullptr;
    isl_multi_union_pw_aff_free(m);
  } else if (key == "extension" || key == "expansion") {
    isl_union_map *m = isl_union_map_read_from_str(ctx, str);
    ok = m != nullptr;
    isl_union_map_free(m);
  } else if (key == "contraction") {
    isl_union_pw_multi_aff *m = isl_union_pw_multi_aff_read_from_str(ctx, str);
    ok = m != nullptr;
    isl_union_pw_multi_aff_free(m);
  } else if (key == "context") {
    isl_set *m = isl_set_read_from_str(ctx, str);
    ok = m != nullptr;
    isl_set_free(m);
  } else { // domain, filter, guard, options
    isl_union_set *m = isl_union_set_read_from_str(ctx, str);
    ok = m != nullptr;
    isl_union_set_free(m);
  }
  return ok ? "" : "isl cannot parse the " + key + " '" + v.Scalar().substr(0, 80) + "'";
}

std::string scheduleTreeShapeError(const std::string &text, const YAML::Node &node, int depth) {
  if (depth > 64) return "nested more than 64 levels";
  if (node.IsScalar()) return node.Scalar() == "leaf" ? "" : "expected a tree node, found '" + node.Scalar() + "'";
  if (!node.IsMap()) return "expected a tree node";
  static const std::map<std::string, std::set<std::string>> kinds = {
      {"domain", {"child"}},  {"context", {"child"}},  {"filter", {"child"}},   {"guard", {"child"}},
      {"mark", {"child"}},    {"extension", {"child"}}, {"expansion", {"contraction", "child"}},
      {"schedule", {"coincident", "permutable", "options", "child"}},
      {"sequence", {}},       {"set", {}}};
  std::string kind;
  for (const auto &kv : node) {
    if (!kv.first.IsScalar()) return "expected a key";
    std::string key = kv.first.Scalar();
    if (!kinds.count(key)) continue;
    if (!kind.empty()) return "a node of two kinds, '" + kind + "' and '" + key + "'";
    kind = key;
  }
  if (kind.empty()) return "a node of no known kind";
  const auto &extra = kinds.at(kind);
  for (const auto &kv : node) {
    std::string key = kv.first.Scalar();
    const YAML::Node &v = kv.second;
    if (key == kind || extra.count(key)) {
      if (key == "child") {
        std::string e = scheduleTreeShapeError(text, v, depth + 1);
        if (!e.empty()) return e;
      } else if (key == "sequence" || key == "set") {
        if (!v.IsSequence() || v.size() == 0) return "'" + key + "' needs a list of nodes";
        for (const auto &c : v) {
          std::string e = scheduleTreeShapeError(text, c, depth + 1);
          if (!e.empty()) return e;
        }
      } else if (key == "coincident") {
        if (!v.IsSequence()) return "'coincident' needs a list";
        for (const auto &c : v)
          if (!c.IsScalar() || (c.Scalar() != "0" && c.Scalar() != "1")) return "'coincident' needs a list of 0 and 1";
      } else if (!v.IsScalar()) {
        return "'" + key + "' needs a value";
      } else {
        std::string e = treeValueError(text, key, v);
        if (!e.empty()) return e;
      }
    } else {
      return "unexpected key '" + key + "' in a " + kind + " node";
    }
  }
  return "";
}

} // namespace

void checkIslText(const std::string &text, IslKind kind, const SourceLoc &loc) {
  isl::ctx ctx = islCtx();
  if (kind == IslKind::Schedule) {
    std::string error;
    try {
      YAML::Node tree = YAML::Load(text);
      error = tree.IsMap() && tree["domain"] ? scheduleTreeShapeError(text, tree, 0) : "a schedule tree starts with its 'domain'";
    } catch (const YAML::Exception &e) {
      error = "malformed YAML: " + e.msg;
    }
    if (!error.empty()) fail(loc, "bad schedule tree: " + error);
  }
  const char *what = "";
  bool ok = true;
  try {
    switch (kind) {
    case IslKind::Set: what = "set"; ok = !isl::set(ctx, text).is_null(); break;
    case IslKind::UnionSet: what = "union set"; ok = !isl::union_set(ctx, text).is_null(); break;
    case IslKind::Map: what = "map"; ok = !isl::map(ctx, text).is_null(); break;
    case IslKind::UnionMap: what = "union map"; ok = !isl::union_map(ctx, text).is_null(); break;
    case IslKind::MultiAff: what = "multi_aff"; ok = !isl::multi_aff(ctx, text).is_null(); break;
    case IslKind::Schedule: {
      what = "schedule tree";
      isl_schedule *s = isl_schedule_read_from_str(ctx.get(), text.c_str());
      ok = s != nullptr;
      isl_schedule_free(s);
      break;
    }
    }
  } catch (const isl::exception &) {
    ok = false;
  }
  // One line of the text at most: a diagnostic is one line.
  std::string shown = text.substr(0, std::min(text.find('\n'), size_t(80)));
  if (!ok) fail(loc, std::string("isl cannot parse this ") + what + ": '" + shown + (shown.size() < text.size() ? "...'" : "'"));
}

std::string normalizeSet(const std::string &text) { return islStr(isl::set(islCtx(), text)); }
std::string normalizeMap(const std::string &text) {
  // Single-valued maps (all accesses) read best as functions: t[floor(i/128), i mod 128, j].
  isl::map m(islCtx(), text);
  if (m.is_single_valued()) return islStr(isl::manage(isl_pw_multi_aff_from_map(m.copy())));
  return islStr(m);
}

isl::schedule readIslSchedule(const std::string &text) {
  isl_schedule *s = isl_schedule_read_from_str(islCtx().get(), text.c_str());
  if (!s) throw std::runtime_error("isl cannot parse the schedule tree");
  return isl::manage(s);
}

std::string printScheduleBlock(const isl::schedule &s) {
  isl_printer *p = isl_printer_to_str(islCtx().get());
  p = isl_printer_set_yaml_style(p, ISL_YAML_STYLE_BLOCK);
  p = isl_printer_print_schedule(p, s.get());
  char *c = isl_printer_get_str(p);
  std::string text = c;
  free(c);
  isl_printer_free(p);
  // isl 0.25 prints a mark above a leaf without a child but cannot read that back: spell the
  // leaf out ("child: leaf"), which it reads.
  std::istringstream in(text);
  std::vector<std::string> lines;
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  std::string out;
  for (size_t i = 0; i < lines.size(); ++i) {
    out += lines[i] + "\n";
    size_t indent = lines[i].find_first_not_of(' ');
    if (indent == std::string::npos || lines[i].compare(indent, 6, "mark: ") != 0) continue;
    bool hasChild = i + 1 < lines.size() && lines[i + 1].find_first_not_of(' ') == indent &&
                    lines[i + 1].compare(indent, 6, "child:") == 0;
    if (!hasChild) out += std::string(indent, ' ') + "child:\n" + std::string(indent + 2, ' ') + "leaf\n";
  }
  return out;
}

isl::union_set nodeDomain(const isl::schedule_node &n) { return isl::manage(isl_schedule_node_get_domain(n.get())); }
isl::space bandSpace(const isl::schedule_node &n) { return isl::manage(isl_schedule_node_band_get_space(n.get())); }
long long pointCoordinate(const isl::point &pt, int pos) {
  isl::val v = isl::manage(isl_point_get_coordinate_val(pt.get(), isl_dim_set, pos));
  return v.get_num_si();
}
bool mapInvolvesInputDim(const isl::map &m, unsigned d) { return isl_map_involves_dims(m.get(), isl_dim_in, d, 1) == isl_bool_true; }
unsigned subscriptCount(const isl::pw_multi_aff &access) { return (unsigned)isl_pw_multi_aff_dim(access.get(), isl_dim_out); }
bool subscriptMoves(const isl::pw_multi_aff &access, unsigned sub, size_t dim) {
  return isl_pw_aff_involves_dims(access.get_at((int)sub).get(), isl_dim_in, (unsigned)dim, 1) == isl_bool_true;
}
std::string markName(const isl::schedule_node &n) {
  isl_id *id = isl_schedule_node_mark_get_id(n.get());
  std::string s = isl_id_get_name(id);
  isl_id_free(id);
  return s;
}
isl::schedule_node deleteNode(const isl::schedule_node &n) { return isl::manage(isl_schedule_node_delete(n.copy())); }

namespace {
std::string idName(isl_id *id) {
  std::string s = isl_id_get_name(id);
  isl_id_free(id);
  return s;
}

std::string arg(isl_ast_expr *e, int i);

std::string exprTextImpl(isl_ast_expr *e) {
  switch (isl_ast_expr_get_type(e)) {
  case isl_ast_expr_id: return idName(isl_ast_expr_get_id(e));
  case isl_ast_expr_int: {
    isl_val *v = isl_ast_expr_get_val(e);
    std::string s = std::to_string(isl_val_get_num_si(v));
    isl_val_free(v);
    return s;
  }
  case isl_ast_expr_op: return islOpToC(e, [e](int i) { return arg(e, i); });
  default: {
    // (isl_ast_expr_error: isl gave up building it, e.g. past its operation limit.)
    const char *why = isl_ctx_last_error_msg(islCtx().get());
    throw std::runtime_error(std::string("isl built no AST expression") + (why ? std::string(": ") + why : ""));
  }
  }
}

std::string arg(isl_ast_expr *e, int i) {
  isl_ast_expr *a = isl_ast_expr_get_op_arg(e, i);
  std::string s = exprTextImpl(a);
  isl_ast_expr_free(a);
  return s;
}

} // namespace

std::string islExprToC(isl_ast_expr *e) { return exprTextImpl(e); }

std::string islOpToC(isl_ast_expr *e, const std::function<std::string(int)> &arg) {
  auto bin = [&](const char *op) {
    std::string t = "(";
    t.append(arg(0)).append(" ").append(op).append(" ").append(arg(1)).append(")");
    return t;
  };
  int n = isl_ast_expr_get_op_n_arg(e);
  switch (isl_ast_expr_get_op_type(e)) {
  case isl_ast_expr_op_and:
  case isl_ast_expr_op_and_then: return bin("&&");
  case isl_ast_expr_op_or:
  case isl_ast_expr_op_or_else: return bin("||");
  case isl_ast_expr_op_max:
  case isl_ast_expr_op_min: {
    const char *f = isl_ast_expr_get_op_type(e) == isl_ast_expr_op_max ? "polyk_max" : "polyk_min";
    std::string s = arg(0);
    for (int i = 1; i < n; ++i) s = std::string(f) + "(" + s + ", " + arg(i) + ")";
    return s;
  }
  case isl_ast_expr_op_minus: return "(-" + arg(0) + ")";
  case isl_ast_expr_op_add: return bin("+");
  case isl_ast_expr_op_sub: return bin("-");
  case isl_ast_expr_op_mul: return bin("*");
  case isl_ast_expr_op_div:
  case isl_ast_expr_op_pdiv_q: return bin("/");
  case isl_ast_expr_op_fdiv_q: return "polyk_floord(" + arg(0) + ", " + arg(1) + ")";
  case isl_ast_expr_op_pdiv_r:
  case isl_ast_expr_op_zdiv_r: return bin("%");
  case isl_ast_expr_op_cond:
  case isl_ast_expr_op_select: return "(" + arg(0) + " ? " + arg(1) + " : " + arg(2) + ")";
  case isl_ast_expr_op_eq: return bin("==");
  case isl_ast_expr_op_le: return bin("<=");
  case isl_ast_expr_op_lt: return bin("<");
  case isl_ast_expr_op_ge: return bin(">=");
  case isl_ast_expr_op_gt: return bin(">");
  case isl_ast_expr_op_call: {
    std::string s = arg(0) + "(";
    for (int i = 1; i < n; ++i) s += (i > 1 ? ", " : "") + arg(i);
    return s + ")";
  }
  default: throw std::runtime_error("unexpected isl AST operation");
  }
}


std::string cExpression(const isl::pw_aff &pa) {
  isl_set *context = isl_set_universe(isl_space_params(isl_pw_aff_get_space(pa.get())));
  isl_ast_build *build = isl_ast_build_from_context(context);
  isl_ast_expr *e = isl_ast_build_expr_from_pw_aff(build, pa.copy());
  isl_ast_build_free(build);
  std::string text = islExprToC(e);
  isl_ast_expr_free(e);
  return text;
}


} // namespace polyk
