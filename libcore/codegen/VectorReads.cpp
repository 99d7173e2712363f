// Vector loads of a thread's consecutive input elements (EmitParts.h, VectorReads). At each
// statement instance of the AST, isl gives the schedule (loop iterators) -> domain map; a read's
// linear index pulled back over it is an affine function of the iterators, whose step along the
// innermost iterator and whose remainder at lane 0 decide whether one aligned load serves the
// loop's V iterations.
#include "EmitParts.h"

#include <isl/ast.h>
#include <isl/ast_build.h>
#include <isl/aff.h>
#include <isl/id.h>
#include <isl/local_space.h>
#include <isl/map.h>
#include <isl/space.h>

namespace polyk::codegen {

namespace {

/// The linear index of `access` (domain -> tensor element) as an affine function of the domain,
/// or null for symbolic extents (not affine) and scalars.
isl::pw_aff linearIndexAff(const std::string &access, const TensorDecl &t) {
  if (t.shape.empty()) return {};
  for (const auto &e : t.shape)
    if (!e.param.empty()) return {};
  isl::pw_multi_aff pma = isl::manage(isl_pw_multi_aff_from_map(isl::map(islCtx(), access).release()));
  isl::pw_aff lin = pma.at(0);
  for (size_t d = 1; d < t.shape.size(); ++d) lin = lin.scale(isl::val(islCtx(), t.shape[d].value)).add(pma.at((int)d));
  return lin;
}

const char *kAnnotation = "polyk_vector_reads";

} // namespace

isl::ast_build VectorReads::attach(const isl::ast_build &build) {
  return build.set_at_each_domain([this](isl::ast_node node, isl::ast_build b) {
    isl::map sched = isl::manage(isl_map_from_union_map(b.schedule().release()));
    isl::space space = isl::manage(isl_ast_build_get_schedule_space(b.get()));
    unsigned n = (unsigned)isl_space_dim(space.get(), isl_dim_set);
    const ScopStatement *st = s_.statement(sched.domain_tuple_id().name());
    if (!st || n == 0) return node;
    Instance in;
    in.stmt = st->name;
    isl_id *laneId = isl_space_get_dim_id(space.get(), isl_dim_set, n - 1);
    in.lane = laneId ? isl_id_get_name(laneId) : "";
    isl_id_free(laneId);
    // Schedule point -> statement instance, and the innermost iterator as an affine function.
    isl::pw_multi_aff iterators = isl::manage(isl_pw_multi_aff_from_map(sched.reverse().release()));
    isl::set points = sched.range();
    isl::pw_aff lane = isl::manage(isl_pw_aff_var_on_domain(isl_local_space_from_space(space.copy()), isl_dim_set, n - 1))
                           .intersect_domain(points);
    // Shifts the innermost iterator by one: a step of 1 means index(p + e) == index(p) + 1.
    isl::multi_aff shift = isl::multi_aff::identity_on_domain(space);
    shift = shift.set_at(n - 1, shift.at(n - 1).add_constant(isl::val(islCtx(), 1)));
    for (size_t k = 0; k < st->reads.size(); ++k) {
      isl::map access(islCtx(), st->reads[k]);
      const TensorDecl *t = s_.tensor(access.range_tuple_id().name());
      if (!t || t->role != Role::Input || promoted_.count(t->name)) continue;
      isl::pw_aff index = linearIndexAff(st->reads[k], *t);
      if (index.is_null()) continue;
      isl::pw_aff base = index.pullback(iterators).sub(lane);
      // The base must not depend on the lane where both p and p + e are instances.
      isl::pw_aff next = base.pullback(shift);
      isl::set both = points.intersect(points.preimage(shift));
      if (!base.intersect_domain(both).ne_set(next.intersect_domain(both)).is_empty()) continue;
      isl::ast_expr e = b.expr_from(base);
      in.candidates.push_back({k, base, islExprToC(e.get())});
    }
    if (in.candidates.empty()) return node;
    instances_.push_back(std::move(in));
    isl_id *id = isl_id_alloc(islCtx().get(), kAnnotation, reinterpret_cast<void *>(instances_.size()));
    return isl::manage(isl_ast_node_set_annotation(node.release(), id));
  });
}

int VectorReads::constantTrip(const isl::ast_node &forNode) {
  isl_ast_node *f = forNode.get();
  if (isl_ast_node_get_type(f) != isl_ast_node_for || isl_ast_node_for_is_degenerate(f) == isl_bool_true) return 0;
  // for (c = 0; c <= N - 1; c += 1)
  isl::ast_expr init = isl::manage(isl_ast_node_for_get_init(f)), inc = isl::manage(isl_ast_node_for_get_inc(f));
  isl::ast_expr cond = isl::manage(isl_ast_node_for_get_cond(f));
  std::string it = islExprToC(isl::manage(isl_ast_node_for_get_iterator(f)).get());
  if (islExprToC(init.get()) != "0" || islExprToC(inc.get()) != "1") return 0;
  if (isl_ast_expr_get_type(cond.get()) != isl_ast_expr_op || isl_ast_expr_get_op_type(cond.get()) != isl_ast_expr_op_le)
    return 0;
  isl::ast_expr lhs = isl::manage(isl_ast_expr_get_op_arg(cond.get(), 0));
  isl::ast_expr rhs = isl::manage(isl_ast_expr_get_op_arg(cond.get(), 1));
  if (islExprToC(lhs.get()) != it || isl_ast_expr_get_type(rhs.get()) != isl_ast_expr_int) return 0;
  long last = isl::manage(isl_ast_expr_get_val(rhs.get())).get_num_si();
  return last >= 0 && last < (1 << 20) ? (int)last + 1 : 0;
}

std::vector<VectorReads::Read> VectorReads::readsOf(const isl::ast_node &forNode, int &lanes) const {
  lanes = 0;
  int v = constantTrip(forNode);
  if (v < 2 || v > 16) return {};
  isl_ast_node *f = forNode.get();
  std::string it = islExprToC(isl::manage(isl_ast_node_for_get_iterator(f)).get());
  // Marks (polyk-bind's) print as their child alone.
  auto unmark = [](isl::ast_node n) {
    while (isl_ast_node_get_type(n.get()) == isl_ast_node_mark) n = isl::manage(isl_ast_node_mark_get_node(n.get()));
    return n;
  };
  std::vector<isl::ast_node> users;
  isl::ast_node body = unmark(isl::manage(isl_ast_node_for_get_body(f)));
  if (isl_ast_node_get_type(body.get()) == isl_ast_node_user) {
    users.push_back(body);
  } else if (isl_ast_node_get_type(body.get()) == isl_ast_node_block) {
    isl_ast_node_list *list = isl_ast_node_block_get_children(body.get());
    for (int i = 0; i < isl_ast_node_list_n_ast_node(list); ++i) users.push_back(unmark(isl::manage(isl_ast_node_list_get_at(list, i))));
    isl_ast_node_list_free(list);
  } else {
    return {};
  }
  std::vector<Read> reads;
  std::set<std::string> seen;
  for (const auto &u : users) {
    if (isl_ast_node_get_type(u.get()) != isl_ast_node_user) return {};
    isl_id *id = isl_ast_node_get_annotation(u.get());
    if (!id) continue;
    size_t k = id && std::string(isl_id_get_name(id)) == kAnnotation ? reinterpret_cast<size_t>(isl_id_get_user(id)) : 0;
    isl_id_free(id);
    if (k == 0 || k > instances_.size()) continue;
    const Instance &in = instances_[k - 1];
    if (in.lane != it || !seen.insert(in.stmt).second) continue; // one definition of its macro per loop
    const ScopStatement *st = s_.statement(in.stmt);
    for (const auto &c : in.candidates) {
      const TensorDecl *t = s_.tensor(isl::map(islCtx(), st->reads[c.access]).range_tuple_id().name());
      int bytes = dtypeBytes(t->type) * v;
      if (bytes != 4 && bytes != 8 && bytes != 16) continue;
      isl::set misaligned = isl::manage(isl_pw_aff_non_zero_set(c.base.mod(isl::val(islCtx(), v)).release()));
      if (!misaligned.is_empty()) continue; // base % V == 0 everywhere
      if (c.text.find(it) != std::string::npos) continue; // printed in terms of the lane after all
      reads.push_back({in.stmt, c.access, t->name, c.text});
    }
  }
  if (!reads.empty()) lanes = v;
  return reads;
}

} // namespace polyk::codegen
