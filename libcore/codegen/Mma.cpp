// Tensor cores for f32 register tiles (Mma.h).
#include "Mma.h"

#include "polyk/Isl.h"

#include <isl/ast.h>
#include <isl/map.h>

#include <cctype>
#include <functional>
#include <map>

namespace polyk::codegen {

namespace {

void accessesOf(const ExprPtr &e, std::vector<const Access *> &out) {
  if (e->kind == Expr::Kind::Access) out.push_back(&e->access);
  for (const auto &a : e->args) accessesOf(a, out);
}


bool hasWord(const std::string &text, const std::string &word) { return replaceWord(text, word, "") != text; }

/// `[3][1]` -> {3, 1}; empty where it is not two integer literals.
std::vector<long long> registerIndex(const std::string &note) {
  std::vector<long long> v;
  size_t i = 0;
  while (i < note.size()) {
    if (note[i] != '[') return {};
    size_t close = note.find(']', i);
    if (close == std::string::npos) return {};
    std::string num = note.substr(i + 1, close - i - 1);
    if (num.empty() || num.find_first_not_of("0123456789") != std::string::npos) return {};
    v.push_back(std::stoll(num));
    i = close + 1;
  }
  return v.size() == 2 ? v : std::vector<long long>{};
}

struct Call {
  std::vector<std::string> args; // the domain iterators' values
  long long at[2];               // the register index
};

} // namespace

} // namespace polyk::codegen

namespace polyk {

std::string mmaProductRefusal(const Scop &s, const ScopStatement &update, int rowDim, int colDim) {
  using namespace codegen;
  const TensorDecl &acc = *s.tensor(writtenTensor(update));
  if (acc.type != DType::F32) return "its accumulator is " + std::string(dtypeName(acc.type)) + ", not f32";
  // (C_acc(i, j) + (X * Y)): the sum's update, each factor a value of f32 or narrower float.
  ExprPtr body = parseExpr(update.body);
  if (body->kind != Expr::Kind::Binary || body->text != "+" || body->args[0]->kind != Expr::Kind::Access ||
      body->args[0]->access.tensor != acc.name || body->args[1]->kind != Expr::Kind::Binary || body->args[1]->text != "*")
    return "its update is not a sum of products";
  std::map<std::string, DType> types = typeTable(s);
  for (int f = 0; f < 2; ++f) {
    const ExprPtr &factor = body->args[1]->args[f];
    std::vector<const Access *> acs;
    accessesOf(factor, acs);
    for (const Access *a : acs) {
      DType t = types.at(a->tensor);
      if (t != DType::F32 && t != DType::F16 && t != DType::BF16)
        return "its factor reads " + a->tensor + " of type " + dtypeName(t) + ", not f32, f16 or bf16";
    }
    // (The value's type, whatever its reads print as.)
    if (printValue(factor, Dialect::Cuda, [](const Access &, size_t) { return std::string("x"); }, types).type != DType::F32)
      return "a factor of its product is not an f32 value";
  }
  if (rowDim >= 0 && colDim >= 0) {
    // One factor moves with the rows' dim only, the other with the columns' only (mmaLoop's A and B).
    bool row[2] = {false, false}, col[2] = {false, false};
    size_t first = 1; // the accumulator is the update's read 0
    for (int f = 0; f < 2; ++f) {
      std::vector<const Access *> acs;
      accessesOf(body->args[1]->args[f], acs);
      for (size_t k = first; k < first + acs.size() && k < update.reads.size(); ++k) {
        isl::map m(islCtx(), update.reads[k]);
        row[f] |= isl_map_involves_dims(m.get(), isl_dim_in, (unsigned)rowDim, 1) == isl_bool_true;
        col[f] |= isl_map_involves_dims(m.get(), isl_dim_in, (unsigned)colDim, 1) == isl_bool_true;
      }
      first += acs.size();
    }
    if (!((row[0] && !col[0] && col[1] && !row[1]) || (row[1] && !col[1] && col[0] && !row[0])))
      return "its factors are not a rows' operand and a columns' one";
  }
  return "";
}

} // namespace polyk

namespace polyk::codegen {

bool mmaAsked(const Scop &s, int k, const EmitOptions &opt) {
  if (opt.mma == "tf32x3") return true;
  if (opt.mma != "auto") return false;
  auto sizes = parseSizes(s.sizes, &s.at.sizes);
  auto it = sizes.find(k);
  return it != sizes.end() && it->second.mma > 0;
}

MmaPlan mmaPlan(const Scop &s, int k, const KernelConfig &kc, const std::vector<long long> &points, const EmitOptions &opt) {
  MmaPlan p;
  if (!mmaAsked(s, k, opt)) return p;
  auto refuse = [&](const std::string &why) {
    p.refusal = why;
    return p;
  };
  std::vector<long long> several;
  for (size_t m = 0; m < points.size(); ++m)
    if (points[m] > 1) {
      several.push_back(points[m]);
      // (The band's last two members are the block's y and x.)
      if (m + 2 < points.size()) return refuse("its threads have several points along a member outside the band's last two (y and x)");
    }
  if (several.size() != 2) return refuse("its threads have several points along " + std::to_string(several.size()) + " of its band's members, not 2");
  if (several[0] % 2 || several[1] % 2) return refuse("its threads' points are not even along both members");
  // (Threads along z are whole warps of their own: 4 x by threads a z, a multiple of 32. Each
  // runs its tile at its point of the outer members.)
  if (kc.block[0] != 4 || kc.block[1] % 8)
    return refuse("its block is not [by, 4] with by a multiple of 8 (warps of 8 x 4 threads)");
  std::set<std::string> promoted(kc.promoted.begin(), kc.promoted.end());
  const ScopStatement *update = nullptr;
  for (const auto &name : kc.statements) {
    const ScopStatement &st = *s.statement(name);
    if (st.kind != StmtKind::Assign || !promoted.count(writtenTensor(st))) continue;
    if (update) return refuse("it has two register-accumulated updates");
    update = &st;
  }
  if (!update) return refuse("it has no register-accumulated update");
  if (std::string why = mmaProductRefusal(s, *update); !why.empty()) return refuse(why);
  const TensorDecl &acc = *s.tensor(writtenTensor(*update));
  ExprPtr body = parseExpr(update->body);
  std::map<std::string, DType> types = typeTable(s);
  isl::set dom(islCtx(), update->domain);
  size_t first = 1; // the accumulator is the update's read 0
  for (int f = 0; f < 2; ++f) {
    const ExprPtr &factor = body->args[1]->args[f];
    std::vector<const Access *> acs;
    accessesOf(factor, acs);
    for (const Access *a : acs)
      if (promoted.count(a->tensor)) return refuse("a factor of its product reads a register-held temporary (" + a->tensor + ")");
    for (size_t k = first; k < first + acs.size(); ++k) {
      isl::map m(islCtx(), update->reads[k]);
      for (unsigned d = 0; d < dom.tuple_dim(); ++d)
        if (isl_map_involves_dims(m.get(), isl_dim_in, d, 1) == isl_bool_true) p.dimsOf[f].insert(d);
    }
    p.exact[f] = factor->kind == Expr::Kind::Access && (types.at(factor->access.tensor) == DType::F16 ||
                                                       types.at(factor->access.tensor) == DType::BF16);
    first += acs.size();
  }
  for (unsigned d = 0; d < update->dims.size(); ++d)
    if (update->dims[d] == "reduced") p.reduced = d;
  p.on = true;
  p.update = update->name;
  p.accumulator = acc.name;
  p.points[0] = several[0], p.points[1] = several[1];
  return p;
}

std::string mmaMacros(const Scop &s, const KernelConfig &kc, const MmaPlan &plan, const Staging &staging,
                      const std::set<std::string> &rows) {
  if (!plan.on) return "";
  const ScopStatement &update = *s.statement(plan.update);
  std::set<std::string> promoted(kc.promoted.begin(), kc.promoted.end());
  bool staged = staging.reads(update.name);
  std::set<std::string> unguarded = staged ? std::set<std::string>(kc.shared.begin(), kc.shared.end()) : std::set<std::string>();
  AccessPrinter reads = statementReads(s, update, Dialect::Cuda, promoted, staged ? stagedReads(staging) : ReadOverride(), unguarded, rows);
  std::map<std::string, DType> types = typeTable(s);
  std::string params;
  isl::set dom(islCtx(), update.domain);
  for (unsigned i = 0; i < dom.tuple_dim(); ++i) {
    isl_id *id = isl_set_get_dim_id(dom.get(), isl_dim_set, i);
    params += std::string(i ? ", " : "") + isl_id_get_name(id);
    isl_id_free(id);
  }
  ExprPtr product = parseExpr(update.body)->args[1];
  std::string o;
  size_t first = 1; // the accumulator is the update's read 0
  for (int f = 0; f < 2; ++f) {
    std::vector<const Access *> acs;
    accessesOf(product->args[f], acs);
    Value v = printValue(product->args[f], Dialect::Cuda, [&](const Access &a, size_t k) { return reads(a, k + first); }, types);
    o += "#define " + update.name + "_mma" + std::to_string(f) + "(" + params + ") (" + convert(v, DType::F32) + ")\n";
    first += acs.size();
  }
  return o;
}

void mmaStrides(const Scop &s, const MmaPlan &plan, std::vector<SharedTile> &tiles, long long budget) {
  if (!plan.on) return;
  const ScopStatement &st = *s.statement(plan.update);
  long long bytes = 0;
  std::vector<SharedTile> padded = tiles;
  for (auto &t : padded) {
    const TensorDecl &tensor = *s.tensor(t.tensor);
    std::vector<size_t> dims; // the box's dims of more than one element
    for (size_t d = 0; d < t.size.size(); ++d)
      if (t.size[d] > 1) dims.push_back(d);
    isl::map read;
    for (const auto &r : st.reads)
      if (isl::map m(islCtx(), r); m.range_tuple_id().name() == t.tensor) read = m;
    // (In 4-byte words: w elements a word, w = 1 for f32, 2 for f16 / bf16, whose lanes 2x and
    // 2x + 1 read one word.)
    long long w = 4 / dtypeBytes(tensor.type);
    bool words = tensor.type == DType::F32 || tensor.type == DType::F16 || tensor.type == DType::BF16;
    if (dims.size() == 2 && words && !read.is_null()) {
      // dk: the dim the reduced loop runs along (the fragments' 4 lanes), do: the other (8 lanes).
      auto involves = [&](size_t d) {
        isl_pw_multi_aff *pma = isl_pw_multi_aff_from_map(read.copy());
        isl_pw_aff *pa = isl_pw_multi_aff_get_pw_aff(pma, (int)d);
        bool yes = isl_pw_aff_involves_dims(pa, isl_dim_in, plan.reduced, 1) == isl_bool_true;
        isl_pw_aff_free(pa);
        isl_pw_multi_aff_free(pma);
        return yes;
      };
      bool k0 = involves(dims[0]), k1 = involves(dims[1]);
      if (k0 != k1) {
        size_t dk = k0 ? dims[0] : dims[1], dother = k0 ? dims[1] : dims[0];
        if (t.stride[dk] == 1 && t.stride[dother] % (8 * w) == 0) {
          t.stride[dother] += 4 * w; // 8 rows x 4 consecutive: rows 4 banks (mod 8) apart
        } else if (t.stride[dother] == 1 && t.stride[dk] % (4 * w) == 0) {
          // 4 rows x 8 consecutive elements: rows 8 or 24 banks (mod 32) apart
          while (t.stride[dk] / w % 32 != 8 && t.stride[dk] / w % 32 != 24) t.stride[dk] += 4 * w;
        }
      }
    }
    bytes += t.bytes(dtypeBytes(tensor.type));
  }
  if (bytes <= budget) tiles = padded;
}

std::string mmaUndefs(const MmaPlan &plan) {
  if (!plan.on) return "";
  return "#undef " + plan.update + "_mma0\n#undef " + plan.update + "_mma1\n";
}

std::optional<std::string> mmaLoop(const MmaPlan &plan, const isl::ast_node &loop, int indent, MmaOutcome *outcome, const AstPrinter *printer) {
  bool callsUpdate = false; // (a reason is recorded for the loops whose body calls the update)
  auto no = [&](const std::string &w) -> std::optional<std::string> {
    if (outcome && callsUpdate && outcome->why.empty()) outcome->why = w;
    return std::nullopt;
  };
  if (!plan.on) return no("off");
  std::string it = islExprToC(isl::manage(isl_ast_node_for_get_iterator(loop.get())).get());
  isl::ast_node body = isl::manage(isl_ast_node_for_get_body(loop.get()));
  // The body's calls: through the printer where it unrolls the thread's points itself, else the
  // nodes of isl's unrolled AST (a call, or something else: `stmt` empty).
  std::vector<AstPrinter::Call> found;
  std::optional<std::vector<AstPrinter::Call>> printed = printer ? printer->calls(body) : std::nullopt;
  if (printed) {
    found = *printed;
  } else {
    std::vector<isl::ast_node> nodes;
    std::function<void(const isl::ast_node &)> flatten = [&](const isl::ast_node &n) {
      // (Marks other than `shared` print as their body: the `registers` marks around the points.)
      if (isl_ast_node_get_type(n.get()) == isl_ast_node_mark) {
        isl_id *id = isl_ast_node_mark_get_id(n.get());
        bool shared = std::string(isl_id_get_name(id)) == "shared";
        isl_id_free(id);
        if (!shared) return flatten(isl::manage(isl_ast_node_mark_get_node(n.get())));
      }
      if (isl_ast_node_get_type(n.get()) != isl_ast_node_block) return nodes.push_back(n);
      isl_ast_node_list *list = isl_ast_node_block_get_children(n.get());
      for (int i = 0; i < isl_ast_node_list_n_ast_node(list); ++i) flatten(isl::manage(isl_ast_node_list_get_at(list, i)));
      isl_ast_node_list_free(list);
    };
    flatten(body);
    for (const auto &n : nodes) {
      AstPrinter::Call c;
      if (isl_ast_node_get_type(n.get()) == isl_ast_node_user) {
        isl_ast_expr *call = isl_ast_node_user_get_expr(n.get());
        for (int i = 0; i < isl_ast_expr_get_op_n_arg(call); ++i) {
          isl_ast_expr *a = isl_ast_expr_get_op_arg(call, i);
          (i ? c.args.push_back(islExprToC(a)) : (void)(c.stmt = islExprToC(a)));
          isl_ast_expr_free(a);
        }
        isl_ast_expr_free(call);
        if (isl_id *note = isl_ast_node_get_annotation(n.get())) {
          c.note = isl_id_get_name(note);
          isl_id_free(note);
        }
      }
      found.push_back(c);
    }
  }
  for (const auto &c : found) callsUpdate = callsUpdate || c.stmt == plan.update;
  int trip = VectorReads::constantTrip(loop);
  if (trip <= 0 || trip % 8) return no("not a loop of a constant trip that 8 divides");
  // The calls: the update at each point of the thread's tile, once.
  std::map<std::pair<long long, long long>, Call> calls;
  for (const auto &f : found) {
    if (f.stmt.empty()) return no("its body is not only calls");
    if (f.stmt != plan.update) return no("it calls " + f.stmt);
    if (f.note.empty()) return no("a call has no register index");
    std::vector<long long> at = registerIndex(f.note);
    if (at.empty() || at[0] >= plan.points[0] || at[1] >= plan.points[1]) return no("a call's register index is not constant");
    Call c;
    c.args = f.args;
    c.at[0] = at[0], c.at[1] = at[1];
    if (!calls.emplace(std::make_pair(at[0], at[1]), c).second) return no("two calls at one point");
  }
  if ((long long)calls.size() != plan.points[0] * plan.points[1]) return no("its body is not the whole tile");
  // Which register index runs along y (the rows: t_y) and which along x (the columns: t_x), and
  // the dims that vary with each, that of the loop (the reduced dim) varying with neither.
  const Call &origin = calls.at({0, 0});
  size_t nd = origin.args.size();
  std::set<unsigned> varies[2];
  for (const auto &[at, c] : calls)
    for (unsigned d = 0; d < nd; ++d)
      for (int m = 0; m < 2; ++m) {
        std::pair<long long, long long> other = m == 0 ? std::make_pair(0LL, at.second) : std::make_pair(at.first, 0LL);
        if (c.args[d] != calls.at(other).args[d]) varies[m].insert(d);
      }
  auto onlyIds = [&](const std::set<unsigned> &dims, const std::string &yes, const std::string &not_) {
    if (dims.empty()) return false;
    for (unsigned d : dims)
      if (!hasWord(origin.args[d], yes) || hasWord(origin.args[d], not_)) return false;
    return true;
  };
  int rowsAt = onlyIds(varies[0], "t_y", "t_x") && onlyIds(varies[1], "t_x", "t_y")   ? 0
               : onlyIds(varies[1], "t_y", "t_x") && onlyIds(varies[0], "t_x", "t_y") ? 1
                                                                                      : -1;
  if (rowsAt < 0) return no("its points do not run along t_y and t_x");
  const std::set<unsigned> &rowDims = varies[rowsAt], &colDims = varies[1 - rowsAt];
  std::vector<unsigned> kDims;
  for (unsigned d = 0; d < nd; ++d)
    if (hasWord(origin.args[d], it)) kDims.push_back(d);
  if (kDims.size() != 1 || rowDims.count(kDims[0]) || colDims.count(kDims[0])) return no("the loop is not one reduced dim's");
  for (const auto &[at, c] : calls)
    for (unsigned d = 0; d < nd; ++d)
      if (c.args[d] != origin.args[d] && !rowDims.count(d) && !colDims.count(d)) return no("a dim varies with both indices");
  // The factors: A (rows x reduced) and B (reduced x columns), in either order.
  auto reads = [&](int f, const std::set<unsigned> &dims) {
    for (unsigned d : dims)
      if (plan.dimsOf[f].count(d)) return true;
    return false;
  };
  int a = !reads(0, colDims) && !reads(1, rowDims) ? 0 : !reads(1, colDims) && !reads(0, rowDims) ? 1 : -1;
  if (a < 0) return no("its factors are not a rows' operand and a columns' one");
  long long nRows = plan.points[rowsAt], nCols = plan.points[1 - rowsAt];
  auto pointOf = [&](long long r, long long c) { return rowsAt == 0 ? std::make_pair(r, c) : std::make_pair(c, r); };
  auto reg = [&](long long r, long long c) {
    auto at = pointOf(r, c);
    return plan.accumulator + "_r[" + std::to_string(at.first) + "][" + std::to_string(at.second) + "]";
  };
  auto list = [](const std::vector<std::string> &v) {
    std::string o;
    for (size_t i = 0; i < v.size(); ++i) o += (i ? ", " : "") + v[i];
    return o;
  };
  std::string pad(2 * indent, ' '), in1(2 * indent + 2, ' '), in2(2 * indent + 4, ' ');
  // A factor of f16 / bf16 elements is a tf32 exactly (no remainder): only the products of the
  // remainders that exist are taken besides big x big (3, 2 or 1 mma).
  auto split = [&](int f) { return std::string(plan.exact[f] ? "polyk::tf32_exact(" : "polyk::tf32_split("); };
  std::string mma = plan.exact[a] || plan.exact[1 - a]
                        ? std::string("polyk::mma_tf32x<") + (plan.exact[a] ? "false" : "true") + ", " + (plan.exact[1 - a] ? "false" : "true") + ">("
                        : "polyk::mma_tf32x3(";
  std::string fa = plan.update + "_mma" + std::to_string(a), fb = plan.update + "_mma" + std::to_string(1 - a);
  std::string o = pad + "{ /* " + plan.update + " on the tensor cores (mma.sync m16n8k8, 3xTF32): the warp's tile, " + it +
                  " 8 values a step */\n";
  o += in1 + "const polyk_idx polyk_ly = t_y % 8, polyk_lx = t_x;\n";
  // B's column of lane l in the columns' pair c: l / 4 is 2 x + b, the column of point 2c + b of
  // thread x (its own t_x: the lane's column in D, not in B).
  std::vector<std::vector<std::string>> bArgs(nCols / 2);
  for (long long c = 0; c < nCols / 2; ++c) {
    const Call &even = calls.at(pointOf(0, 2 * c)), &odd = calls.at(pointOf(0, 2 * c + 1));
    bArgs[c] = even.args;
    for (unsigned d : colDims) {
      std::string v = "polyk_col" + std::to_string(c) + "_" + std::to_string(d);
      o += in1 + "const polyk_idx " + v + " = (polyk_ly % 2) ? " + replaceWord(odd.args[d], "t_x", "(polyk_ly / 2)") + " : " +
           replaceWord(even.args[d], "t_x", "(polyk_ly / 2)") + ";\n";
      bArgs[c][d] = v;
    }
  }
  o += in1 + "#pragma unroll\n";
  o += in1 + "for (polyk_idx polyk_k8 = 0; polyk_k8 < " + std::to_string(trip) + "; polyk_k8 += 8) {\n";
  o += in2 + "polyk::Tf32x2 polyk_a[" + std::to_string(nRows / 2) + "][4], polyk_b[" + std::to_string(nCols / 2) + "][2];\n";
  for (int half = 0; half < 2; ++half) {
    o += in2 + "{\n" + in2 + "  const polyk_idx " + it + " = polyk_k8 + polyk_lx" + (half ? " + 4" : "") + ";\n";
    for (long long q = 0; q < nRows / 2; ++q)
      for (int r = 0; r < 2; ++r)
        o += in2 + "  polyk_a[" + std::to_string(q) + "][" + std::to_string(2 * half + r) + "] = " + split(a) + fa + "(" +
             list(calls.at(pointOf(2 * q + r, 0)).args) + "));\n";
    for (long long c = 0; c < nCols / 2; ++c)
      o += in2 + "  polyk_b[" + std::to_string(c) + "][" + std::to_string(half) + "] = " + split(1 - a) + fb + "(" + list(bArgs[c]) +
           "));\n";
    o += in2 + "}\n";
  }
  for (long long q = 0; q < nRows / 2; ++q)
    for (long long c = 0; c < nCols / 2; ++c)
      o += in2 + mma + reg(2 * q, 2 * c) + ", " + reg(2 * q, 2 * c + 1) + ", " + reg(2 * q + 1, 2 * c) + ", " +
           reg(2 * q + 1, 2 * c + 1) + ", polyk_a[" + std::to_string(q) + "], polyk_b[" + std::to_string(c) + "]);\n";
  o += in1 + "}\n" + pad + "}\n";
  if (outcome) outcome->taken = true;
  return o;
}

} // namespace polyk::codegen
