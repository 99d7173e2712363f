// Readers and writers of scop/1, schedule/1, bound/1 and kernel/1 (see Scop.h). Every isl string
// is parsed on reading, so a file edited by hand fails here, at the scalar that holds the bad
// text, rather than deep inside a later stage.
#include "polyk/Scop.h"

#include "polyk/Isl.h"
#include "polyk/Sizes.h"

namespace polyk {

const char *formName(Form f) {
  switch (f) {
  case Form::Elementwise: return "elementwise";
  case Form::AllReduce: return "all-reduce";
  case Form::XReduce: return "x-reduce";
  case Form::YReduce: return "y-reduce";
  case Form::Affine: return "affine";
  }
  return "?";
}

static std::optional<Form> parseForm(const std::string &s) {
  for (Form f : {Form::Elementwise, Form::AllReduce, Form::XReduce, Form::YReduce, Form::Affine})
    if (s == formName(f)) return f;
  return std::nullopt;
}

static const char *kindName(StmtKind k) {
  switch (k) {
  case StmtKind::Assign: return "assign";
  case StmtKind::Reduce: return "reduce";
  case StmtKind::Init: return "init";
  }
  return "?";
}

std::string tensorBox(const Scop &s, const TensorDecl &t) {
  std::string names, dims, cons;
  for (const auto &[n, v] : s.params) names += (names.empty() ? "" : ", ") + n;
  for (size_t d = 0; d < t.shape.size(); ++d) {
    std::string x = "d" + std::to_string(d);
    dims += (d ? ", " : "") + x;
    cons += (d ? " and " : "") + std::string("0 <= ") + x + " < " + t.shape[d].str();
  }
  return "[" + names + "] -> { " + t.name + "[" + dims + "]" + (cons.empty() ? "" : " : " + cons) + " }";
}

std::string elementsExpr(const TensorDecl &t) {
  long long n = 1;
  std::string symbols;
  for (const auto &e : t.shape) {
    if (e.param.empty()) n *= e.value;
    else symbols += " * " + e.param;
  }
  return symbols.empty() ? std::to_string(n) + "LL" : "(" + std::to_string(n) + "LL" + symbols + ")";
}

std::string paramDefaults(const Scop &s) {
  std::string names, values;
  for (const auto &[n, v] : s.params) {
    names += (names.empty() ? "" : ", ") + n;
    values += (values.empty() ? "" : " and ") + n + " = " + std::to_string(v);
  }
  return "[" + names + "] -> { : " + (values.empty() ? "" : values) + " }";
}

long long reducedIterations(const Scop &s, const ScopStatement &st) {
  isl::set dom = isl::set(islCtx(), st.domain).intersect_params(isl::set(islCtx(), paramDefaults(s)));
  long long n = 1;
  for (size_t d = 0; d < st.dims.size(); ++d)
    if (st.dims[d] == "reduced") n *= dom.dim_max_val((int)d).get_num_si() + 1 - (st.form == Form::Affine ? dom.dim_min_val((int)d).get_num_si() : 0);
  return n;
}

const TensorDecl *Scop::tensor(const std::string &n) const {
  for (const auto &t : tensors)
    if (t.name == n) return &t;
  return nullptr;
}

const ScopStatement *Scop::statement(const std::string &n) const {
  for (const auto &s : statements)
    if (s.name == n) return &s;
  return nullptr;
}

namespace {

using Level = ScopLevel;

/// Reads an isl string and checks that isl parses it as `what`.
std::string islField(const YamlDoc &doc, const YAML::Node &map, const std::string &key, IslKind what) {
  YAML::Node n = doc.field(map, key);
  std::string s = doc.str(n);
  checkIslText(s, what, doc.valueLoc(n));
  return s;
}

bool boolean(const YamlDoc &doc, const YAML::Node &n) {
  std::string v = doc.str(n);
  if (v == "true") return true;
  if (v == "false") return false;
  fail(doc.valueLoc(n), "expected true or false, found '" + v + "'");
}

std::vector<std::string> strList(const YamlDoc &doc, const YAML::Node &n) {
  if (!n.IsSequence()) fail(doc.loc(n), "expected a list");
  std::vector<std::string> v;
  for (const auto &e : n) v.push_back(doc.str(e));
  return v;
}

Scop readAny(const std::string &text, const std::string &file, const std::string &kind, Level level) {
  YamlDoc doc = parseYaml(text, file);
  expectKind(doc, kind, 1);
  resetIslBudget();
  Scop s;
  s.kind = kind;
  s.name = doc.str(doc.field(doc.root, "name"));
  s.at.name = doc.valueLoc(doc.root["name"]);
  s.params = readParams(doc);
  s.tensors = readTensors(doc, doc.field(doc.root, "tensors"), s.params);
  YAML::Node stmts = doc.field(doc.root, "statements");
  if (!stmts.IsSequence()) fail(doc.loc(stmts), "'statements' must be a list");
  s.at.statements = doc.loc(stmts);
  for (const auto &n : stmts) {
    ScopStatement st;
    st.loc = doc.loc(n);
    st.name = doc.str(doc.field(n, "name"));
    st.at.name = doc.valueLoc(n["name"]);
    std::string k = doc.str(doc.field(n, "kind"));
    if (k == "assign") st.kind = StmtKind::Assign;
    else if (k == "reduce") st.kind = StmtKind::Reduce;
    else if (k == "init") st.kind = StmtKind::Init;
    else fail(doc.valueLoc(n["kind"]), "unknown statement kind '" + k + "'");
    if (n["source"]) st.source = doc.str(n["source"]), st.at.source = doc.valueLoc(n["source"]);
    if (n["epilogue"]) st.epilogue = doc.str(n["epilogue"]), st.at.epilogue = doc.valueLoc(n["epilogue"]);
    // An affine update (the reduction's accumulation as an assignment) names its op too.
    if (st.kind != StmtKind::Assign || n["op"]) {
      YAML::Node op = doc.field(n, "op");
      st.op = reduceOpFromName(doc.str(op));
      if (!st.op) fail(doc.valueLoc(op), "unknown reduction '" + doc.str(op) + "'");
    }
    if (st.kind == StmtKind::Init) {
      st.reduction = doc.str(doc.field(n, "initialises"));
      st.at.initialises = doc.valueLoc(n["initialises"]);
    }
    auto form = parseForm(doc.str(doc.field(n, "form")));
    if (!form) fail(doc.valueLoc(n["form"]), "unknown form '" + doc.str(n["form"]) + "'");
    st.form = *form;
    st.dims = strList(doc, doc.field(n, "dims"));
    st.at.dims = doc.loc(n["dims"]);
    st.iterators = strList(doc, doc.field(n, "iterators"));
    st.at.iterators = doc.loc(n["iterators"]);
    st.domain = islField(doc, n, "domain", IslKind::Set);
    st.at.domain = doc.valueLoc(n["domain"]);
    st.recovery = islField(doc, n, "recovery", IslKind::MultiAff);
    st.at.recovery = doc.valueLoc(n["recovery"]);
    st.write = islField(doc, n, "write", IslKind::Map);
    st.at.write = doc.valueLoc(n["write"]);
    YAML::Node reads = doc.field(n, "reads");
    if (!reads.IsSequence()) fail(doc.loc(reads), "'reads' must be a list of isl maps");
    for (const auto &r : reads) {
      checkIslText(doc.str(r), IslKind::Map, doc.valueLoc(r));
      st.reads.push_back(doc.str(r));
      st.at.reads.push_back(doc.valueLoc(r));
    }
    st.body = doc.str(doc.field(n, "body"));
    st.at.body = doc.valueLoc(n["body"]);
    if (n["interchanged"]) st.interchanged = boolean(doc, n["interchanged"]);
    s.statements.push_back(st);
  }
  if (YAML::Node rl = doc.root["relayouts"]) {
    if (!rl.IsSequence()) fail(doc.loc(rl), "'relayouts' must be a list");
    for (const auto &r : rl) {
      Relayout x;
      x.loc = doc.loc(r);
      x.tensor = doc.str(doc.field(r, "tensor"));
      x.as = doc.str(doc.field(r, "as"));
      YAML::Node order = doc.field(r, "order");
      if (!order.IsSequence()) fail(doc.loc(order), "'order' must be a list of dims");
      for (const auto &o : order) {
        long long d = doc.integer(o);
        if (d < 0 || d > 64) fail(doc.valueLoc(o), "dim " + std::to_string(d) + " out of range");
        x.order.push_back((int)d);
      }
      s.relayouts.push_back(x);
    }
  }
  if (level >= Level::Schedule) {
    YAML::Node tree = doc.field(doc.root, "schedule");
    s.schedule = doc.str(tree);
    s.at.schedule = doc.valueLoc(tree);
    checkIslText(s.schedule, IslKind::Schedule, s.at.schedule);
    s.sizes = islField(doc, doc.root, "sizes", IslKind::UnionMap);
    s.at.sizes = doc.valueLoc(doc.root["sizes"]);
    YAML::Node deps = doc.field(doc.root, "dependences");
    s.flow = islField(doc, deps, "flow", IslKind::UnionMap);
    s.at.flow = doc.valueLoc(deps["flow"]);
    s.reductionDeps = islField(doc, deps, "reduction", IslKind::UnionMap);
    s.at.reduction = doc.valueLoc(deps["reduction"]);
  }
  if (level >= Level::Bound) {
    YAML::Node ks = doc.field(doc.root, "kernels");
    if (!ks.IsSequence()) fail(doc.loc(ks), "'kernels' must be a list");
    s.at.kernels = doc.loc(ks);
    for (const auto &k : ks) {
      KernelConfig kc;
      kc.at.kernel = doc.loc(k);
      kc.name = doc.str(doc.field(k, "name"));
      kc.at.name = doc.valueLoc(k["name"]);
      kc.statements = strList(doc, doc.field(k, "statements"));
      for (const auto &e : k["statements"]) kc.at.statements.push_back(doc.valueLoc(e));
      auto grid = strList(doc, doc.field(k, "grid"));
      kc.at.grid = doc.loc(k["grid"]);
      YAML::Node block = doc.field(k, "block");
      if (grid.size() != 3 || !block.IsSequence() || block.size() != 3)
        fail(doc.loc(k), "'grid' and 'block' need three entries (x, y, z)");
      kc.at.block = doc.loc(block);
      for (int d = 0; d < 3; ++d) {
        kc.grid[d] = grid[d];
        long long b = doc.integer(block[d]);
        if (b < 1 || b > 1024) fail(doc.valueLoc(block[d]), "block sizes must be between 1 and 1024");
        kc.block[d] = (int)b;
      }
      if (kc.block[0] * kc.block[1] * kc.block[2] > 1024) fail(doc.loc(block), "more than 1024 threads per block");
      if (kc.block[2] > 64) fail(doc.valueLoc(block[2]), "more than 64 threads along z");
      kc.reduceAxis = doc.str(doc.field(k, "reduce_axis"));
      if (kc.reduceAxis != "none" && kc.reduceAxis != "x" && kc.reduceAxis != "y")
        fail(doc.valueLoc(k["reduce_axis"]), "'reduce_axis' must be none, x or y");
      kc.reduceBlockAxis = doc.str(doc.field(k, "reduce_block_axis"));
      if (kc.reduceBlockAxis != "none" && kc.reduceBlockAxis != "x" && kc.reduceBlockAxis != "y")
        fail(doc.valueLoc(k["reduce_block_axis"]), "'reduce_block_axis' must be none, x or y");
      kc.promoted = strList(doc, doc.field(k, "promoted"));
      for (const auto &e : k["promoted"]) kc.at.promoted.push_back(doc.valueLoc(e));
      if (k["shared"]) {
        kc.shared = strList(doc, k["shared"]);
        for (const auto &e : k["shared"]) kc.at.shared.push_back(doc.valueLoc(e));
      }
      if (YAML::Node layout = k["shared_layout"]) {
        if (!layout.IsMap()) fail(doc.loc(layout), "'shared_layout' must map staged tensors to their copy's dim order");
        for (const auto &e : layout) {
          std::string t = doc.str(e.first);
          if (!e.second.IsSequence()) fail(doc.loc(e.second), "'shared_layout' of " + t + " must be a list of its dims");
          std::vector<int> order;
          for (const auto &d : e.second) {
            long long v = doc.integer(d);
            if (v < 0 || v > 16) fail(doc.valueLoc(d), "a dim of " + t + " must be between 0 and its rank - 1");
            order.push_back((int)v);
          }
          kc.sharedLayout[t] = order;
          kc.at.sharedLayout[t] = doc.loc(e.second);
        }
      }
      if (YAML::Node dyn = k["dynamic_shared"]) {
        kc.dynamicShared = doc.integer(dyn);
        if (kc.dynamicShared < 0 || kc.dynamicShared > kMaxShared) fail(doc.valueLoc(dyn), "dynamic_shared must be between 0 and " + std::to_string(kMaxShared));
      }
      s.kernels.push_back(kc);
    }
  }
  if (level >= Level::Kernel) {
    s.launcher = doc.str(doc.field(doc.root, "launcher"));
    s.at.launcher = doc.valueLoc(doc.root["launcher"]);
    if (doc.root["source"]) s.source = doc.str(doc.root["source"]);
  }
  s.iterate = readIterate(doc, s.params, s.tensors);
  s.provenance = readProvenance(doc);
  reportedAt({file, 1, 1}, "the reader", [&] { validate(s, level); });
  return s;
}

std::string writeAny(const Scop &s, const std::string &kind, Level level) {
  YAML::Emitter out;
  out << YAML::BeginMap;
  out << YAML::Key << "polyk" << YAML::Value << kind + "/1";
  out << YAML::Key << "name" << YAML::Value << s.name;
  writeParams(out, s.params);
  writeTensors(out, s.tensors);
  out << YAML::Key << "statements" << YAML::Value << YAML::BeginSeq;
  for (const auto &st : s.statements) {
    out << YAML::BeginMap;
    out << YAML::Key << "name" << YAML::Value << st.name;
    out << YAML::Key << "kind" << YAML::Value << kindName(st.kind);
    if (!st.source.empty()) {
      out << YAML::Key << "source" << YAML::Value;
      emitQuoted(out, st.source);
    }
    if (!st.epilogue.empty()) {
      out << YAML::Key << "epilogue" << YAML::Value;
      emitQuoted(out, st.epilogue);
    }
    if (st.op) out << YAML::Key << "op" << YAML::Value << reduceOpName(*st.op);
    if (st.kind == StmtKind::Init) out << YAML::Key << "initialises" << YAML::Value << st.reduction;
    out << YAML::Key << "form" << YAML::Value << formName(st.form);
    out << YAML::Key << "dims" << YAML::Value << YAML::Flow << st.dims;
    out << YAML::Key << "iterators" << YAML::Value << YAML::Flow << st.iterators;
    if (st.interchanged) out << YAML::Key << "interchanged" << YAML::Value << true;
    out << YAML::Key << "domain" << YAML::Value;
    emitQuoted(out, st.domain);
    out << YAML::Key << "recovery" << YAML::Value;
    emitQuoted(out, st.recovery);
    out << YAML::Key << "write" << YAML::Value;
    emitQuoted(out, st.write);
    out << YAML::Key << "reads" << YAML::Value;
    if (st.reads.empty()) out << YAML::Flow;
    out << YAML::BeginSeq;
    for (const auto &r : st.reads) emitQuoted(out, r);
    out << YAML::EndSeq;
    out << YAML::Key << "body" << YAML::Value;
    emitQuoted(out, st.body);
    out << YAML::EndMap;
  }
  out << YAML::EndSeq;
  if (!s.relayouts.empty()) {
    out << YAML::Key << "relayouts" << YAML::Value << YAML::BeginSeq;
    for (const auto &r : s.relayouts)
      out << YAML::Flow << YAML::BeginMap << YAML::Key << "tensor" << YAML::Value << r.tensor << YAML::Key << "as"
          << YAML::Value << r.as << YAML::Key << "order" << YAML::Value << YAML::Flow << r.order << YAML::EndMap;
    out << YAML::EndSeq;
  }
  if (level >= Level::Schedule) {
    out << YAML::Key << "sizes" << YAML::Value;
    emitQuoted(out, s.sizes);
    out << YAML::Key << "dependences" << YAML::Value << YAML::BeginMap;
    out << YAML::Key << "flow" << YAML::Value;
    emitQuoted(out, s.flow);
    out << YAML::Key << "reduction" << YAML::Value;
    emitQuoted(out, s.reductionDeps);
    out << YAML::EndMap;
  }
  if (level >= Level::Bound) {
    out << YAML::Key << "kernels" << YAML::Value << YAML::BeginSeq;
    for (const auto &k : s.kernels) {
      out << YAML::BeginMap;
      out << YAML::Key << "name" << YAML::Value << k.name;
      out << YAML::Key << "statements" << YAML::Value << YAML::Flow << k.statements;
      out << YAML::Key << "grid" << YAML::Value << YAML::Flow << YAML::BeginSeq;
      for (const auto &g : k.grid) out << YAML::DoubleQuoted << g;
      out << YAML::EndSeq;
      out << YAML::Key << "block" << YAML::Value << YAML::Flow << YAML::BeginSeq << k.block[0] << k.block[1]
          << k.block[2] << YAML::EndSeq;
      out << YAML::Key << "reduce_axis" << YAML::Value << k.reduceAxis;
      out << YAML::Key << "reduce_block_axis" << YAML::Value << k.reduceBlockAxis;
      out << YAML::Key << "promoted" << YAML::Value << YAML::Flow << k.promoted;
      if (!k.shared.empty()) out << YAML::Key << "shared" << YAML::Value << YAML::Flow << k.shared;
      if (!k.sharedLayout.empty()) {
        out << YAML::Key << "shared_layout" << YAML::Value << YAML::Flow << YAML::BeginMap;
        for (const auto &[t, order] : k.sharedLayout) out << YAML::Key << t << YAML::Value << YAML::Flow << order;
        out << YAML::EndMap;
      }
      if (k.dynamicShared > 0) out << YAML::Key << "dynamic_shared" << YAML::Value << k.dynamicShared;
      out << YAML::EndMap;
    }
    out << YAML::EndSeq;
  }
  if (level >= Level::Kernel) {
    out << YAML::Key << "launcher" << YAML::Value;
    emitQuoted(out, s.launcher);
    if (!s.source.empty()) out << YAML::Key << "source" << YAML::Value << s.source;
  }
  if (level >= Level::Schedule) {
    // Last, being long: the tree in isl's block style, readable and editable by hand.
    out << YAML::Key << "schedule" << YAML::Value;
    emitLiteral(out, s.schedule);
  }
  writeIterate(out, s.iterate);
  writeProvenance(out, s.provenance);
  out << YAML::EndMap;
  return finish(out);
}

} // namespace

Scop readScop(const std::string &t, const std::string &f) { return readAny(t, f, "scop", Level::Scop); }
std::string writeScop(const Scop &s) { return writeAny(s, "scop", Level::Scop); }
Scop readSchedule(const std::string &t, const std::string &f) { return readAny(t, f, "schedule", Level::Schedule); }
std::string writeSchedule(const Scop &s) { return writeAny(s, "schedule", Level::Schedule); }
Scop readBound(const std::string &t, const std::string &f) { return readAny(t, f, "bound", Level::Bound); }
std::string writeBound(const Scop &s) { return writeAny(s, "bound", Level::Bound); }
Scop readKernel(const std::string &t, const std::string &f) { return readAny(t, f, "kernel", Level::Kernel); }
std::string writeKernel(const Scop &s) { return writeAny(s, "kernel", Level::Kernel); }

isl::pw_aff linearIndexAff(const std::string &accessMap, const TensorDecl &tensor) {
  if (tensor.shape.empty()) return {};
  // The outermost extent never scales an index: it may be symbolic.
  for (size_t d = 1; d < tensor.shape.size(); ++d)
    if (!tensor.shape[d].param.empty()) return {};
  // Horner in isl, ((x0 * s1 + x1) * s2 + x2) ..., so isl simplifies the recovery's floor / mod
  // terms away (x[floor(i/128)][i mod 128][j] becomes x[768 * i + j]).
  isl::pw_multi_aff pma = isl::manage(isl_pw_multi_aff_from_map(isl::map(islCtx(), accessMap).release()));
  isl::pw_aff lin = pma.at(0);
  for (size_t d = 1; d < tensor.shape.size(); ++d) lin = lin.scale(isl::val(islCtx(), tensor.shape[d].value)).add(pma.at((int)d));
  return lin;
}

} // namespace polyk
