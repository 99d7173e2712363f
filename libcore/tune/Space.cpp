// polyk-tune's space (Tune.h): derivation from a program's default schedule, the space/1 file,
// and ATF's generation (one tree per group of linked parameters).
#include "polyk/Tune.h"
#include "polyk/IntMath.h"
#include "polyk/TuneModel.h"

#include "polyk/Bind.h"
#include "polyk/Emit.h"
#include "polyk/Isl.h"
#include "polyk/Schedule.h"
#include "polyk/TimeTiles.h"
#include "polyk/YamlIO.h"

#include <isl/schedule_node.h>
#include <algorithm>
#include <cctype>
#include <climits>
#include <chrono>
#include <functional>
#include <map>
#include <numeric>
#include <random>
#include <sstream>

namespace polyk {

// ---------------------------------------------------------------------------------------------
// Expressions

struct TuneExprParser {
  TuneExpr &e;
  const std::string &s;
  const std::vector<std::string> &names;
  const SourceLoc &at;
  size_t p = 0;

  [[noreturn]] void error(const std::string &what) { fail(at.shifted((int)p), what + " in \"" + s + "\""); }
  void space() {
    while (p < s.size() && std::isspace((unsigned char)s[p])) ++p;
  }
  bool eat(const std::string &t) {
    space();
    if (s.compare(p, t.size(), t) != 0) return false;
    p += t.size();
    return true;
  }
  int node(char op, long long v, int a = -1, int b = -1) {
    e.nodes_.push_back({op, v, a, b});
    return (int)e.nodes_.size() - 1;
  }
  int orExpr() {
    int l = andExpr();
    while (eat("||")) l = node('|', 0, l, andExpr());
    return l;
  }
  int andExpr() {
    int l = cmp();
    while (eat("&&")) l = node('&', 0, l, cmp());
    return l;
  }
  int cmp() {
    int l = add();
    static const std::pair<const char *, char> ops[] = {{"==", '='}, {"!=", '!'}, {"<=", 'l'}, {">=", 'g'}, {"<", '<'}, {">", '>'}};
    for (const auto &[t, op] : ops)
      if (eat(t)) return node(op, 0, l, add());
    return l;
  }
  int add() {
    int l = mul();
    while (true) {
      if (eat("+")) l = node('+', 0, l, mul());
      else if (eat("-")) l = node('-', 0, l, mul());
      else return l;
    }
  }
  int mul() {
    int l = unary();
    while (true) {
      if (eat("*")) l = node('*', 0, l, unary());
      else if (eat("/")) l = node('/', 0, l, unary());
      else if (eat("%")) l = node('%', 0, l, unary());
      else return l;
    }
  }
  int unary() {
    if (eat("-")) return node('u', 0, unary());
    if (eat("!")) return node('N', 0, unary());
    return primary();
  }
  int primary() {
    space();
    if (eat("(")) {
      int r = orExpr();
      if (!eat(")")) error("expected ')'");
      return r;
    }
    if (p < s.size() && std::isdigit((unsigned char)s[p])) {
      size_t q = p;
      while (q < s.size() && std::isdigit((unsigned char)s[q])) ++q;
      if (q - p > 18) error("number too large");
      long long v = std::stoll(s.substr(p, q - p));
      p = q;
      return node('n', v);
    }
    if (p < s.size() && (std::isalpha((unsigned char)s[p]) || s[p] == '_')) {
      size_t q = p;
      while (q < s.size() && (std::isalnum((unsigned char)s[q]) || s[q] == '_' || s[q] == '.')) ++q;
      std::string name = s.substr(p, q - p);
      auto it = std::find(names.begin(), names.end(), name);
      if (it == names.end()) error("unknown parameter '" + name + "' (parameters are usable after their definition)");
      int pos = (int)(it - names.begin());
      p = q;
      if (std::find(e.uses_.begin(), e.uses_.end(), pos) == e.uses_.end()) e.uses_.push_back(pos);
      return node('v', pos);
    }
    error(p < s.size() ? std::string("unexpected '") + s[p] + "'" : "unexpected end");
  }
};

TuneExpr::TuneExpr(const std::string &text, const std::vector<std::string> &names, const SourceLoc &at) {
  TuneExprParser parser{*this, text, names, at};
  root_ = parser.orExpr();
  parser.space();
  if (parser.p != text.size()) parser.error(std::string("unexpected '") + text[parser.p] + "'");
}

long long TuneExpr::eval(const std::vector<long long> &values, bool &ok) const {
  ok = true;
  return at(root_, values, ok);
}

long long TuneExpr::at(int n, const std::vector<long long> &values, bool &ok) const {
  const Node &x = nodes_[(size_t)n];
  if (x.op == 'n') return x.v;
  if (x.op == 'v') return values[(size_t)x.v];
  long long a = at(x.a, values, ok);
  if (x.op == 'u') {
    if (a == LLONG_MIN) ok = false;
    return a == LLONG_MIN ? 0 : -a;
  }
  if (x.op == 'N') return !a;
  if (x.op == '&' && !a) return 0;
  if (x.op == '|' && a) return 1;
  long long b = at(x.b, values, ok);
  switch (x.op) {
  case '+':
  case '-':
  case '*': {
    // (An overflow, like a division by 0, violates the constraint.)
    long long r = 0;
    bool over = x.op == '+' ? __builtin_add_overflow(a, b, &r) : x.op == '-' ? __builtin_sub_overflow(a, b, &r) : __builtin_mul_overflow(a, b, &r);
    if (over) ok = false;
    return over ? 0 : r;
  }
  case '/':
  case '%':
    if (b == 0 || (a == LLONG_MIN && b == -1)) {
      ok = false;
      return 0;
    }
    return x.op == '/' ? a / b : a % b;
  case '=': return a == b;
  case '!': return a != b;
  case '<': return a < b;
  case '>': return a > b;
  case 'l': return a <= b;
  case 'g': return a >= b;
  case '&':
  case '|': return b != 0;
  }
  return 0;
}

// ---------------------------------------------------------------------------------------------
// Derivation

namespace {


/// Powers of 2 from 1 to `max`, and `extra` (a default that is not one).
std::vector<long long> powers(long long max, long long extra) {
  std::vector<long long> v;
  for (long long p = 1; p <= max; p *= 2) v.push_back(p);
  if (std::find(v.begin(), v.end(), extra) == v.end()) v.push_back(extra);
  std::sort(v.begin(), v.end());
  return v;
}

std::string product(const std::vector<std::string> &names) {
  std::string o;
  for (const auto &n : names) o += (o.empty() ? "" : " * ") + n;
  return o.empty() ? "1" : o;
}

} // namespace

Space deriveSpace(const Scop &flat) {
  isl::ctx ctx = islCtx();
  std::map<int, KernelSizes> used;
  Scop sched = schedule(flat, {}, &used);
  std::vector<KernelShape> shapes = kernelShapes(flat);
  isl::schedule tree = readIslSchedule(sched.schedule);
  isl::set params(ctx, paramDefaults(flat));
  Space sp;
  sp.name = flat.name;
  bool affine = false; // (a program is on one path: all its statements are affine, or none)
  for (const auto &st : flat.statements) affine = affine || st.form == Form::Affine;
  auto param = [&](const std::string &name, std::vector<long long> values, long long fallback) {
    SpaceParam p;
    p.name = name;
    p.values = std::move(values);
    p.fallback = fallback;
    sp.params.push_back(p);
  };
  auto derived = [&](const std::string &name, const std::string &expr, long long fallback) {
    SpaceParam p;
    p.name = name;
    p.expr = expr;
    p.fallback = fallback;
    sp.params.push_back(p);
  };
  // The statement dim band member m of `band` runs along for statement `name` (-1: none, or several).
  auto memberDim = [](const isl::schedule_node &band, size_t m, const std::string &name) {
    isl::multi_union_pw_aff partial = band.as<isl::schedule_node_band>().get_partial_schedule();
    isl::union_pw_aff member = partial.at((int)m);
    struct Find {
      const std::string *name;
      int dim = -1;
    } find{&name};
    isl_union_pw_aff_foreach_pw_aff(
        member.get(),
        [](isl_pw_aff *pa, void *user) -> isl_stat {
          Find &f = *static_cast<Find *>(user);
          isl_space *space = isl_pw_aff_get_domain_space(pa);
          const char *tuple = isl_space_get_tuple_name(space, isl_dim_set);
          if (tuple && *f.name == tuple)
            for (int d = 0; d < (int)isl_space_dim(space, isl_dim_set); ++d)
              if (isl_pw_aff_involves_dims(pa, isl_dim_in, (unsigned)d, 1) == isl_bool_true) f.dim = f.dim == -1 ? d : -2;
          isl_space_free(space);
          isl_pw_aff_free(pa);
          return isl_stat_ok;
        },
        &find);
    return find.dim < 0 ? -1 : find.dim;
  };
  int windows = 0, others = 0; // affine kernels with reduced tiles: blocked points by default (Schedule.h) or not
  bool staged = false;          // an affine kernel with reduced tiles, whose operands polyk-bind may stage
  std::vector<std::string> shared; // reduction path: "a reduced member's tile is less than its extent" (blocks share outputs)
  std::string mmaConstraint;    // emit.mma's, where kernel 0 may take the tensor cores
  for (const auto &[k, sz] : used) {
    size_t n = sz.tile.size();
    isl::schedule_node band = kernelBand(tree, k, n);
    if (band.is_null()) continue;
    std::string K = "k" + std::to_string(k) + ".";
    // Each member's extent: its tiles' range at the params' values, times the tile.
    std::vector<long long> extent = bandExtents(band, sz.tile, params);
    int kernel = k; // (a structured binding: not captured before C++20 in clang 14)
    auto shape = std::find_if(shapes.begin(), shapes.end(), [&](const KernelShape &s) { return s.kernel == kernel; });
    std::vector<std::string> blocks, points;
    if (affine) {
      for (size_t m = 0; m < n; ++m) {
        param(K + "tile." + std::to_string(m), powers(std::min<long long>(4096, pow2Ceil(extent[m])), sz.tile[m]), sz.tile[m]);
        param(K + "block." + std::to_string(m), powers(std::min<long long>(1024, pow2Ceil(extent[m])), sz.block[m]), sz.block[m]);
      }
      // Reduced tiles up to 256 iterations, and no longer than the reduced dim (a longer tile stages
      // no more than the dim, but the shared-memory constraint below would count it).
      for (size_t r = 0; r < sz.reduce.size(); ++r) {
        long long dim = shape != shapes.end() && r < shape->reducedExtent.size() ? shape->reducedExtent[r] : 256;
        param(K + "reduce." + std::to_string(r), powers(std::min<long long>(256, pow2Ceil(dim)), sz.reduce[r]), sz.reduce[r]);
      }
      if (!sz.reduce.empty()) {
        bool window = false, blocked = false;
        for (const auto &name : statementsIn(sched, nodeDomain(band))) {
          if (sched.statement(name)->dims.size() > n) window = window || windowReduction(*sched.statement(name), n);
          blocked = blocked || blockedPoints(sched, *sched.statement(name), n);
        }
        ++(blocked ? windows : others);
        // Split-K (SplitK.h): a sum's reduced tiles shared over up to S blocks a tile; 1 for none.
        // Offered where the reduced band has room for 2 shares of 256 iterations.
        bool sum = false;
        long long reduced = 1;
        for (const auto &name : statementsIn(sched, nodeDomain(band)))
          if (const ScopStatement *st = sched.statement(name); st->dims.size() > n && st->op && *st->op == ReduceOp::Sum) sum = true;
        if (shape != shapes.end())
          for (long long e : shape->reducedExtent) reduced *= e;
        // The tensor cores (polyk-emit --mma=tf32x3, codegen/Mma.h) for kernel 0's f32 sum: where
        // they take it, blocks of [by, 4] threads, by a multiple of 8, an even number of points a
        // thread along y and x and none along the outer members, reduced tiles that 8 divides.
        // (Only where the update is a sum of products polyk-emit takes, one factor moving with y's
        // dim and the other with x's: not N-body's forces or Fousek's norms.)
        bool f32 = false;
        for (const auto &name : statementsIn(sched, nodeDomain(band)))
          if (const ScopStatement *st = sched.statement(name); st->dims.size() > n && st->op && *st->op == ReduceOp::Sum && n >= 2)
            f32 = f32 || mmaProductRefusal(sched, *st, memberDim(band, n - 2, name), memberDim(band, n - 1, name)).empty();
        // (And where some configuration can: 16 rows, 8 columns and a reduced tile of 8 within
        // the extents; not Fousek's 3 x 3 products.)
        bool room = n >= 2 && shape != shapes.end() && shape->extent.size() == n && shape->extent[n - 2] >= 16 &&
                    shape->extent[n - 1] >= 8 && !shape->reducedExtent.empty() && shape->reducedExtent.back() >= 8;
        if (!window && sum && f32 && room && k == 0 && mmaConstraint.empty()) {
          std::string y = std::to_string(n - 2), x = std::to_string(n - 1);
          mmaConstraint = "emit.mma == 0 || (" + K + "block." + x + " == 4 && " + K + "block." + y + " % 8 == 0 && (" + K + "tile." + x +
                          " / " + K + "block." + x + ") % 2 == 0 && (" + K + "tile." + y + " / " + K + "block." + y + ") % 2 == 0 && " +
                          K + "reduce." + std::to_string(sz.reduce.size() - 1) + " % 8 == 0";
          // (The outer members: one point a thread, as polyk-emit takes them; threads along z are
          // whole warps.)
          for (size_t m = 0; m + 2 < n; ++m)
            mmaConstraint += " && " + K + "tile." + std::to_string(m) + " == " + K + "block." + std::to_string(m);
          mmaConstraint += ")";
        }
        if (!window && sum && shape != shapes.end() && (reduced >= 512 || sz.split > 1)) {
          std::vector<long long> splits{1, 2, 4, 8, 16, 32};
          long long dflt = std::max<long long>(1, sz.split);
          if (std::find(splits.begin(), splits.end(), dflt) == splits.end()) splits.push_back(dflt);
          std::sort(splits.begin(), splits.end());
          param(K + "split", splits, dflt);
        }
        // A register tile's runs along x (polyk-bind's vector runs): they divide a thread's points.
        if (!window) {
          param(K + "vector", {1, 2, 4}, sz.vector);
          sp.constraints.push_back("(" + K + "tile." + std::to_string(n - 1) + " / " + K + "block." + std::to_string(n - 1) + ") % " + K +
                                   "vector == 0");
        }
      }
      // Time tiling (an iterated stencil, polyk/TimeTiles.h): steps a launch, 0 for one step a
      // launch. A time-tiled block's region (the tile widened by the steps times the reach) is not
      // a whole number of blocks; its two copies fit 48 KiB, and a thread owns at most 64 points.
      std::vector<long long> widen = k == 0 ? timeTileWidening(flat) : std::vector<long long>{};
      std::string untiled; // "K.time == 0 || " where the space has steps a launch, else ""
      if (widen.size() == n) {
        std::vector<long long> steps{0, 1, 2, 3, 4, 6, 8, 12, 16};
        if (std::find(steps.begin(), steps.end(), sz.time) == steps.end()) steps.push_back(sz.time);
        std::sort(steps.begin(), steps.end());
        param(K + "time", steps, sz.time);
        untiled = K + "time == 0 || ";
        std::vector<std::string> region, perThread;
        for (size_t m = 0; m < n; ++m) {
          std::string r = "(" + K + "tile." + std::to_string(m) + " + " + K + "time * " + std::to_string(widen[m]) + ")";
          region.push_back(r);
          perThread.push_back("((" + r + " + " + K + "block." + std::to_string(m) + " - 1) / " + K + "block." + std::to_string(m) + ")");
        }
        int bytes = dtypeBytes(flat.tensor(flat.iterate.swaps.front().second)->type);
        sp.constraints.push_back(untiled + std::to_string(2 * bytes) + " * " + product(region) + " <= 49152");
        sp.constraints.push_back(untiled + product(perThread) + " <= 64");
        // (polyk-bind still maps the tile band: no block larger than the tile.)
        for (size_t m = 0; m < n; ++m)
          sp.constraints.push_back(untiled + K + "block." + std::to_string(m) + " <= " + K + "tile." + std::to_string(m));
      }
      // Streaming (polyk/TimeTiles.h, streamRefusal): planes a block walks, 0 for none. A streamed
      // block is one plane deep, its tile a multiple of its threads (at most 16 points a thread), its
      // ring of planes within 48 KiB; a kernel streams or time-tiles, not both.
      std::vector<long long> reach = k == 0 ? streamWidening(flat) : std::vector<long long>{};
      if (reach.size() == n) {
        std::vector<long long> planes{0, 16, 32, 64, 128};
        if (std::find(planes.begin(), planes.end(), sz.stream) == planes.end()) planes.push_back(sz.stream);
        std::sort(planes.begin(), planes.end());
        param(K + "stream", planes, sz.stream);
        std::string unstreamed = K + "stream == 0 || ";
        sp.constraints.push_back(unstreamed + K + "tile.0 == 1 && " + K + "block.0 == 1");
        std::vector<std::string> plane, perThread;
        for (size_t m = 1; m < n; ++m) {
          plane.push_back("(" + K + "tile." + std::to_string(m) + " + " + std::to_string(reach[m]) + ")");
          perThread.push_back("(" + K + "tile." + std::to_string(m) + " / " + K + "block." + std::to_string(m) + ")");
        }
        int bytes = dtypeBytes(flat.tensor(streamedTensor(flat))->type);
        // Register streams (vector > 1, TimeTiles.h): V consecutive points a thread along x, one
        // along the middle dim, no ring.
        std::string ring = unstreamed;
        if (std::none_of(sp.params.begin(), sp.params.end(), [&](const auto &q) { return q.name == K + "vector"; })) {
          std::vector<long long> runs{1, 2, 4, 8};
          if (std::find(runs.begin(), runs.end(), sz.vector) == runs.end()) runs.push_back(sz.vector);
          std::sort(runs.begin(), runs.end());
          param(K + "vector", runs, std::max<long long>(1, sz.vector));
          std::string x = std::to_string(n - 1), runs1 = K + "vector == 1 || ";
          sp.constraints.push_back(runs1 + K + "stream > 0");
          sp.constraints.push_back(runs1 + K + "tile." + x + " == " + K + "block." + x + " * " + K + "vector");
          for (size_t m = 1; m + 1 < n; ++m)
            sp.constraints.push_back(runs1 + K + "tile." + std::to_string(m) + " == " + K + "block." + std::to_string(m));
          ring += K + "vector > 1 || ";
        }
        sp.constraints.push_back(ring + std::to_string((reach[0] + 2) * bytes) + " * " + product(plane) + " <= 49152");
        sp.constraints.push_back(unstreamed + product(perThread) + " <= 16");
        if (!untiled.empty()) sp.constraints.push_back(untiled + K + "stream == 0");
      }
      std::string tiled = untiled.empty() ? "" : K + "time > 0 || ";
      for (size_t m = 0; m < n; ++m) {
        std::string t = K + "tile." + std::to_string(m), b = K + "block." + std::to_string(m);
        sp.constraints.push_back(tiled + t + " % " + b + " == 0");
        blocks.push_back(b);
        points.push_back("(" + t + " / " + b + ")");
      }
      // Accumulators a thread keeps in registers (a model of the register limit); on the tensor
      // cores, 128 (GEMM 4096^3's best there, 220 registers: bench/results/2026-11-26-h100-mma.txt).
      if (k == 0 && !mmaConstraint.empty())
        sp.constraints.push_back(tiled + "(" + product(points) + " <= 64 || (emit.mma == 1 && " + product(points) + " <= 128))");
      else
        sp.constraints.push_back(tiled + product(points) + " <= 64");
      // Shared memory (CNNOpt's eq. 3): a block's reduced tile of the operands polyk-bind stages
      // fits in the 48 KiB it stages into (the boxes of TuneModel.h: halos and strides included),
      // or, where the defaults' budget is larger (dynamic shared memory, Sizes.h shared[..]), in
      // K.shared: that budget or 48 KiB.
      if (!sz.reduce.empty()) {
        staged = true;
        std::string limit = std::to_string(kStaticShared);
        if (sharedBudget(sz) > kStaticShared) {
          param(K + "shared", {kStaticShared, sharedBudget(sz)}, sharedBudget(sz));
          limit = K + "shared";
        }
        std::vector<std::string> names;
        for (size_t m = 0; m < n; ++m) names.push_back(K + "tile." + std::to_string(m));
        for (size_t q = 0; q < sz.reduce.size(); ++q) names.push_back(K + "reduce." + std::to_string(q));
        std::vector<std::string> terms;
        for (const auto &box : shape == shapes.end() ? std::vector<KernelShape::Box>{} : shape->boxes) terms.push_back(box.expression(names));
        std::string sum;
        for (const auto &t : terms) sum += (sum.empty() ? "" : " + ") + t;
        if (!sum.empty()) sp.constraints.push_back(sum + " <= " + limit);
      }
      std::vector<std::string> z;
      for (size_t m = 0; m + 2 < n; ++m) z.push_back(K + "block." + std::to_string(m));
      if (!z.empty()) sp.constraints.push_back(product(z) + " <= 64");
      // Blocks along y and z (at most 65535 each).
      if (n >= 2)
        sp.constraints.push_back("(" + std::to_string(extent[n - 2]) + " + " + K + "tile." + std::to_string(n - 2) + " - 1) / " + K +
                                 "tile." + std::to_string(n - 2) + " <= 65535");
      std::vector<std::string> zTiles;
      for (size_t m = 0; m + 2 < n; ++m)
        zTiles.push_back("((" + std::to_string(extent[m]) + " + " + K + "tile." + std::to_string(m) + " - 1) / " + K + "tile." +
                         std::to_string(m) + ")");
      if (!zTiles.empty()) sp.constraints.push_back(product(zTiles) + " <= 65535");
    } else {
      // The reduction path (docs/sizes.md, the invariants bind relies on): on a parallel member
      // the tile is the block (times the vector on a y-reduce's contiguous member), on a reduced
      // member a multiple of it.
      BandShape shape = analyseBand(sched, band.as<isl::schedule_node_band>());
      param(K + "vector", powers(16, sz.vector), sz.vector);
      for (size_t m = 0; m < n; ++m)
        param(K + "block." + std::to_string(m), powers(std::min<long long>(1024, pow2Ceil(extent[m])), sz.block[m]), sz.block[m]);
      for (size_t m = 0; m < n; ++m) {
        std::string t = K + "tile." + std::to_string(m), b = K + "block." + std::to_string(m);
        bool reduced = m < shape.reduced.size() && shape.reduced[m];
        bool contiguous = (int)m == shape.contiguous;
        if (reduced) {
          param(t, powers(std::min<long long>(1LL << 20, pow2Ceil(extent[m]) * 16), sz.tile[m]), sz.tile[m]);
          shared.push_back(t + " < " + std::to_string(extent[m]));
          sp.constraints.push_back(t + " % (" + b + (contiguous ? " * " + K + "vector" : "") + ") == 0");
        } else {
          derived(t, contiguous ? b + " * " + K + "vector" : b, sz.tile[m]);
        }
        blocks.push_back(b);
      }
      if (shape.contiguous < 0) sp.constraints.push_back(K + "vector == 1");
      // A vector is one access of at most 16 bytes; a y-reduce's thread owns a whole vector of
      // columns (polyk-emit rejects a partial one).
      sp.constraints.push_back(K + "vector * " + std::to_string(shape.elementBytes) + " <= 16");
      if (shape.contiguous >= 0 && !shape.reduced[(size_t)shape.contiguous] && n > 1)
        sp.constraints.push_back(std::to_string(extent[(size_t)shape.contiguous]) + " % " + K + "vector == 0");
    }
    // Threads per block: at most 1024, and a warp where the band has as many points.
    long long warp = 1;
    for (long long e : extent) warp = std::min<long long>(32, warp * e);
    sp.constraints.push_back(product(blocks) + " <= 1024");
    sp.constraints.push_back(product(blocks) + " >= " + std::to_string(warp));
  }
  // Stage options (StageOptions): polyk-bind's points (its auto: blocked for window reductions
  // and padded sums, cyclic for the rest; both listed, the auto one first, where kernels differ) and polyk-emit's
  // prefetch (H100: blocked points GEMM 4096^3 4212 -> 4138 us, abcdef-gdab-efgc 121 -> 113;
  // bench/results/2026-11-25-h100-prefetch.txt).
  if (windows + others > 0) {
    if (windows && others) param("bind.points", {0, 1, 2}, 0);
    else if (windows) param("bind.points", {2, 1}, 2);
    else param("bind.points", {1, 2}, 1);
    param("emit.prefetch", {1, 0}, 1);
    // The innermost loops not unrolled whole (a reduced tile's, N-body's 256 bodies): nvcc's
    // choice, or 8 (H200: N-body 4228 -> 4121 us; GEMM, GEMV, (10, 500, 64) as fast or slower:
    // bench/results/2026-11-28-h200-unroll-affine.txt).
    param("emit.unroll", {1, 8}, 1);
    // The blocks an SM the register-tiled kernels' registers are budgeted for: polyk-emit's rule
    // (two, mostly), one or two. Of 28 conv layers (CNNOpt's 20 and 8 layouts), one block ran R1
    // 1.20x and the NHWC R2 / R9 layers 1.09x / 1.06x as fast as the rule's two, 7 others within
    // 3 %, and 18 slower (0.70-0.98x; H200, bench/results/2026-11-28-h200-conv-blocks-per-sm.txt).
    // (At most 1024 threads a block: two always fit in an SM's 2048.)
    param("emit.blocks", {0, 1, 2}, 0);
  }
  // polyk-bind's staging on or off (its auto: the operands several threads read, where they fit).
  if (staged) param("bind.shared", {1, 0}, 1);
  // How a reduction's blocks combine (polyk-emit --combine): ordered (auto) or Panamera's atomics,
  // where some kernel's blocks share its outputs (under --determinism=run_to_run polyk-emit keeps
  // the ordered one).
  // (Not where every reduction's output is f16 / bf16: those blocks combine in f32, ordered,
  // whatever --combine says, and the atomic value would build the same kernel again.)
  bool fullWidth = false;
  for (const auto &st : flat.statements)
    if (st.op) {
      const TensorDecl *t = flat.tensor(isl::map(ctx, st.write).range_tuple_id().name());
      fullWidth = fullWidth || (t && t->type != DType::F16 && t->type != DType::BF16);
    }
  if (!shared.empty() && fullWidth) {
    param("emit.combine", {0, 1}, 0);
    std::string any;
    for (const auto &c : shared) any += (any.empty() ? "" : " || ") + c;
    sp.constraints.push_back("emit.combine == 0 || " + any);
  }
  if (!mmaConstraint.empty()) {
    // (First: generation checks a constraint at its last parameter, so the accumulators' cap and
    // the tensor cores' shape still prune at kernel 0's sizes. Last, it made the space of
    // abcdef-gdab-efgc take 16 s to generate instead of 2.)
    // (Its default: the schedule's, mma[1] on large f32 GEMM-like tiles.)
    param("emit.mma", {0, 1}, used.count(0) && used.at(0).mma > 0 ? 1 : 0);
    std::rotate(sp.params.begin(), sp.params.end() - 1, sp.params.end());
    sp.constraints.push_back(mmaConstraint);
  }
  sp.constraintsAt.assign(sp.constraints.size(), SourceLoc{});
  return sp;
}

// ---------------------------------------------------------------------------------------------
// The stage options: parameters that set a stage's option, not a kernel's sizes (StageOptions).

namespace {

struct StageParam {
  const char *name;
  std::string StageOptions::*field;
  std::vector<const char *> byCode; // the option's value for each code 0, 1, ...
  const char *codes;                // how readers name the codes in an error
  const char *comment;              // written beside it in space/1 (none: "")
};

const std::vector<StageParam> &stageParams() {
  static const std::vector<StageParam> params = {
      {"bind.points", &StageOptions::points, {"auto", "cyclic", "blocked"}, "0 (auto), 1 (cyclic) or 2 (blocked)",
       "polyk-bind --points: 0 auto, 1 cyclic, 2 blocked"},
      {"emit.prefetch", &StageOptions::prefetch, {"off", "auto"}, "1 (auto) or 0 (off)", "polyk-emit --prefetch: 1 auto, 0 off"},
      {"emit.mma", &StageOptions::mma, {"off", "tf32x3"}, "0 (off) or 1 (tf32x3)", ""},
      {"bind.shared", &StageOptions::shared, {"off", "auto"}, "1 (auto) or 0 (off)", "polyk-bind --shared: 1 auto, 0 off"},
      {"emit.combine", &StageOptions::combine, {"auto", "atomic"}, "0 (auto) or 1 (atomic)", "polyk-emit --combine: 0 auto (ordered), 1 atomic"},
      {"emit.unroll", &StageOptions::unroll, {"0", "1", "2", "3", "4", "5", "6", "7", "8"}, "an unroll factor 0 to 8",
       "polyk-emit --unroll: 1 nvcc's choice, N #pragma unroll N"},
      {"emit.blocks", &StageOptions::blocks, {"0", "1", "2"}, "0 (polyk-emit's rule), 1 or 2",
       "polyk-emit --blocks-per-sm: 0 polyk-emit's rule, N blocks an SM"},
  };
  return params;
}

const StageParam *stageParam(const std::string &name) {
  for (const auto &p : stageParams())
    if (name == p.name) return &p;
  return nullptr;
}

} // namespace

bool isStageOption(const std::string &name) { return stageParam(name) != nullptr; }

// ---------------------------------------------------------------------------------------------
// space/1

std::string writeSpace(const Space &s) {
  YAML::Emitter out;
  out << YAML::BeginMap << YAML::Key << "polyk" << YAML::Value << "space/1";
  out << YAML::Key << "name" << YAML::Value << s.name;
  out << YAML::Key << "parameters" << YAML::Value << YAML::BeginSeq;
  for (const auto &p : s.params) {
    out << YAML::Flow << YAML::BeginMap << YAML::Key << "name" << YAML::Value << p.name;
    if (p.expr.empty()) {
      out << YAML::Key << "values" << YAML::Value << YAML::Flow << YAML::BeginSeq;
      for (long long v : p.values) out << v;
      out << YAML::EndSeq;
    } else {
      out << YAML::Key << "expr" << YAML::Value;
      emitQuoted(out, p.expr);
    }
    out << YAML::Key << "default" << YAML::Value << p.fallback << YAML::EndMap;
    if (const StageParam *sp = stageParam(p.name); sp && *sp->comment) out << YAML::Comment(sp->comment);
  }
  out << YAML::EndSeq;
  out << YAML::Key << "constraints" << YAML::Value << YAML::BeginSeq;
  for (const auto &c : s.constraints) emitQuoted(out, c);
  out << YAML::EndSeq << YAML::EndMap;
  return finish(out);
}

Space readSpace(const std::string &text, const std::string &file) {
  YamlDoc doc = parseYaml(text, file);
  expectKind(doc, "space", 1);
  Space s;
  s.name = doc.str(doc.field(doc.root, "name"));
  YAML::Node ps = doc.field(doc.root, "parameters");
  if (!ps.IsSequence()) fail(doc.loc(ps), "parameters must be a list");
  std::vector<std::string> names;
  for (const auto &n : ps) {
    if (!n.IsMap()) fail(doc.loc(n), "a parameter is a map {name, values | expr, default}");
    SpaceParam p;
    p.at = doc.loc(n);
    p.name = doc.str(doc.field(n, "name"));
    if (p.name.empty() || !(std::isalpha((unsigned char)p.name[0]) || p.name[0] == '_') ||
        p.name.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.") != std::string::npos)
      fail(doc.valueLoc(n["name"]), "parameter name '" + p.name + "' is not a name (letters, digits, '_', '.')");
    if (std::find(names.begin(), names.end(), p.name) != names.end()) fail(doc.valueLoc(n["name"]), "parameter '" + p.name + "' defined twice");
    if (n["values"] && n["expr"]) fail(p.at, "parameter '" + p.name + "' has both values and expr");
    if (n["values"]) {
      const YAML::Node &vs = n["values"];
      if (!vs.IsSequence() || vs.size() == 0) fail(doc.loc(vs), "values of '" + p.name + "' must be a non-empty list of integers");
      for (const auto &v : vs) p.values.push_back(doc.integer(v));
      // The stage options' codes (StageOptions).
      if (const StageParam *sp = stageParam(p.name))
        for (size_t i = 0; i < p.values.size(); ++i)
          if (p.values[i] < 0 || p.values[i] >= (long long)sp->byCode.size())
            fail(doc.loc(vs[i]), "'" + p.name + "' takes " + sp->codes + ", not " + std::to_string(p.values[i]));
    } else if (n["expr"]) {
      p.expr = doc.str(n["expr"]);
      TuneExpr(p.expr, names, doc.valueLoc(n["expr"])); // checks it now, with the earlier names
    } else {
      fail(p.at, "parameter '" + p.name + "' needs values or expr");
    }
    if (n["default"]) p.fallback = doc.integer(n["default"]);
    else if (!p.values.empty()) p.fallback = p.values.front();
    names.push_back(p.name);
    s.params.push_back(p);
  }
  if (YAML::Node cs = doc.root["constraints"]) {
    if (!cs.IsSequence()) fail(doc.loc(cs), "constraints must be a list of expressions");
    for (const auto &c : cs) {
      s.constraints.push_back(doc.str(c));
      s.constraintsAt.push_back(doc.valueLoc(c));
      TuneExpr(s.constraints.back(), names, s.constraintsAt.back());
    }
  }
  return s;
}

// ---------------------------------------------------------------------------------------------
// Generation (ATF: chain of trees)

Generated generateSpace(const Space &s, long long list, bool sample, unsigned seed, long long maxNodes) {
  auto start = std::chrono::steady_clock::now();
  std::vector<std::string> names;
  for (const auto &p : s.params) names.push_back(p.name);
  size_t np = s.params.size();
  std::vector<TuneExpr> exprs, cons;
  std::vector<int> exprOf(np, -1);
  for (size_t i = 0; i < np; ++i)
    if (!s.params[i].expr.empty()) {
      exprOf[i] = (int)exprs.size();
      exprs.emplace_back(s.params[i].expr, std::vector<std::string>(names.begin(), names.begin() + (long)i), s.params[i].at);
    }
  for (size_t c = 0; c < s.constraints.size(); ++c)
    cons.emplace_back(s.constraints[c], names, c < s.constraintsAt.size() ? s.constraintsAt[c] : SourceLoc{});
  // Groups: parameters linked by a constraint or an expression (union-find).
  std::vector<int> parent(np);
  std::iota(parent.begin(), parent.end(), 0);
  std::function<int(int)> root = [&](int x) { return parent[(size_t)x] == x ? x : parent[(size_t)x] = root(parent[(size_t)x]); };
  auto link = [&](const std::vector<int> &uses, int also) {
    for (int u : uses) parent[(size_t)root(u)] = root(also);
  };
  for (size_t i = 0; i < np; ++i)
    if (exprOf[i] >= 0) link(exprs[(size_t)exprOf[i]].uses(), (int)i);
  for (const auto &c : cons)
    if (!c.uses().empty()) link(c.uses(), c.uses().front());
  std::map<int, std::vector<int>> groups; // root -> its parameters, in file order
  for (size_t i = 0; i < np; ++i) groups[root((int)i)].push_back((int)i);
  // Each constraint is checked at its last parameter (file order: the tree's depth).
  std::vector<std::vector<int>> checkAt(np);
  for (size_t c = 0; c < cons.size(); ++c) {
    if (cons[c].uses().empty()) continue;
    checkAt[(size_t)*std::max_element(cons[c].uses().begin(), cons[c].uses().end())].push_back((int)c);
  }
  Generated g;
  g.count = np == 0 ? 0 : 1;
  std::vector<long long> values(np, 0);
  std::vector<std::vector<std::vector<long long>>> leaves; // per group, its first `list` leaves
  long long nodes = 0;
  for (const auto &group : groups) {
    const std::vector<int> &members = group.second; // (clang 14: lambdas capture no bindings)
    long long count = 0;
    std::vector<std::vector<long long>> mine;
    std::function<void(size_t)> walk = [&](size_t d) {
      if (++nodes > maxNodes)
        fail(s.params.empty() ? SourceLoc{} : s.params.front().at,
             "the space's trees take more than " + std::to_string(maxNodes) +
                 " nodes to enumerate; constrain it more, or give its parameters fewer values");
      if (d == members.size()) {
        ++count;
        if ((long long)mine.size() < (sample ? (1LL << 22) : list)) {
          std::vector<long long> v;
          for (int m : members) v.push_back(values[(size_t)m]);
          mine.push_back(v);
        }
        return;
      }
      int p = members[d];
      auto holds = [&] {
        for (int c : checkAt[(size_t)p]) {
          bool ok = true;
          long long v = cons[(size_t)c].eval(values, ok);
          if (!ok || v == 0) return false;
        }
        return true;
      };
      if (exprOf[(size_t)p] >= 0) {
        bool ok = true;
        values[(size_t)p] = exprs[(size_t)exprOf[(size_t)p]].eval(values, ok);
        if (ok && holds()) walk(d + 1);
        return;
      }
      for (long long v : s.params[(size_t)p].values) {
        values[(size_t)p] = v;
        if (holds()) walk(d + 1);
      }
    };
    walk(0);
    g.groupCounts.push_back(count);
    g.count = count == 0 || g.count == 0 ? 0 : g.count * count;
    leaves.push_back(mine);
  }
  std::vector<std::vector<int>> memberLists;
  for (const auto &[r, members] : groups) memberLists.push_back(members);
  if (sample) {
    // Uniform over the product: a leaf of each tree, each uniform (trees of up to 2^22 leaves).
    std::mt19937_64 rng(seed);
    for (long long i = 0; i < list && g.count > 0; ++i) {
      std::vector<long long> config(np, 0);
      for (size_t t = 0; t < leaves.size(); ++t) {
        const auto &leaf = leaves[t][(size_t)(rng() % leaves[t].size())];
        for (size_t j = 0; j < memberLists[t].size(); ++j) config[(size_t)memberLists[t][j]] = leaf[j];
      }
      g.first.push_back(config);
    }
    list = 0;
  }
  // The first configurations of the product of the trees (the last tree varies fastest).
  std::vector<size_t> odo(leaves.size(), 0);
  bool any = !leaves.empty();
  for (const auto &l : leaves) any = any && !l.empty();
  while (any && (long long)g.first.size() < list) {
    std::vector<long long> config(np, 0);
    for (size_t t = 0; t < leaves.size(); ++t)
      for (size_t j = 0; j < memberLists[t].size(); ++j) config[(size_t)memberLists[t][j]] = leaves[t][odo[t]][j];
    g.first.push_back(config);
    size_t t = leaves.size();
    while (t-- > 0) {
      if (++odo[t] < leaves[t].size()) break;
      odo[t] = 0;
    }
    if (t == (size_t)-1) break;
  }
  // The defaults (polyk-schedule's choice) are a configuration of the space.
  std::vector<long long> defaults(np, 0);
  for (size_t i = 0; i < np; ++i) {
    bool ok = true;
    defaults[i] = exprOf[i] >= 0 ? exprs[(size_t)exprOf[i]].eval(defaults, ok) : s.params[i].fallback;
    if (exprOf[i] < 0 && std::find(s.params[i].values.begin(), s.params[i].values.end(), defaults[i]) == s.params[i].values.end())
      g.defaultViolates = s.params[i].name + " takes one of its values";
  }
  for (size_t c = 0; c < cons.size() && g.defaultViolates.empty(); ++c) {
    bool ok = true;
    if (cons[c].eval(defaults, ok) == 0 || !ok) g.defaultViolates = s.constraints[c];
  }
  g.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return g;
}

StageOptions stageOptionsOf(const Space &s, const std::vector<long long> &values) {
  StageOptions o;
  for (size_t i = 0; i < s.params.size() && i < values.size(); ++i) {
    if (const StageParam *sp = stageParam(s.params[i].name); sp && values[i] >= 0 && values[i] < (long long)sp->byCode.size())
      o.*(sp->field) = sp->byCode[(size_t)values[i]];
    if (s.params[i].name == "schedule.cover") o.cover = values[i];
  }
  return o;
}

std::string sizesOf(const Space &s, const std::vector<long long> &values) {
  // kernel -> entry kind (tile, block, reduce, vector, time, stream, split, shared) -> member -> value
  std::map<int, std::map<std::string, std::map<int, long long>>> k;
  for (size_t i = 0; i < s.params.size(); ++i) {
    // k<K>.<kind>[.<m>], K and m at most 4 digits; other names are the user's own.
    const std::string &n = s.params[i].name;
    auto number = [](const std::string &t) {
      return !t.empty() && t.size() <= 4 && t.find_first_not_of("0123456789") == std::string::npos ? std::stoi(t) : -1;
    };
    size_t dot = n.find('.');
    if (n.empty() || n[0] != 'k' || dot == std::string::npos) continue;
    int kernel = number(n.substr(1, dot - 1));
    std::string rest = n.substr(dot + 1);
    size_t dot2 = rest.find('.');
    std::string kind = rest.substr(0, dot2);
    int member = dot2 == std::string::npos ? 0 : number(rest.substr(dot2 + 1));
    if (kernel < 0 || member < 0 ||
        (kind != "tile" && kind != "block" && kind != "reduce" && kind != "vector" && kind != "time" && kind != "stream" && kind != "split" &&
         kind != "shared"))
      continue;
    if ((kind == "time" || kind == "stream") && values[i] == 0) continue; // (one step a launch, no streaming: no entry)
    if (kind == "split" && values[i] <= 1) continue;                       // (no split: no entry)
    if (kind == "shared" && values[i] <= kStaticShared) continue;         // (the static limit: no entry)
    k[kernel][kind][member] = values[i];
  }
  std::string o = "{ ";
  bool first = true;
  for (const auto &[kernel, kinds] : k)
    for (const char *kind : {"tile", "block", "reduce", "vector", "time", "stream", "split", "shared"}) {
      auto it = kinds.find(kind);
      if (it == kinds.end()) continue;
      o += std::string(first ? "" : "; ") + "kernel[" + std::to_string(kernel) + "] -> " + kind + "[";
      bool f = true;
      for (const auto &[m, v] : it->second) o += (f ? "" : ", ") + std::to_string(v), f = false;
      o += "]";
      first = false;
    }
  return o + " }";
}

} // namespace polyk
