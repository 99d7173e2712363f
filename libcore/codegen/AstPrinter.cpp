// isl AST -> C text (loops, guards, blocks, marks, statement calls), the linearised indices of
// tensor accesses, and the helpers every generated file starts with.
#include "CodegenInternal.h"

#include <isl/aff.h>
#include <isl/ast.h>
#include <isl/ast_build.h>
#include <isl/set.h>
#include <isl/space.h>
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


std::string AstPrinter::print(const isl::ast_node &nodeObj, int indent) const {
  isl_ast_node *node = nodeObj.get();
  std::string out;
  switch (isl_ast_node_get_type(node)) {
  case isl_ast_node_for: {
    std::string it = exprText(isl::manage(isl_ast_node_for_get_iterator(node)).get());
    std::string init = exprText(isl::manage(isl_ast_node_for_get_init(node)).get());
    isl::ast_node body = isl::manage(isl_ast_node_for_get_body(node));
    if (isl_ast_node_for_is_degenerate(node) == isl_bool_true) {
      out += pad(indent) + "{\n" + pad(indent + 1) + "const polyk_idx " + it + " = " + init + ";\n";
      out += print(body, indent + 1) + pad(indent) + "}\n";
      return out;
    }
    if (replace)
      if (std::optional<std::string> text = replace(nodeObj, indent)) return *text;
    std::string cond = exprText(isl::manage(isl_ast_node_for_get_cond(node)).get());
    std::string inc = exprText(isl::manage(isl_ast_node_for_get_inc(node)).get());
    std::pair<std::string, std::string> wrap = around ? around(nodeObj, indent + 1) : std::pair<std::string, std::string>{};
    bool wrapped = !wrap.first.empty() || !wrap.second.empty();
    if (wrapped) out += pad(indent) + "{\n" + wrap.first, ++indent;
    if (!loopPrefix.empty()) out += pad(indent) + loopPrefix + "\n";
    out += pad(indent) + "for (polyk_idx " + it + " = " + init + "; " + cond + "; " + it + " += " + inc + ") {\n";
    out += print(body, indent + 1) + pad(indent) + "}\n";
    if (wrapped) out += wrap.second + pad(--indent) + "}\n";
    return out;
  }
  case isl_ast_node_if: {
    std::string cond = exprText(isl::manage(isl_ast_node_if_get_cond(node)).get());
    out += pad(indent) + "if (" + cond + ") {\n" + print(isl::manage(isl_ast_node_if_get_then_node(node)), indent + 1);
    if (isl_ast_node_if_has_else_node(node) == isl_bool_true)
      out += pad(indent) + "} else {\n" + print(isl::manage(isl_ast_node_if_get_else_node(node)), indent + 1);
    return out + pad(indent) + "}\n";
  }
  case isl_ast_node_block: {
    isl_ast_node_list *list = isl_ast_node_block_get_children(node);
    for (int i = 0; i < isl_ast_node_list_n_ast_node(list); ++i)
      out += print(isl::manage(isl_ast_node_list_get_at(list, i)), indent);
    isl_ast_node_list_free(list);
    return out;
  }
  case isl_ast_node_mark: {
    std::string name = idName(isl_ast_node_mark_get_id(node));
    // A build callback may name the mark's instance (an annotation): the printer sees that name.
    if (annotations)
      if (isl_id *note = isl_ast_node_get_annotation(node)) name = idName(note);
    std::string body = print(isl::manage(isl_ast_node_mark_get_node(node)), indent);
    return mark ? mark(name, body, indent) : body;
  }
  case isl_ast_node_user: {
    isl_ast_expr *call = isl_ast_node_user_get_expr(node);
    std::string stmt = arg(call, 0);
    std::vector<std::string> args;
    for (int i = 1; i < isl_ast_expr_get_op_n_arg(call); ++i) args.push_back(arg(call, i));
    isl_ast_expr_free(call);
    // A build callback may attach text to the call (an annotation): it comes as a last argument.
    if (annotations)
      if (isl_id *note = isl_ast_node_get_annotation(node)) args.push_back(idName(note));
    std::string text = user(stmt, args);
    return text.empty() ? text : pad(indent) + text;
  }
  default: throw std::runtime_error("unexpected isl AST node");
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
