// The affine path of polyk-flatten (DESIGN.md, "Affine programs"): statements with affine
// subscripts, `where` clauses or an outer-product reuse pattern keep their original loops (no
// coalescing: it would make `A(i + 1, j)` and a symbolic `where` non-affine). A reduction becomes
// three assignments through an accumulator temporary, which polyk-bind keeps in registers:
//   C(i, j) +=! A(i, k) * B(k, j)   ->   S0_init:  C_acc(i, j) = 0
//                                        S0:       C_acc(i, j) = C_acc(i, j) + A(i, k) * B(k, j)
//                                        S0_store: C(i, j) = C_acc(i, j)
// An elementwise consumer of the reduction's (temporary) output fuses into the store, so a conv
// with its bias and ReLU is one kernel: `O(k, y, x) +=! ...; R(k, y, x) = max(O(k, y, x) + b(k), 0)`
// stores `R(k, y, x) = max(f32(O_acc(k, y, x)) + b(k), 0)` (the consumer kept as its `epilogue`,
// for the reference) and the kernels never write O.
#include "polyk/Flatten.h"

#include "polyk/Isl.h"

#include <algorithm>
#include <map>
#include <set>

namespace polyk {

namespace {

/// Words isl's parser reserves: an index or parameter so named cannot appear in isl text.
bool islKeyword(const std::string &s) {
  static const std::set<std::string> words{"and", "or", "not", "implies", "exists", "infty", "NaN", "min", "max",
                                           "rat", "true", "false", "ceild", "floord", "mod", "ceil", "floor"};
  return words.count(s) > 0;
}

std::string islAffine(const Affine &f) {
  std::string s = std::to_string(f.constant);
  for (const auto &[name, c] : f.terms) s += (c < 0 ? " - " : " + ") + std::to_string(c < 0 ? -c : c) + "*" + name;
  return "(" + s + ")";
}

/// A reduction whose reads reuse each other's elements across different output indices (GEMM's
/// A(i, k) misses j and B(k, j) misses i): the Panamera forms read one of them once per output.
/// Also a broadcast read in a reduction of more than two parallel dims (a contraction such as
/// C(e, c, a, d) +=! A(d, c, b) * B(d, b, a, c, e), drawn by test/affine/random.py): the Panamera
/// scheduler's ILP ran out of its operation budget on it.
bool outerProduct(const ProgramStatement &ps) {
  if (ps.stmt.assignOp == "=") return false;
  std::set<std::set<std::string>> missing;
  std::vector<const Access *> reads;
  collectAccesses(ps.stmt.rhs, reads);
  for (const Access *a : reads) {
    std::set<std::string> miss(ps.stmt.lhs.indices.begin(), ps.stmt.lhs.indices.end());
    for (const auto &s : a->subscripts)
      for (const auto &[name, c] : s.terms) miss.erase(name);
    if (!miss.empty()) missing.insert(miss);
  }
  return missing.size() >= 2 || (!missing.empty() && ps.stmt.lhs.indices.size() > 2);
}

class AffineBuilder {
public:
  explicit AffineBuilder(const Program &p) : p_(p) {
    for (const auto &[name, v] : p.params) {
      if (islKeyword(name)) fail(p.statements.front().loc, "parameter '" + name + "' has a name isl reserves; rename it");
      prefix_ += std::string(prefix_.size() ? ", " : "[") + name;
      positive_ += " and " + name + " >= 1";
    }
    if (!prefix_.empty()) prefix_ += "] -> ";
  }

  Scop run() {
    Scop s;
    s.name = p_.name;
    s.params = p_.params;
    s.tensors = p_.tensors;
    for (size_t k = 0; k < p_.statements.size(); ++k) {
      const ProgramStatement *epilogue = k + 1 < p_.statements.size() && fusibleEpilogue(k) ? &p_.statements[k + 1] : nullptr;
      add(s, p_.statements[k], "S" + std::to_string(k), epilogue);
      if (epilogue) ++k; // (the reduction's output, which only the reference computes, stays declared)
    }
    s.iterate = p_.iterate;
    s.provenance = p_.provenance;
    s.provenance.push_back(currentStage("polyk-flatten"));
    return s;
  }

private:
  /// `S[i, j, k] : 0 <= i < M and ... and <where>` over `dims` (parallel dims first).
  std::string domain(const std::string &name, const ProgramStatement &ps, const std::vector<std::string> &dims) {
    std::string s = prefix_ + "{ " + name + "[" + join(dims) + "] : 0 = 0";
    for (const auto &d : dims) {
      size_t k = std::find(ps.iterators.begin(), ps.iterators.end(), d) - ps.iterators.begin();
      s += " and 0 <= " + d + " < " + ps.extents[k].str();
    }
    s += positive_;
    // The `where` clause restricts the statement's instances. A reduction's init and store (its
    // parallel dims only) cover every output element, as `+=!` initialises the whole output: an
    // element the clause leaves no term gets the identity.
    if (dims.size() == dimsOf(ps).size())
      for (const auto &c : ps.stmt.where)
        s += " and " + islAffine(c.lhs) + " " + (c.op == "==" ? "=" : c.op) + " " + islAffine(c.rhs);
    return normalizeSet(s + " }");
  }

  /// Parallel dims (the left-hand side's indices, in its order), then the reduced ones.
  std::vector<std::string> dimsOf(const ProgramStatement &ps) const {
    std::vector<std::string> dims = ps.stmt.lhs.indices;
    for (size_t k = 0; k < ps.iterators.size(); ++k)
      if (ps.reduced[k]) dims.push_back(ps.iterators[k]);
    return dims;
  }

  std::string access(const std::string &tup, const Access &a) {
    std::string s = prefix_ + "{ " + tup + " -> " + a.tensor + "[";
    for (size_t d = 0; d < a.subscripts.size(); ++d) s += (d ? ", " : "") + islAffine(a.subscripts[d]);
    return normalizeMap(s + "] }");
  }

  ScopStatement statement(const std::string &name, StmtKind kind, const ProgramStatement &ps,
                          const std::vector<std::string> &dims) {
    ScopStatement st;
    st.name = name;
    st.kind = kind;
    st.source = ps.text;
    st.form = Form::Affine;
    st.loc = ps.loc;
    st.iterators = dims;
    for (const auto &d : dims)
      st.dims.push_back(std::count(ps.stmt.lhs.indices.begin(), ps.stmt.lhs.indices.end(), d) ? "parallel" : "reduced");
    st.domain = domain(name, ps, dims);
    std::string ra = prefix_ + "{ " + name + "[" + join(dims) + "] -> [";
    for (size_t d = 0; d < dims.size(); ++d) ra += (d ? ", " : "") + std::string("(") + dims[d] + ")";
    st.recovery = islStr(isl::multi_aff(islCtx(), ra + "] }"));
    return st;
  }

  /// An elementwise consumer of a reduction fused into its store (a conv's bias and ReLU, a GEMM's
  /// epilogue): statement k + 1 assigns, without `where`, over exactly the output elements of the
  /// fresh reduction k (same extents, its own indices only), and reads k's output, a temporary no
  /// other statement touches, only at the element it writes; it writes no tensor k reads.
  bool fusibleEpilogue(size_t k) const {
    const ProgramStatement &r = p_.statements[k], &e = p_.statements[k + 1];
    if (!r.stmt.reduceOp() || !r.stmt.freshlyInitialised || !r.stmt.lhs.plain()) return false;
    if (e.stmt.reduceOp() || e.stmt.assignOp != "=" || !e.stmt.where.empty() || !e.stmt.lhs.plain()) return false;
    const std::string &t = r.stmt.lhs.tensor;
    const TensorDecl *decl = p_.tensor(t);
    if (!decl || decl->role != Role::Temporary || e.stmt.lhs.tensor == t) return false;
    for (const auto &[out, in] : p_.iterate.swaps)
      if (out == t || in == t) return false;
    // Same iteration space: e's loops are its left-hand indices, with r's extents position by position.
    const auto &ei = e.stmt.lhs.indices, &ri = r.stmt.lhs.indices;
    if (ei.size() != ri.size() || e.iterators.size() != ei.size()) return false;
    auto extentOf = [](const ProgramStatement &ps, const std::string &ix) {
      size_t at = std::find(ps.iterators.begin(), ps.iterators.end(), ix) - ps.iterators.begin();
      return at < ps.extents.size() ? ps.extents[at].str() : std::string();
    };
    for (size_t d = 0; d < ei.size(); ++d)
      if (extentOf(e, ei[d]).empty() || extentOf(e, ei[d]) != extentOf(r, ri[d])) return false;
    std::vector<const Access *> reads;
    collectAccesses(e.stmt.rhs, reads);
    bool readsT = false;
    for (const Access *a : reads)
      if (a->tensor == t) {
        if (!a->plain() || a->indices != ei) return false;
        readsT = true;
      }
    if (!readsT) return false;
    std::vector<const Access *> rReads;
    collectAccesses(r.stmt.rhs, rReads);
    for (const Access *a : rReads)
      if (a->tensor == e.stmt.lhs.tensor) return false;
    for (size_t j = 0; j < p_.statements.size(); ++j) {
      if (j == k || j == k + 1) continue;
      std::vector<const Access *> all{&p_.statements[j].stmt.lhs};
      collectAccesses(p_.statements[j].stmt.rhs, all);
      for (const Access *a : all)
        if (a->tensor == t) return false;
    }
    return true;
  }

  /// A copy of `e` with its indices renamed (`names`: from -> to) and each access of `tensor`
  /// replaced by `with`.
  static ExprPtr rewrite(const ExprPtr &e, const std::map<std::string, std::string> &names, const std::string &tensor,
                         const ExprPtr &with) {
    if (!e) return e;
    if (e->kind == Expr::Kind::Access && e->access.tensor == tensor) return with;
    auto c = std::make_shared<Expr>(*e);
    if (c->kind == Expr::Kind::Access) {
      for (auto &sub : c->access.subscripts)
        for (auto &[name, coef] : sub.terms)
          if (auto it = names.find(name); it != names.end()) name = it->second;
      c->access.indices.clear();
      for (const auto &sub : c->access.subscripts) c->access.indices.push_back(sub.str());
    }
    for (auto &a : c->args) a = rewrite(a, names, tensor, with);
    return c;
  }

  void add(Scop &s, const ProgramStatement &ps, const std::string &name, const ProgramStatement *epilogue = nullptr) {
    for (const auto &ix : ps.iterators)
      if (islKeyword(ix)) fail(ps.loc, "index '" + ix + "' has a name isl reserves; rename it");
    const Access &lhs = ps.stmt.lhs;
    if (!lhs.plain())
      fail(ps.loc.shifted(lhs.offset), "the left-hand side of an affine statement takes plain index names ('" +
                                           lhs.tensor + "(" + join(lhs.indices) + ")')");
    std::vector<std::string> all = dimsOf(ps), par = lhs.indices;
    std::string tup = name + "[" + join(all) + "]";
    std::vector<const Access *> reads;
    collectAccesses(ps.stmt.rhs, reads);
    auto op = ps.stmt.reduceOp();
    if (!op) {
      ScopStatement st = statement(name, StmtKind::Assign, ps, all);
      st.write = access(tup, lhs);
      for (const Access *a : reads) st.reads.push_back(access(tup, *a));
      st.body = printExpr(ps.stmt.rhs);
      s.statements.push_back(st);
      return;
    }
    // The accumulator: compute type of the output (f16 / bf16 accumulate in f32), one element per
    // output element.
    const TensorDecl &out = *p_.tensor(lhs.tensor);
    TensorDecl acc = out;
    acc.name = uniqueName(s, out.name + "_acc");
    acc.role = Role::Temporary;
    acc.type = computeType(out.type);
    s.tensors.push_back(acc);
    Access accAccess = lhs;
    accAccess.tensor = acc.name;
    std::string accText = acc.name + "(" + join(par) + ")";
    std::string parTup = "[" + join(par) + "]";

    ScopStatement init = statement(name + "_init", StmtKind::Init, ps, par);
    init.op = op;
    init.reduction = name;
    init.write = access(name + "_init" + parTup, accAccess);
    s.statements.push_back(init);

    ScopStatement upd = statement(name, StmtKind::Assign, ps, all);
    upd.op = op;
    upd.write = access(tup, accAccess);
    upd.reads.push_back(access(tup, accAccess));
    for (const Access *a : reads) upd.reads.push_back(access(tup, *a));
    std::string rhs = printExpr(ps.stmt.rhs);
    switch (*op) {
    case ReduceOp::Sum: upd.body = "(" + accText + " + " + rhs + ")"; break;
    case ReduceOp::Prod: upd.body = "(" + accText + " * " + rhs + ")"; break;
    case ReduceOp::Max: upd.body = "max(" + accText + ", " + rhs + ")"; break;
    case ReduceOp::Min: upd.body = "min(" + accText + ", " + rhs + ")"; break;
    case ReduceOp::And: upd.body = "(" + accText + " && " + rhs + ")"; break;
    case ReduceOp::Or: upd.body = "(" + accText + " || " + rhs + ")"; break;
    }
    s.statements.push_back(upd);

    ScopStatement store = statement(name + "_store", StmtKind::Assign, ps, par);
    if (!epilogue) {
      store.write = access(name + "_store" + parTup, lhs);
      store.reads.push_back(access(name + "_store" + parTup, accAccess));
      store.body = std::string(dtypeName(out.type)) + "(" + accText + ")";
      s.statements.push_back(store);
      return;
    }
    // The epilogue's expression over the store's indices, the output's value (the accumulator
    // cast to the output's type) in place of its reads.
    std::map<std::string, std::string> names;
    for (size_t d = 0; d < par.size(); ++d) names[epilogue->stmt.lhs.indices[d]] = par[d];
    auto cast = std::make_shared<Expr>();
    cast->kind = Expr::Kind::Call;
    cast->text = dtypeName(out.type);
    auto accExpr = std::make_shared<Expr>();
    accExpr->kind = Expr::Kind::Access;
    accExpr->access = accAccess;
    cast->args.push_back(accExpr);
    ExprPtr body = rewrite(epilogue->stmt.rhs, names, lhs.tensor, cast);
    Access target = epilogue->stmt.lhs;
    target.setPlain(par);
    store.write = access(name + "_store" + parTup, target);
    std::vector<const Access *> storeReads;
    collectAccesses(body, storeReads);
    for (const Access *a : storeReads) store.reads.push_back(access(name + "_store" + parTup, *a));
    store.body = printExpr(body);
    store.epilogue = epilogue->text;
    s.statements.push_back(store);
  }

  static std::string uniqueName(const Scop &s, std::string n) {
    while (s.tensor(n)) n += "_";
    return n;
  }

  static std::string join(const std::vector<std::string> &v) {
    std::string s;
    for (size_t k = 0; k < v.size(); ++k) s += (k ? ", " : "") + v[k];
    return s;
  }

  const Program &p_;
  std::string prefix_, positive_;
};

} // namespace

bool needsAffinePath(const Program &p) {
  for (const auto &ps : p.statements) {
    if (!ps.stmt.where.empty() || outerProduct(ps)) return true;
    std::vector<const Access *> accesses{&ps.stmt.lhs};
    collectAccesses(ps.stmt.rhs, accesses);
    for (const Access *a : accesses)
      if (!a->plain()) return true;
  }
  for (const auto &t : p.tensors)
    if (t.padding) return true;
  return p.iterate.active(); // the step loop is the affine path's

}

Scop flattenAffine(const Program &p) { return AffineBuilder(p).run(); }

} // namespace polyk
