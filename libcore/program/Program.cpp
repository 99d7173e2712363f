// Reader, checker and writer of program/1 (see Program.h).
#include "polyk/Program.h"

#include "polyk/Isl.h"

#include <set>

namespace polyk {

const char *roleName(Role r) {
  switch (r) {
  case Role::Input: return "input";
  case Role::Output: return "output";
  case Role::Temporary: return "temporary";
  }
  return "?";
}

const TensorDecl *Program::tensor(const std::string &n) const {
  for (const auto &t : tensors)
    if (t.name == n) return &t;
  return nullptr;
}

bool isIdentifier(const std::string &s) {
  if (s.empty() || !(std::isalpha((unsigned char)s[0]) || s[0] == '_')) return false;
  for (char c : s)
    if (!(std::isalnum((unsigned char)c) || c == '_')) return false;
  return true;
}

std::vector<std::pair<std::string, long long>> readParams(const YamlDoc &doc) {
  std::vector<std::pair<std::string, long long>> params;
  YAML::Node p = doc.root["params"];
  if (!p || p.IsNull()) return params;
  if (!p.IsMap()) fail(doc.loc(p), "'params' must be a mapping from names to values");
  for (const auto &kv : p) {
    std::string name = doc.str(kv.first);
    if (!isIdentifier(name)) fail(doc.valueLoc(kv.first), "bad parameter name '" + name + "'");
    for (const auto &[n, v] : params)
      if (n == name) fail(doc.valueLoc(kv.first), "parameter '" + name + "' declared twice");
    long long v = doc.integer(kv.second);
    if (v < 1 || v > kMaxExtent)
      fail(doc.valueLoc(kv.second), "parameter '" + name + "' must be between 1 and " + std::to_string(kMaxExtent));
    params.push_back({name, v});
  }
  return params;
}

void writeParams(YAML::Emitter &out, const std::vector<std::pair<std::string, long long>> &params) {
  out << YAML::Key << "params" << YAML::Value << YAML::Flow << YAML::BeginMap;
  for (const auto &[n, v] : params) out << YAML::Key << n << YAML::Value << v;
  out << YAML::EndMap;
}

std::vector<TensorDecl> readTensors(const YamlDoc &doc, const YAML::Node &node,
                                    const std::vector<std::pair<std::string, long long>> &params) {
  if (!node.IsMap()) fail(doc.loc(node), "'tensors' must be a mapping from names to declarations");
  std::vector<TensorDecl> out;
  for (const auto &kv : node) {
    TensorDecl t;
    t.name = doc.str(kv.first);
    t.loc = doc.loc(kv.first);
    if (!isIdentifier(t.name)) fail(doc.valueLoc(kv.first), "bad tensor name '" + t.name + "'");
    for (const auto &o : out)
      if (o.name == t.name) fail(t.loc, "tensor '" + t.name + "' declared twice");
    const YAML::Node &d = kv.second;
    YAML::Node type = doc.field(d, "type");
    auto dt = parseDType(doc.str(type));
    if (!dt) fail(doc.valueLoc(type), "unknown type '" + doc.str(type) + "' (expected bool, i32, i64, f16, bf16, f32 or f64)");
    t.type = *dt;
    YAML::Node shape = doc.field(d, "shape");
    if (!shape.IsSequence()) fail(doc.loc(shape), "'shape' must be a list of extents");
    for (const auto &e : shape) {
      Extent ext;
      std::string s = doc.str(e);
      if (isIdentifier(s)) {
        ext.param = s;
        bool found = false;
        for (const auto &[n, v] : params)
          if (n == s) ext.value = v, found = true;
        if (!found) fail(doc.valueLoc(e), "unknown parameter '" + s + "' in shape (declare it under 'params')");
      } else {
        ext.value = doc.integer(e);
        if (ext.value < 1 || ext.value > kMaxExtent)
          fail(doc.valueLoc(e), "extents must be between 1 and " + std::to_string(kMaxExtent) + ", found " + s);
      }
      t.shape.push_back(ext);
    }
    if (t.shape.size() > kMaxRank) fail(doc.loc(shape), "at most " + std::to_string(kMaxRank) + " dimensions");
    long long elements = 1;
    for (const auto &e : t.shape) {
      if (elements > kMaxElements / e.value)
        fail(doc.loc(shape), "tensor '" + t.name + "' has more than " + std::to_string(kMaxElements) + " elements");
      elements *= e.value;
    }
    YAML::Node role = doc.field(d, "role");
    std::string r = doc.str(role);
    if (r == "input") t.role = Role::Input;
    else if (r == "output") t.role = Role::Output;
    else if (r == "temporary") t.role = Role::Temporary;
    else fail(doc.valueLoc(role), "unknown role '" + r + "' (expected input, output or temporary)");
    if (const YAML::Node pad = d["padding"]) {
      std::string v = doc.str(pad);
      bool number = false;
      try {
        ExprPtr e = parseExpr(v);
        if (e->kind == Expr::Kind::Unary && e->text == "-") e = e->args[0];
        number = e->kind == Expr::Kind::Number;
      } catch (const ParseError &) {
      }
      if (!number) fail(doc.valueLoc(pad), "'padding' must be a number (the value of a read outside the tensor)");
      if (t.role == Role::Output)
        fail(doc.valueLoc(pad), "padding on output tensor '" + t.name + "': only reads may fall outside a tensor, and an output is written");
      t.padding = v;
    }
    out.push_back(t);
  }
  return out;
}

void writeTensors(YAML::Emitter &out, const std::vector<TensorDecl> &tensors) {
  out << YAML::Key << "tensors" << YAML::Value << YAML::BeginMap;
  for (const auto &t : tensors) {
    out << YAML::Key << t.name << YAML::Value << YAML::Flow << YAML::BeginMap;
    out << YAML::Key << "type" << YAML::Value << dtypeName(t.type);
    out << YAML::Key << "shape" << YAML::Value << YAML::Flow << YAML::BeginSeq;
    for (const auto &e : t.shape) out << e.str();
    out << YAML::EndSeq;
    out << YAML::Key << "role" << YAML::Value << roleName(t.role);
    if (t.padding) out << YAML::Key << "padding" << YAML::Value << *t.padding;
    out << YAML::EndMap;
  }
  out << YAML::EndMap;
}

Iterate readIterate(const YamlDoc &doc, const std::vector<std::pair<std::string, long long>> &params,
                    const std::vector<TensorDecl> &tensors) {
  Iterate it;
  YAML::Node n = doc.root["iterate"];
  if (!n) return it;
  it.loc = doc.loc(n);
  if (!n.IsMap()) fail(it.loc, "'iterate' must be a mapping with 'steps' and 'swap'");
  YAML::Node steps = doc.field(n, "steps");
  std::string s = doc.str(steps);
  if (isIdentifier(s)) {
    bool found = false;
    for (const auto &[name, v] : params)
      if (name == s) it.steps = {s, v}, found = true;
    if (!found) fail(doc.valueLoc(steps), "unknown parameter '" + s + "' in 'steps' (declare it under 'params')");
  } else {
    it.steps.value = doc.integer(steps);
    if (it.steps.value < 1 || it.steps.value > (1LL << 31)) fail(doc.valueLoc(steps), "'steps' must be between 1 and 2^31");
  }
  YAML::Node swap = doc.field(n, "swap");
  if (!swap.IsMap() || swap.size() == 0) fail(doc.loc(swap), "'swap' must map each output to the input it feeds, e.g. {Tn: T}");
  auto find = [&](const std::string &name, const YAML::Node &at) -> const TensorDecl & {
    for (const auto &t : tensors)
      if (t.name == name) return t;
    fail(doc.valueLoc(at), "unknown tensor '" + name + "' in 'swap'");
  };
  for (const auto &kv : swap) {
    const TensorDecl &out = find(doc.str(kv.first), kv.first), &in = find(doc.str(kv.second), kv.second);
    if (out.role != Role::Output) fail(doc.valueLoc(kv.first), "'swap' maps an output to an input; '" + out.name + "' is not an output");
    if (in.role != Role::Input) fail(doc.valueLoc(kv.second), "'swap' maps an output to an input; '" + in.name + "' is not an input");
    bool same = out.type == in.type && out.shape.size() == in.shape.size();
    for (size_t d = 0; same && d < out.shape.size(); ++d) same = out.shape[d].str() == in.shape[d].str();
    if (!same) fail(doc.valueLoc(kv.second), "'" + out.name + "' and '" + in.name + "' must have the same type and shape to be swapped");
    for (const auto &[o, i] : it.swaps)
      if (o == out.name || i == in.name) fail(doc.valueLoc(kv.first), "a tensor swapped twice");
    it.swaps.emplace_back(out.name, in.name);
  }
  return it;
}

void writeIterate(YAML::Emitter &out, const Iterate &it) {
  if (!it.active()) return;
  out << YAML::Key << "iterate" << YAML::Value << YAML::Flow << YAML::BeginMap;
  out << YAML::Key << "steps" << YAML::Value << it.steps.str();
  out << YAML::Key << "swap" << YAML::Value << YAML::Flow << YAML::BeginMap;
  for (const auto &[o, i] : it.swaps) out << YAML::Key << o << YAML::Value << i;
  out << YAML::EndMap << YAML::EndMap;
}

namespace {

/// isl text of an affine expression, with names renamed through `isl` (index and parameter names
/// may collide with isl's keywords: `mod`, `min`, ...).
std::string islAffine(const Affine &f, const std::map<std::string, std::string> &isl) {
  std::string s = std::to_string(f.constant);
  for (const auto &[name, c] : f.terms) s += (c < 0 ? " - " : " + ") + std::to_string(c < 0 ? -c : c) + "*" + isl.at(name);
  return "(" + s + ")";
}

/// isl proves every access of the statement inside its tensor at every instance of its domain
/// (the indices' extents, the parameters at least 1, the `where` clause); a subscript that can
/// escape is an error at that subscript.
void checkInBounds(const ProgramStatement &ps, const Program &p, const std::vector<const Access *> &accesses) {
  const Statement &st = ps.stmt;
  std::map<std::string, std::string> isl;
  std::string params, dims, cons;
  for (size_t k = 0; k < p.params.size(); ++k) {
    isl[p.params[k].first] = "p" + std::to_string(k);
    params += (k ? ", p" : "p") + std::to_string(k);
    cons += (cons.empty() ? "" : " and ") + std::string("p") + std::to_string(k) + " >= 1";
  }
  for (size_t k = 0; k < ps.iterators.size(); ++k) {
    std::string d = "d" + std::to_string(k);
    isl[ps.iterators[k]] = d;
    dims += (k ? ", " : "") + d;
    const Extent &e = ps.extents[k];
    cons += (cons.empty() ? "" : " and ") + std::string("0 <= ") + d + " < " + (e.param.empty() ? std::to_string(e.value) : isl.at(e.param));
  }
  for (const auto &c : st.where)
    cons += " and " + islAffine(c.lhs, isl) + " " + (c.op == "==" ? "=" : c.op) + " " + islAffine(c.rhs, isl);
  std::string domain = "[" + params + "] -> { [" + dims + "] : " + cons;
  isl::ctx ctx = islCtx();
  if (!st.where.empty() && isl::set(ctx, domain + " }").is_empty())
    fail(ps.loc.shifted(st.where.front().offset), "the 'where' clause leaves no instance of the statement");
  // A read padded with 0 that is a factor of the whole right-hand side, through a window (a
  // subscript with a reduced index: a convolution's y + fy - 1), may fall outside its tensor, but
  // not by the whole window: a padding as large as the filter leaves outputs that are sums of
  // zeros (issue 24 asks for the error; PyTorch's conv2d would print the zeros). Checked at the
  // parameters' values, where the shapes fix how the output and input extents relate. (A padded
  // read added to something else, or padded with another value, gives such outputs a meaning.)
  std::set<const Access *> factors;
  std::function<void(const ExprPtr &)> factorsOf = [&](const ExprPtr &e) {
    if (e->kind == Expr::Kind::Binary && e->text == "*") {
      for (const auto &arg : e->args) factorsOf(arg);
    } else if (e->kind == Expr::Kind::Access) {
      factors.insert(&e->access);
    }
  };
  factorsOf(st.rhs);
  std::set<std::string> outputIndices;
  for (const auto &sub : st.lhs.subscripts)
    for (const auto &[name, c] : sub.terms) outputIndices.insert(name);
  std::string values, outs;
  for (size_t k = 0; k < p.params.size(); ++k)
    values += (k ? " and p" : "p") + std::to_string(k) + " = " + std::to_string(p.params[k].second);
  for (size_t k = 0; k < ps.iterators.size(); ++k)
    if (outputIndices.count(ps.iterators[k])) outs += (outs.empty() ? "d" : ", d") + std::to_string(k);
  for (const Access *a : accesses) {
    const TensorDecl *t = p.tensor(a->tensor);
    if (!t->padding || std::strtod(t->padding->c_str(), nullptr) != 0.0 || a == accesses.front() || !factors.count(a)) continue;
    for (size_t d = 0; d < a->subscripts.size(); ++d) {
      bool window = false;
      for (const auto &[name, c] : a->subscripts[d].terms)
        window |= c != 0 && !outputIndices.count(name) &&
                  std::find(ps.iterators.begin(), ps.iterators.end(), name) != ps.iterators.end();
      if (!window || a->subscripts[d].isName()) continue;
      const Extent &e = t->shape[d];
      std::string extent = e.param.empty() ? std::to_string(e.value) : isl.at(e.param);
      std::string sub = islAffine(a->subscripts[d], isl);
      isl::map toOutput(ctx, "[" + params + "] -> { [" + dims + "] -> [" + outs + "] }");
      isl::set all = isl::set(ctx, domain + (values.empty() ? "" : " and " + values) + " }").apply(toOutput);
      isl::set inside = isl::set(ctx, domain + (values.empty() ? "" : " and " + values) + " and 0 <= " + sub + " < " + extent + " }").apply(toOutput);
      if (!all.subtract(inside).is_empty())
        fail(ps.loc.shifted(a->indexOffsets[d]), "padding as large as the window: subscript '" + a->indices[d] + "' of '" + a->tensor +
                                                     "' falls outside [0, " + e.str() + ") for every value of its reduced indices at some outputs, "
                                                     "which would be sums of the padding's zeros (dim " + std::to_string(d) + ")");
    }
  }
  for (const Access *a : accesses) {
    const TensorDecl *t = p.tensor(a->tensor);
    if (t->padding && a != accesses.front()) continue; // a read outside yields the padding value
    for (size_t d = 0; d < a->subscripts.size(); ++d) {
      if (a->subscripts[d].isName()) continue; // its range is this extent
      const Extent &e = t->shape[d];
      std::string extent = e.param.empty() ? std::to_string(e.value) : isl.at(e.param);
      std::string sub = islAffine(a->subscripts[d], isl);
      if (!isl::set(ctx, domain + " and (" + sub + " < 0 or " + sub + " >= " + extent + ") }").is_empty())
        fail(ps.loc.shifted(a->indexOffsets[d]), "access out of bounds: subscript '" + a->indices[d] + "' of '" + a->tensor +
                                                     "' can fall outside [0, " + e.str() + ") (dim " + std::to_string(d) + ")");
    }
  }
}

/// Checks one statement against the tensor table and derives its loop nest.
void analyse(ProgramStatement &ps, const Program &p) {
  const Statement &st = ps.stmt;
  auto at = [&](int offset) { return ps.loc.shifted(offset); };

  std::vector<const Access *> accesses{&st.lhs};
  collectAccesses(st.rhs, accesses);
  std::map<std::string, std::pair<Extent, int>> extentOf; // index -> extent, offset of first use
  for (const Access *a : accesses) {
    const TensorDecl *t = p.tensor(a->tensor);
    if (!t) fail(at(a->offset), "unknown tensor '" + a->tensor + "'");
    if (a->indices.size() != t->shape.size())
      fail(at(a->offset), "tensor '" + a->tensor + "' has " + std::to_string(t->shape.size()) +
                              " dimensions but is indexed with " + std::to_string(a->indices.size()));
    std::set<std::string> seen;
    for (size_t d = 0; d < a->indices.size(); ++d) {
      if (!a->subscripts[d].isName()) continue; // affine: its names' ranges come from elsewhere
      const std::string &ix = a->indices[d];
      if (!seen.insert(ix).second)
        fail(at(a->indexOffsets[d]), "index '" + ix + "' used twice in one access (diagonals are not supported)");
      if (p.tensor(ix)) fail(at(a->indexOffsets[d]), "index '" + ix + "' has the name of a tensor");
      auto it = extentOf.find(ix);
      if (it == extentOf.end()) {
        extentOf[ix] = {t->shape[d], a->indexOffsets[d]};
      } else if (it->second.first.value != t->shape[d].value) {
        fail(at(a->indexOffsets[d]), "index '" + ix + "' used with two different extents (" +
                                         it->second.first.str() + " and " + t->shape[d].str() + ")");
      }
    }
  }

  const TensorDecl *out = p.tensor(st.lhs.tensor);
  if (out->role == Role::Input) fail(at(st.lhs.offset), "cannot assign to input tensor '" + out->name + "'");

  std::set<std::string> lhsIndices;
  for (const auto &s : st.lhs.subscripts)
    for (const auto &[name, c] : s.terms) lhsIndices.insert(name);
  // Loop order follows the right-hand access with most indices, so loops scan its layout.
  const Access *driving = nullptr;
  for (size_t i = 1; i < accesses.size(); ++i)
    if (!driving || accesses[i]->indices.size() > driving->indices.size()) driving = accesses[i];
  std::vector<std::string> order;
  auto add = [&](const std::string &ix) {
    if (std::find(order.begin(), order.end(), ix) == order.end()) order.push_back(ix);
  };
  std::set<std::string> params;
  for (const auto &[n, v] : p.params) params.insert(n);
  if (driving)
    for (size_t d = 0; d < driving->indices.size(); ++d)
      if (driving->subscripts[d].isName()) add(driving->indices[d]);
  for (const Access *a : accesses)
    for (size_t d = 0; d < a->indices.size(); ++d)
      if (a->subscripts[d].isName()) add(a->indices[d]);
  // An index used only inside affine subscripts has no range of its own.
  for (const Access *a : accesses)
    for (size_t d = 0; d < a->subscripts.size(); ++d)
      for (const auto &[name, c] : a->subscripts[d].terms) {
        if (params.count(name) || extentOf.count(name)) continue;
        if (p.tensor(name)) fail(at(a->indexOffsets[d]), "index '" + name + "' has the name of a tensor");
        fail(at(a->indexOffsets[d]), "index '" + name + "' has no range: it is never a whole subscript of a tensor (its extent would come from that tensor's shape)");
      }
  for (const auto &c : st.where)
    for (const Affine *side : {&c.lhs, &c.rhs})
      for (const auto &[name, k] : side->terms)
        if (!params.count(name) && !extentOf.count(name))
          fail(at(c.offset), "'where' on an unknown index '" + name + "' (not an index of this statement, nor a parameter)");
  // Output indices not in the driving access keep their place relative to each other.
  ps.iterators = order;
  for (const auto &ix : order) {
    ps.extents.push_back(extentOf[ix].first);
    ps.reduced.push_back(!lhsIndices.count(ix));
  }

  reportedAt(ps.loc, "the bounds check", [&] { checkInBounds(ps, p, accesses); });

  bool anyReduced = std::count(ps.reduced.begin(), ps.reduced.end(), true) > 0;
  if (st.assignOp == "=") {
    for (size_t i = 0; i < order.size(); ++i)
      if (ps.reduced[i])
        fail(at(extentOf[order[i]].second),
             "index '" + order[i] + "' appears only on the right of '='; use a reduction such as '+=!'");
  } else {
    if (!st.freshlyInitialised)
      fail(at(st.lhs.offset), "reductions into the current value ('" + st.assignOp +
                                  "' without '!') are not supported yet; write '" + st.assignOp + "!'");
    if (!anyReduced)
      fail(at(st.lhs.offset), "reduction '" + st.assignOp + "!' has no reduced index: every index on the right also appears on the left");
  }
}

} // namespace

void analyseStatement(ProgramStatement &ps, const Program &p) { analyse(ps, p); }

bool unitDimReduction(const ProgramStatement &ps, const Program &p) {
  auto op = ps.stmt.reduceOp();
  if (!op || !ps.stmt.freshlyInitialised) return false;
  // `&&` and `||` give 0 or 1: a copy only into bool, whose conversion is that test (x != 0).
  const TensorDecl *out = p.tensor(ps.stmt.lhs.tensor);
  if ((*op == ReduceOp::And || *op == ReduceOp::Or) && (!out || out->type != DType::Bool)) return false;
  // Float max and min skip NaN (fmax(-inf, NaN) = -inf), which a copy would not: they stay reductions.
  if ((*op == ReduceOp::Max || *op == ReduceOp::Min) && (!out || isFloat(out->type))) return false;
  for (size_t k = 0; k < ps.iterators.size(); ++k)
    if (ps.reduced[k] && !(ps.extents[k].param.empty() && ps.extents[k].value == 1)) return false;
  return true;
}

Program readProgram(const std::string &text, const std::string &file) {
  YamlDoc doc = parseYaml(text, file);
  expectKind(doc, "program", 1);
  resetIslBudget(); // the bounds proofs below use isl; a process may read many files
  Program p;
  p.name = doc.str(doc.field(doc.root, "name"));
  if (!isIdentifier(p.name)) fail(doc.valueLoc(doc.root["name"]), "program name must be an identifier");
  p.params = readParams(doc);
  p.tensors = readTensors(doc, doc.field(doc.root, "tensors"), p.params);
  YAML::Node stmts = doc.field(doc.root, "statements");
  if (!stmts.IsSequence() || stmts.size() == 0) fail(doc.loc(stmts), "'statements' must be a non-empty list");
  for (const auto &s : stmts) {
    ProgramStatement ps;
    ps.text = doc.str(s);
    ps.loc = doc.valueLoc(s);
    try {
      ps.stmt = parseStatement(ps.text);
    } catch (const ParseError &e) {
      fail(ps.loc.shifted(e.offset), e.message);
    }
    analyse(ps, p);
    p.statements.push_back(std::move(ps));
  }
  // Each written tensor is written by one statement; temporaries are written before they are read.
  std::set<std::string> written;
  for (const auto &ps : p.statements) {
    std::vector<const Access *> reads;
    collectAccesses(ps.stmt.rhs, reads);
    for (const Access *a : reads) {
      const TensorDecl *t = p.tensor(a->tensor);
      if (t->role != Role::Input && !written.count(a->tensor))
        fail(ps.loc.shifted(a->offset), "tensor '" + a->tensor + "' is read before any statement writes it");
    }
    if (!written.insert(ps.stmt.lhs.tensor).second)
      fail(ps.loc.shifted(ps.stmt.lhs.offset), "tensor '" + ps.stmt.lhs.tensor + "' is written by two statements");
  }
  for (const auto &t : p.tensors)
    if (t.role == Role::Output && !written.count(t.name)) fail(t.loc, "output tensor '" + t.name + "' is never written");
  p.iterate = readIterate(doc, p.params, p.tensors);
  p.provenance = readProvenance(doc);
  return p;
}

std::string writeProgram(const Program &p) {
  YAML::Emitter out;
  out << YAML::BeginMap;
  out << YAML::Key << "polyk" << YAML::Value << "program/1";
  out << YAML::Key << "name" << YAML::Value << p.name;
  writeParams(out, p.params);
  writeTensors(out, p.tensors);
  out << YAML::Key << "statements" << YAML::Value << YAML::BeginSeq;
  for (const auto &s : p.statements) emitQuoted(out, s.text);
  out << YAML::EndSeq;
  writeIterate(out, p.iterate);
  if (!p.provenance.empty()) writeProvenance(out, p.provenance);
  out << YAML::EndMap;
  return finish(out);
}

} // namespace polyk
