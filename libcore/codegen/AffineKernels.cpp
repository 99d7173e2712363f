// CUDA kernels of the affine path (AffineBind.cpp's mapping) and the same code run on the CPU
// (`--target=c-mapped`). Each kernel is the isl AST of its part of the mapped tree, built in the
// context of its block and thread ids; statements are macros over their domain iterators. An
// accumulator that polyk-bind promoted is a register of the thread (`C_acc_r`): the reduction's
// init, update loop and store of one output point run in that thread, in order.
#include "EmitParts.h"
#include "MapKernels.h"
#include "Mma.h"
#include "SplitK.h"
#include "Staging.h"
#include "TimeTiles.h"
#include "WholeTiles.h"

#include "polyk/Bind.h"
#include "polyk/Promotion.h"

#include <spdlog/spdlog.h>

#include <cctype>
#include <cstring>
#include <sstream>
#include <isl/ast_build.h>
#include <isl/schedule_node.h>

namespace polyk::codegen {

/// Replaces each whole word `word` of `text` with `with`.
std::string replaceWord(const std::string &text, const std::string &word, const std::string &with) {
  std::string o;
  auto ident = [](char c) { return std::isalnum((unsigned char)c) || c == '_'; };
  for (size_t i = 0; i < text.size();) {
    if (text.compare(i, word.size(), word) == 0 && (i == 0 || !ident(text[i - 1])) &&
        (i + word.size() == text.size() || !ident(text[i + word.size()]))) {
      o += with;
      i += word.size();
    } else {
      o += text[i++];
    }
  }
  return o;
}

namespace {

/// Below this fraction of whole-tile blocks (at the program's parameter values) a kernel with
/// whole and partial tiles takes one version, its stores guarded (fullBlockFraction).
constexpr double kOneVersionBelow = 0.7;

std::string params(const Scop &s, bool cuda) {
  std::string p;
  for (const auto &[name, value] : s.params) p += std::string(p.empty() ? "" : ", ") + "const polyk_idx " + name;
  for (const auto &t : s.tensors)
    p += std::string(p.empty() ? "" : ", ") + (t.role == Role::Input ? "const " : "") +
         (cuda ? cudaStorageType(t.type) : cStorageType(t.type)) + (cuda ? " *__restrict__ " : " *") + t.name;
  return p;
}

std::string args(const Scop &s) {
  std::string a;
  for (const auto &[name, value] : s.params) a += std::string(a.empty() ? "" : ", ") + name;
  for (const auto &t : s.tensors) a += std::string(a.empty() ? "" : ", ") + t.name;
  return a;
}

std::set<std::string> promotedIn(const KernelConfig &kc) { return {kc.promoted.begin(), kc.promoted.end()}; }

/// The kernels (by number) whose threads own register tiles: a `registers` mark inside them.
std::set<int> registerKernels(const isl::schedule &bound) {
  std::set<int> out;
  int kernel = -1;
  bound.get_root().foreach_descendant_top_down([&](isl::schedule_node n) -> bool {
    if (!n.isa<isl::schedule_node_mark>()) return true;
    std::string name = markName(n);
    if (name.rfind("kernel_", 0) == 0) kernel = std::stoi(name.substr(7));
    if (name == "registers") out.insert(kernel);
    return true;
  });
  return out;
}

/// Who unrolls the loops of a thread's points (a register tile's band, whose accumulators then
/// have constant indices): isl (unrollRegisters, in the tree) or the printer (AstPrinter::unrolled)
/// in whole tiles, or everywhere. The printer's is the default: isl builds each iteration's AST
/// anew, which took seconds for a tile of 128 points (GEMM 4096^3: 2.3 s of emit); isl's remains
/// for the kernels whose loops the printer refuses (bounds without a constant cap).
enum class PointsUnroll { Isl, Whole, All };

/// Every band under a `registers` mark unrolled in the AST: a thread's register tile, whose
/// accumulators then have constant indices.
isl::schedule unrollRegisters(const isl::schedule &s) {
  auto fn = [](isl_schedule_node *node, void *) -> isl_schedule_node * {
    if (isl_schedule_node_get_type(node) != isl_schedule_node_band) return node;
    isl_schedule_node *parent = isl_schedule_node_parent(isl_schedule_node_copy(node));
    bool under = false;
    if (isl_schedule_node_get_type(parent) == isl_schedule_node_mark) {
      isl_id *id = isl_schedule_node_mark_get_id(parent);
      under = std::string(isl_id_get_name(id)) == "registers";
      isl_id_free(id);
    }
    isl_schedule_node_free(parent);
    if (!under) return node;
    for (int m = 0; m < (int)isl_schedule_node_band_n_member(node); ++m)
      node = isl_schedule_node_band_member_set_ast_loop_type(node, m, isl_ast_loop_unroll);
    return node;
  };
  return isl::manage(isl_schedule_map_schedule_node_bottom_up(s.copy(), fn, nullptr));
}

/// The band of a reduction's reduced tiles (the first band of the update's filter in a kernel's
/// sequence init, update, store, where the kernel has `reduce` sizes) with its whole tiles
/// isolated in the AST (isl's `isolate` option): their loop over a tile's points has a constant
/// trip count (unrolled), and the last, partial tile gets a loop of its own.
isl::schedule isolateReducedTiles(const isl::schedule &sched, const Scop &scop) {
  isl::ctx ctx = islCtx();
  isl::schedule out = sched;
  for (const auto &[k, sz] : parseSizes(scop.sizes, &scop.at.sizes)) {
    if (sz.reduce.empty()) continue;
    isl::schedule_node kernel = findMark(out, "kernel_" + std::to_string(k)), band;
    if (kernel.is_null()) continue;
    size_t members = sz.reduce.size(); // (a structured binding: not captured before C++20 in clang 14)
    kernel.foreach_descendant_top_down([&](isl::schedule_node n) -> bool {
      if (!band.is_null()) return false;
      if (n.isa<isl::schedule_node_band>() && n.parent().isa<isl::schedule_node_filter>() &&
          n.parent().parent().isa<isl::schedule_node_sequence>() && n.as<isl::schedule_node_band>().n_member() == members)
        band = n;
      return band.is_null();
    });
    if (band.is_null()) continue;
    std::vector<std::string> stmts = statementsIn(scop, nodeDomain(band));
    if (stmts.size() != 1) continue;
    isl::set dom(ctx, scop.statement(stmts[0])->domain);
    unsigned r = sz.reduce.size(), par = dom.tuple_dim() - r;
    // The reduced dims' values, and the tiles all of whose points are among them.
    isl::set reduced = isl::manage(isl_set_reset_tuple_id(isl_set_project_out(dom.copy(), isl_dim_set, 0, par)));
    // Only where they are the same at every outer point (a box of reductions): a band's reduction
    // (g from a to a + 3) has no whole tile for any given a, and isolating the tiles whole over
    // all a took isl past its budget (the banded 6-d contraction: 27 s in the AST build).
    isl::set outerPart = isl::manage(isl_set_reset_tuple_id(isl_set_project_out(dom.copy(), isl_dim_set, par, r)));
    isl::set product = isl::manage(isl_set_flat_product(outerPart.copy(), reduced.copy()));
    if (!product.is_equal(isl::manage(isl_set_reset_tuple_id(dom.copy())))) continue;
    std::string kt, p, cons;
    for (unsigned m = 0; m < r; ++m) {
      std::string R = std::to_string(sz.reduce[m]);
      kt += (m ? ", " : "") + std::string("t") + std::to_string(m);
      p += (m ? ", " : "") + std::string("p") + std::to_string(m);
      cons += std::string(m ? " and " : "") + R + "t" + std::to_string(m) + " <= p" + std::to_string(m) + " < " + R + "t" +
              std::to_string(m) + " + " + R;
    }
    isl::map tiles(ctx, "{ [" + kt + "] -> [" + p + "] : " + cons + " }");
    tiles = tiles.intersect_params(reduced.params());
    isl::set full = tiles.domain().subtract(isl::manage(isl_map_subtract_range(tiles.copy(), reduced.copy())).domain());
    // isolate[[outer band members] -> [the band's]]
    unsigned outer = 0;
    for (isl::schedule_node a = band.parent(); a.has_parent(); a = a.parent())
      if (a.isa<isl::schedule_node_band>()) outer += a.as<isl::schedule_node_band>().n_member();
    isl::set prefix = isl::manage(isl_set_universe(isl_space_set_alloc(ctx.get(), 0, outer)));
    isl::map iso = isl::manage(isl_map_from_domain_and_range(prefix.release(), full.release()));
    isl::set wrapped = isl::manage(isl_set_set_tuple_name(isl_map_wrap(iso.release()), "isolate"));
    band = band.as<isl::schedule_node_band>().set_ast_build_options(isl::union_set(wrapped));
    out = band.schedule();
  }
  return out;
}

/// A register tile's dims: per member of the kernel's band, the points a thread owns (tile /
/// block).
struct RegisterTile {
  std::vector<long long> points;
  bool any() const {
    for (long long p : points)
      if (p > 1) return true;
    return false;
  }
  std::string extents() const {
    std::string o;
    for (long long p : points)
      if (p > 1) o += "[" + std::to_string(p) + "]";
    return o;
  }
};

RegisterTile registerTile(const Scop &s, int k, bool registers) {
  RegisterTile r;
  if (!registers) return r;
  auto sizes = parseSizes(s.sizes, &s.at.sizes);
  const KernelSizes &sz = sizes[k];
  size_t n = sz.tile.size();
  for (size_t m = 0; m < n; ++m) r.points.push_back(sz.tile[m] / sz.block[m]);
  return r;
}


/// The promoted temporaries a thread holds a row of (polyk-bind: a kernel whose band is one member,
/// a temporary of several dims), indexed by their subscripts after the first.
std::set<std::string> privateRows(const Scop &s, const KernelConfig &kc) {
  auto sizes = parseSizes(s.sizes);
  auto it = sizes.find((int)(&kc - s.kernels.data()));
  std::set<std::string> rows;
  if (it == sizes.end() || it->second.tile.size() != 1) return rows;
  for (const auto &t : kc.promoted)
    if (s.tensor(t)->shape.size() > 1) rows.insert(t);
  return rows;
}

/// A thread's row of a promoted temporary: `[e1][e2]...`, its dims after the first.
std::string rowExtents(const TensorDecl &t) {
  std::string o;
  for (size_t d = 1; d < t.shape.size(); ++d) o += "[" + std::to_string(t.shape[d].value) + "]";
  return o;
}

std::string macros(const Scop &s, const KernelConfig &kc, Dialect d, const RegisterTile &regs = {}, const Staging &staging = {},
                   const WholeTiles &wt = {}, const SplitK &sk = {}) {
  std::set<std::string> promoted = promotedIn(kc), rows = privateRows(s, kc);
  std::string o;
  for (const auto &name : kc.statements) {
    std::string m = statementMacros(
        s, d, promoted, [](const ScopStatement &st, const std::string &) -> std::string {
          throw std::logic_error("affine statement " + st.name + " of kind reduce");
        },
        [&](const ScopStatement &st) {
          const TensorDecl &acc = *s.tensor(writtenTensor(st));
          std::string id = reduceIdentity(*st.op, acc.type);
          if (promoted.count(acc.name))
            return acc.name + "_r" + (rows.count(acc.name) ? rowIndex(st.write, acc.shape.size()) : "") + " = " + id + ";";
          return acc.name + "[" + linearIndex(st.write, acc) + "] = " + storeValue(d, acc.type, id) + ";";
        },
        staging.reads(name) ? stagedReads(staging, d == Dialect::Cuda && (staging.async || dynamicShared(s, staging) > 0)) : ReadOverride(), name,
        staging.reads(name) ? std::set<std::string>(kc.shared.begin(), kc.shared.end()) : std::set<std::string>(), rows);
    // A thread's register tile: its accumulators are an array, indexed by the point's place.
    if (regs.any())
    // (The index is the macro's last argument, `[1][0]`: isl prints it at each call, a constant
    // where the tile's loops are unrolled. Spelled out in the macro as an expression of the
    // iterators, nvcc did not always fold it, and kept the array in local memory.)
    if (regs.any()) {
      std::string before = m;
      for (const auto &t : kc.promoted) m = replaceWord(m, t + "_r", t + "_r polyk_reg");
      if (m != before) m = m.replace(m.find(") do {"), 6, ", polyk_reg) do {");
    }
    o += m;
    // Split-K: the store's partials out and their sum in (SplitK.h).
    if (sk.on && sk.stores.count(name)) o += splitMacros(sk, name, m.substr(0, m.find(") do {") + 1), regs.any(), d);
    // A store of a kernel whose partial blocks compute whole tiles: there, only the points that
    // exist (NAME_guarded).
    if (auto g = wt.storeGuards.find(name); wt.apply && g != wt.storeGuards.end() && !g->second.empty()) {
      size_t open = m.find(" do { ") + 6, close = m.rfind(" } while (0)");
      std::string call = "#define " + name + "(";
      o += "#define " + name + "_guarded(" + m.substr(call.size(), open - call.size()) + "if (" + g->second + ") { " +
           m.substr(open, close - open) + " }" + m.substr(close);
    }
  }
  return o;
}

/// The block coordinates of an `n`-member tile band at the ids that take them: member m on x, y
/// or z<m> ({ [m0, ...] : m0 = b_z0, ... } over the params and ids).
isl::set coordinatesAtIds(const Scop &s, unsigned n) {
  std::string idList, coords, eqs;
  for (const auto &[p, v] : s.params) idList += (idList.empty() ? "" : ", ") + p;
  for (const char *id : {"b_x", "b_y", "t_x", "t_y"}) idList += (idList.empty() ? "" : ", ") + std::string(id);
  for (unsigned i = 0; i + 2 < n; ++i) idList += ", b_z" + std::to_string(i) + ", t_z" + std::to_string(i);
  for (unsigned m = 0; m < n; ++m) {
    std::string id = m + 1 == n ? "b_x" : m + 2 == n ? "b_y" : "b_z" + std::to_string(m);
    coords += std::string(m ? ", " : "") + "m" + std::to_string(m);
    eqs += std::string(m ? " and " : "") + "m" + std::to_string(m) + " = " + id;
  }
  return isl::set(islCtx(), "[" + idList + "] -> { [" + coords + "] : " + eqs + " }");
}

/// The blocks of kernel `k` whose tile lies wholly inside every statement's parallel dims, as a
/// set of the ids' parameters (b_x, b_y, b_z0, ...); empty where the kernel has no tile band.
/// In such a block no point needs a guard: the kernel specialises its AST for them.
isl::set fullTiles(const Scop &s, const isl::schedule &bound, int k, const KernelConfig &kc, const AffineKernelIds &ids) {
  isl::ctx ctx = islCtx();
  isl::schedule_node band = tileBand(bound, k);
  if (band.is_null()) return isl::set();
  unsigned n = band.as<isl::schedule_node_band>().n_member();
  isl::set atIds = coordinatesAtIds(s, n);
  isl::set full = isl::set::universe(atIds.get_space()).params();
  for (const auto &stName : kc.statements) {
    const ScopStatement &st = *s.statement(stName);
    isl::set dom(ctx, st.domain);
    isl::multi_aff block = blockOf(band, s.sizes.empty() ? std::vector<long long>() : parseSizes(s.sizes, &s.at.sizes)[k].tile, st);
    if (dom.tuple_dim() < n || block.is_null()) return isl::set();
    // The blocks of the points outside the statement's parallel dims (its first n; the band
    // reads no other).
    unsigned reduced = dom.tuple_dim() - n;
    isl::set par = isl::manage(isl_set_project_out(dom.copy(), isl_dim_set, n, reduced));
    isl::set outside = isl::manage(isl_set_reset_tuple_id(
        isl_set_insert_dims(isl::set::universe(par.get_space()).subtract(par).release(), isl_dim_set, n, reduced)));
    isl::map toBlock = isl::manage(isl_map_reset_tuple_id(isl_map_from_multi_aff(block.copy()), isl_dim_in));
    isl::set blocks = isl::manage(isl_set_reset_tuple_id(outside.apply(toBlock).release()));
    // (isl aligns the parameters of both sides of a binary operation.)
    full = full.subtract(blocks.intersect(atIds).params());
  }
  return full.intersect(affineMappingContext(kc, ids)).coalesce();
}

/// The values parameter `p` of `set` takes, as a set of one dim (the other parameters projected out).
isl::set paramValues(const isl::set &set, unsigned p) {
  isl_set *one = isl_set_copy(set.get());
  unsigned n = (unsigned)isl_set_dim(one, isl_dim_param);
  one = isl_set_project_out(one, isl_dim_param, p + 1, n - p - 1);
  one = isl_set_project_out(one, isl_dim_param, 0, p);
  return isl::manage(isl_set_move_dims(one, isl_dim_set, 0, isl_dim_param, 0, 1));
}

/// The fraction of the blocks of `some` that lie in `full` at the program's parameter values,
/// taken along each block id (both sets are boxes of blocks; sets of parameters).
double fullBlockFraction(const Scop &s, const isl::set &full, const isl::set &some) {
  std::string names, fix;
  for (const auto &[p, v] : s.params) {
    names += (names.empty() ? "" : ", ") + p;
    fix += (fix.empty() ? "" : " and ") + p + " = " + std::to_string(v);
  }
  isl::set values(islCtx(), "[" + names + "] -> { : " + (fix.empty() ? "true" : fix) + " }");
  // The values block id `id` takes in `set`: max - min + 1 (0 where none; 1 where `set` does not
  // name it). (The intersection may reorder the parameters.)
  auto count = [&](const isl::set &set, const std::string &id) -> double {
    isl::set fixed = set.intersect_params(values);
    int p = isl_set_find_dim_by_name(fixed.get(), isl_dim_param, id.c_str());
    if (p < 0) return 1;
    isl::set box = paramValues(fixed, (unsigned)p);
    if (box.is_empty()) return 0;
    isl::aff var = isl::manage(isl_aff_var_on_domain(isl_local_space_from_space(box.get_space().release()), isl_dim_set, 0));
    isl::val lo = box.min_val(var), hi = box.max_val(var);
    if (!lo.is_int() || !hi.is_int()) return 1;
    return (double)(hi.get_num_si() - lo.get_num_si() + 1);
  };
  double fraction = 1;
  unsigned n = (unsigned)isl_set_dim(some.get(), isl_dim_param);
  for (unsigned p = 0; p < n; ++p) {
    std::string id = isl::manage(isl_set_get_dim_id(some.get(), isl_dim_param, p)).name();
    if (id.rfind("b_", 0) != 0) continue;
    double all = count(some, id);
    if (all > 0) fraction *= count(full, id) / all;
  }
  return fraction;
}

/// Whether some parameter (a block or thread id, or a program parameter) takes a single value in
/// `narrow` but not in `wide`.
bool pinsAnId(const isl::set &narrow, const isl::set &wide) {
  auto single = [](const isl::set &set, unsigned p) { return isl_set_is_singleton(paramValues(set, p).get()) == isl_bool_true; };
  unsigned n = (unsigned)isl_set_dim(narrow.get(), isl_dim_param);
  for (unsigned p = 0; p < n; ++p) {
    if (!single(narrow, p)) continue;
    isl::id id = isl::manage(isl_set_get_dim_id(narrow.get(), isl_dim_param, p));
    int q = isl_set_find_dim_by_id(wide.get(), isl_dim_param, id.get());
    if (q < 0 || !single(wide, (unsigned)q)) return true;
  }
  return false;
}

/// The body of one kernel (one thread's code): its registers, then the AST.
/// `mapping`: the mapped tree for partial blocks; `unrolledMapping`: with a thread's points
/// unrolled, for the blocks of whole tiles (no guards, constant register indices). The CUDA
/// kernels use the unrolled tree for both; the mapped C keeps the loops in partial blocks.
/// The AST build's callbacks: at each call of a register-tile statement, the accumulator's index;
/// at each `shared` mark, the C setting the staged tiles' first elements (affine in the prefix's
/// values, which are the AST's outer iterators there); the mark's node is annotated `shared <i>`,
/// i indexing `offsets`.
struct AstCallbacks {
  const Staging *staging = nullptr;
  isl::union_map prefix; // each instance below the mark -> its prefix (Promotion.h)
  std::vector<std::string> offsets, nextOffsets;
  std::string error;
  int indent = 0;

  /// At each call of a statement with register accumulators (`regStmts`), the accumulator's
  /// index in the thread's tile (RegisterTile::index as isl expressions of the AST's loops).
  const RegisterTile *regs = nullptr;
  std::map<std::string, isl::pw_multi_aff> regIndex; // per statement: its domain -> the point's place
  /// Where the printer unrolls the thread's points (AstPrinter::unrolled): per statement, the
  /// schedule depth of its `registers` band; `several` picks the place from the band's values.
  /// Each call's place is then an expression of the band's loop iterators (regExprs, the call
  /// annotated "polyk_regs#<i>"), which the printer folds to constants as it unrolls them.
  std::map<std::string, int> regDepth;
  std::map<std::string, isl::map> bandValues; // (its instances -> the band's values)
  isl::multi_aff several;
  std::vector<std::vector<isl::ast_expr>> regExprs;
  static constexpr const char *kRegsNote = "polyk_regs#";
  std::string refused; // (why the printer cannot unroll the points: kernelBody throws UnrollRefused)

  /// "[i][j]..." where the places of `instances` (index: instance -> place) are one constant
  /// point whatever the ids; "" otherwise.
  static std::string constantPlace(const isl::set &instances, const isl::pw_multi_aff &index) {
    isl::set image = instances.apply(isl::manage(isl_map_from_pw_multi_aff(index.copy())));
    if (image.is_empty()) return "";
    isl::multi_val fixed = image.affine_hull().plain_multi_val_if_fixed();
    std::string text;
    for (int d = 0; d < (int)fixed.size(); ++d) {
      isl::val v = fixed.at(d);
      if (v.is_nan() || !v.is_int()) return "";
      text += "[" + std::to_string(v.get_num_si()) + "]";
    }
    return text;
  }

  static isl_ast_node *atDomain(isl_ast_node *node, isl_ast_build *build, void *user) {
    auto *self = static_cast<AstCallbacks *>(user);
    isl_ast_expr *call = isl_ast_node_user_get_expr(node);
    isl_ast_expr *fn = isl_ast_expr_get_op_arg(call, 0);
    isl_id *id = isl_ast_expr_get_id(fn);
    std::string stmt = isl_id_get_name(id);
    isl_id_free(id);
    isl_ast_expr_free(fn);
    isl_ast_expr_free(call);
    auto it = self->regIndex.find(stmt);
    if (it == self->regIndex.end()) return node;
    if (!self->several.is_null()) return self->placeFromBand(node, build, stmt);
    isl::union_map sched = isl::manage(isl_ast_build_get_schedule(build));
    isl::map inverse;
    isl::map_list maps = sched.get_map_list();
    for (int i = 0; i < (int)maps.size(); ++i)
      if (maps.at(i).domain_tuple_id().name() == stmt) inverse = maps.at(i).reverse();
    if (inverse.is_null() || !inverse.is_single_valued()) {
      self->error = "no single instance of " + stmt + " at a call";
      return node;
    }
    // Where a thread's points are unrolled, the call's place is a constant: read it off the
    // instances' image (the general path below, a pullback and an expression built in the AST's
    // context, took a third of a 4-d contraction's emit time).
    if (std::string text = constantPlace(inverse.range(), it->second); !text.empty())
      return isl_ast_node_set_annotation(node, isl_id_alloc(isl_ast_node_get_ctx(node), text.c_str(), nullptr));
    isl_pw_multi_aff *at = isl_pw_multi_aff_pullback_pw_multi_aff(it->second.copy(), isl_pw_multi_aff_from_map(inverse.copy()));
    std::string text;
    for (int d = 0; d < (int)isl_pw_multi_aff_dim(at, isl_dim_out); ++d) {
      isl_ast_expr *e = isl_ast_build_expr_from_pw_aff(build, isl_pw_multi_aff_get_pw_aff(at, d));
      text += "[" + islExprToC(e) + "]";
      isl_ast_expr_free(e);
    }
    isl_pw_multi_aff_free(at);
    return isl_ast_node_set_annotation(node, isl_id_alloc(isl_ast_node_get_ctx(node), text.c_str(), nullptr));
  }

  /// Member m of `stmt`'s registers band over the instances of the build's call, where it is one
  /// integer; null otherwise.
  isl::val memberValue(isl_ast_build *build, const std::string &stmt, int m) {
    auto band = bandValues.find(stmt);
    if (band == bandValues.end()) return {};
    isl::union_set instances = isl::manage(isl_ast_build_get_schedule(build)).domain();
    isl::union_set image = instances.apply(isl::union_map(band->second));
    if (isl_union_set_n_set(image.get()) != 1) return {};
    isl::set values = isl::manage(isl_set_from_union_set(image.release()));
    isl::val v = isl::manage(isl_set_plain_get_val_if_fixed(values.get(), isl_dim_set, m));
    if (v.is_null() || !v.is_int()) v = isl::manage(isl_set_plain_get_val_if_fixed(isl::set(values.affine_hull()).get(), isl_dim_set, m));
    return !v.is_null() && v.is_int() ? v : isl::val();
  }

  /// The call's place from its statement's `registers` band: the schedule's values at the band's
  /// depth, as the AST's expressions (its loop iterators there).
  isl_ast_node *placeFromBand(isl_ast_node *node, isl_ast_build *build, const std::string &stmt) {
    auto d = regDepth.find(stmt);
    if (d == regDepth.end()) {
      error = "no registers band of " + stmt + " at a call";
      return node;
    }
    // The build's schedule space holds the loops left at the call (isl's c<depth>; the members
    // fixed to ids are gone). [loops] -> [the band's values] -> the place, where every member
    // the place reads is a loop there; else isl unrolls (PointsUnroll::Isl).
    isl_space *space = isl_ast_build_get_schedule_space(build);
    int k = (int)isl_multi_aff_dim(several.get(), isl_dim_in);
    isl_local_space *ls = isl_local_space_from_space(isl_space_copy(space));
    isl_aff_list *values = isl_aff_list_alloc(isl_ast_node_get_ctx(node), k);
    for (int m = 0; m < k; ++m) {
      int at = isl_space_find_dim_by_name(space, isl_dim_set, ("c" + std::to_string(d->second + m)).c_str());
      isl_aff *value = nullptr;
      if (at >= 0) {
        value = isl_aff_var_on_domain(isl_local_space_copy(ls), isl_dim_set, at);
      } else if (isl_multi_aff_involves_dims(several.get(), isl_dim_in, m, 1) == isl_bool_true) {
        // (A member isl fixed at the call, with no loop: its one value over the call's instances.)
        isl::val fixed = memberValue(build, stmt, m);
        if (fixed.is_null() && refused.empty()) refused = "member " + std::to_string(m) + " of " + stmt + "'s registers band has no one value at a call";
        value = isl_aff_val_on_domain(isl_local_space_copy(ls), fixed.is_null() ? isl_val_zero(isl_ast_node_get_ctx(node)) : fixed.release());
      }
      values = isl_aff_list_add(values, value ? value : isl_aff_zero_on_domain(isl_local_space_copy(ls)));
    }
    isl_local_space_free(ls);
    isl_space *range = isl_space_add_dims(isl_space_set_from_params(isl_space_params(isl_space_copy(space))), isl_dim_set, k);
    isl_space *bandSpace = isl_space_map_from_domain_and_range(space, range);
    isl_multi_aff *band = isl_multi_aff_from_aff_list(bandSpace, values);
    isl_multi_aff *pick = isl_multi_aff_align_params(several.copy(), isl_multi_aff_get_space(band));
    isl_multi_aff *place = isl_multi_aff_pullback_multi_aff(pick, band);
    std::vector<isl::ast_expr> exprs;
    for (int i = 0; i < (int)isl_multi_aff_dim(place, isl_dim_out); ++i)
      exprs.push_back(isl::manage(isl_ast_build_expr_from_pw_aff(build, isl_pw_aff_from_aff(isl_multi_aff_get_aff(place, i)))));
    isl_multi_aff_free(place);
    std::string note = kRegsNote + std::to_string(regExprs.size());
    regExprs.push_back(exprs);
    return isl_ast_node_set_annotation(node, isl_id_alloc(isl_ast_node_get_ctx(node), note.c_str(), nullptr));
  }

  static isl_ast_node *after(isl_ast_node *node, isl_ast_build *build, void *user) {
    auto *self = static_cast<AstCallbacks *>(user);
    isl_id *id = isl_ast_node_mark_get_id(node);
    bool shared = std::string(isl_id_get_name(id)) == "shared";
    isl_id_free(id);
    if (!shared) return node;
    // The AST's outer schedule there -> the instances below -> their prefix -> the tile's first
    // element: single-valued (one block, one reduced tile), an expression of the outer iterators.
    std::string code, next;
    isl_union_map *sched = isl_ast_build_get_schedule(build);
    // (With prefetch, also the next reduced tile's first element: Staging::nextOffset.)
    auto print = [&](const SharedTile &t, const isl::multi_aff &offset, std::string (*name)(const std::string &, size_t), std::string &out) {
      isl::union_map first = isl::manage(isl_union_map_copy(sched)).reverse().apply_range(self->prefix).apply_range(
          isl::union_map(isl::manage(isl_map_from_multi_aff(offset.copy()))));
      isl::map_list maps = first.get_map_list();
      if (maps.size() != 1 || !maps.at(0).is_single_valued()) {
        self->error = "the first element of " + t.tensor + "'s tile is not a function of the AST's loops at the \"shared\" mark";
        return false;
      }
      isl::map only = maps.at(0);
      isl_pw_multi_aff *pma = isl_pw_multi_aff_from_map(only.copy());
      for (size_t d = 0; d < t.size.size(); ++d) {
        isl_ast_expr *e = isl_ast_build_expr_from_pw_aff(build, isl_pw_multi_aff_get_pw_aff(pma, (int)d));
        out += "  " + name(t.tensor, d) + " = " + islExprToC(e) + ";\n";
        isl_ast_expr_free(e);
      }
      isl_pw_multi_aff_free(pma);
      return true;
    };
    const auto &tiles = self->staging->tiles;
    for (size_t i = 0; i < tiles.size(); ++i) {
      if (!print(tiles[i], tiles[i].offset, offsetName, code)) break;
      if ((self->staging->prefetch || self->staging->async) && !print(tiles[i], self->staging->nextOffset.at(i), nextOffsetName, next)) break;
    }
    isl_union_map_free(sched);
    std::string note = "shared " + std::to_string(self->offsets.size());
    self->offsets.push_back(code);
    self->nextOffsets.push_back(next);
    return isl_ast_node_set_annotation(node, isl_id_alloc(isl_ast_node_get_ctx(node), note.c_str(), nullptr));
  }
};

/// Whether kernel kc's reduced loop is short (at most 64 iterations at the parameters' defaults)
/// and its accumulators 4 bytes at most (64 f64 points need all 128 registers of 2 blocks an SM).
bool shortReduction(const Scop &s, const KernelConfig &kc) {
  for (const auto &name : kc.statements) {
    const ScopStatement *st = s.statement(name);
    if (!st) continue;
    const TensorDecl *acc = s.tensor(isl::map(islCtx(), st->write).range_tuple_id().name());
    if ((acc && dtypeBytes(acc->type) > 4) || reducedIterations(s, *st) > 64) return false;
  }
  return true;
}

/// Whether `loop` (a for node) holds no loop that is not degenerate, besides those `printer`
/// unrolls.
bool innermostLoop(const isl::ast_node &loop, const AstPrinter &printer) {
  // (The loops the printer unrolls, a `registers` mark's, are not loops of the code.)
  std::function<bool(isl_ast_node *, bool)> noLoop = [&](isl_ast_node *n, bool under) -> bool {
    switch (isl_ast_node_get_type(n)) {
    case isl_ast_node_for: {
      isl::ast_node body = isl::manage(isl_ast_node_for_get_body(n));
      std::string it = islExprToC(isl::manage(isl_ast_node_for_get_iterator(n)).get());
      if (isl_ast_node_for_is_degenerate(n) != isl_bool_true && !(under && printer.unrolled.count(it))) return false;
      return noLoop(body.get(), under);
    }
    case isl_ast_node_if: {
      isl::ast_node then = isl::manage(isl_ast_node_if_get_then_node(n));
      if (!noLoop(then.get(), under)) return false;
      return isl_ast_node_if_has_else_node(n) != isl_bool_true || noLoop(isl::manage(isl_ast_node_if_get_else_node(n)).get(), under);
    }
    case isl_ast_node_block: {
      isl_ast_node_list *list = isl_ast_node_block_get_children(n);
      bool none = true;
      for (int i = 0; none && i < isl_ast_node_list_n_ast_node(list); ++i) none = noLoop(isl::manage(isl_ast_node_list_get_at(list, i)).get(), under);
      isl_ast_node_list_free(list);
      return none;
    }
    case isl_ast_node_mark: {
      isl_id *id = isl_ast_node_mark_get_id(n);
      bool registers = std::string(isl_id_get_name(id)) == printer.unrollMark;
      isl_id_free(id);
      return noLoop(isl::manage(isl_ast_node_mark_get_node(n)).get(), under || registers);
    }
    default: return true;
    }
  };
  return noLoop(isl::manage(isl_ast_node_for_get_body(loop.get())).get(), false);
}

/// Under split-K (`sk`), `phase` 1 is the body whose stores put the registers into the block's
/// partials, `phase` 2 the stores (kc's statements: the stores only) that sum them first, printed
/// without the prologue and declarations (`declare` false).
std::string kernelBody(const Scop &s, const AffineMapping &mapping, const AffineMapping &unrolledMapping, const KernelConfig &kc,
                       int k, const RegisterTile &regs, const Staging &staging, const WholeTiles &wt,
                       const isl::schedule &bound, Dialect d, bool unrolled, const SplitK &sk = {}, int phase = 0,
                       bool declare = true, const MmaPlan &mma = {}, MmaOutcome *mmaOutcome = nullptr, int unroll = 1,
                       PointsUnroll pu = PointsUnroll::Isl) {
  const isl::schedule &mapped = mapping.schedule;
  AffineKernelIds ids;
  if (auto it = mapping.kernels.find(k); it != mapping.kernels.end()) ids = it->second;
  isl::union_set dom = isl::union_set::empty(islCtx());
  for (const auto &name : kc.statements) dom = dom.unite(isl::union_set(isl::set(islCtx(), s.statement(name)->domain)));
  isl::schedule restricted = isl::manage(isl_schedule_intersect_domain(mapped.copy(), dom.copy()));
  isl::schedule restrictedUnrolled = isl::manage(isl_schedule_intersect_domain(unrolledMapping.schedule.copy(), dom.release()));
  AstCallbacks marks;
  marks.staging = &staging;
  std::set<std::string> pointLoops; // (the registers bands' loops, where the printer unrolls them)
  if (!staging.tiles.empty()) marks.prefix = staging.prefix;
  if (regs.any()) {
    // A point's place in its thread's tile: the `registers` bands' values, of the members with
    // several points (bind built them: floor(d / B) - (T / B) floor(d / T) for cyclic points).
    isl::union_map places = isl::union_map::empty(islCtx());
    findMark(bound, "kernel_" + std::to_string(k)).foreach_descendant_top_down([&](isl::schedule_node n) -> bool {
      if (n.isa<isl::schedule_node_mark>() && markName(n) == "registers" && n.child(0).isa<isl::schedule_node_band>())
        places = places.unite(isl::union_map::from(n.child(0).as<isl::schedule_node_band>().get_partial_schedule()));
      return true;
    });
    // Points in runs (polyk-bind's runDistribution): the band is (g..., v...), run g of V points
    // and point v of the run, member by member; the place is V g + v, V the v member's extent.
    size_t n = regs.points.size();
    bool runs = !places.is_empty() && places.range().as_set().tuple_dim() == 2 * n;
    std::string pick = "{ [";
    for (size_t m = 0; m < (runs ? 2 * n : n); ++m) pick += (m ? ", " : "") + std::string("p") + std::to_string(m);
    pick += "] -> [";
    bool first = true;
    for (size_t m = 0; m < n; ++m) {
      if (regs.points[m] <= 1) continue;
      std::string place = "p" + std::to_string(m);
      if (runs) {
        long long run = places.range().as_set().dim_max_val((int)(n + m)).get_num_si() + 1;
        place = std::to_string(run) + "p" + std::to_string(m) + " + p" + std::to_string(n + m);
      }
      pick += std::string(first ? "" : ", ") + place, first = false;
    }
    isl::multi_aff several(islCtx(), pick + "] }");
    if (pu != PointsUnroll::Isl) {
      marks.several = several;
      restrictedUnrolled.get_root().foreach_descendant_top_down([&](isl::schedule_node n) -> bool {
        if (!n.isa<isl::schedule_node_mark>() || markName(n) != "registers" || !n.child(0).isa<isl::schedule_node_band>()) return true;
        isl::schedule_node band = n.child(0);
        int depth = isl_schedule_node_get_schedule_depth(band.get());
        for (int m = 0; m < (int)band.as<isl::schedule_node_band>().n_member(); ++m) pointLoops.insert("c" + std::to_string(depth + m));
        isl::union_map values = isl::union_map::from(band.as<isl::schedule_node_band>().get_partial_schedule());
        for (const auto &name : statementsIn(s, nodeDomain(band))) {
          marks.regDepth[name] = depth;
          isl::union_map mine = values.intersect_domain(isl::union_set(isl::set(islCtx(), s.statement(name)->domain)));
          if (isl_union_map_n_map(mine.get()) == 1) marks.bandValues[name] = isl::manage(isl_map_from_union_map(mine.release()));
        }
        return true;
      });
    }
    for (const auto &name : kc.statements) {
      const ScopStatement &st = *s.statement(name);
      bool accumulates = false; // (the statements whose macro takes the index: macros())
      for (const auto &t : kc.promoted) {
        accumulates |= writtenTensor(st) == t;
        for (const auto &r : st.reads) accumulates |= isl::map(islCtx(), r).range_tuple_id().name() == t;
      }
      if (!accumulates) continue;
      isl::union_map mine = places.intersect_domain(isl::union_set(isl::set(islCtx(), st.domain)));
      if (mine.is_empty()) throw std::logic_error(kc.name + ": " + name + " has accumulators but no registers band");
      isl_pw_multi_aff *at = isl_pw_multi_aff_from_map(isl_map_from_union_map(mine.release()));
      marks.regIndex[name] = isl::manage(isl_pw_multi_aff_pullback_pw_multi_aff(isl_pw_multi_aff_from_multi_aff(several.copy()), at));
    }
  }
  auto withMarks = [&](isl::ast_build b) {
    if (regs.any()) b = isl::manage(isl_ast_build_set_at_each_domain(b.release(), &AstCallbacks::atDomain, &marks));
    return staging.tiles.empty() ? b : isl::manage(isl_ast_build_set_after_each_mark(b.release(), &AstCallbacks::after, &marks));
  };
  auto checkMarks = [&] {
    if (!marks.error.empty()) fail(s.at.schedule, kc.name + ": " + marks.error);
    if (!marks.refused.empty()) throw UnrollRefused(marks.refused);
  };
  isl::ast_build build = withMarks(isl::ast_build::from_context(affineMappingContext(kc, ids)));
  AstPrinter printer;
  printer.annotations = true;
  printer.notePrefix = AstCallbacks::kRegsNote;
  printer.note = [&](const std::string &note, const IteratorValues &values) {
    std::string text;
    for (const auto &e : marks.regExprs.at(std::stoul(note.substr(std::strlen(AstCallbacks::kRegsNote))))) {
      if (!printer.unrolled.empty() && !exprValue(e.get(), values)) throw UnrollRefused("a register index is not a constant");
      text += "[" + exprWithValues(e.get(), values) + "]";
    }
    return text;
  };
  // The ids' ranges in this kernel (from its mapping's context), which decide some of the
  // unrolled iterations' guards.
  {
    isl::set context = affineMappingContext(kc, ids);
    for (int p = 0; p < (int)isl_set_dim(context.get(), isl_dim_param); ++p) {
      std::string name = isl_set_get_dim_name(context.get(), isl_dim_param, p);
      if (name.rfind("b_", 0) != 0 && name.rfind("t_", 0) != 0) continue;
      isl::aff value = isl::manage(isl_aff_param_on_domain_space_id(isl_space_params(context.space().release()),
                                                                    isl_id_alloc(islCtx().get(), name.c_str(), nullptr)));
      isl::val lo = context.params().min_val(value), hi = context.params().max_val(value);
      constexpr long long far = 1LL << 60;
      printer.ranges[name] = {lo.is_int() ? lo.get_num_si() : -far, hi.is_int() ? hi.get_num_si() : far};
    }
  }
  // The loops of a thread's points: unrolled by the printer in whole tiles (pu Whole), or
  // everywhere (All); isl unrolled them in the tree already (Isl).
  auto unrollPoints = [&](bool whole) { printer.unrolled = pu == PointsUnroll::All || (whole && pu == PointsUnroll::Whole) ? pointLoops : std::set<std::string>(); };
  printer.mark = [&](const std::string &name, const std::string &body, int indent) {
    if (name.rfind("shared ", 0) != 0) return body;
    std::string pad(2 * indent, ' ');
    auto indented = [&](const std::string &code) {
      std::string o;
      std::stringstream lines(code);
      for (std::string line; std::getline(lines, line);) o += pad + line + "\n";
      return o;
    };
    size_t at = std::stoul(name.substr(7));
    return stagingCopy(s, staging, kc, d, indented(marks.offsets.at(at)), indented(marks.nextOffsets.at(at)), indent) + body +
           (d == Dialect::Cuda ? pad + "__syncthreads();\n" : "");
  };
  bool guarded = false; // (calls of the stores' guarded macros: whole tiles in partial blocks)
  printer.user = [&](const std::string &stmt, const std::vector<std::string> &a) -> std::string {
    if (stmt == "polyk_stage") return ""; // its `shared` mark prints the copies
    auto g = wt.storeGuards.find(stmt);
    bool guard = guarded && g != wt.storeGuards.end() && !g->second.empty();
    std::string list;
    for (size_t i = 0; i < a.size(); ++i) list += (i ? ", " : "") + a[i];
    bool store = sk.on && sk.stores.count(stmt);
    if (store && phase == 1) return stmt + "_put(" + list + ");\n";
    std::string c = stmt + (guard ? "_guarded(" : "(") + list + ");\n";
    return store && phase == 2 ? stmt + "_sum(" + list + "); " + c : c;
  };
  // The tensor cores (Mma.h) take the update's loops where every thread of the block runs the
  // whole tile: the code of whole tiles, not that of the exact points.
  bool wholeTile = false;
  if (mma.on)
    printer.replace = [&](const isl::ast_node &loop, int indent) -> std::optional<std::string> {
      return wholeTile ? mmaLoop(mma, loop, indent, mmaOutcome, &printer) : std::nullopt;
    };
  // Small constant loops (a filter's fy, fx) unrolled: nvcc left Gaussian2D's 5 x 5 loops rolled
  // once the kernel had two versions (524 -> 1071 us on the H100).
  constexpr int kUnrollTrip = 16;
  // --unroll N > 1: `#pragma unroll N` on the other innermost loops (a reduced tile's loop).
  if (d == Dialect::Cuda)
    printer.around = [unroll, &printer](const isl::ast_node &loop, int indent) -> std::pair<std::string, std::string> {
      int trip = VectorReads::constantTrip(loop);
      if (trip > 1 && trip <= kUnrollTrip) return {std::string(2 * indent, ' ') + "#pragma unroll\n", ""};
      if (unroll > 1 && innermostLoop(loop, printer)) return {std::string(2 * indent, ' ') + "#pragma unroll " + std::to_string(unroll) + "\n", ""};
      return {"", ""};
    };
  std::string o;
  std::set<std::string> rows = privateRows(s, kc);
  if (declare) {
    o = ids.prologue() + stagingDecls(s, staging, d, kc);
    for (const auto &t : kc.promoted)
      o += "  " + std::string(computeCType(s.tensor(t)->type)) + " " + t + "_r" + regs.extents() +
           (rows.count(t) ? rowExtents(*s.tensor(t)) : "") + ";\n";
  }
  // Blocks of whole tiles, where a thread's points are unrolled (a register tile): the same AST
  // in a context that knows it, without the points' guards.
  isl::set full = unrolled ? fullTiles(s, bound, k, kc, ids) : isl::set();
  // Where the partial blocks may compute whole tiles too (WholeTiles.h), every block whose
  // parameters give each statement instances runs that code, its stores guarded. The code of the
  // exact points remains for the other parameters (an empty reduction's init and store).
  // The blocks of whole tiles keep the code without guards (a guard on each store cost Gaussian2D
  // 269 -> 398 us on the H100, bench/results/2026-11-26-h100-whole-tiles.txt).
  isl::set context = affineMappingContext(kc, ids), some = context;
  if (wt.apply && !full.is_null() && !full.is_empty()) {
    for (const auto &name : kc.statements) some = some.intersect_params(isl::set(islCtx(), s.statement(name)->domain).params());
    some = some.intersect(wt.blocks.intersect(coordinatesAtIds(s, (unsigned)wt.blocks.tuple_dim())).params());
  }
  // (Where the whole tiles' blocks have a single value of an id that the partial ones do not, as
  // when fixed extents leave one whole tile and a partial one along x, isl folds that id into a
  // constant in the whole tiles' AST, which the partial blocks must not run: they take the code of
  // the exact points.)
  if (wt.apply && !full.is_null() && !full.is_empty() && !pinsAnId(context.intersect(full), some)) {
    isl::ast_build fullBuild = withMarks(isl::ast_build::from_context(context.intersect(full)));
    isl::ast_node wholeAst = fullBuild.node_from(restrictedUnrolled);
    checkMarks();
    // Where many blocks are partial, one version: with two, the blocks of both kinds on a
    // multiprocessor run twice the code, and a large kernel's instruction fetch stalls (27 % of a
    // drawn contraction's stalls, ncu); a 6-d contraction drawn at random ran 1.0-1.7x as fast
    // (bench/results/2026-11-28-h100-one-version.txt).
    const bool one = fullBlockFraction(s, full.intersect(context), some) < kOneVersionBelow;
    wholeTile = true;
    unrollPoints(true);
    std::string whole = one ? "" : printer.print(wholeAst, 2);
    guarded = true;
    std::string partial = printer.print(wholeAst, 2);
    guarded = false, wholeTile = false;
    auto expr = [&](const isl::set &blocks) {
      isl::ast_expr e = isl::manage(isl_ast_build_expr_from_set(build.get(), blocks.copy()));
      return islExprToC(e.get());
    };
    std::string o2 = one ? o + " " : o + "  if (" + expr(full) + ") {\n" + whole + "  } else";
    isl::set rest = context.subtract(some);
    if (rest.is_empty()) return o2 + " {\n" + partial + "  }\n";
    isl::ast_node generalAst = withMarks(isl::ast_build::from_context(rest)).node_from(restricted);
    unrollPoints(false);
    std::string general = printer.print(generalAst, 2);
    checkMarks();
    o2 += " if (" + expr(some) + ") {\n" + partial + "  }";
    if (general.find_first_not_of(" \n") == std::string::npos) return o2 + "\n";
    return o2 + " else {\n" + general + "  }\n";
  }
  isl::ast_node generalAst = build.node_from(restricted);
  unrollPoints(false);
  std::string general = printer.print(generalAst, 2);
  checkMarks();
  if (!full.is_null() && !full.is_empty()) {
    isl::ast_build fullBuild = withMarks(isl::ast_build::from_context(context.intersect(full)));
    wholeTile = true;
    isl::ast_node wholeAst = fullBuild.node_from(restrictedUnrolled);
    unrollPoints(true);
    std::string whole = printer.print(wholeAst, 2);
    wholeTile = false;
    checkMarks();
    if (whole != general) {
      isl::ast_expr cond = isl::manage(isl_ast_build_expr_from_set(build.get(), full.copy()) /* the build is kept */);
      return o + "  if (" + islExprToC(cond.get()) + ") {\n" + whole + "  } else {\n" + general + "  }\n";
    }
  }
  return o + "  {\n" + general + "  }\n";
}

/// The #undef of each store's guarded macro (macros()).
std::string undefGuarded(const WholeTiles &wt) {
  std::string o;
  if (!wt.apply) return o;
  for (const auto &[name, g] : wt.storeGuards)
    if (!g.empty()) o += "#undef " + name + "_guarded\n";
  return o;
}

std::string launchDims(const KernelConfig &kc) {
  return "dim3(" + kc.grid[0] + ", " + kc.grid[1] + ", " + kc.grid[2] + "), dim3(" + std::to_string(kc.block[0]) + ", " +
         std::to_string(kc.block[1]) + ", " + std::to_string(kc.block[2]) + ")";
}

bool promotedAnywhere(const Scop &s, const std::string &t) {
  for (const auto &kc : s.kernels) {
    if (std::count(kc.promoted.begin(), kc.promoted.end(), t)) return true;
    // (A fused map kernel's intermediates: the block's rows in shared memory.)
    if (std::count(kc.shared.begin(), kc.shared.end(), t) && mapBlockKernel(s, (int)(&kc - s.kernels.data()))) return true;
  }
  return false;
}

/// A temporary no kernel touches: the output of a reduction whose consumer was fused into its
/// store (only the reference computes it).
bool unused(const Scop &s, const std::string &t) {
  for (const auto &st : s.statements) {
    if (isl::map(islCtx(), st.write).range_tuple_id().name() == t) return false;
    for (const auto &r : st.reads)
      if (isl::map(islCtx(), r).range_tuple_id().name() == t) return false;
  }
  return true;
}

/// Temporaries that live in memory for the launch (not kept in registers, not unused).
bool inMemory(const Scop &s, const TensorDecl &t) {
  return t.role == Role::Temporary && !promotedAnywhere(s, t.name) && !unused(s, t.name);
}

/// Kernel k's staged tiles and, under --prefetch=auto, their prefetch (the CUDA kernel's plan,
/// which the mapped C runs by one thread).
Staging kernelStaging(const Scop &s, const isl::schedule &bound, int k, const EmitOptions &opt, const MmaPlan &mma = {}) {
  Staging staging;
  staging.tiles = stagedTiles(s, bound, k, &staging.stmts, &staging.prefix, &staging.reducedMembers);
  auto sizes = parseSizes(s.sizes, &s.at.sizes);
  if (auto it = sizes.find(k); it != sizes.end()) staging.budget = sharedBudget(it->second);
  // (polyk-bind keeps the copies within the budget; a bound file edited by hand may not.)
  if (long long bytes = stagedBytes(s, staging); bytes > staging.budget)
    fail(s.kernels.at(k).at.kernel, s.kernels.at(k).name + ": its staged copies take " + std::to_string(bytes) +
                                        " bytes of shared memory, more than the " + std::to_string(staging.budget) +
                                        (staging.budget == kStaticShared ? " a kernel may declare statically; give kernel[" + std::to_string(k) + "] -> shared[" + std::to_string(bytes) + "] in the sizes" : " its sizes give (shared[..])"));
  planPrefetch(s, staging, s.kernels.at(k), opt.prefetch);
  // The copies padded for the tensor cores' loads, where that keeps the copy the same (two padded
  // copies may no longer fit for cp.async). (One Staging, returned by name: a Staging without
  // tiles holds a null isl map, which isl's C++ refuses to copy.)
  if (mma.on) {
    std::vector<SharedTile> unpadded = staging.tiles;
    bool prefetch = staging.prefetch, async = staging.async;
    mmaStrides(s, mma, staging.tiles, staging.budget);
    planPrefetch(s, staging, s.kernels.at(k), opt.prefetch);
    if (staging.prefetch != prefetch || staging.async != async) {
      staging.tiles = unpadded;
      planPrefetch(s, staging, s.kernels.at(k), opt.prefetch);
    }
  }
  if (long long bytes = stagedBytes(s, staging); bytes > staging.budget) // (padding and the two copies are taken only within it)
    throw std::logic_error(s.kernels.at(k).name + ": staged copies of " + std::to_string(bytes) + " bytes past the budget");
  return staging;
}

/// Kernel k's split-K (SplitK.h) over its thread's register tile.
SplitK kernelSplit(const Scop &s, int k, const KernelConfig &kc, const RegisterTile &regs, const EmitOptions &opt) {
  long long points = 1;
  for (long long p : regs.points) points *= p;
  return splitK(s, k, kc, regs.extents(), points, opt);
}

/// Every kernel's split, and the bound schedule with the split updates restricted to their share.
std::map<int, SplitK> kernelSplits(const Scop &s, const isl::schedule &bound, const EmitOptions &opt) {
  std::set<int> withRegisters = registerKernels(bound);
  std::map<int, SplitK> out;
  for (const auto &kc : s.kernels) {
    int k = (int)(&kc - s.kernels.data());
    out[k] = kernelSplit(s, k, kc, registerTile(s, k, withRegisters.count(k) > 0), opt);
  }
  return out;
}

/// A split kernel's tail: the count, and in its tile's last block the stores alone, summing the
/// partials first (kernelBody's phase 2).
std::string splitTail(const Scop &s, const AffineMapping &mapped, const AffineMapping &unrolled, const KernelConfig &kc, int k,
                      const RegisterTile &regs, const WholeTiles &wt, const isl::schedule &bound, Dialect d, bool registers,
                      const SplitK &sk, PointsUnroll pu) {
  KernelConfig stores = kc;
  stores.statements.clear();
  for (const auto &name : kc.statements)
    if (sk.stores.count(name)) stores.statements.push_back(name);
  return splitCombine(kernelBody(s, mapped, unrolled, stores, k, regs, Staging(), wt, bound, d, registers, sk, 2, false, {}, nullptr, 1, pu), d);
}

std::string undefSplit(const SplitK &sk) {
  std::string o;
  for (const auto &name : sk.stores) o += "#undef " + name + "_put\n#undef " + name + "_sum\n";
  return o;
}

} // namespace

std::string affineKernelParams(const Scop &s, bool cuda) { return params(s, cuda); }
std::string affineKernelArgs(const Scop &s) { return args(s); }
std::string affineLaunchDims(const KernelConfig &kc) { return launchDims(kc); }
bool temporaryInMemory(const Scop &s, const TensorDecl &t) { return inMemory(s, t); }

std::string emitAffineCudaKernels(const Scop &s, const EmitOptions &opt, std::vector<long long> *dynamicOut) {
  std::string o;
  o += "#include <cuda_runtime.h>\n#include <cuda_fp16.h>\n#include <cuda_bf16.h>\n#include <stdint.h>\n";
  o += "#include \"polyk/runtime.cuh\"\n\n";
  o += indexHelpers(Dialect::Cuda, needsWideIndices(s)) + "\n";
  if (std::optional<std::string> stencil = stencilKernel(s, opt, Dialect::Cuda)) {
    if (opt.mma == "tf32x3") spdlog::warn("--mma={}: no kernel of {} runs on the tensor cores: a stencil kernel", opt.mma, s.name);
    return o + *stencil;
  }
  isl::schedule bound = readIslSchedule(s.schedule);
  std::set<int> withRegisters = registerKernels(bound);
  // Partial blocks unroll a thread's points too: rolled, the register array would have dynamic
  // indices there, and nvcc would keep it in local memory in every block (GEMM 236 -> 373 us).
  std::map<int, SplitK> splits = kernelSplits(s, bound, opt);
  isl::schedule separated = isolateReducedTiles(restrictSplits(bound, s, splits), s);
  AffineMapping mapped = applyAffineMapping(separated, s);
  std::optional<AffineMapping> islUnrolled; // (isl's unrolling, for a kernel whose points the printer refuses)
  std::string mmaRefusals; // (--mma: why the kernels did not take it, where none did)
  bool mmaTaken = false;
  std::vector<long long> dynamic(s.kernels.size(), 0); // (bytes of dynamic shared memory, per kernel)
  for (const auto &kc : s.kernels) {
    int k = (int)(&kc - s.kernels.data());
    if (mapBlockKernel(s, k)) {
      // Under --partition, Matz's clone as for the other kernels: its blocks (P instances each,
      // along x) start at polyk_boff.
      bool split = splitPlan(s, k, AffineKernelIds{}, opt).split;
      std::string code = mapBlockCode(s, k, Dialect::Cuda);
      if (split) code = offsetMapBlocks(code);
      o += "__global__ void __launch_bounds__(" + std::to_string(kc.block[0]) + ") " + kc.name + "(" +
           (split ? "const polyk_idx polyk_boff, " : "") + params(s, true) + ") {\n" + code + "}\n\n";
      continue;
    }
    RegisterTile regs = registerTile(s, k, withRegisters.count(k) > 0);
    MmaPlan mma = regs.any() ? mmaPlan(s, k, kc, regs.points, opt) : MmaPlan();
    Staging staging = kernelStaging(s, bound, k, opt, mma);
    dynamic[k] = dynamicShared(s, staging);
    WholeTiles wt = withRegisters.count(k) ? wholeTiles(s, bound, kc, k, staging) : WholeTiles();
    const SplitK &sk = splits[k];
    o += "/* The statements over their domain iterators, as " + kc.name + " runs them. */\n";
    o += macros(s, kc, Dialect::Cuda, regs, staging, wt, sk);
    if (!mma.refusal.empty()) o += "/* " + kc.name + " does not take the tensor cores (--mma): " + mma.refusal + ". */\n";
    o += mmaMacros(s, kc, mma, staging, privateRows(s, kc));
    // Register tiles over staged operands: at least 2 blocks an SM (at most 128 registers for 256
    // threads). Left to itself, ptxas took 222 registers for 8 x 8 points, one block an SM: GEMM
    // 4096^3 7507 -> 4798 us, ab-bc 945 -> 583 us (bench/results/2026-11-24-h100-launch-bounds.txt).
    // Since the prefetch, tiles of 64 points a thread run faster with the registers they take, one
    // block an SM: GEMM 4096^3 cyclic 4247 -> 3948 us, blocked 4168 -> 4008
    // (bench/results/2026-11-25-h100-gemm-variants.txt), runs of 4 (vector[4]) 4017 -> 3614, ab-bc
    // 524 -> 457 (...-vector-runs.txt).
    long long tilePoints = 1;
    for (long long p : regs.points) tilePoints *= p;
    // With the asynchronous copy (no prefetch registers) and at most 16 points a thread, 4 blocks
    // an SM (64 registers) hide more of the copies' latency: abcdef-gdab-efgc 114 -> 101 us on an
    // H200 (3 blocks: 105; GEMM 1024^3's 16 points with register prefetch: 83 -> 91, spilling;
    // bench/results/2026-11-26-h200-async-launch-bounds.txt).
    // On the tensor cores, one block an SM: the fragments' registers come on top of the
    // accumulators (abcd-aebf-dfce's [4, 2, 24, 4] threads under 4 blocks an SM: 40 registers,
    // 4.6 KB of spills).
    // Where the reduced loop is short (abcdef-gdab-efgc's 32 steps), a block's copies, first
    // loads and 64 stores are much of its time, and a second block an SM overlaps them: 71.2 ->
    // 63.1 us with its short-x tile (bench/results/2026-11-27-h100-contraction-short-x.txt).
    std::string minBlocks = !regs.any() || staging.tiles.empty()           ? ""
                            : mma.on                                       ? ", 1"
                            : staging.async && tilePoints <= 16            ? ", 4"
                            : tilePoints >= 64 && !shortReduction(s, kc)   ? ", 1"
                                                                           : ", 2";
    // (--blocks-per-sm: the user's, or polyk-tune's emit.blocks, for every kernel that has a rule.)
    if (opt.blocksPerSm > 0 && !minBlocks.empty()) {
      long long threads = (long long)kc.block[0] * kc.block[1] * kc.block[2];
      if (threads * opt.blocksPerSm > 2048)
        fail(s.at.schedule, kc.name + ": --blocks-per-sm " + std::to_string(opt.blocksPerSm) + " with " + std::to_string(threads) +
                                " threads a block asks " + std::to_string(threads * opt.blocksPerSm) +
                                " threads an SM; an SM holds 2048");
      minBlocks = ", " + std::to_string(opt.blocksPerSm);
    }
    // Under --partition a split kernel is Matz's clone: its blocks along the split dim start at
    // polyk_boff, so a device launches its share of the grid.
    SplitPlan plan = splitPlan(s, k, mapped.kernels.count(k) ? mapped.kernels.at(k) : AffineKernelIds{}, opt);
    o += "__global__ void __launch_bounds__(" + std::to_string(kc.block[0] * kc.block[1] * kc.block[2]) + minBlocks + ") " + kc.name + "(" +
         (plan.split ? "const polyk_idx polyk_boff, " : "") + (sk.on ? splitParams(sk, Dialect::Cuda) : "") + params(s, true) + ") {\n";
    MmaOutcome outcome;
    PointsUnroll pu = PointsUnroll::All;
    std::string body;
    try {
      body = kernelBody(s, mapped, mapped, kc, k, regs, staging, wt, bound, Dialect::Cuda, withRegisters.count(k) > 0, sk, sk.on ? 1 : 0,
                        true, mma, &outcome, opt.unroll, pu);
    } catch (const UnrollRefused &why) {
      spdlog::debug("{}: isl unrolls the thread's points: {}", kc.name, why.what());
      if (!islUnrolled) islUnrolled = applyAffineMapping(unrollRegisters(separated), s);
      pu = PointsUnroll::Isl, outcome = MmaOutcome();
      body = kernelBody(s, *islUnrolled, *islUnrolled, kc, k, regs, staging, wt, bound, Dialect::Cuda, withRegisters.count(k) > 0, sk,
                        sk.on ? 1 : 0, true, mma, &outcome, opt.unroll, pu);
    }
    const AffineMapping &used = pu == PointsUnroll::Isl ? *islUnrolled : mapped;
    if (plan.split) body = offsetBlocks(body, mapped.kernels.at(k), plan.axis);
    if (sk.on) {
      // (The clone's offset prologue, patched for the split; the slot reads the local block ids,
      // each device having its own scratch.)
      std::string prologue = mapped.kernels.at(k).prologue();
      if (plan.split) prologue = offsetBlocks(prologue, mapped.kernels.at(k), plan.axis);
      body = splitPrologue(body, prologue, sk, kc);
    }
    if (mmaAsked(s, k, opt) && !outcome.taken)
      mmaRefusals += "; " + kc.name + ": " +
                     (!regs.any() ? "no register tile"
                      : mma.on    ? "its reduced loop: " + (outcome.why.empty() ? std::string("none in whole tiles") : outcome.why)
                                  : mma.refusal);
    mmaTaken |= outcome.taken;
    // (No asynchronous copy outlives its thread: the last one, of a tile after the last.)
    o += body + (staging.async ? "  polyk::cp_async_wait<0>(); /* the copy of the tile after the last */\n" : "");
    if (sk.on) o += splitTail(s, used, used, kc, k, regs, wt, bound, Dialect::Cuda, withRegisters.count(k) > 0, sk, pu);
    o += "}\n" + undefMacros(s) + undefGuarded(wt) + undefSplit(sk) + mmaUndefs(mma) + "\n";
  }
  if (!mmaRefusals.empty() && !mmaTaken)
    spdlog::warn("--mma={}: no kernel of {} runs on the tensor cores{}", opt.mma, s.name, mmaRefusals);
  std::string sig = hostSignature(s, "polyk_" + s.name, true);
  o += "/* Runs the program on `stream`; returns the first CUDA error. */\n";
  o += "extern \"C\" cudaError_t " + sig + (sig.back() == '(' ? "" : ", ") + "cudaStream_t stream) {\n";
  o += "  cudaError_t err = cudaSuccess;\n";
  for (const auto &t : s.tensors) {
    if (t.role != Role::Temporary) continue;
    std::string ty = cudaStorageType(t.type);
    o += "  " + ty + " *" + t.name + " = nullptr;";
    if (!inMemory(s, t)) {
      o += promotedAnywhere(s, t.name) ? " /* kept in registers */\n" : " /* not computed: its consumer is fused */\n";
      continue;
    }
    o += "\n  if ((err = polyk::tempMalloc((void **)&" + t.name + ", sizeof(" + ty + ") * " + elementsExpr(t) +
         ", stream)) != cudaSuccess) return err;\n";
  }
  // Kernels with copies over the static limit may take that much dynamic shared memory (the
  // device refuses more than its own limit here).
  for (const auto &kc : s.kernels)
    if (long long bytes = dynamic[&kc - s.kernels.data()])
      o += "  if ((err = cudaFuncSetAttribute(" + kc.name + ", cudaFuncAttributeMaxDynamicSharedMemorySize, " + std::to_string(bytes) +
           ")) != cudaSuccess) return err;\n";
  IterateCode steps = iterateCode(s, true);
  o += steps.begin;
  for (const auto &kc : s.kernels) {
    int k = (int)(&kc - s.kernels.data());
    bool split = splitPlan(s, k, mapped.kernels.count(k) ? mapped.kernels.at(k) : AffineKernelIds{}, opt).split;
    const std::string smem = std::to_string(dynamic[k]);
    if (const SplitK &sk = splits[k]; sk.on) {
      o += splitLaunch(sk, kc, Dialect::Cuda);
      KernelConfig launched = kc;
      launched.grid[2] = splitGridZ(kc);
      o += "  " + kc.name + "<<<" + launchDims(launched) + ", " + smem + ", stream>>>(" + (split ? "0, " : "") + splitArgs() + args(s) + ");\n";
      o += "  if ((err = cudaGetLastError()) != cudaSuccess) return err;\n  }\n";
      continue;
    }
    o += "  " + kc.name + "<<<" + launchDims(kc) + ", " + smem + ", stream>>>(" + (split ? "0, " : "") + args(s) + ");\n";
    o += "  if ((err = cudaGetLastError()) != cudaSuccess) return err;\n";
  }
  o += steps.end;
  for (const auto &t : s.tensors)
    if (inMemory(s, t)) o += "  if ((err = cudaFreeAsync(" + t.name + ", stream)) != cudaSuccess) return err;\n";
  o += "  return cudaSuccess;\n}\n";
  if (opt.partition) o += emitMultiLauncher(s, mapped, opt, true, dynamic, splits);
  if (dynamicOut) *dynamicOut = dynamic;
  return o;
}

std::string emitAffineMappedC(const Scop &s, const EmitOptions &opt) {
  std::string o = "/* The CUDA kernels' code run on the CPU: block after block, thread after thread. */\n";
  if (std::optional<std::string> stencil = stencilKernel(s, opt, Dialect::C)) return o + *stencil;
  o += "void " + hostSignature(s, "polyk_" + s.name + "_mapped", false) + ") {\n";
  for (const auto &t : s.tensors) {
    if (inMemory(s, t))
      // (Filled with all-ones bytes, a NaN in every float type: a temporary read before the kernels
      // write it shows in the result, instead of what an earlier free left there.)
      o += "  " + std::string(cStorageType(t.type)) + " *" + t.name + " = (" + cStorageType(t.type) + " *)malloc(sizeof(" +
           cStorageType(t.type) + ") * " + elementsExpr(t) + ");\n  memset(" + t.name + ", 0xff, sizeof(" + cStorageType(t.type) + ") * " +
           elementsExpr(t) + ");\n";
    else if (t.role == Role::Temporary && unused(s, t.name))
      o += "  " + std::string(cStorageType(t.type)) + " *" + t.name + " = 0; /* not computed: its consumer is fused */\n";
  }
  isl::schedule bound = readIslSchedule(s.schedule);
  std::set<int> withRegisters = registerKernels(bound);
  std::map<int, SplitK> splits = kernelSplits(s, bound, opt);
  isl::schedule separated = isolateReducedTiles(restrictSplits(bound, s, splits), s);
  AffineMapping mapped = applyAffineMapping(separated, s);
  std::optional<AffineMapping> islUnrolled; // (isl's unrolling, for a kernel whose points the printer refuses)
  // Kernel k's code on the CPU, block after block (the block loops from `range`: axis, variable,
  // extent), thread after thread: its macros, and split-K's scratch and combine where it has one.
  using BlockRange = std::function<std::string(char, const std::string &, const std::string &)>;
  auto blocksOnCpu = [&](const KernelConfig &kc, const BlockRange &range) {
    int k = (int)(&kc - s.kernels.data());
    if (mapBlockKernel(s, k)) return range('x', "bx", kc.grid[0]) + "  {\n" + mapBlockCode(s, k, Dialect::C) + "  }\n";
    RegisterTile regs = registerTile(s, k, withRegisters.count(k) > 0);
    Staging staging = kernelStaging(s, bound, k, opt); // (the CUDA kernel's, run by one thread)
    WholeTiles wt = withRegisters.count(k) ? wholeTiles(s, bound, kc, k, staging) : WholeTiles();
    const SplitK &sk = splits[k];
    std::string c = macros(s, kc, Dialect::C, regs, staging, wt, sk);
    if (sk.on) c += splitLaunch(sk, kc, Dialect::C);
    // blockIdx / threadIdx as the kernel's prologue reads them.
    c += range('z', "bz", sk.on ? splitGridZ(kc) : kc.grid[2]) + range('y', "by", kc.grid[1]) + range('x', "bx", kc.grid[0]);
    c += "  for (polyk_idx tz = 0; tz < " + std::to_string(kc.block[2]) + "; ++tz)\n";
    c += "  for (polyk_idx ty = 0; ty < " + std::to_string(kc.block[1]) + "; ++ty)\n";
    c += "  for (polyk_idx tx = 0; tx < " + std::to_string(kc.block[0]) + "; ++tx) {\n";
    c += "  const struct { polyk_idx x, y, z; } blockIdx = {bx, by, bz}, threadIdx = {tx, ty, tz};\n";
    auto code = [&](PointsUnroll pu) {
      const AffineMapping &unrolled = pu == PointsUnroll::Isl ? *islUnrolled : mapped;
      std::string body = kernelBody(s, mapped, unrolled, kc, k, regs, staging, wt, bound, Dialect::C, withRegisters.count(k) > 0, sk,
                                    sk.on ? 1 : 0, true, {}, nullptr, 1, pu);
      if (sk.on)
        body = splitPrologue(body, mapped.kernels.at(k).prologue(), sk, kc) +
               splitTail(s, mapped, unrolled, kc, k, regs, wt, bound, Dialect::C, withRegisters.count(k) > 0, sk, pu);
      return body;
    };
    std::string body;
    try {
      body = code(PointsUnroll::All);
    } catch (const UnrollRefused &why) {
      spdlog::debug("{}: isl unrolls the thread's points: {}", kc.name, why.what());
      if (!islUnrolled) islUnrolled = applyAffineMapping(unrollRegisters(separated), s);
      body = code(PointsUnroll::Isl);
    }
    return c + body + "  }\n" + (sk.on ? splitFree() + "  }\n" : "") + undefMacros(s) + undefGuarded(wt) + undefSplit(sk);
  };
  auto whole = [](char, const std::string &var, const std::string &extent) {
    return "  for (polyk_idx " + var + " = 0; " + var + " < " + extent + "; ++" + var + ")\n";
  };
  IterateCode steps = iterateCode(s, false);
  o += steps.begin;
  for (const auto &kc : s.kernels) o += "  /* " + kc.name + " */\n" + blocksOnCpu(kc, whole);
  o += steps.end;
  for (const auto &t : s.tensors)
    if (t.role == Role::Temporary && !promotedAnywhere(s, t.name)) o += "  free(" + t.name + ");\n";
  o += "}\n";
  if (!opt.partition) return o;
  // Under --partition: each kernel as a function of a range of blocks along its split member
  // (all of them where it is not split), which the CPU backend's launcher calls per device.
  for (const auto &kc : s.kernels) {
    int k = (int)(&kc - s.kernels.data());
    SplitPlan plan = splitPlan(s, k, mapped.kernels.count(k) ? mapped.kernels.at(k) : AffineKernelIds{}, opt);
    auto range = [&](char axis, const std::string &var, const std::string &extent) {
      if (plan.split && plan.axis == axis)
        return "  for (polyk_idx " + var + " = polyk_lo * " + plan.inner + "; " + var + " < (polyk_hi + 1) * " + plan.inner + "; ++" + var + ")\n";
      return whole(axis, var, extent);
    };
    o += "\n/* " + kc.name + (plan.split ? std::string(", blocks polyk_lo..polyk_hi along ") + plan.axis : std::string(", all blocks")) + " */\n";
    o += "static void " + kc.name + "_blocks(polyk_idx polyk_lo, polyk_idx polyk_hi, " + params(s, false) + ") {\n";
    // (Split-K: the splits of the range's tiles, with scratch of this call's own.)
    o += "  (void)polyk_lo; (void)polyk_hi;\n" + blocksOnCpu(kc, range) + "}\n";
  }
  return o + emitMultiLauncher(s, mapped, opt, false, {}, splits);
}

} // namespace polyk::codegen
