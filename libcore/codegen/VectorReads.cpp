// Vector loads of a thread's consecutive input elements (EmitParts.h, VectorReads). At each
// statement instance of the AST, isl gives the schedule (loop iterators) -> domain map; a read's
// linear index pulled back over it is an affine function of the iterators, whose step along the
// innermost iterator and whose remainder at lane 0 decide whether one aligned load serves the
// loop's V iterations.
#include "EmitParts.h"

#include "polyk/Diagnostics.h"

#include <isl/ast.h>
#include <isl/ast_build.h>
#include <isl/aff.h>
#include <isl/id.h>
#include <isl/local_space.h>
#include <isl/map.h>
#include <isl/schedule.h>
#include <isl/schedule_node.h>
#include <isl/union_map.h>
#include <isl/union_set.h>
#include <isl/space.h>
#include <functional>
#include <stdexcept>

namespace polyk::codegen {

namespace {

const char *kAnnotation = "polyk_vector_reads";

} // namespace

isl::ast_build VectorReads::attach(const isl::ast_build &build) {
  return build.set_at_each_domain([this](isl::ast_node node, isl::ast_build b) {
    isl::map sched = isl::manage(isl_map_from_union_map(b.schedule().release()));
    isl::space space = isl::manage(isl_ast_build_get_schedule_space(b.get()));
    unsigned n = (unsigned)isl_space_dim(space.get(), isl_dim_set);
    const ScopStatement *st = s_.statement(sched.domain_tuple_id().name());
    // (Instances sharing a schedule point have no iterator map: nothing to vectorise there.)
    if (!st || n == 0 || !sched.reverse().is_single_valued()) return node;
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
    isl::set both = points.intersect(points.preimage(shift));
    auto same = [&](const isl::pw_aff &f) { // f(p) == f(p + e) wherever both are instances
      return f.intersect_domain(both).ne_set(f.pullback(shift).intersect_domain(both)).is_empty();
    };
    for (size_t k = 0; k < st->reads.size(); ++k) {
      isl::map access(islCtx(), st->reads[k]);
      const TensorDecl *t = s_.tensor(access.range_tuple_id().name());
      if (!t || t->role != Role::Input || promoted_.count(t->name)) continue;
      isl::pw_aff index = linearIndexAff(st->reads[k], *t);
      if (index.is_null()) {
        // Symbolic extents scale the outer subscripts (not affine): the innermost subscript's base
        // decides, given the innermost extent a multiple of V; Horner in C over the subscripts.
        const Extent &row = t->shape.back();
        if (row.param.empty() || assumed_.is_null()) continue;
        isl::pw_multi_aff subs = isl::manage(isl_pw_multi_aff_from_map(access.release())).pullback(iterators);
        size_t n = t->shape.size();
        isl::pw_aff base = subs.at((int)n - 1).sub(lane);
        bool fixed = same(base);
        for (size_t d = 0; d + 1 < n; ++d) fixed = fixed && same(subs.at((int)d));
        if (!fixed) continue;
        std::string text = "(polyk_idx)(" + islExprToC(b.expr_from(subs.at(0)).get()) + ")";
        for (size_t d = 1; d < n; ++d)
          text = "(" + text + " * " + t->shape[d].str() + " + " +
                 islExprToC(b.expr_from(d + 1 == n ? base : subs.at((int)d)).get()) + ")";
        in.candidates.push_back({k, base, text, row.param});
        continue;
      }
      isl::pw_aff base = index.pullback(iterators).sub(lane);
      if (!same(base)) continue; // the base must not depend on the lane
      std::string text = islExprToC(b.expr_from(base).get());
      // isl may print the base with the lane in it (rows of 6360 elements taken 8 at a time:
      // 144 * c7 - 144 * ((j + c7) mod 6360)), though its value does not move with it: the base at
      // lane 0 then, the same value.
      if (!in.lane.empty() && text.find(in.lane) != std::string::npos) {
        isl::multi_aff first = isl::multi_aff::identity_on_domain(space);
        first = first.set_at(n - 1, first.at(n - 1).scale(isl::val(islCtx(), 0)));
        text = islExprToC(b.expr_from(base.pullback(first).intersect_domain(points)).get());
      }
      in.candidates.push_back({k, base, text, ""});
    }
    // A reduction whose output moves with the innermost iterator (a y-reduce's vector of
    // columns): its thread owns one output per lane.
    if (st->kind == StmtKind::Reduce) {
      const TensorDecl *out = s_.tensor(isl::map(islCtx(), st->write).range_tuple_id().name());
      isl::pw_aff index = out ? linearIndexAff(st->write, *out) : isl::pw_aff();
      if (!index.is_null()) {
        isl::pw_aff at = index.pullback(iterators);
        if (!same(at)) {
          in.writeMoves = true;
          isl::pw_aff base = at.sub(lane);
          if (same(base)) in.writeBase = base;
          ++lanesNeeded_[st->name];
        }
      }
    }
    if (in.candidates.empty() && !in.writeMoves) return node;
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

namespace {

/// { [l] : lo <= l < hi }, anonymous.
isl::set laneRange(int lo, int hi) {
  isl::set s(islCtx(), "{ [l] : " + std::to_string(lo) + " <= l < " + std::to_string(hi) + " }");
  return isl::manage(isl_set_reset_tuple_id(s.release()));
}

/// The values a band takes over its instances (anonymous), null where its instances lie in
/// several spaces.
isl::set bandValues(const isl::schedule_node &n) {
  isl::union_set values = nodeDomain(n).apply(isl::union_map::from(n.as<isl::schedule_node_band>().get_partial_schedule()));
  if (isl_union_set_n_set(values.get()) != 1) return {};
  return isl::manage(isl_set_reset_tuple_id(isl_set_from_union_set(values.release())));
}

/// Node `n` is a vector loop's band: one member over 0 .. V - 1, innermost (a leaf below it,
/// through marks).
bool laneBand(const isl::schedule_node &n, int V) {
  if (!n.isa<isl::schedule_node_band>()) return false;
  isl::schedule_node c = n.child(0);
  while (c.isa<isl::schedule_node_mark>()) c = c.child(0);
  if (!c.isa<isl::schedule_node_leaf>()) return false;
  isl::set v = bandValues(n);
  if (v.is_null() || v.is_empty()) return false;
  // (An x-reduce's point band [0, lane]: the members before the last one value each.)
  unsigned last = v.tuple_dim() - 1;
  for (unsigned m = 0; m < last; ++m) {
    isl::set mine = isl::manage(isl_set_project_out(isl_set_project_out(v.copy(), isl_dim_set, m + 1, last - m), isl_dim_set, 0, m));
    if (!mine.lexmin().is_equal(mine)) return false;
  }
  isl::set lanes = isl::manage(isl_set_project_out(v.copy(), isl_dim_set, 0, last));
  return lanes.is_subset(laneRange(0, V).intersect_params(lanes.params()));
}

/// A band whose member is one value at given params (a block or thread band after the mapping:
/// its member fixed to b_x or t_x), so no loop of the AST.
bool fixedBand(const isl::schedule_node &n) {
  isl::set v = bandValues(n);
  return !v.is_null() && v.lexmin().is_equal(v);
}

/// Whether `n` or a band above it has AST build options (an isolated part already).
bool isolatedAbove(isl::schedule_node n) {
  for (; n.has_parent(); n = n.parent())
    if (n.isa<isl::schedule_node_band>() && !n.as<isl::schedule_node_band>().get_ast_build_options().is_empty()) return true;
  return false;
}

/// Where lane band `n` has partial vectors (an all-reduce of an odd extent): the band to isolate
/// the whole ones at and its option. The band is the nearest enclosing loop (not a block or
/// thread band), so the whole vectors make one loop and the partial ones follow it, with no test
/// in the loop (a test at each vector slowed small all-reduces: docs/sizes.md, session 28); the
/// lane band itself where there is none.
std::optional<std::pair<isl::schedule_node, isl::union_set>> wholeVectorOption(const isl::schedule_node &n, int V) {
  isl::union_set domain = nodeDomain(n);
  isl::multi_union_pw_aff members = n.as<isl::schedule_node_band>().get_partial_schedule();
  isl::union_map lane = isl::union_map::from(isl::multi_union_pw_aff(members.at((int)members.size() - 1)));
  isl::union_map prefix = isl::manage(isl_schedule_node_get_prefix_schedule_union_map(n.get()));
  // { [prefix] -> [lane] } over the instances, with anonymous tuples.
  isl::union_set points = domain.apply(prefix.range_product(lane));
  if (isl_union_set_n_set(points.get()) != 1) return std::nullopt;
  isl::map at = isl::manage(isl_set_unwrap(isl_set_from_union_set(points.release())));
  at = isl::manage(isl_map_reset_tuple_id(isl_map_reset_tuple_id(at.release(), isl_dim_in), isl_dim_out));
  isl::set lanes = laneRange(0, V);
  // The whole vectors: their first and last lanes exist (a convex set where the instances are,
  // which isl's isolate needs: "all but the partial ones" came out as a union). Checked.
  auto withLane = [&](int l) { return at.intersect_range(laneRange(l, l + 1).intersect_params(at.domain().params())).domain(); };
  isl::set all = at.domain(), full = withLane(0).intersect(withLane(V - 1));
  if (!isl::manage(isl_map_from_domain_and_range(full.copy(), lanes.copy())).is_subset(at)) return std::nullopt;
  // Every vector whole, or none (a short loop of fewer than V points): nothing to isolate.
  if (full.is_empty() || all.subtract(full).is_empty()) return std::nullopt;
  // The band: the nearest enclosing loop, so the bands between it and the lanes are fixed to ids
  // and each of its points holds one vector of the thread (its whole vectors project exactly).
  isl::schedule_node band = n;
  for (isl::schedule_node a = n.parent(); a.has_parent(); a = a.parent())
    if (a.isa<isl::schedule_node_band>() && !fixedBand(a)) {
      band = a;
      break;
    }
  unsigned depth = (unsigned)isl_schedule_node_get_schedule_depth(band.get());
  isl::map whole;
  if (band.get() == n.get()) {
    // (A band [0, lane]: the other members' one value each, then the lanes.)
    isl::set range = lanes;
    if (members.size() > 1) {
      isl::set values = bandValues(n);
      unsigned last = values.tuple_dim() - 1;
      isl::set fixed = isl::manage(isl_set_project_out(values.release(), isl_dim_set, last, 1));
      // (The space first: clang evaluates the arguments left to right, so fixed.release() in the
      // same call ran before fixed.get() there, and isl got NULL; gcc runs them right to left.)
      isl_space *space = isl_set_get_space(fixed.get());
      range = isl::manage(isl_set_flat_product(fixed.release(), isl_set_align_params(range.release(), space)));
    }
    whole = isl::manage(isl_map_from_domain_and_range(full.release(), range.release()));
  } else {
    unsigned keep = depth + band.as<isl::schedule_node_band>().n_member(), total = (unsigned)isl_set_dim(full.get(), isl_dim_set);
    isl::set keys = isl::manage(isl_set_project_out(full.release(), isl_dim_set, keep, total - keep));
    whole = isl::manage(isl_map_move_dims(isl_map_from_range(keys.release()), isl_dim_in, 0, isl_dim_out, 0, depth));
  }
  isl::set wrapped = isl::manage(isl_set_set_tuple_name(isl_map_wrap(whole.release()), "isolate"));
  return std::make_pair(band, isl::union_set(wrapped));
}

} // namespace

isl::schedule VectorReads::isolateWholeVectors(const isl::schedule &sched, int V) {
  if (V < 2) return sched;
  isl::schedule out = sched;
  // One band at a time (each change makes a new tree); a vector loop isolated once, at its own
  // band or one above, is not looked at again.
  std::optional<std::pair<isl::schedule_node, isl::union_set>> next;
  do {
    next.reset();
    out.get_root().foreach_descendant_top_down([&](isl::schedule_node m) -> bool {
      if (!next && laneBand(m, V) && !isolatedAbove(m)) next = wholeVectorOption(m, V);
      return !next;
    });
    if (next) out = next->first.as<isl::schedule_node_band>().set_ast_build_options(next->second).schedule();
  } while (next);
  return out;
}

VectorReads::Loop VectorReads::loop(const isl::ast_node &forNode) {
  Loop result;
  int v = constantTrip(forNode);
  if (v < 2 || v > 16) return result;
  isl_ast_node *f = forNode.get();
  std::string it = islExprToC(isl::manage(isl_ast_node_for_get_iterator(f)).get());
  // Marks (polyk-bind's) print as their child alone.
  auto unmark = [](isl::ast_node n) {
    while (isl_ast_node_get_type(n.get()) == isl_ast_node_mark) n = isl::manage(isl_ast_node_mark_get_node(n.get()));
    return n;
  };
  // The statements of the body, through marks and nested blocks; anything else (a loop, a
  // guard) and this is not a vector loop.
  std::vector<isl::ast_node> users;
  bool flat = true;
  std::function<void(isl::ast_node)> collect = [&](isl::ast_node n) {
    n = unmark(n);
    if (isl_ast_node_get_type(n.get()) == isl_ast_node_user) {
      users.push_back(n);
    } else if (isl_ast_node_get_type(n.get()) == isl_ast_node_block) {
      isl_ast_node_list *list = isl_ast_node_block_get_children(n.get());
      for (int i = 0; i < isl_ast_node_list_n_ast_node(list); ++i) collect(isl::manage(isl_ast_node_list_get_at(list, i)));
      isl_ast_node_list_free(list);
    } else {
      flat = false;
    }
  };
  collect(isl::manage(isl_ast_node_for_get_body(f)));
  if (!flat) return result;
  std::set<std::string> seen;
  for (const auto &u : users) {
    isl_id *id = isl_ast_node_get_annotation(u.get());
    if (!id) continue;
    size_t k = std::string(isl_id_get_name(id)) == kAnnotation ? reinterpret_cast<size_t>(isl_id_get_user(id)) : 0;
    isl_id_free(id);
    if (k == 0 || k > instances_.size()) continue;
    const Instance &in = instances_[k - 1];
    if (in.lane != it || !seen.insert(in.stmt).second) continue; // one definition of its macro per loop
    const ScopStatement *st = s_.statement(in.stmt);
    isl::val vv(islCtx(), v);
    auto multipleOfV = [&](const isl::pw_aff &base) {
      isl::set off = isl::manage(isl_pw_aff_non_zero_set(base.mod(vv).release()));
      if (!assumed_.is_null()) off = off.intersect_params(assumed_);
      return off.is_empty();
    };
    for (const auto &c : in.candidates) {
      const TensorDecl *t = s_.tensor(isl::map(islCtx(), st->reads[c.access]).range_tuple_id().name());
      int bytes = dtypeBytes(t->type) * v;
      if (bytes != 4 && bytes != 8 && bytes != 16) continue;
      if (!multipleOfV(c.base)) continue;
      if (!c.rowParam.empty()) {
        isl::set off(islCtx(), "[" + c.rowParam + "] -> { : " + c.rowParam + " mod " + std::to_string(v) + " != 0 }");
        if (!off.intersect_params(assumed_).is_empty()) continue;
      }
      if (c.text.find(it) != std::string::npos) continue; // printed in terms of the lane after all
      result.reads.push_back({in.stmt, c.access, t->name, c.text});
    }
    // The thread's outputs base + 0 .. base + V - 1, one accumulator each, indexed by the lane.
    if (in.writeMoves && in.writeBase && multipleOfV(*in.writeBase)) {
      result.laneReductions.push_back(in.stmt);
      lanesGiven_[in.stmt] += 1;
      int &l = lanes_[in.stmt];
      if (l != 0 && l != v) throw std::runtime_error("polyk-emit: statement " + in.stmt + " has vector loops of different lengths");
      l = v;
    }
  }
  if (!result.reads.empty() || !result.laneReductions.empty()) result.lanes = v;
  return result;
}

void VectorReads::checkLanes(const SourceLoc &sizes) const {
  for (const auto &[stmt, n] : lanesNeeded_) {
    auto given = lanesGiven_.find(stmt);
    if (given == lanesGiven_.end() || given->second != n)
      fail(sizes, "statement " + stmt + ": a thread reduces into several outputs outside a whole vector loop "
                       "(a y-reduce's vector of columns needs tiles that divide the columns; see --sizes)");
  }
}

int VectorReads::lanesOf(const std::string &stmt) const {
  auto l = lanes_.find(stmt);
  return l == lanes_.end() ? 1 : l->second;
}

} // namespace polyk::codegen
