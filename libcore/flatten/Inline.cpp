// Inlining of elementwise temporaries where a kernel boundary or a broadcast separates a producer
// from its consumer (see Flatten.h). Recomputing an elementwise expression costs a few
// instructions; storing it for a later kernel costs a round trip through device memory, and
// sharing it across the threads of one kernel a barrier. After inlining, softmax's exp(x - max)
// and layer norm's x - mean have readers only in their own kernel and stay in registers.
#include "polyk/Flatten.h"

#include <functional>
#include <map>

namespace polyk {

namespace {

/// A copy of `e` with each index renamed through `rename` (names not in it are kept).
ExprPtr renamed(const ExprPtr &e, const std::map<std::string, std::string> &rename) {
  auto c = std::make_shared<Expr>(*e);
  if (c->kind == Expr::Kind::Access) {
    std::vector<std::string> names = c->access.indices;
    for (auto &ix : names)
      if (auto it = rename.find(ix); it != rename.end()) ix = it->second;
    c->access.setPlain(names);
  }
  for (auto &a : c->args) a = renamed(a, rename);
  return c;
}

/// Phase of each statement: how many reductions lie on its longest producer chain (a statement
/// reading a reduction's result runs in a later kernel than the reduction).
std::vector<int> phases(const Program &p) {
  std::vector<int> phase(p.statements.size(), 0);
  std::map<std::string, size_t> writer;
  for (size_t k = 0; k < p.statements.size(); ++k) {
    std::vector<const Access *> reads;
    collectAccesses(p.statements[k].stmt.rhs, reads);
    for (const Access *a : reads)
      if (auto w = writer.find(a->tensor); w != writer.end())
        phase[k] = std::max(phase[k], phase[w->second] + (p.statements[w->second].stmt.assignOp == "=" ? 0 : 1));
    writer[p.statements[k].stmt.lhs.tensor] = k;
  }
  return phase;
}

} // namespace

void inlineProducers(Program &p) {
  std::vector<int> phase = phases(p);
  std::map<std::string, size_t> writer;
  for (size_t k = 0; k < p.statements.size(); ++k) {
    ProgramStatement &cs = p.statements[k];
    bool changed = false;
    // Replace accesses until none qualifies: an inlined expression may read temporaries too.
    std::function<ExprPtr(const ExprPtr &)> rewrite = [&](const ExprPtr &e) -> ExprPtr {
      if (e->kind == Expr::Kind::Access) {
        auto w = writer.find(e->access.tensor);
        const TensorDecl *t = p.tensor(e->access.tensor);
        if (w != writer.end() && t && t->role == Role::Temporary) {
          const ProgramStatement &ps = p.statements[w->second];
          // A normalising constant (layer norm's mean) would be shared across the threads of the
          // reduction's kernel: recomputed, it needs no barrier and no store.
          bool broadcast = e->access.indices.size() < cs.iterators.size() && phase[w->second] > 0;
          bool laterKernel = phase[k] > phase[w->second];
          if (ps.stmt.assignOp == "=" && (broadcast || laterKernel)) {
            std::map<std::string, std::string> rename;
            for (size_t d = 0; d < ps.stmt.lhs.indices.size(); ++d) rename[ps.stmt.lhs.indices[d]] = e->access.indices[d];
            changed = true;
            auto wrapped = std::make_shared<Expr>();
            wrapped->kind = Expr::Kind::Call; // keep the producer's type: a cast to it
            wrapped->text = dtypeName(t->type);
            wrapped->offset = e->offset;
            wrapped->args = {renamed(ps.stmt.rhs, rename)};
            return rewrite(wrapped);
          }
        }
        return e;
      }
      auto c = std::make_shared<Expr>(*e);
      for (auto &a : c->args) a = rewrite(a);
      return c;
    };
    cs.stmt.rhs = rewrite(cs.stmt.rhs);
    if (changed) {
      analyseStatement(cs, p);
      cs.text = printStatement(cs.stmt); // the reference runs what the kernels run
    }
    writer[cs.stmt.lhs.tensor] = k;
  }
  // Temporaries nobody reads any more, and the statements writing them, go.
  for (bool removed = true; removed;) {
    removed = false;
    std::map<std::string, int> readers;
    for (const auto &ps : p.statements) {
      std::vector<const Access *> reads;
      collectAccesses(ps.stmt.rhs, reads);
      for (const Access *a : reads) readers[a->tensor]++;
    }
    for (size_t k = 0; k < p.statements.size(); ++k) {
      const TensorDecl *t = p.tensor(p.statements[k].stmt.lhs.tensor);
      if (t && t->role == Role::Temporary && !readers.count(t->name)) {
        p.statements.erase(p.statements.begin() + (long)k);
        removed = true;
        break;
      }
    }
  }
  std::map<std::string, int> used;
  for (const auto &ps : p.statements) used[ps.stmt.lhs.tensor]++;
  std::erase_if(p.tensors, [&](const TensorDecl &t) { return t.role == Role::Temporary && !used.count(t.name); });
}

} // namespace polyk
