// Loop coalescing and reduction propagation (Panamera §3.1-3.2, Formula 1). See Flatten.h.
#include "polyk/Flatten.h"

#include "polyk/Isl.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <sstream>

namespace polyk {

namespace {

/// A symbolic extent Panamera's Formula 1 cannot recover affinely; flatten takes the affine path.
class CoalesceLimit : public InputError {
  using InputError::InputError;
};

/// Every reduction of `p` has outputs and a read that misses one of them (a contraction's).
bool contraction(const Program &p) {
  for (const auto &ps : p.statements) {
    if (ps.stmt.assignOp == "=") continue;
    if (ps.stmt.lhs.indices.empty()) return false;
    std::vector<const Access *> reads;
    collectAccesses(ps.stmt.rhs, reads);
    bool misses = false;
    for (const Access *a : reads)
      for (const auto &i : ps.stmt.lhs.indices) {
        bool found = false;
        for (const auto &sub : a->subscripts)
          for (const auto &term : sub.terms) found = found || term.first == i;
        misses = misses || !found;
      }
    if (!misses) return false;
  }
  return true;
}

/// A copy of `e` sharing no node with it (the relayout rewrites accesses in place).
ExprPtr deepCopy(const ExprPtr &e) {
  if (!e) return e;
  auto c = std::make_shared<Expr>(*e);
  for (auto &a : c->args) a = deepCopy(a);
  return c;
}

/// An access of `tensor` at the plain indices `names`, for a statement flatten writes itself.
Access plainAccess(const std::string &tensor, const std::vector<std::string> &names) {
  Access a;
  a.tensor = tensor;
  a.setPlain(names);
  a.indexOffsets.assign(names.size(), 0);
  return a;
}

/// The expression reading plainAccess(tensor, names).
ExprPtr plainRead(const std::string &tensor, const std::vector<std::string> &names) {
  auto e = std::make_shared<Expr>();
  e->kind = Expr::Kind::Access;
  e->access = plainAccess(tensor, names);
  return e;
}

/// How one statement's iterators are grouped into coalesced dims (outer group first).
struct Plan {
  Form form = Form::Elementwise;
  std::vector<std::vector<std::string>> groups; // iterator names, outer to inner, per coalesced dim
  std::vector<std::string> dimKinds;            // "parallel" / "reduced" per coalesced dim
  bool interchanged = false;
};

const char *coalescedName(size_t d, size_t n) { return n == 1 ? "i" : (d == 0 ? "i" : "j"); }

/// The order of a statement's parallel ('p') and reduced ('r') runs of dims, outer to inner:
/// "rp" for a y-reduce, "prp" for interleaved ones. Dims of one element (a literal 1) interleave
/// nothing and are left out where both kinds remain without them: x[1, B, C, D] over b and c is
/// a y-reduce ("rp"), not "prp" (its transposition ran 24x slower than reading the columns, the
/// random suite's bool [1, 278, 12480, 115], bench/results/2026-11-28-h200-random-reductions.txt).
std::string interleaving(const ProgramStatement &ps) {
  std::string all, without;
  for (size_t k = 0; k < ps.iterators.size(); ++k) {
    char c = ps.reduced[k] ? 'r' : 'p';
    if (all.empty() || all.back() != c) all += c;
    bool one = ps.extents[k].param.empty() && ps.extents[k].value == 1;
    if (!one && (without.empty() || without.back() != c)) without += c;
  }
  bool both = without.find('r') != std::string::npos && without.find('p') != std::string::npos;
  return both ? without : all;
}

/// A "prp" reduction (x[A, B, C] over b) read as it lies: a batched y-reduce. Its parallel dims
/// coalesce into one dim of columns (a, c), its reduced ones into the rows, and each row of
/// columns is A runs of C elements. The alternative, Panamera's interchange, transposes x into
/// [A, C, B] first (from kRelayoutMinElements): that kernel reads x at a stride of C elements
/// and the reduction reads the copy again. H200, old and new in one call
/// (bench/results/2026-11-29-h200-batched-columns.txt): 31 cases of runs of 8-16384 bytes,
/// 1.2-18x faster (prod i32 [2, 1248718, 52] over dim 1 3042 -> 152 us; sum f32 [8000, 4000, 2]
/// 214 -> 184). Below kRelayoutMinElements the interleaved x-reduce reads x from L2 in place; it
/// stays where C's run is shorter than a 32-byte sector (min i32 [50, 50, 3] 4.4 against 5.6 us),
/// and the columns take the rest ([8, 1000, 100] 9.4 -> 8.3 us). The inner run must be constant,
/// and only the outermost parallel dim symbolic (Formula 1).
constexpr long long kColumnRunBytes = 32;
constexpr long long kRelayoutMinElements = 1LL << 22;

/// A "prp" reduction x[A, B, C] over b whose run C is 2 or 3 elements, with A at least
/// kStridedRowsMin and B at least kStridedRowsMinReduced (constants): the interleaved x-reduce
/// reads x in place, at every size. Its (a, c) rows each read every C-th element, and the rows of
/// one a, adjacent, are read at once, so L1 / L2 serve each sector's other elements; the batched
/// columns read runs of C elements a stride of B * C apart (H200, bench/results/
/// 2026-11-29-h200-strided-rows.txt: sum f32 [8000, 4000, 2] 183 -> 85 us, and f16 [55237, 952,
/// 2] 369 -> 130; runs of 4 or more, A of 2 or 3, and B of 218 lost: [4000, 4000, 4] 109 -> 139
/// us, [2, 2097153, 2] 17 -> 21, sum f16 [98465, 218, 3] 73 -> 94). The thresholds lie between
/// the cases measured (B: 218 lost, 952 won), not at a measured crossing.
constexpr long long kStridedRowsMaxRun = 3;
constexpr long long kStridedRowsMin = 1024;
constexpr long long kStridedRowsMinReduced = 512;

bool stridedRows(const ProgramStatement &ps) {
  if (interleaving(ps) != "prp") return false;
  size_t n = ps.iterators.size(), firstReduced = n, lastReduced = n;
  auto unit = [&](size_t k) { return ps.extents[k].param.empty() && ps.extents[k].value == 1; };
  for (size_t k = 0; k < n; ++k)
    if (ps.reduced[k] && !unit(k)) {
      if (firstReduced == n) firstReduced = k;
      lastReduced = k;
    }
  if (firstReduced == n) return false;
  long long rows = 1, run = 1, reduced = 1;
  for (size_t k = 0; k < n; ++k) {
    if (!ps.extents[k].param.empty()) return false;
    long long e = ps.extents[k].value;
    if (ps.reduced[k]) reduced *= e;
    else if (k < firstReduced) rows *= e;
    else if (k > lastReduced) run *= e;
  }
  return run >= 2 && run <= kStridedRowsMaxRun && rows >= kStridedRowsMin && reduced >= kStridedRowsMinReduced;
}

bool batchedColumns(const ProgramStatement &ps, const Program &p) {
  if (interleaving(ps) != "prp" || stridedRows(ps)) return false;
  size_t n = ps.iterators.size(), lastReduced = n;
  auto unit = [&](size_t k) { return ps.extents[k].param.empty() && ps.extents[k].value == 1; };
  long long elements = 1;
  bool symbolic = false;
  for (size_t k = 0; k < n; ++k) {
    if (ps.reduced[k] && !unit(k)) lastReduced = k;
    elements *= ps.extents[k].value, symbolic |= !ps.extents[k].param.empty();
  }
  if (lastReduced == n) return false; // reduced dims of one element only: nothing between
  long long run = 1;
  for (size_t k = lastReduced + 1; k < n; ++k) {
    if (!ps.extents[k].param.empty()) return false;
    run *= ps.extents[k].value;
  }
  bool outer = true;
  for (size_t k = 0; k < n; ++k) {
    if (ps.reduced[k]) continue;
    if (!outer && !ps.extents[k].param.empty()) return false;
    outer = false;
  }
  if (symbolic || elements >= kRelayoutMinElements) return true;
  std::vector<const Access *> reads;
  collectAccesses(ps.stmt.rhs, reads);
  int bytes = 16;
  for (const Access *a : reads)
    if (const TensorDecl *t = p.tensor(a->tensor)) bytes = std::min(bytes, dtypeBytes(t->type));
  return run * bytes >= kColumnRunBytes;
}

/// Panamera Fig. 2 -> Fig. 3: contiguous groups as they are; interleaved ones interchanged with
/// the parallel dims outermost (an x-reduce), which never violates a dependence (§3.1), except
/// where the columns are read as they lie (batchedColumns).
Plan planReduction(const ProgramStatement &ps, const Program &p) {
  Plan plan;
  std::vector<std::string> par, red;
  for (size_t k = 0; k < ps.iterators.size(); ++k) (ps.reduced[k] ? red : par).push_back(ps.iterators[k]);
  std::string pattern = interleaving(ps);
  if (par.empty()) {
    plan.form = Form::AllReduce;
    plan.groups = {red};
    plan.dimKinds = {"reduced"};
  } else if (pattern == "rp" || batchedColumns(ps, p)) {
    plan.form = Form::YReduce;
    plan.groups = {red, par};
    plan.dimKinds = {"reduced", "parallel"};
  } else {
    plan.form = Form::XReduce;
    plan.groups = {par, red};
    plan.dimKinds = {"parallel", "reduced"};
    plan.interchanged = pattern != "pr";
  }
  return plan;
}

struct Builder {
  const Program &p;
  std::vector<std::optional<Plan>> plans;
  std::map<std::string, int> writerOf; // tensor -> statement index
  std::map<std::string, int> readCount;
  std::set<std::string> transposedInputs; // written by a relayout statement: a kernel of its own
  std::set<size_t> copies;                // reductions over unit dims only (unitDimReduction)

  explicit Builder(const Program &prog) : p(prog), plans(prog.statements.size()) {
    for (size_t k = 0; k < p.statements.size(); ++k) {
      writerOf[p.statements[k].stmt.lhs.tensor] = (int)k;
      std::vector<const Access *> reads;
      collectAccesses(p.statements[k].stmt.rhs, reads);
      for (const Access *a : reads) readCount[a->tensor]++;
    }
  }

  /// §3.2: an elementwise producer read over all of its consumer's iterators takes
  /// the consumer's coalescing (its dims renamed through the tensor it writes), so the two stay
  /// fusible after coalescing. Recurses through chains of elementwise statements.
  void propagate(int consumer) {
    const ProgramStatement &cs = p.statements[consumer];
    std::vector<const Access *> reads;
    collectAccesses(cs.stmt.rhs, reads);
    for (const Access *a : reads) {
      auto w = writerOf.find(a->tensor);
      if (w == writerOf.end() || w->second >= consumer) continue;
      int producer = w->second;
      const ProgramStatement &ps = p.statements[producer];
      // A producer read elsewhere too still fuses into the reduction (it also stores its result
      // for the other readers): softmax's exp(x - max) feeds both the sum and the division.
      if (plans[producer] || ps.stmt.assignOp != "=") continue;
      // A transposition stays a kernel of its own: fused, it would read strided again.
      if (transposedInputs.count(a->tensor)) continue;
      if (a->indices.size() != cs.iterators.size()) continue; // a broadcast: no one-to-one match
      std::map<std::string, std::string> rename; // consumer iterator -> producer iterator
      for (size_t d = 0; d < a->indices.size(); ++d) rename[a->indices[d]] = ps.stmt.lhs.indices[d];
      Plan plan = *plans[consumer];
      for (auto &g : plan.groups)
        for (auto &name : g) name = rename.at(name);
      plan.interchanged = false;
      plans[producer] = plan;
      propagate(producer);
    }
  }

  /// An elementwise statement that reads an x-reduce's result as a broadcast over its rows
  /// (softmax's y(i, j) = e(i, j) / s(i)) keeps the rows apart: its leading indices, those of the
  /// result, coalesce like the reduction's parallel dims and its trailing ones into a second,
  /// parallel dim. Its loops then have the reduction's shape and its kernel can share the
  /// reduction's blocks (a block owns whole rows: polyk-emit fuses such kernels).
  std::optional<Plan> rowConsumerPlan(int k) const {
    const ProgramStatement &cs = p.statements[k];
    if (cs.stmt.assignOp != "=") return std::nullopt;
    std::vector<const Access *> reads;
    collectAccesses(cs.stmt.rhs, reads);
    const std::vector<std::string> &lhs = cs.stmt.lhs.indices;
    for (const Access *a : reads) {
      auto w = writerOf.find(a->tensor);
      if (w == writerOf.end() || w->second >= k || !plans[w->second]) continue;
      const Plan &red = *plans[w->second];
      if (red.form != Form::XReduce || red.interchanged || p.statements[w->second].stmt.assignOp == "=") continue;
      size_t n = a->indices.size();
      if (n == 0 || n >= lhs.size() || !std::equal(a->indices.begin(), a->indices.end(), lhs.begin())) continue;
      Plan plan;
      plan.groups = {std::vector<std::string>(lhs.begin(), lhs.begin() + n), std::vector<std::string>(lhs.begin() + n, lhs.end())};
      plan.dimKinds = {"parallel", "parallel"};
      return plan;
    }
    return std::nullopt;
  }

  /// A copy (unitDimReduction): one parallel dim over every iterator, the unit ones last (their
  /// recovery is 0), so that a symbolic extent can lead the group as Formula 1 needs; none where
  /// another extent is symbolic (x[8, B] over a unit dim keeps its y-reduce).
  std::optional<Plan> copyPlan(const ProgramStatement &ps) const {
    if (!unitDimReduction(ps, p)) return std::nullopt;
    std::vector<std::string> dims, units;
    for (size_t k = 0; k < ps.iterators.size(); ++k) {
      bool unit = ps.extents[k].param.empty() && ps.extents[k].value == 1;
      if (!unit && !dims.empty() && !ps.extents[k].param.empty()) return std::nullopt;
      (unit ? units : dims).push_back(ps.iterators[k]);
    }
    Plan plan;
    dims.insert(dims.end(), units.begin(), units.end());
    plan.groups = {dims};
    plan.dimKinds = {"parallel"};
    return plan;
  }

  /// `[B, N] -> ` when the program has symbolic extents.
  std::string paramPrefix() const {
    if (p.params.empty()) return "";
    std::string s = "[";
    for (size_t k = 0; k < p.params.size(); ++k) s += (k ? ", " : "") + p.params[k].first;
    return s + "] -> ";
  }

  std::map<std::string, Extent> extentsOf(const ProgramStatement &ps) const {
    std::map<std::string, Extent> extent;
    for (size_t k = 0; k < ps.iterators.size(); ++k) extent[ps.iterators[k]] = ps.extents[k];
    return extent;
  }

  /// Formula 1: the expression of each original iterator over the coalesced dims. A symbolic
  /// extent keeps the recovery affine only as the outermost dim of its group (Panamera allows
  /// one symbolic extent per group).
  std::map<std::string, std::string> recoveryExprs(const Plan &plan, const ProgramStatement &ps) {
    auto extent = extentsOf(ps);
    std::map<std::string, std::string> rec;
    for (size_t g = 0; g < plan.groups.size(); ++g) {
      const auto &dims = plan.groups[g];
      std::string c = coalescedName(g, plan.groups.size());
      std::string symbol;
      for (const auto &d : dims) {
        if (extent[d].param.empty()) continue;
        if (!symbol.empty())
          throw CoalesceLimit(ps.loc, "two symbolic extents ('" + symbol + "' and '" + extent[d].param +
                                          "') in one coalesced group: at most one is supported (Panamera Formula 1)");
        symbol = extent[d].param;
      }
      for (size_t a = 0; a < dims.size(); ++a) {
        if (a > 0 && !extent[dims[a]].param.empty())
          throw CoalesceLimit(ps.loc, "symbolic extent '" + extent[dims[a]].param + "' of index '" + dims[a] +
                                          "' must be the outermost dim of its coalesced group (Panamera's Formula 1 stays affine only then)");
        long long inner = 1;
        for (size_t b = a + 1; b < dims.size(); ++b) inner *= extent[dims[b]].value;
        std::string e = inner == 1 ? c : "floor(" + c + "/" + std::to_string(inner) + ")";
        if (a > 0) e = "(" + e + ") mod " + std::to_string(extent[dims[a]].value);
        rec[dims[a]] = "(" + e + ")";
      }
    }
    return rec;
  }

  std::string tuple(const std::string &name, const Plan &plan) {
    std::string s = name + "[";
    for (size_t g = 0; g < plan.groups.size(); ++g) s += (g ? ", " : "") + std::string(coalescedName(g, plan.groups.size()));
    return s + "]";
  }

  /// ` : 0 <= i < M and 0 <= j < N` over the coalesced dims (or only the parallel ones); M and N
  /// are a number, or a number times the group's one symbolic extent.
  std::string domainConstraints(const Plan &plan, const ProgramStatement &ps, bool parallelOnly) {
    auto extent = extentsOf(ps);
    std::string s;
    for (size_t g = 0; g < plan.groups.size(); ++g) {
      if (parallelOnly && plan.dimKinds[g] != "parallel") continue;
      long long n = 1;
      std::string symbol;
      for (const auto &d : plan.groups[g]) {
        if (extent[d].param.empty()) n *= extent[d].value;
        else symbol = extent[d].param; // one per group: recoveryExprs checked
      }
      std::string bound = symbol.empty() ? std::to_string(n) : (n == 1 ? symbol : std::to_string(n) + "*" + symbol);
      s += std::string(s.empty() ? " : " : " and ") + "0 <= " + coalescedName(g, plan.groups.size()) + " < " + bound;
    }
    for (const auto &[name, value] : p.params) s += std::string(s.empty() ? " : " : " and ") + name + " >= 1";
    return s;
  }

  std::string domainOf(const std::string &name, const Plan &plan, const ProgramStatement &ps) {
    return normalizeSet(paramPrefix() + "{ " + tuple(name, plan) + domainConstraints(plan, ps, false) + " }");
  }

  std::string accessMap(const std::string &tup, const Access &a, const std::map<std::string, std::string> &rec) {
    std::string s = paramPrefix() + "{ " + tup + " -> " + a.tensor + "[";
    for (size_t d = 0; d < a.indices.size(); ++d) s += (d ? ", " : "") + rec.at(a.indices[d]);
    return normalizeMap(s + "] }");
  }

  Scop run() {
    for (size_t k = 0; k < p.statements.size(); ++k)
      if (auto copy = copyPlan(p.statements[k])) {
        plans[k] = *copy;
        copies.insert(k);
      } else if (p.statements[k].stmt.assignOp != "=") {
        plans[k] = planReduction(p.statements[k], p);
      }
    // Later reductions first claim their producers, walking back from each reduction.
    for (int k = (int)p.statements.size() - 1; k >= 0; --k)
      if (p.statements[k].stmt.assignOp != "=") propagate(k);
    for (size_t k = 0; k < p.statements.size(); ++k) {
      if (plans[k]) continue;
      if (auto rows = rowConsumerPlan((int)k)) {
        plans[k] = *rows;
        continue;
      }
      Plan plan; // an elementwise statement alone: all its dims into one parallel loop
      std::vector<std::string> all;
      for (const auto &ix : p.statements[k].stmt.lhs.indices) all.push_back(ix);
      plan.groups = {all};
      plan.dimKinds = {"parallel"};
      if (all.empty()) plan.groups.clear(), plan.dimKinds.clear();
      plans[k] = plan;
    }

    Scop s;
    s.name = p.name;
    s.params = p.params;
    s.tensors = p.tensors;
    for (size_t k = 0; k < p.statements.size(); ++k) {
      const ProgramStatement &ps = p.statements[k];
      const Plan &plan = *plans[k];
      std::string name = "S" + std::to_string(k);
      auto rec = recoveryExprs(plan, ps);

      auto op = copies.count(k) ? std::nullopt : ps.stmt.reduceOp();
      if (op) {
        // The fresh initialisation of `+=!`: one instance per output element, over the parallel dim.
        Plan initPlan;
        for (size_t g = 0; g < plan.groups.size(); ++g)
          if (plan.dimKinds[g] == "parallel") initPlan.groups.push_back(plan.groups[g]), initPlan.dimKinds.push_back("parallel");
        ScopStatement init;
        init.name = name + "_init";
        init.kind = StmtKind::Init;
        init.source = ps.text;
        init.op = op;
        init.reduction = name;
        init.form = plan.form;
        init.dims = initPlan.dimKinds;
        std::string tup = init.name + "[";
        std::map<std::string, std::string> initRec;
        for (size_t g = 0, n = 0; g < plan.groups.size(); ++g) {
          if (plan.dimKinds[g] != "parallel") continue;
          std::string c = coalescedName(g, plan.groups.size());
          tup += (n++ ? ", " : "") + c;
        }
        tup += "]";
        init.domain = normalizeSet(paramPrefix() + "{ " + tup + domainConstraints(plan, ps, /*parallelOnly=*/true) + " }");
        for (const auto &ix : ps.stmt.lhs.indices) {
          init.iterators.push_back(ix);
          initRec[ix] = rec.at(ix);
        }
        std::string ra = "{ " + tup + " -> [";
        for (size_t d2 = 0; d2 < init.iterators.size(); ++d2) ra += (d2 ? ", " : "") + initRec[init.iterators[d2]];
        init.recovery = islStr(isl::multi_aff(islCtx(), paramPrefix() + ra + "] }"));
        init.write = accessMap(tup, ps.stmt.lhs, initRec);
        init.body = "";
        s.statements.push_back(init);
      }

      ScopStatement st;
      st.name = name;
      st.kind = op ? StmtKind::Reduce : StmtKind::Assign;
      st.source = ps.text;
      st.op = op;
      st.form = plan.form;
      st.dims = plan.dimKinds;
      st.interchanged = plan.interchanged;
      std::string tup = tuple(name, plan);
      st.domain = domainOf(name, plan, ps);
      // Recovery lists the original iterators in loop order (the order of the coalesced groups).
      std::string ra = "{ " + tup + " -> [";
      size_t n = 0;
      for (const auto &g : plan.groups)
        for (const auto &ix : g) {
          st.iterators.push_back(ix);
          ra += (n++ ? ", " : "") + rec.at(ix);
        }
      st.recovery = islStr(isl::multi_aff(islCtx(), paramPrefix() + ra + "] }"));
      st.write = accessMap(tup, ps.stmt.lhs, rec);
      std::vector<const Access *> reads;
      collectAccesses(ps.stmt.rhs, reads);
      for (const Access *a : reads) st.reads.push_back(accessMap(tup, *a, rec));
      st.body = printExpr(ps.stmt.rhs);
      st.loc = ps.loc;
      s.statements.push_back(st);
    }
    s.provenance = p.provenance;
    s.provenance.push_back(currentStage("polyk-flatten"));
    return s;
  }
};

} // namespace

/// Reductions whose dims interleave as "rpr" or "prpr" (x[A, B, C, D] over b and d) and end in a
/// short run of reduced elements (D of 2 to kSplitRunMax, fixed extents), where the Relayouter
/// would transpose their input (from kRelayoutMinElements elements), split in two instead: the
/// outer reduced dims first, into a temporary that keeps the run's dims (T[A, C, D]: a "prp"
/// reduction, read as it lies by batchedColumns), then the run (out[A, C] over d of T, a short
/// x-reduce). The transposition read x, wrote a copy and read the copy: three passes over x, the
/// split one (H200, the random draw s53764's prod f64 [3, 79346, 8, 5] over dims 1 and 3: 82.7 us
/// with the transposition, 0.39x torch.compile's 32.0; the split is not measured yet, so it is
/// `polyk-flatten --split-runs`, off by default). The temporary holds the accumulator's type
/// (f32 for f16 sums), so no partial is rounded to the output's type. The reduction operators are
/// associative and commutative, so either order is the reduction's.
constexpr long long kSplitRunMax = 8;

namespace {

void splitShortInnerRuns(Program &p) {
  std::vector<ProgramStatement> out;
  int made = 0;
  for (const ProgramStatement &ps : p.statements) {
    std::optional<ReduceOp> op = ps.stmt.reduceOp();
    std::string pattern = interleaving(ps);
    size_t n = ps.iterators.size(), first = n;
    long long run = 1, elements = 1;
    bool fixed = true;
    for (size_t k = 0; k < n; ++k) fixed &= ps.extents[k].param.empty(), elements *= ps.extents[k].value;
    for (size_t k = n; k-- > 0 && ps.reduced[k];) run *= ps.extents[k].value, first = k;
    const TensorDecl *result = p.tensor(ps.stmt.lhs.tensor);
    bool plainLhs = ps.stmt.lhs.plain();
    if (!op || !ps.stmt.freshlyInitialised || !ps.stmt.where.empty() || !result || !plainLhs || !fixed ||
        (pattern != "rpr" && pattern != "prpr") || first == n || run < 2 || run > kSplitRunMax ||
        elements < kRelayoutMinElements || unitDimReduction(ps, p)) {
      out.push_back(ps);
      continue;
    }
    // T(kept...) OP=! rhs over the outer reduced dims; out(lhs) OP=! T(kept...) over the run.
    TensorDecl t;
    t.name = ps.stmt.lhs.tensor + "_s" + std::to_string(made++);
    while (p.tensor(t.name)) t.name += "_";
    t.type = accumulatorType(*op, result->type);
    t.role = Role::Temporary;
    t.loc = ps.loc;
    std::vector<std::string> kept;
    for (size_t k = 0; k < n; ++k)
      if (!ps.reduced[k] || k >= first) kept.push_back(ps.iterators[k]), t.shape.push_back(ps.extents[k]);
    p.tensors.push_back(t);
    ProgramStatement outer = ps, inner = ps;
    outer.stmt.lhs = plainAccess(t.name, kept);
    inner.stmt.rhs = plainRead(t.name, kept);
    for (ProgramStatement *q : {&outer, &inner}) {
      q->text = printStatement(q->stmt);
      q->iterators.clear(), q->extents.clear(), q->reduced.clear();
      analyseStatement(*q, p);
      out.push_back(*q);
    }
  }
  p.statements = out;
}

} // namespace

/// Panamera §3.1: interchanging interleaved dims must not cost memory coalescing. For each
/// reduction whose parallel and reduced dims interleave (but for "prp" ones, batchedColumns and
/// stridedRows, and copies, unitDimReduction), the tensors it (and its elementwise producers) read are re-laid
/// out in the interchanged loop order: a temporary's layout is permuted where it is written; an
/// input is copied into a transposed temporary by a statement added first. The loops then scan every tensor contiguously and need no interchange.
/// Reductions over fewer elements keep their interleaved reads (no relayout).
constexpr long long kLongRun = 1024;

class Relayouter {
public:
  explicit Relayouter(Program &p) : p_(p) {}

  std::vector<Relayout> run() {
    for (size_t k = 0; k < p_.statements.size(); ++k) {
      ProgramStatement &ps = p_.statements[k];
      if (ps.stmt.assignOp == "=") continue;
      std::string pattern = interleaving(ps);
      if (pattern.size() <= 2) continue; // contiguous: all, x or y
      if (batchedColumns(ps, p_) || stridedRows(ps) || unitDimReduction(ps, p_)) continue; // read as they lie
      // A small reduction reads its strided elements from L2 faster than a transposition kernel
      // costs to launch (H100: [40, 20, 10, 5] over dims 0, 2, 3 took 15 us with it, 8 without).
      long long elements = 1;
      bool symbolic = false;
      for (const auto &e : ps.extents) elements *= e.value, symbolic |= !e.param.empty();
      if (!symbolic && elements < kRelayoutMinElements) continue;
      // Long contiguous runs of reduced elements innermost (x[a, b, d] over a and d, d long)
      // are read coalesced as they lie: a transposition would triple the traffic.
      long long run = 1;
      for (size_t d = ps.iterators.size(); d-- > 0 && ps.reduced[d];) run = ps.extents[d].param.empty() ? run * ps.extents[d].value : 0;
      if (pattern.back() == 'r' && run >= kLongRun) continue;
      std::vector<std::string> order, red; // parallel dims first, then the reduced ones
      for (size_t d = 0; d < ps.iterators.size(); ++d) (ps.reduced[d] ? red : order).push_back(ps.iterators[d]);
      order.insert(order.end(), red.begin(), red.end());
      relayoutReads(k, order);
    }
    for (size_t k : changed_) {
      ProgramStatement &ps = p_.statements[k];
      ps.text = printStatement(ps.stmt);
      ps.iterators.clear(), ps.extents.clear(), ps.reduced.clear();
      analyseStatement(ps, p_);
    }
    // Transpositions run first, in the order they were made.
    p_.statements.insert(p_.statements.begin(), added_.begin(), added_.end());
    return relayouts_;
  }

private:
  /// Rewrites the full-rank reads of statement k to index in `order` (names of k's indices).
  void relayoutReads(size_t k, const std::vector<std::string> &order) {
    std::vector<Access *> reads;
    collectMutable(p_.statements[k].stmt.rhs, reads);
    for (Access *a : reads) {
      if (a->indices.size() != order.size() || a->indices == order) continue;
      std::vector<int> perm; // new dim d reads old dim perm[d]
      for (const auto &ix : order) {
        auto it = std::find(a->indices.begin(), a->indices.end(), ix);
        if (it == a->indices.end()) return;
        perm.push_back((int)(it - a->indices.begin()));
      }
      TensorDecl &t = *tensor(a->tensor);
      if (t.role == Role::Input) {
        a->tensor = transposed(t, perm);
      } else if (t.role == Role::Temporary) {
        int w = writer(t.name);
        if (w < 0 || readers(t.name) != 1 || p_.statements[w].stmt.assignOp != "=") continue;
        permuteTemporary(t, perm, (size_t)w);
        Statement &producer = p_.statements[w].stmt;
        relayoutReads((size_t)w, producer.lhs.indices);
      } else {
        continue;
      }
      a->setPlain(order);
      changed_.insert(k);
    }
  }

  std::string transposed(const TensorDecl t, const std::vector<int> &perm) { // a copy: tensors grow
    for (const auto &r : relayouts_)
      if (r.tensor == t.name && r.order == perm) return r.as;
    std::string name = t.name + "_t" + std::to_string(relayouts_.size());
    TensorDecl nt = t;
    nt.name = name;
    nt.role = Role::Temporary;
    nt.shape.clear();
    for (int d : perm) nt.shape.push_back(t.shape[d]);
    p_.tensors.push_back(nt);
    relayouts_.push_back({t.name, name, perm, {}});
    // name(o0, o1, ...) = t(...) with o_d at t's dim perm[d].
    std::vector<std::string> in(perm.size()), out;
    for (size_t d = 0; d < perm.size(); ++d) {
      out.push_back("o" + std::to_string(d));
      in[perm[d]] = out.back();
    }
    ProgramStatement ps;
    ps.stmt.lhs = plainAccess(name, out);
    ps.stmt.assignOp = "=";
    ps.stmt.rhs = plainRead(t.name, in);
    ps.text = printStatement(ps.stmt);
    ps.loc = t.loc;
    analyseStatement(ps, p_);
    added_.push_back(ps);
    return name;
  }

  void permuteTemporary(TensorDecl &t, const std::vector<int> &perm, size_t w) {
    std::vector<Extent> shape;
    std::vector<std::string> lhs;
    for (int d : perm) shape.push_back(t.shape[d]), lhs.push_back(p_.statements[w].stmt.lhs.indices[d]);
    t.shape = shape;
    p_.statements[w].stmt.lhs.setPlain(lhs);
    changed_.insert(w);
    relayouts_.push_back({t.name, t.name, perm, {}});
  }

  static void collectMutable(const ExprPtr &e, std::vector<Access *> &out) {
    if (e->kind == Expr::Kind::Access) out.push_back(&e->access);
    for (const auto &a : e->args) collectMutable(a, out);
  }
  TensorDecl *tensor(const std::string &n) {
    for (auto &t : p_.tensors)
      if (t.name == n) return &t;
    return nullptr;
  }
  int writer(const std::string &n) const {
    for (size_t k = 0; k < p_.statements.size(); ++k)
      if (p_.statements[k].stmt.lhs.tensor == n) return (int)k;
    return -1;
  }
  int readers(const std::string &n) const {
    int c = 0;
    for (const auto &ps : p_.statements) {
      std::vector<const Access *> r;
      collectAccesses(ps.stmt.rhs, r);
      for (const Access *a : r) c += a->tensor == n;
    }
    return c;
  }

  Program &p_;
  std::vector<ProgramStatement> added_;
  std::vector<Relayout> relayouts_;
  std::set<size_t> changed_;
};

namespace {

Scop flattenChecked(const Program &program, const FlattenOptions &opt) {
  if (needsAffinePath(program)) return flattenAffine(program);
  Program relaid = program;
  for (auto &ps : relaid.statements) ps.stmt.rhs = deepCopy(ps.stmt.rhs);
  inlineProducers(relaid);
  if (opt.splitRuns) splitShortInnerRuns(relaid);
  std::vector<Relayout> relayouts = Relayouter(relaid).run();
  Builder builder(relaid);
  for (const auto &r : relayouts)
    if (r.as != r.tensor) builder.transposedInputs.insert(r.as);
  try {
    Scop s = builder.run();
    s.relayouts = relayouts;
    s.iterate = program.iterate;
    return s;
  } catch (const CoalesceLimit &) {
    // A symbolic extent that Panamera's coalescing cannot keep affine (not the outermost of its
    // group: C(a, b) +=! A(c, b) * B(c, b, a) with a's extent a parameter, drawn by
    // test/affine/random.py): a contraction, each of whose reductions has outputs and a read
    // that misses one of them (its threads, one an output, share that read), keeps its loops on
    // the affine path instead. Other reductions keep the error: on the affine path a sum to few
    // outputs would run in as few threads.
    if (!contraction(program)) throw;
    return flattenAffine(program);
  }
}

} // namespace

Scop flatten(const Program &program, const FlattenOptions &opt) {
  SourceLoc at = program.statements.empty() ? SourceLoc{} : program.statements.front().loc;
  return reportedAt(at, "polyk-flatten", [&] { return flattenChecked(program, opt); });
}

} // namespace polyk
