// The affine path of polyk-flatten (DESIGN.md, "Affine programs"): statements with affine
// subscripts, `where` clauses or an outer-product reuse pattern keep their original loops (no
// coalescing: it would make `A(i + 1, j)` and a symbolic `where` non-affine). A reduction becomes
// three assignments through an accumulator temporary, which polyk-bind keeps in registers:
//   C(i, j) +=! A(i, k) * B(k, j)   ->   S0_init:  C_acc(i, j) = 0
//                                        S0:       C_acc(i, j) = C_acc(i, j) + A(i, k) * B(k, j)
//                                        S0_store: C(i, j) = C_acc(i, j)
#include "polyk/Flatten.h"

#include "polyk/Isl.h"

#include <algorithm>
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
    for (size_t k = 0; k < p_.statements.size(); ++k) add(s, p_.statements[k], "S" + std::to_string(k));
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

  void add(Scop &s, const ProgramStatement &ps, const std::string &name) {
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
    store.write = access(name + "_store" + parTup, lhs);
    store.reads.push_back(access(name + "_store" + parTup, accAccess));
    store.body = std::string(dtypeName(out.type)) + "(" + accText + ")";
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
