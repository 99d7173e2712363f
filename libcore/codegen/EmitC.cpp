// Sequential C: the reference (the original statements in their order, accumulating floats in
// double) and the transformed program (the bound schedule's loops run one after another, with the
// accumulation type the CUDA code uses). Both take the inputs and outputs of the program.
#include "CodegenInternal.h"
#include "EmitParts.h"

#include <set>

namespace polyk::codegen {

std::map<std::string, DType> typeTable(const Scop &s) {
  std::map<std::string, DType> m;
  for (const auto &t : s.tensors) m[t.name] = t.type;
  return m;
}

std::string writtenTensor(const ScopStatement &st) { return isl::map(islCtx(), st.write).range_tuple_id().name(); }

namespace {

std::string horner(const Access &a, const TensorDecl &t) {
  if (a.indices.empty()) return "0";
  auto sub = [&](size_t d) { return a.subscripts[d].isName() ? a.indices[d] : affineC(a.subscripts[d], false); };
  std::string s = "(polyk_idx)(" + sub(0) + ")";
  for (size_t d = 1; d < a.indices.size(); ++d)
    s = "(" + s + " * " + t.shape[d].str() + " + " + sub(d) + ")";
  return s;
}

std::string allocate(const std::string &name, const std::string &type, const std::string &n) {
  return "  " + type + " *" + name + " = (" + type + " *)malloc(sizeof(" + type + ") * " + n + ");\n";
}

} // namespace

IterateCode iterateCode(const Scop &s, bool cuda, long long perLaunch) {
  IterateCode c;
  if (!s.iterate.active()) return c;
  std::string steps = s.iterate.steps.str();
  c.begin = "  { /* iterate: " + steps + " steps */\n";
  for (const auto &[out, in] : s.iterate.swaps) {
    const TensorDecl &t = *s.tensor(out);
    std::string T = cuda ? cudaStorageType(t.type) : cStorageType(t.type);
    std::string bytes = "sizeof(" + T + ") * " + elementsExpr(t);
    std::string scratch = "polyk_scratch_" + out;
    if (cuda) {
      c.begin += "  " + T + " *" + scratch + " = nullptr;\n  if ((err = polyk::tempMalloc((void **)&" + scratch + ", " + bytes +
                 ", stream)) != cudaSuccess) return err;\n";
      for (const std::string &to : {out, scratch})
        c.begin += "  if ((err = cudaMemcpyAsync(" + to + ", " + in + ", " + bytes + ", cudaMemcpyDeviceToDevice, stream)) != cudaSuccess) return err;\n";
      c.end = "  if ((err = cudaFreeAsync(" + scratch + ", stream)) != cudaSuccess) return err;\n" + c.end;
    } else {
      c.begin += "  " + T + " *" + scratch + " = (" + T + " *)malloc(" + bytes + ");\n";
      c.begin += "  memcpy(" + out + ", " + in + ", " + bytes + ");\n  memcpy(" + scratch + ", " + in + ", " + bytes + ");\n";
      c.end = "  free(" + scratch + ");\n" + c.end;
    }
    c.begin += "  const " + T + " *polyk_in_" + in + " = " + in + ";\n  " + T + " *const polyk_final_" + out + " = " + out + ";\n";
  }
  // (Time tiling: a launch runs perLaunch steps, the last the steps left; the launches alternate.)
  std::string per = std::to_string(perLaunch), launches = steps;
  if (perLaunch > 0) launches = "((" + steps + " + " + std::to_string(perLaunch - 1) + ") / " + per + ")";
  c.begin += "  for (polyk_idx polyk_step = 0; polyk_step < " + launches + "; ++polyk_step) {\n";
  if (perLaunch > 0)
    c.begin += "  const int polyk_steps_now = (int)(" + steps + " - polyk_step * " + per + " < " + per + " ? " + steps + " - polyk_step * " + per +
               " : " + per + ");\n";
  std::string after;
  for (const auto &[out, in] : s.iterate.swaps) {
    const TensorDecl &t = *s.tensor(out);
    std::string T = cuda ? cudaStorageType(t.type) : cStorageType(t.type);
    c.begin += "  " + T + " *const polyk_out_" + out + " = (" + launches + " - 1 - polyk_step) % 2 == 0 ? polyk_final_" + out +
               " : polyk_scratch_" + out + ";\n";
    c.begin += "  const " + T + " *const " + in + " = polyk_in_" + in + ";\n  " + T + " *const " + out + " = polyk_out_" + out + ";\n";
    c.begin += "  (void)" + in + "; (void)" + out + ";\n";
    after += "  polyk_in_" + in + " = polyk_out_" + out + ";\n";
  }
  c.end = after + "  }\n" + c.end + "  }\n";
  return c;
}

std::string affineC(const Affine &f, bool parenthesize) {
  std::string s;
  for (const auto &[name, c] : f.terms) {
    std::string n = parenthesize ? "(" + name + ")" : name;
    std::string term = (c == 1 || c == -1) ? n : std::to_string(c < 0 ? -c : c) + " * " + n;
    s += s.empty() ? (c < 0 ? "-" : "") + term : (c < 0 ? " - " : " + ") + term;
  }
  if (f.constant != 0 || s.empty())
    s += s.empty() ? std::to_string(f.constant) : (f.constant < 0 ? " - " : " + ") + std::to_string(f.constant < 0 ? -f.constant : f.constant);
  return "(" + s + ")";
}

std::string paddedLoad(const TensorDecl &t, const Access &a, const std::string &load, bool parenthesize) {
  if (!t.padding) return load;
  std::string cond;
  for (size_t d = 0; d < a.subscripts.size(); ++d) {
    if (a.subscripts[d].isName()) continue; // its range is the extent
    std::string sub = affineC(a.subscripts[d], parenthesize);
    cond += std::string(cond.empty() ? "" : " && ") + "0 <= " + sub + " && " + sub + " < " + t.shape[d].str();
  }
  if (cond.empty()) return load;
  return "(" + cond + " ? " + load + " : (" + computeCType(t.type) + ")(" + *t.padding + "))";
}

std::string whereCondition(const Statement &st, bool parenthesize) {
  std::string cond;
  for (const auto &c : st.where)
    cond += std::string(cond.empty() ? "" : " && ") + affineC(c.lhs, parenthesize) + " " + c.op + " " + affineC(c.rhs, parenthesize);
  return cond;
}

std::vector<ProgramStatement> originalStatements(const Scop &s, Program &p) {
  p.name = s.name;
  p.params = s.params;
  p.tensors = s.tensors;
  std::vector<ProgramStatement> out;
  std::string last;
  auto add = [&](const std::string &text, const SourceLoc &loc) {
    ProgramStatement ps;
    ps.text = text;
    try {
      ps.stmt = parseStatement(text);
    } catch (const ParseError &e) {
      fail(loc, "statement source does not parse: " + e.message);
    }
    ps.loc = loc;
    analyseStatement(ps, p);
    p.statements.push_back(ps);
    out.push_back(ps);
  };
  for (size_t i = 0; i < s.statements.size(); ++i) {
    const ScopStatement &st = s.statements[i];
    if (st.kind != StmtKind::Init && st.source != last) {
      last = st.source;
      add(st.source, st.loc);
    }
    // A fused consumer runs after its statement's source, where that statement's run ends.
    if (!st.epilogue.empty()) add(st.epilogue, st.loc);
  }
  return out;
}

std::string hostSignature(const Scop &s, const std::string &fn, bool cuda) {
  std::string sig = fn + "(";
  bool first = true;
  for (const auto &[name, value] : s.params) {
    sig += std::string(first ? "" : ", ") + "polyk_idx " + name;
    first = false;
  }
  for (const auto &t : s.tensors) {
    if (t.role == Role::Temporary) continue;
    sig += std::string(first ? "" : ", ") + (t.role == Role::Input ? "const " : "") +
           (cuda ? cudaStorageType(t.type) : cStorageType(t.type)) + " *" + t.name;
    first = false;
  }
  return sig;
}

std::string emitReference(const Scop &s) {
  Program p;
  std::vector<ProgramStatement> stmts = originalStatements(s, p);
  auto types = typeTable(s);
  std::string o = "/* The sequential reference: the original statements in their original order. */\n";
  o += "void " + hostSignature(s, "polyk_" + s.name + "_ref", false) + ") {\n";
  for (const auto &t : s.tensors)
    if (t.role == Role::Temporary) o += allocate(t.name, cStorageType(t.type), elementsExpr(t));
  IterateCode steps = iterateCode(s, false);
  o += steps.begin;
  for (const auto &ps : stmts) {
    const TensorDecl &out = *s.tensor(ps.stmt.lhs.tensor);
    o += "  /* " + ps.text + " */\n  {\n";
    auto op = ps.stmt.reduceOp();
    DType accType = isFloat(out.type) ? DType::F64 : computeType(out.type);
    if (op) {
      o += allocate("polyk_acc", computeCType(accType), elementsExpr(out));
      o += "    for (polyk_idx polyk_e = 0; polyk_e < " + elementsExpr(out) + "; ++polyk_e) polyk_acc[polyk_e] = " +
           reduceIdentity(*op, accType) + ";\n";
    }
    std::string indent = "    ";
    for (size_t k = 0; k < ps.iterators.size(); ++k) {
      o += indent + "for (polyk_idx " + ps.iterators[k] + " = 0; " + ps.iterators[k] + " < " +
           ps.extents[k].str() + "; ++" + ps.iterators[k] + ")\n";
      indent += "  ";
    }
    Value v = printValue(ps.stmt.rhs, Dialect::C, [&](const Access &a, size_t) {
      const TensorDecl &t = *s.tensor(a.tensor);
      return paddedLoad(t, a, loadElement(Dialect::C, types.at(a.tensor), a.tensor + "[" + horner(a, t) + "]"), false);
    }, types);
    if (!ps.stmt.where.empty()) o += indent + "if (" + whereCondition(ps.stmt, false) + ")\n", indent += "  ";
    std::string idx = horner(ps.stmt.lhs, out);
    if (op) {
      o += indent + "polyk_acc[" + idx + "] = " + reduceApply(*op, accType, "polyk_acc[" + idx + "]", convert(v, accType), false) + ";\n";
      o += "    for (polyk_idx polyk_e = 0; polyk_e < " + elementsExpr(out) + "; ++polyk_e) " + out.name + "[polyk_e] = " +
           storeValue(Dialect::C, out.type, convert({"polyk_acc[polyk_e]", accType, false}, computeType(out.type))) + ";\n";
      o += "    free(polyk_acc);\n";
    } else {
      o += indent + out.name + "[" + idx + "] = " + storeValue(Dialect::C, out.type, convert(v, computeType(out.type))) + ";\n";
    }
    o += "  }\n";
  }
  o += steps.end;
  for (const auto &t : s.tensors)
    if (t.role == Role::Temporary) o += "  free(" + t.name + ");\n";
  return o + "}\n";
}

std::string rowIndex(const std::string &accessMap, size_t rank) {
  std::string o;
  for (size_t d = 1; d < rank; ++d) o += "[" + subscriptC(accessMap, d) + "]";
  return o;
}

AccessPrinter statementReads(const Scop &s, const ScopStatement &st, Dialect d, const std::set<std::string> &promoted,
                             const ReadOverride &read, const std::set<std::string> &unguarded, const std::set<std::string> &rows) {
  return [&s, &st, d, &promoted, read, &unguarded, &rows, types = typeTable(s)](const Access &a, size_t k) {
    if (promoted.count(a.tensor))
      return a.tensor + "_r" + (rows.count(a.tensor) ? rowIndex(st.reads[k], s.tensor(a.tensor)->shape.size()) : "");
    std::string lv = a.tensor + "[" + linearIndex(st.reads[k], *s.tensor(a.tensor)) + "]";
    std::string load = loadElement(d, types.at(a.tensor), read ? read(st, k, lv) : lv);
    return unguarded.count(a.tensor) ? load : paddedLoad(*s.tensor(a.tensor), a, load, true);
  };
}

std::string statementMacros(const Scop &s, Dialect d, const std::set<std::string> &promoted,
                            const std::function<std::string(const ScopStatement &, const std::string &value)> &reduce,
                            const std::function<std::string(const ScopStatement &)> &init, const ReadOverride &read,
                            const std::string &only, const std::set<std::string> &unguarded, const std::set<std::string> &rows) {
  auto reg = [&](const std::string &tensor, const std::string &accessMap) {
    return tensor + "_r" + (rows.count(tensor) ? rowIndex(accessMap, s.tensor(tensor)->shape.size()) : "");
  };
  auto types = typeTable(s);
  std::string o;
  for (const auto &st : s.statements) {
    if (!only.empty() && st.name != only) continue;
    isl::set dom(islCtx(), st.domain);
    std::string params;
    for (unsigned i = 0; i < dom.tuple_dim(); ++i) {
      isl_id *id = isl_set_get_dim_id(dom.get(), isl_dim_set, i);
      params += std::string(i ? ", " : "") + isl_id_get_name(id);
      isl_id_free(id);
    }
    o += "#define " + st.name + "(" + params + ") do { ";
    const TensorDecl &out = *s.tensor(isl::map(islCtx(), st.write).range_tuple_id().name());
    if (st.kind == StmtKind::Init) {
      o += init(st);
    } else {
      ExprPtr body = parseExpr(st.body);
      // A cast to the written type is the store's own rounding: `a = f16(x)` rounds x once, not
      // twice (the conversions are asm to nvcc, which does not fold the second pair).
      if (st.kind != StmtKind::Reduce && body->kind == Expr::Kind::Call && parseDType(body->text) == out.type)
        body = body->args[0];
      Value v = printValue(body, d, statementReads(s, st, d, promoted, read, unguarded, rows), types);
      if (st.kind == StmtKind::Reduce) {
        o += reduce(st, convert(v, computeType(out.type)));
      } else if (promoted.count(out.name)) {
        o += reg(out.name, st.write) + " = " + roundToStorage(d, out.type, convert(v, computeType(out.type))) + ";";
      } else {
        o += out.name + "[" + linearIndex(st.write, out) + "] = " + storeValue(d, out.type, convert(v, computeType(out.type))) + ";";
      }
    }
    o += " } while (0)\n";
  }
  return o;
}

std::string undefMacros(const Scop &s) {
  std::string o;
  for (const auto &st : s.statements) o += "#undef " + st.name + "\n";
  return o;
}

std::string emitScheduleC(const Scop &s) {
  auto types = typeTable(s);
  std::string o = "/* The transformed program: the bound schedule's loops, run sequentially. */\n";
  o += "void " + hostSignature(s, "polyk_" + s.name + "_c", false) + ") {\n";
  for (const auto &t : s.tensors)
    if (t.role == Role::Temporary) o += allocate(t.name, cStorageType(t.type), elementsExpr(t));
  for (const auto &st : s.statements) {
    if (st.kind != StmtKind::Reduce) continue;
    const TensorDecl &out = *s.tensor(isl::map(islCtx(), st.write).range_tuple_id().name());
    o += allocate("acc_" + st.name, computeCType(accumulatorType(*st.op, out.type)), elementsExpr(out));
  }
  o += statementMacros(
      s, Dialect::C, {},
      [&](const ScopStatement &st, const std::string &v) {
        const TensorDecl &out = *s.tensor(isl::map(islCtx(), st.write).range_tuple_id().name());
        std::string a = "acc_" + st.name + "[" + linearIndex(st.write, out) + "]";
        return a + " = " + reduceApply(*st.op, out.type, a, v, false) + ";";
      },
      [&](const ScopStatement &st) {
        const TensorDecl &out = *s.tensor(isl::map(islCtx(), st.write).range_tuple_id().name());
        // The affine path's init writes its accumulator temporary itself.
        if (st.form == Form::Affine) return out.name + "[" + linearIndex(st.write, out) + "] = " + storeValue(Dialect::C, out.type, reduceIdentity(*st.op, out.type)) + ";";
        return "acc_" + st.reduction + "[" + linearIndex(st.write, out) + "] = " + reduceIdentity(*st.op, out.type) + ";";
      });
  AstPrinter printer;
  printer.user = [](const std::string &stmt, const std::vector<std::string> &args) {
    std::string c = stmt + "(";
    for (size_t i = 0; i < args.size(); ++i) c += (i ? ", " : "") + args[i];
    return c + ");\n";
  };
  printer.mark = [&](const std::string &mark, const std::string &body, int) {
    if (mark.rfind("kernel_", 0) != 0) return body;
    // After a kernel, its reductions' results go to their outputs (what the last atomic does).
    std::string fin;
    size_t k = std::stoul(mark.substr(7));
    for (const auto &name : k < s.kernels.size() ? s.kernels[k].statements : std::vector<std::string>{}) {
      const ScopStatement *st = s.statement(name);
      if (!st || st->kind != StmtKind::Reduce) continue;
      const TensorDecl &out = *s.tensor(isl::map(islCtx(), st->write).range_tuple_id().name());
      fin += "  for (polyk_idx polyk_e = 0; polyk_e < " + elementsExpr(out) + "; ++polyk_e) " + out.name + "[polyk_e] = " +
             storeValue(Dialect::C, out.type, "acc_" + name + "[polyk_e]") + ";\n";
    }
    return "  /* " + mark + " */\n" + body + fin;
  };
  isl::schedule sched = readIslSchedule(s.schedule);
  isl::ast_build build(islCtx());
  IterateCode steps = iterateCode(s, false);
  o += steps.begin + printer.print(build.node_from(sched), 1) + steps.end;
  o += undefMacros(s);
  for (const auto &st : s.statements)
    if (st.kind == StmtKind::Reduce) o += "  free(acc_" + st.name + ");\n";
  for (const auto &t : s.tensors)
    if (t.role == Role::Temporary) o += "  free(" + t.name + ");\n";
  return o + "}\n";
}

std::string cPrologue(const Scop &s, Dialect d) {
  std::string o;
  // (string.h: the step loop's copies, the mapped C's poisoned temporaries.)
  o += "#include <math.h>\n#include <stdbool.h>\n#include <stdint.h>\n#include <stdio.h>\n#include <stdlib.h>\n#include <string.h>\n";
  o += "#include \"polyk/host.h\"\n";
  if (d == Dialect::C) o += indexHelpers(Dialect::C, needsWideIndices(s));
  return o;
}

} // namespace polyk::codegen
