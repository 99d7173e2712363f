// Time tiling of an iterated stencil (polyk/TimeTiles.h): the plan from the statement's access
// relations, and the kernel that runs a launch's steps in shared memory.
//
// A block's region is its output tile widened by steps * reach on each side (`below`, `above`:
// the read relation's offsets). The region is read once; step s computes the points at least
// s * reach inside the region's edges (the values the tile needs after the last step), from the
// previous step's copy, into the other copy; points outside the statement's domain (a stencil's
// boundary, or outside the tensor) keep their value, as the program's output does between steps.
// The tile's points in the domain are written at the end. Every block reads and recomputes its
// widening: (tile + 2 * steps * reach)^d points read for tile^d written, instead of one read and
// one write per point and step.
#include "TimeTiles.h"

#include "EmitParts.h"

#include "polyk/Sizes.h"

#include <algorithm>
#include <map>
#include <set>
#include <isl/aff.h>
#include <isl/map.h>
#include <isl/set.h>
#include <isl/val.h>

namespace polyk {

namespace {

/// The constant offset of `access` (S[x] -> t[x + c]) from the statement's point, or none.
std::optional<std::vector<long long>> shift(const std::string &access, unsigned rank) {
  isl::map m(islCtx(), access);
  if (m.range_tuple_dim() != rank || m.domain_tuple_dim() != rank) return std::nullopt;
  isl_map *same = isl_map_set_tuple_id(m.copy(), isl_dim_out, isl_map_get_tuple_id(m.get(), isl_dim_in));
  isl::set deltas = isl::manage(isl_set_detect_equalities(isl_map_deltas(same)));
  std::vector<long long> c;
  isl::set point = isl::manage(isl_set_universe(deltas.get_space().release()));
  for (unsigned d = 0; d < rank; ++d) {
    isl::val v = isl::manage(isl_set_plain_get_val_if_fixed(deltas.get(), isl_dim_set, d));
    if (v.is_null() || !v.is_int()) return std::nullopt;
    c.push_back(v.get_num_si());
    point = isl::manage(isl_set_fix_val(point.release(), isl_dim_set, d, v.release()));
  }
  // (A single point, the same at every instance: deltas of a map that is not a shift hold more.)
  if (!deltas.is_equal(point.intersect_params(deltas.params())) || !m.is_single_valued()) return std::nullopt;
  return c;
}

/// How far `st` reads `in` below and above its point, per dim (reads that are not shifts aside).
void reachOf(const ScopStatement &st, const std::string &in, unsigned rank, std::vector<long long> &below, std::vector<long long> &above) {
  below.assign(rank, 0);
  above.assign(rank, 0);
  for (const std::string &r : st.reads)
    if (auto c = shift(r, rank); c && isl::map(islCtx(), r).range_tuple_id().name() == in)
      for (unsigned d = 0; d < rank; ++d) {
        below[d] = std::max(below[d], -(*c)[d]);
        above[d] = std::max(above[d], (*c)[d]);
      }
}

/// ... of an iterated program's swapped input.
void reach(const Scop &s, unsigned rank, std::vector<long long> &below, std::vector<long long> &above) {
  reachOf(s.statements.front(), s.iterate.swaps.front().second, rank, below, above);
}

/// `e` with the reduced dims' names replaced by `at` in every subscript, and the accumulator's
/// access (`acc`) by `previous` (none where null); false where a name is read as a tensor.
bool substitute(ExprPtr &e, const std::map<std::string, long long> &at, const std::string &acc, const ExprPtr &previous) {
  if (e->kind == Expr::Kind::Access) {
    if (at.count(e->access.tensor)) return false;
    if (e->access.tensor == acc) {
      if (!previous) return false;
      e = previous;
      return true;
    }
    auto copy = std::make_shared<Expr>(*e);
    for (size_t d = 0; d < copy->access.subscripts.size(); ++d) {
      Affine &a = copy->access.subscripts[d];
      std::vector<std::pair<std::string, long long>> kept;
      for (const auto &[name, coefficient] : a.terms)
        if (auto it = at.find(name); it != at.end()) a.constant += coefficient * it->second;
        else kept.emplace_back(name, coefficient);
      a.terms = kept;
      copy->access.indices[d] = a.str();
    }
    e = copy;
    return true;
  }
  if (e->args.empty()) return true;
  auto copy = std::make_shared<Expr>(*e);
  for (ExprPtr &arg : copy->args)
    if (!substitute(arg, at, acc, previous)) return false;
  e = copy;
  return true;
}

/// `m` (a set or a map's string) with its statement tuple named `name`.
std::string renamed(const std::string &text, const std::string &name, bool isMap) {
  if (isMap) return islStr(isl::manage(isl_map_set_tuple_name(isl::map(islCtx(), text).release(), isl_dim_in, name.c_str())));
  return islStr(isl::manage(isl_set_set_tuple_name(isl::set(islCtx(), text).release(), name.c_str())));
}

/// The stencil form of `s` (itself, or its window reduction unrolled: windowAsStencil), kept in `hold`.
const Scop &stencilForm(const Scop &s, std::optional<Scop> &hold) {
  hold = windowAsStencil(s);
  return hold ? *hold : s;
}

} // namespace

std::optional<Scop> windowAsStencil(const Scop &s) {
  if (s.statements.size() != 3) return std::nullopt;
  const ScopStatement &init = s.statements[0], &update = s.statements[1], &store = s.statements[2];
  if (init.kind != StmtKind::Init || init.reduction != update.name || update.kind == StmtKind::Init || !update.op || update.form != Form::Affine ||
      store.kind != StmtKind::Assign || store.form != Form::Affine || !store.epilogue.empty() || !update.epilogue.empty())
    return std::nullopt;
  isl::set domain(islCtx(), update.domain), outputs(islCtx(), store.domain);
  const unsigned rank = outputs.tuple_dim(), all = domain.tuple_dim();
  if (rank < 2 || rank > 3 || all <= rank || update.dims.size() != all || update.iterators.size() != all || store.iterators.size() != rank) return std::nullopt;
  for (unsigned d = 0; d < all; ++d) {
    if (update.dims[d] != (d < rank ? "parallel" : "reduced")) return std::nullopt;
    // (The body speaks of the original iterators: they must be the domain's own dims.)
    isl_id *id = isl_set_get_dim_id(domain.get(), isl_dim_set, d);
    bool same = id && update.iterators[d] == isl_id_get_name(id) && (d >= rank || store.iterators[d] == update.iterators[d]);
    isl_id_free(id);
    if (!same) return std::nullopt;
  }
  // The reduced dims: a box of constant bounds (at most 64 points), the same at every output.
  std::vector<long long> low, high;
  long long points = 1;
  isl::set box = isl::set::universe(domain.get_space());
  for (unsigned d = rank; d < all; ++d) {
    isl::val lo = domain.dim_min_val((int)d), hi = domain.dim_max_val((int)d);
    if (!lo.is_int() || !hi.is_int()) return std::nullopt;
    low.push_back(lo.get_num_si());
    high.push_back(hi.get_num_si());
    points *= high.back() - low.back() + 1;
    if (points > 64) return std::nullopt;
    box = isl::manage(isl_set_lower_bound_val(box.release(), isl_dim_set, d, lo.release()));
    box = isl::manage(isl_set_upper_bound_val(box.release(), isl_dim_set, d, hi.release()));
  }
  isl::set projected = isl::manage(isl_set_project_out(domain.copy(), isl_dim_set, rank, all - rank));
  projected = isl::manage(isl_set_set_tuple_name(projected.release(), store.name.c_str()));
  isl::set product = isl::manage(isl_set_set_tuple_name(isl_set_add_dims(isl_set_reset_tuple_id(projected.copy()), isl_dim_set, all - rank), update.name.c_str()));
  if (!projected.is_equal(outputs) || !product.intersect(box).is_equal(domain)) return std::nullopt;
  if (!isl::set(islCtx(), init.domain).is_equal(isl::manage(isl_set_set_tuple_name(outputs.copy(), init.name.c_str())))) return std::nullopt;

  // The chain: term 0, then op(chain, term n), the reduced dims in their order (the reference's).
  const std::string acc = isl::map(islCtx(), update.write).range_tuple_id().name();
  ExprPtr step = parseExpr(update.body);
  if (step->args.size() != 2) return std::nullopt;
  int accAt = -1;
  for (int a = 0; a < 2; ++a)
    if (step->args[a]->kind == Expr::Kind::Access && step->args[a]->access.tensor == acc) accAt = a;
  if (accAt < 0) return std::nullopt;
  ExprPtr chain;
  std::vector<long long> at = low;
  for (long long n = 0; n < points; ++n) {
    std::map<std::string, long long> values;
    for (unsigned d = rank; d < all; ++d) values[update.iterators[d]] = at[d - rank];
    ExprPtr term = step->args[1 - accAt];
    if (!substitute(term, values, acc, nullptr)) return std::nullopt;
    if (!chain) {
      chain = term;
    } else {
      auto next = std::make_shared<Expr>(*step);
      next->args[accAt] = chain;
      next->args[1 - accAt] = term;
      chain = next;
    }
    for (size_t d = at.size(); d-- > 0;) // (the next point of the box, the last dim fastest)
      if (++at[d] <= high[d]) break;
      else at[d] = low[d];
  }
  ExprPtr body = parseExpr(store.body);
  std::vector<const Access *> storeReads;
  collectAccesses(body, storeReads);
  if (std::count_if(storeReads.begin(), storeReads.end(), [&](const Access *a) { return a->tensor == acc; }) != 1) return std::nullopt;
  if (!substitute(body, {}, acc, chain)) return std::nullopt;

  ScopStatement st;
  st.name = update.name;
  st.kind = StmtKind::Assign;
  st.source = update.source;
  st.form = Form::Affine;
  st.dims.assign(rank, "parallel");
  st.iterators = store.iterators;
  st.domain = renamed(store.domain, st.name, false);
  st.recovery = islStr(isl::manage(isl_multi_aff_set_tuple_name(isl::multi_aff(islCtx(), store.recovery).release(), isl_dim_in, st.name.c_str())));
  st.write = renamed(store.write, st.name, true);
  st.body = printExpr(body);
  st.loc = update.loc;
  // Its reads, one per access of the body in order: built from the subscripts.
  std::string params;
  for (int p = 0; p < isl_set_dim(outputs.get(), isl_dim_param); ++p) params += std::string(p ? ", " : "") + isl_set_get_dim_name(outputs.get(), isl_dim_param, p);
  std::string point;
  for (unsigned d = 0; d < rank; ++d) point += std::string(d ? ", " : "") + st.iterators[d];
  std::vector<const Access *> reads;
  collectAccesses(body, reads);
  for (const Access *a : reads) {
    std::string subs;
    for (size_t d = 0; d < a->subscripts.size(); ++d) subs += std::string(d ? ", " : "") + "(" + a->subscripts[d].str() + ")";
    st.reads.push_back("[" + params + "] -> { " + st.name + "[" + point + "] -> " + a->tensor + "[" + subs + "] }");
  }
  Scop out = s;
  out.statements = {st};
  out.tensors.erase(std::remove_if(out.tensors.begin(), out.tensors.end(), [&](const TensorDecl &t) { return t.name == acc; }), out.tensors.end());
  return out;
}

std::vector<long long> defaultStreamBlock(unsigned rank) { return rank == 3 ? std::vector<long long>{1, 8, 32} : std::vector<long long>{1, 256}; }

std::vector<long long> streamWidening(const Scop &program) {
  std::optional<Scop> hold;
  const Scop &s = stencilForm(program, hold);
  if (s.statements.size() != 1) return {};
  unsigned rank = isl::map(islCtx(), s.statements.front().write).domain_tuple_dim();
  std::vector<long long> block = defaultStreamBlock(rank);
  if (rank < 2 || rank > 3 || !streamRefusal(s, block, block).empty()) return {};
  std::vector<long long> below, above;
  reachOf(s.statements.front(), streamedTensor(s), rank, below, above);
  for (unsigned d = 0; d < rank; ++d) below[d] += above[d];
  return below;
}

std::string streamedTensor(const Scop &program) {
  std::optional<Scop> hold;
  const Scop &s = stencilForm(program, hold);
  if (s.statements.size() != 1) return "";
  const ScopStatement &st = s.statements.front();
  unsigned rank = isl::map(islCtx(), st.write).domain_tuple_dim();
  std::map<std::string, std::set<std::vector<long long>>> offsets;
  for (const std::string &r : st.reads)
    if (auto c = shift(r, rank)) offsets[isl::map(islCtx(), r).range_tuple_id().name()].insert(*c);
  std::string best;
  size_t most = 1;
  for (const auto &[t, o] : offsets)
    if (o.size() > most) best = t, most = o.size();
  return best;
}

std::string streamRefusal(const Scop &program, const std::vector<long long> &block, const std::vector<long long> &tile, long long vector) {
  std::optional<Scop> hold;
  const Scop &s = stencilForm(program, hold);
  const std::string window = " (or a window reduction: reduced dims of constant bounds, at most 64 points, the same at every output, no epilogue)";
  if (s.statements.size() != 1) return "the program has " + std::to_string(s.statements.size()) + " statements; streaming takes one" + window;
  const ScopStatement &st = s.statements.front();
  if (st.kind != StmtKind::Assign || !st.epilogue.empty() || st.form != Form::Affine) return "its statement is a reduction" + window;
  isl::map write(islCtx(), st.write);
  unsigned rank = write.domain_tuple_dim();
  std::string out = write.range_tuple_id().name();
  if (rank < 2 || rank > 3) return "its statement has " + std::to_string(rank) + " dims; streaming takes 2 or 3";
  auto w = shift(st.write, rank);
  if (!w || *w != std::vector<long long>(rank, 0)) return "its statement does not write " + out + " at its own point";
  std::string in = streamedTensor(s);
  if (in.empty()) return "no tensor is read at two or more constant offsets from the point";
  for (const std::string &r : st.reads) {
    std::string t = isl::map(islCtx(), r).range_tuple_id().name();
    if (t == out) return "its statement reads its output " + out;
    if (t == in && !shift(r, rank)) return "it reads " + in + " at a subscript other than its point plus a constant";
  }
  if (block.size() != rank) return "the sizes give " + std::to_string(block.size()) + " block sizes for a statement of " + std::to_string(rank) + " dims";
  if (block[0] != 1) return "a block streams its planes one after another: its size along the first dim must be 1";
  if (tile.size() != rank || tile[0] != 1) return "a block's tile is one plane deep: tile sizes [1, ...] of a statement of " + std::to_string(rank) + " dims";
  long long points = 1;
  for (unsigned d = 1; d < rank; ++d) {
    if (tile[d] % block[d] != 0) return "a block's tile along dim " + std::to_string(d) + " must be a multiple of its threads there";
    points *= tile[d] / block[d];
  }
  if (points > 16) return "a thread would own " + std::to_string(points) + " points of a plane (at most 16)";
  std::vector<long long> below, above;
  reachOf(st, in, rank, below, above);
  long long bytes = (below[0] + above[0] + 2) * (long long)dtypeBytes(s.tensor(in)->type), threads = 1;
  for (unsigned d = 0; d < rank; ++d) {
    if (below[d] > 8 || above[d] > 8) return "its reads of " + in + " reach more than 8 points along dim " + std::to_string(d);
    if (d > 0) bytes *= std::min<long long>(tile[d], 1 << 20) + below[d] + above[d], threads *= block[d];
    if ((bytes > 48 * 1024 && vector <= 1) || threads > 1024) break;
  }
  if (threads > 1024) return "its blocks would have more than 1024 threads";
  if (bytes > 48 * 1024 && vector <= 1) return "the ring of planes takes more than 49152 bytes of shared memory: smaller blocks";
  return "";
}

std::vector<long long> defaultTimeTile(const Scop &s, unsigned rank, long long steps) {
  std::vector<long long> tile = rank == 1 ? std::vector<long long>{2048} : rank == 2 ? std::vector<long long>{32, 64} : std::vector<long long>{8, 8, 32};
  if (!s.iterate.active() || s.statements.size() != 1 || rank < 1 || rank > 3) return tile;
  // The region's rows a whole number of warps wide: the tile along x is what the widening leaves
  // of the next multiple of 32 (64 + 2 * 4 -> a tile of 88 in a region of 96).
  std::vector<long long> below, above;
  reach(s, rank, below, above);
  long long widen = steps * (below.back() + above.back()), region = (tile.back() + widen + 31) / 32 * 32;
  tile.back() = region - widen;
  // Then the outer dims halved, the largest first, until the region's two copies fit 48 KB.
  auto bytes = [&] {
    long long n = 2 * dtypeBytes(s.tensor(s.iterate.swaps.front().second)->type);
    for (unsigned d = 0; d < rank; ++d) n *= tile[d] + steps * (below[d] + above[d]);
    return n;
  };
  while (bytes() > 48 * 1024) {
    auto largest = std::max_element(tile.begin(), tile.end() - 1);
    if (largest == tile.end() - 1 || *largest == 1) largest = tile.end() - 1; // (then x)
    if (*largest == 1) break;
    *largest /= 2;
  }
  return tile;
}

std::vector<long long> timeTileWidening(const Scop &s) {
  if (!s.iterate.active() || s.statements.size() != 1) return {};
  unsigned rank = isl::set(islCtx(), s.statements.front().domain).tuple_dim();
  if (!timeTileRefusal(s, std::vector<long long>(rank, 1), 1).empty()) return {};
  std::vector<long long> below, above;
  reach(s, rank, below, above);
  for (unsigned d = 0; d < rank; ++d) below[d] += above[d];
  return below;
}

std::string timeTileRefusal(const Scop &s, const std::vector<long long> &tile, long long steps) {
  if (!s.iterate.active()) return "the program does not iterate (it has no 'iterate:')";
  if (s.iterate.swaps.size() != 1) return "the program swaps " + std::to_string(s.iterate.swaps.size()) + " pairs of tensors; time tiling takes one";
  if (s.statements.size() != 1) return "the program has " + std::to_string(s.statements.size()) + " statements; time tiling takes one";
  const ScopStatement &st = s.statements.front();
  if (st.kind != StmtKind::Assign || !st.epilogue.empty() || st.form != Form::Affine) return "its statement is a reduction";
  const auto &[out, in] = s.iterate.swaps.front();
  isl::map write(islCtx(), st.write);
  unsigned rank = write.domain_tuple_dim();
  if (write.range_tuple_id().name() != out) return "its statement writes " + write.range_tuple_id().name() + ", not the swapped output " + out;
  if (rank < 1 || rank > 3) return "its statement has " + std::to_string(rank) + " dims; time tiling takes 1 to 3";
  auto w = shift(st.write, rank);
  if (!w || *w != std::vector<long long>(rank, 0))
    return "its statement does not write " + out + " at its own point (" + out + "(i, j) = ...)";
  for (const std::string &r : st.reads) {
    std::string t = isl::map(islCtx(), r).range_tuple_id().name();
    if (t == out) return "its statement reads its output " + out;
    if (t == in && !shift(r, rank)) return "it reads " + in + " at a subscript other than its point plus a constant";
  }
  if (tile.size() != rank) return "the sizes give " + std::to_string(tile.size()) + " tile sizes for a statement of " + std::to_string(rank) + " dims";
  std::vector<long long> below, above;
  reach(s, rank, below, above);
  long long points = 1, bytes = 0;
  unsigned d = 0;
  for (; d < rank && bytes <= 48 * 1024; ++d) {
    points *= tile[d] + steps * (below[d] + above[d]);
    bytes = 2 * points * (long long)dtypeBytes(s.tensor(in)->type); // (stops growing past 48 KB: no overflow)
  }
  if (bytes > 48 * 1024)
    return "the widened tile's two copies take " + std::string(d < rank ? "more than " : "") + std::to_string(bytes) +
           " bytes of shared memory (at most 49152): fewer steps or a smaller tile";
  return "";
}

namespace codegen {

long long TimeTilePlan::regionPoints() const {
  long long n = 1;
  for (long long r : region) n *= r;
  return n;
}

std::optional<TimeTilePlan> timeTilePlan(const Scop &s) {
  std::map<int, KernelSizes> sizes = parseSizes(s.sizes, &s.at.sizes);
  auto it = sizes.find(0);
  if (it == sizes.end() || it->second.time <= 0) return std::nullopt;
  TimeTilePlan p;
  p.steps = it->second.time;
  p.tile = it->second.tile;
  if (std::string why = timeTileRefusal(s, p.tile, p.steps); !why.empty()) fail(s.at.sizes, "sizes: time[" + std::to_string(p.steps) + "]: " + why);
  std::tie(p.out, p.in) = s.iterate.swaps.front();
  p.statement = &s.statements.front();
  unsigned rank = (unsigned)p.tile.size();
  reach(s, rank, p.below, p.above);
  for (unsigned d = 0; d < rank; ++d) p.region.push_back(p.tile[d] + p.steps * (p.below[d] + p.above[d]));
  // (Each thread's points are unrolled, their values in registers: a few dozen at most.)
  std::array<int, 3> block = s.kernels.empty() ? std::array<int, 3>{256, 1, 1} : s.kernels.front().block;
  long long perThread = 1;
  for (unsigned d = 0; d < rank; ++d) {
    int threads = block[rank - 1 - d];
    perThread *= (p.region[d] + threads - 1) / threads;
  }
  if (perThread > 64)
    fail(s.at.sizes, "sizes: time[" + std::to_string(p.steps) + "]: each of a block's threads would own " + std::to_string(perThread) +
                         " points of its region (at most 64): a larger block or a smaller tile");
  return p;
}

namespace {

const char *const kAxes[3][3] = {{"x"}, {"y", "x"}, {"z", "y", "x"}};

std::string str(long long v) { return std::to_string(v); }

/// What both stencil kernels print of their statement: its iterators' names, the C conditions
/// that a point is in its domain and inside `in`, the value of a read outside `in`.
struct StencilText {
  std::vector<std::string> names;
  std::string inDomain, inTensor, padding;
  std::map<std::string, DType> types;
  ExprPtr body; // the right-hand side, less a cast to the output's own type (the store rounds)
};

StencilText stencilText(const Scop &s, const ScopStatement &st, const TensorDecl &inT, const TensorDecl &outT, const std::string &storage,
                        Dialect d) {
  StencilText t;
  isl::set dom(islCtx(), st.domain);
  unsigned rank = dom.tuple_dim();
  for (unsigned i = 0; i < rank; ++i) {
    isl_id *id = isl_set_get_dim_id(dom.get(), isl_dim_set, i);
    t.names.push_back(isl_id_get_name(id));
    isl_id_free(id);
  }
  isl::set anon = isl::manage(isl_set_reset_tuple_id(dom.copy()));
  t.inDomain = domainGuard(dom, isl::set::universe(anon.get_space()).intersect_params(dom.params()));
  if (t.inDomain.empty()) t.inDomain = "1";
  for (unsigned i = 0; i < rank; ++i)
    t.inTensor += std::string(i ? " && " : "") + "0 <= " + t.names[i] + " && " + t.names[i] + " < " + inT.shape[i].str();
  t.padding = "(" + storage + ")0";
  if (inT.padding) {
    bool isFloatLiteral = inT.padding->find_first_of(".eE") != std::string::npos;
    t.padding = storeValue(d, inT.type, convert(Value{*inT.padding, isFloatLiteral ? DType::F32 : DType::I32, true}, computeType(inT.type)));
  }
  for (const auto &u : s.tensors) t.types[u.name] = u.type;
  t.body = parseExpr(st.body);
  if (t.body->kind == Expr::Kind::Call && parseDType(t.body->text) == outT.type) t.body = t.body->args[0];
  return t;
}

/// The launcher polyk_NAME (CUDA) or polyk_NAME_mapped (C): `call` (the kernel's name and launch
/// configuration in CUDA, its name in C; the arguments follow, then `extra`) inside `steps`.
std::string launcher(const Scop &s, bool cuda, const std::string grid[3], const std::string &call, const std::string &extra,
                     const IterateCode &steps) {
  std::string o, launch = call + affineKernelArgs(s) + extra + (cuda ? ");\n" : ", polyk_blocks);\n");
  if (cuda) {
    std::string sig = hostSignature(s, "polyk_" + s.name, true);
    o += "/* Runs the program on `stream`; returns the first CUDA error. */\n";
    o += "extern \"C\" cudaError_t " + sig + (sig.back() == '(' ? "" : ", ") + "cudaStream_t stream) {\n  cudaError_t err = cudaSuccess;\n";
    o += steps.begin + "  " + launch + "  if ((err = cudaGetLastError()) != cudaSuccess) return err;\n" + steps.end + "  return cudaSuccess;\n}\n";
  } else {
    o += "void " + hostSignature(s, "polyk_" + s.name + "_mapped", false) + ") {\n";
    o += "  const polyk_idx polyk_blocks[3] = {" + grid[0] + ", " + grid[1] + ", " + grid[2] + "};\n";
    o += steps.begin + "  " + launch + steps.end + "}\n";
  }
  return o;
}

std::string cudaLaunch(const std::string &fn, const std::string grid[3], const std::string &block) {
  return fn + "<<<dim3((unsigned)(" + grid[0] + "), (unsigned)(" + grid[1] + "), (unsigned)(" + grid[2] + ")), dim3(" + block + "), 0, stream>>>(";
}

} // namespace

std::string emitTimeTiled(const Scop &s, const TimeTilePlan &p, Dialect d) {
  const bool cuda = d == Dialect::Cuda;
  const ScopStatement &st = *p.statement;
  const TensorDecl &inT = *s.tensor(p.in), &outT = *s.tensor(p.out);
  const unsigned rank = (unsigned)p.tile.size();
  const std::string storage = cuda ? cudaStorageType(inT.type) : cStorageType(inT.type);
  const std::string fn = (s.kernels.empty() ? s.name : s.kernels.front().name) + "_tt";
  const std::array<int, 3> block = s.kernels.empty() ? std::array<int, 3>{256, 1, 1} : s.kernels.front().block; // x, y, z
  // Region dim r is spread over thread axis kAxes[rank - 1][r]: a thread owns the points
  // (t_r + B_r * a_r), a_r < per[r]; its points' values, inputs and liveness stay in registers.
  std::vector<long long> threadsOf(rank), per(rank), regionStride(rank, 1), pointStride(rank, 1);
  long long K = 1;
  for (unsigned r = 0; r < rank; ++r) {
    threadsOf[r] = block[kAxes[rank - 1][r][0] - 'x'];
    per[r] = (p.region[r] + threadsOf[r] - 1) / threadsOf[r];
    K *= per[r];
  }
  for (unsigned r = rank; r-- > 1;) {
    regionStride[r - 1] = regionStride[r] * p.region[r];
    pointStride[r - 1] = pointStride[r] * per[r];
  }
  StencilText text = stencilText(s, st, inT, outT, storage, d);
  const std::vector<std::string> &names = text.names;
  const std::string &inDomain = text.inDomain, &inTensor = text.inTensor, &padding = text.padding;

  // A thread's registers: in C, one row per thread (the phases run thread after thread).
  auto reg = [&](const std::string &name) { return cuda ? name + "[polyk_k]" : name + "[polyk_t][polyk_k]"; };
  // A point's liveness (at most 64) in a byte: four to a register (64 -> 48 registers a thread
  // for 15 points: 4 blocks an SM -> 5).
  const std::string live = std::string(cuda ? "polyk_live" : "polyk_live[polyk_t]") + "[polyk_k / 4]";
  const std::string liveOf = "((" + live + " >> (8 * (polyk_k % 4))) & 255u)";
  // Other tensors read at the point itself: loaded once a launch into registers.
  std::set<std::string> atPoint;
  for (const std::string &r : st.reads) {
    std::string t = isl::map(islCtx(), r).range_tuple_id().name();
    auto c = shift(r, rank);
    if (t != p.in && c && *c == std::vector<long long>(rank, 0) && !s.tensor(t)->padding) atPoint.insert(t);
  }
  for (const std::string &r : st.reads) { // (read elsewhere too: from memory, all its reads)
    std::string t = isl::map(islCtx(), r).range_tuple_id().name();
    auto c = shift(r, rank);
    if (atPoint.count(t) && !(c && *c == std::vector<long long>(rank, 0))) atPoint.erase(t);
  }
  Value v = printValue(text.body, d, [&](const Access &a, size_t k) {
    if (a.tensor == p.in) {
      std::vector<long long> c = *shift(st.reads[k], rank);
      long long off = 0;
      for (unsigned i = 0; i < rank; ++i) off += c[i] * regionStride[i];
      if (off == 0) return loadElement(d, inT.type, reg("polyk_v"));
      return loadElement(d, inT.type, "polyk_cur[polyk_q" + std::string(off < 0 ? " - " : " + ") + str(off < 0 ? -off : off) + "]");
    }
    const TensorDecl &t = *s.tensor(a.tensor);
    if (atPoint.count(a.tensor)) return loadElement(d, t.type, reg("polyk_" + a.tensor));
    return paddedLoad(t, a, loadElement(d, t.type, a.tensor + "[" + linearIndex(st.reads[k], t) + "]"), true);
  }, text.types);
  std::string value = storeValue(d, outT.type, convert(v, computeType(outT.type)));

  // The loop over a thread's points (unrolled: their registers are an array of constant indices)
  // with its local coordinates polyk_l<r>, its place polyk_q in the region and `in`: inside it.
  std::string points = (cuda ? "  #pragma unroll\n" : "") + std::string("  for (int polyk_k = 0; polyk_k < ") + str(K) + "; ++polyk_k) {\n";
  std::string inside;
  for (unsigned r = 0; r < rank; ++r) {
    std::string a = "polyk_k";
    if (pointStride[r] != 1) a = "(" + a + " / " + str(pointStride[r]) + ")";
    if (r > 0) a = "(" + a + " % " + str(per[r]) + ")";
    points += "    const int polyk_l" + str(r) + " = (int)threadIdx." + kAxes[rank - 1][r] + " + " + str(threadsOf[r]) + " * " + a + ";\n";
    inside += std::string(r ? " && " : "") + "polyk_l" + str(r) + " < " + str(p.region[r]);
  }
  points += "    const int polyk_q = ";
  for (unsigned r = 0; r < rank; ++r) points += std::string(r ? " + " : "") + "polyk_l" + str(r) + (regionStride[r] == 1 ? "" : " * " + str(regionStride[r]));
  points += ";\n    (void)polyk_q;\n";
  std::string ids = "    const polyk_idx ";
  for (unsigned r = 0; r < rank; ++r) ids += (r ? ", " : "") + names[r] + " = polyk_o" + str(r) + " + polyk_l" + str(r);
  ids += ";\n";
  std::string idsUsed = "   ";
  for (unsigned r = 0; r < rank; ++r) idsUsed += " (void)" + names[r] + ";";
  idsUsed += "\n";
  // A phase: every thread of the block; in C one after another (the barrier after it).
  auto phase = [&](const std::string &code) {
    if (cuda) return code + "  __syncthreads();\n";
    return "  for (int polyk_t = 0; polyk_t < " + str((long long)block[0] * block[1] * block[2]) + "; ++polyk_t) {\n" +
           "  const struct { int x, y, z; } threadIdx = {polyk_t % " + str(block[0]) + ", polyk_t / " + str(block[0]) + " % " + str(block[1]) +
           ", polyk_t / " + str((long long)block[0] * block[1]) + "};\n" + code + "  }\n";
  };

  std::string o = "/* Time tiling (kernel[0] -> time[" + str(p.steps) + "]): up to " + str(p.steps) + " steps a launch. A block computes its tile of";
  for (unsigned i = 0; i < rank; ++i) o += (i ? " x " : " ") + str(p.tile[i]);
  o += " " + p.out + " points from a region of";
  for (unsigned i = 0; i < rank; ++i) o += (i ? " x " : " ") + str(p.region[i]);
  o += " (the tile widened by the steps times the stencil's reach,";
  for (unsigned i = 0; i < rank; ++i) o += (i ? ", " : " ") + std::string("-") + str(p.below[i]) + "/+" + str(p.above[i]);
  o += "), in two copies in shared memory; a thread owns " + str(K) + " points of it, their values in registers. */\n";
  const long long R = p.regionPoints();
  if (cuda) {
    o += "__global__ void __launch_bounds__(" + str((long long)block[0] * block[1] * block[2]) + ") " + fn + "(" + affineKernelParams(s, true) +
         ", const int polyk_steps) {\n";
    o += "  __shared__ " + storage + " polyk_buf[2][" + str(R) + "];\n";
    o += "  " + storage + " polyk_v[" + str(K) + "];\n  unsigned polyk_live[" + str((K + 3) / 4) + "] = {0};\n";
    for (const std::string &t : atPoint) o += "  " + std::string(cudaStorageType(s.tensor(t)->type)) + " polyk_" + t + "[" + str(K) + "];\n";
  } else {
    std::string T = str((long long)block[0] * block[1] * block[2]);
    o += "static void " + fn + "(" + affineKernelParams(s, false) + ", const int polyk_steps, const polyk_idx polyk_blocks[3]) {\n";
    o += "  static " + storage + " polyk_buf[2][" + str(R) + "], polyk_v[" + T + "][" + str(K) + "];\n  static unsigned polyk_live[" + T + "][" + str((K + 3) / 4) + "];\n";
    for (const std::string &t : atPoint) o += "  static " + std::string(cStorageType(s.tensor(t)->type)) + " polyk_" + t + "[" + T + "][" + str(K) + "];\n";
    o += "  for (polyk_idx bz = 0; bz < polyk_blocks[2]; ++bz)\n  for (polyk_idx by = 0; by < polyk_blocks[1]; ++by)\n";
    o += "  for (polyk_idx bx = 0; bx < polyk_blocks[0]; ++bx) {\n  const struct { polyk_idx x, y, z; } blockIdx = {bx, by, bz};\n";
  }
  o += "  /* The region's origin: the tile's, less the reach of all the steps. */\n";
  for (unsigned i = 0; i < rank; ++i)
    o += "  const polyk_idx polyk_o" + str(i) + " = (polyk_idx)blockIdx." + kAxes[rank - 1][i] + " * " + str(p.tile[i]) + " - " + str(p.steps * p.below[i]) + ";\n";
  // Load: the region of `in` (outside the tensor: its padding, or 0, which no needed point reads),
  // into both copies where the statement does not write (they keep their value every step); a
  // point's liveness: the steps up to which the tile needs it, 0 outside the domain.
  std::string depth;
  for (unsigned r = 0; r < rank; ++r) {
    std::string l = "polyk_l" + str(r);
    if (p.below[r] > 0) depth += "      if (" + l + " / " + str(p.below[r]) + " < polyk_d) polyk_d = " + l + " / " + str(p.below[r]) + ";\n";
    if (p.above[r] > 0)
      depth += "      if ((" + str(p.region[r] - 1) + " - " + l + ") / " + str(p.above[r]) + " < polyk_d) polyk_d = (" + str(p.region[r] - 1) + " - " + l + ") / " +
               str(p.above[r]) + ";\n";
  }
  std::string load = points + "    if (polyk_k % 4 == 0) " + live + " = 0;\n    if (!(" + inside + ")) continue;\n" + ids;
  load += "    const int polyk_t_in = " + inTensor + ";\n";
  load += "    const " + storage + " polyk_x = polyk_t_in ? " + p.in + "[" + linearIndex(st.write, inT) + "] : " + padding + ";\n";
  load += "    " + reg("polyk_v") + " = polyk_x;\n    polyk_buf[0][polyk_q] = polyk_x;\n";
  for (const std::string &t : atPoint)
    load += "    " + reg("polyk_" + t) + " = polyk_t_in ? " + t + "[" + linearIndex(st.write, *s.tensor(t)) + "] : (" +
            (cuda ? cudaStorageType(s.tensor(t)->type) : cStorageType(s.tensor(t)->type)) + ")0;\n";
  load += "    if (polyk_t_in && (" + inDomain + ")) {\n      int polyk_d = " + str(p.steps) + ";\n" + depth + "      " + live +
          " |= (unsigned)polyk_d << (8 * (polyk_k % 4));\n    } else {\n      polyk_buf[1][polyk_q] = polyk_x;\n    }\n  }\n";
  o += "  /* Load: the region of " + p.in + ", both copies where the statement does not write. */\n" + phase(load);
  std::string step = points + "    if ((unsigned)polyk_s > " + liveOf + ") continue; /* outside the domain, or not needed after this step */\n";
  step += ids + idsUsed;
  step += "    const " + storage + " polyk_n = " + value + ";\n    polyk_nxt[polyk_q] = polyk_n;\n    " + reg("polyk_v") + " = polyk_n;\n";
  std::string stepBody = step + "  }\n";
  o += "  /* The steps: each from one copy into the other. */\n";
  o += "  for (int polyk_s = 1; polyk_s <= polyk_steps; ++polyk_s) {\n";
  o += "  const " + storage + " *const polyk_cur = polyk_buf[(polyk_s - 1) & 1];\n  " + storage + " *const polyk_nxt = polyk_buf[polyk_s & 1];\n";
  o += "  (void)polyk_cur;\n";
  // (The thread's register holds its point's value: only this thread reads it, as the centre.)
  o += phase(stepBody);
  o += "  }\n";
  std::string tile;
  for (unsigned r = 0; r < rank; ++r)
    tile += std::string(r ? " && " : "") + "polyk_l" + str(r) + " >= " + str(p.steps * p.below[r]) + " && polyk_l" + str(r) + " < " + str(p.steps * p.below[r] + p.tile[r]);
  std::string store = points + "    if (" + liveOf + " == 0 || !(" + tile + ")) continue;\n" + ids;
  store += "    " + p.out + "[" + linearIndex(st.write, outT) + "] = " + reg("polyk_v") + ";\n  }\n";
  o += "  /* The tile's points of the statement's domain. */\n" + (cuda ? store : phase(store));
  o += cuda ? "}\n\n" : "  }\n}\n\n";

  // The launcher: ceil(steps / T) launches, the last with the steps left.
  std::string grid[3] = {"1", "1", "1"};
  for (unsigned i = 0; i < rank; ++i)
    grid[kAxes[rank - 1][i][0] - 'x'] = "(" + outT.shape[i].str() + " + " + str(p.tile[i] - 1) + ") / " + str(p.tile[i]);
  std::string fnCall = cuda ? cudaLaunch(fn, grid, str(block[0]) + ", " + str(block[1]) + ", " + str(block[2])) : fn + "(";
  o += launcher(s, cuda, grid, fnCall, ", polyk_steps_now", iterateCode(s, cuda, p.steps));
  return o;
}

std::optional<StreamPlan> streamPlan(const Scop &s) {
  std::map<int, KernelSizes> sizes = parseSizes(s.sizes, &s.at.sizes);
  auto it = sizes.find(0);
  if (it == sizes.end() || it->second.stream <= 0) return std::nullopt;
  StreamPlan p;
  p.chunk = it->second.stream;
  p.block = it->second.block;
  p.tile = it->second.tile.empty() ? p.block : it->second.tile;
  if (std::string why = streamRefusal(s, p.block, p.tile, std::max(1LL, it->second.vector)); !why.empty()) fail(s.at.sizes, "sizes: stream[" + std::to_string(p.chunk) + "]: " + why);
  if (it->second.time > 0) fail(s.at.sizes, "sizes: stream[" + std::to_string(p.chunk) + "] and time[..]: a kernel streams or time-tiles, not both");
  p.statement = &s.statements.front();
  p.in = streamedTensor(s);
  p.out = isl::map(islCtx(), p.statement->write).range_tuple_id().name();
  reachOf(*p.statement, p.in, (unsigned)p.block.size(), p.below, p.above);
  p.vector = std::max(1LL, it->second.vector);
  if (p.vector > 1) {
    // (A thread's points: one of each plane along the middle dim, a run of V along the innermost.)
    const size_t last = p.block.size() - 1;
    for (size_t d = 1; d < last; ++d)
      if (p.tile[d] != p.block[d])
        fail(s.at.sizes, "sizes: stream[" + std::to_string(p.chunk) + "] with vector[" + std::to_string(p.vector) + "]: a thread takes one point along dim " +
                             std::to_string(d) + " (tile " + std::to_string(p.tile[d]) + ", block " + std::to_string(p.block[d]) + ")");
    if (p.tile[last] != p.block[last] * p.vector)
      fail(s.at.sizes, "sizes: stream[" + std::to_string(p.chunk) + "] with vector[" + std::to_string(p.vector) + "]: the tile along the innermost dim must be " +
                           std::to_string(p.vector) + " x its block (" + std::to_string(p.block[last] * p.vector) + ", not " + std::to_string(p.tile[last]) + ")");
    const TensorDecl &inT = *s.tensor(p.in), &outT = *s.tensor(p.out);
    bool same = inT.shape.size() == outT.shape.size();
    for (size_t d = 0; same && d < inT.shape.size(); ++d) same = inT.shape[d].str() == outT.shape[d].str();
    if (!same)
      fail(s.at.sizes, "sizes: stream[" + std::to_string(p.chunk) + "] with vector[" + std::to_string(p.vector) + "]: " + p.in + " and " + p.out +
                           " have different shapes (a thread's places in both are one offset)");
    if (p.vector > 16 || (p.vector & (p.vector - 1)))
      fail(s.at.sizes, "sizes: stream[" + std::to_string(p.chunk) + "] with vector[" + std::to_string(p.vector) + "]: V is 2, 4, 8 or 16");
  }
  return p;
}

std::string emitStreamed(const Scop &s, const StreamPlan &p, Dialect d) {
  const bool cuda = d == Dialect::Cuda;
  const ScopStatement &st = *p.statement;
  const TensorDecl &inT = *s.tensor(p.in), &outT = *s.tensor(p.out);
  const unsigned rank = (unsigned)p.block.size();
  const std::string storage = cuda ? cudaStorageType(inT.type) : cStorageType(inT.type);
  const std::string fn = (s.kernels.empty() ? s.name : s.kernels.front().name) + "_stream";
  // The ring: planes i - below[0] .. i + above[0] and one more (the next plane's copy may then
  // start before the slowest thread has read the oldest: one barrier a plane).
  const long long slots = p.below[0] + p.above[0] + 2;
  std::vector<long long> plane; // extents of a plane's copy, dims 1..
  long long planePoints = 1, threads = 1;
  for (unsigned r = 1; r < rank; ++r) {
    plane.push_back(p.tile[r] + p.below[r] + p.above[r]);
    planePoints *= plane.back();
    threads *= p.block[r];
  }
  const char *const *axes = kAxes[rank - 2]; // plane dims on the thread axes: 2-d x; 3-d y, x
  StencilText text = stencilText(s, st, inT, outT, storage, d);
  const std::vector<std::string> &names = text.names;
  const std::string &inDomain = text.inDomain, &inTensor = text.inTensor, &padding = text.padding;
  Value v = printValue(text.body, d, [&](const Access &a, size_t k) {
    const TensorDecl &t = *s.tensor(a.tensor);
    if (a.tensor != p.in) return paddedLoad(t, a, loadElement(d, t.type, a.tensor + "[" + linearIndex(st.reads[k], t) + "]"), true);
    std::vector<long long> c = *shift(st.reads[k], rank);
    std::string at;
    long long stride = 1;
    for (unsigned r = rank; r-- > 1;) {
      long long local = p.below[r] + c[r];
      std::string term = "(polyk_l" + str(r) + (local ? " + " + str(local) : "") + ")";
      if (stride != 1) term += " * " + str(stride);
      at = at.empty() ? term : term + " + " + at;
      stride *= plane[r - 1];
    }
    return loadElement(d, inT.type, "polyk_ring[(unsigned)(polyk_c + " + str(p.below[0] + c[0]) + ") % " + str(slots) + "u][" + at + "]");
  }, text.types);
  std::string value = storeValue(d, outT.type, convert(v, computeType(outT.type)));

  // A phase of all the block's threads (in C, one after another; in CUDA, the barrier is the caller's).
  auto phase = [&](const std::string &code) {
    if (cuda) return code;
    return "  for (int polyk_t = 0; polyk_t < " + str(threads) + "; ++polyk_t) {\n  const struct { int x, y, z; } threadIdx = {polyk_t % " + str(p.block.back()) +
           ", polyk_t / " + str(p.block.back()) + ", 0};\n" + code + "  }\n";
  };
  std::string tid = rank == 3 ? "(int)threadIdx.x + (int)threadIdx.y * " + str(p.block[2]) : "(int)threadIdx.x";
  // A plane's copy: its points dealt to the threads.
  // A plane's copy, its points dealt to the threads: fetched into registers (the next plane's,
  // while this one is computed: its loads in flight across the barrier), then put in its slot.
  const long long K = (planePoints + threads - 1) / threads;
  const std::string f = cuda ? "polyk_f[polyk_k]" : "polyk_f[polyk_t][polyk_k]";
  auto points = [&](const std::string &body) {
    return std::string(cuda ? "    #pragma unroll\n" : "") + "    for (int polyk_k = 0; polyk_k < " + str(K) + "; ++polyk_k) {\n      const int polyk_q = " + tid +
           " + " + str(threads) + " * polyk_k;\n      if (polyk_q >= " + str(planePoints) + ") break;\n" + body + "    }\n";
  };
  auto fetch = [&](const std::string &planeIndex) {
    std::string body = "      const polyk_idx " + names[0] + " = " + planeIndex;
    if (rank == 3)
      body += ", " + names[1] + " = polyk_o1 + polyk_q / " + str(plane[1]) + ", " + names[2] + " = polyk_o2 + polyk_q % " + str(plane[1]) + ";\n";
    else
      body += ", " + names[1] + " = polyk_o1 + polyk_q;\n";
    body += "      " + f + " = " + inTensor + " ? " + p.in + "[" + linearIndex(st.write, inT) + "] : " + padding + ";\n";
    return phase("  {\n" + points(body) + "  }\n");
  };
  auto put = [&](const std::string &planeIndex) {
    return phase("  {\n    " + storage + " *const polyk_dst = polyk_ring[(unsigned)(" + planeIndex + " + " + str(p.below[0]) + ") % " + str(slots) + "u];\n" +
                 points("      polyk_dst[polyk_q] = " + f + ";\n") + "  }\n");
  };
  const std::string barrier = cuda ? "  __syncthreads();\n" : "";
  std::string o = "/* Streamed (kernel[0] -> stream[" + str(p.chunk) + "]): a block walks " + str(p.chunk) + " planes along " + names[0] +
                  ", a tile of each plane a block; the planes of " + p.in + " its reads reach (" + str(slots - 1) + ", and the next) stay in a ring in shared memory, each copied once. */\n";
  const std::string gridOuter = rank == 3 ? "z" : "y";
  if (cuda) {
    o += "__global__ void __launch_bounds__(" + str(threads) + ") " + fn + "(" + affineKernelParams(s, true) + ") {\n";
    o += "  __shared__ " + storage + " polyk_ring[" + str(slots) + "][" + str(planePoints) + "];\n  " + storage + " polyk_f[" + str(K) + "];\n  {\n";
  } else {
    o += "static void " + fn + "(" + affineKernelParams(s, false) + ", const polyk_idx polyk_blocks[3]) {\n";
    o += "  static " + storage + " polyk_ring[" + str(slots) + "][" + str(planePoints) + "], polyk_f[" + str(threads) + "][" + str(K) + "];\n";
    o += "  for (polyk_idx bz = 0; bz < polyk_blocks[2]; ++bz)\n  for (polyk_idx by = 0; by < polyk_blocks[1]; ++by)\n";
    o += "  for (polyk_idx bx = 0; bx < polyk_blocks[0]; ++bx) {\n  const struct { polyk_idx x, y, z; } blockIdx = {bx, by, bz};\n";
  }
  o += "  const polyk_idx polyk_i0 = (polyk_idx)blockIdx." + gridOuter + " * " + str(p.chunk) + ";\n";
  for (unsigned r = 1; r < rank; ++r)
    o += "  const polyk_idx polyk_o" + str(r) + " = (polyk_idx)blockIdx." + axes[r - 1] + " * " + str(p.tile[r]) + " - " + str(p.below[r]) + ";\n";
  o += "  /* The planes before the first's reach ends, and the first's last fetched. */\n";
  o += "  for (int polyk_p = -" + str(p.below[0]) + "; polyk_p < " + str(p.above[0]) + "; ++polyk_p) {\n" + fetch("polyk_i0 + polyk_p") + put("polyk_p") +
       "  }\n";
  o += fetch("polyk_i0 + " + str(p.above[0]));
  o += "  for (int polyk_c = 0; polyk_c < " + str(p.chunk) + "; ++polyk_c) {\n";
  o += "  if (polyk_i0 + polyk_c >= " + outT.shape[0].str() + ") break; /* (the block's planes: all its threads alike) */\n";
  o += put("polyk_c + " + str(p.above[0]));
  o += "  if (polyk_c + 1 < " + str(p.chunk) + ")\n" + fetch("polyk_i0 + polyk_c + " + str(p.above[0] + 1)) + barrier;
  // A thread's points of the plane: (thread + block * a) along each dim, a < tile / block.
  long long M = 1;
  std::vector<long long> per(rank, 1);
  for (unsigned r = 1; r < rank; ++r) M *= (per[r] = p.tile[r] / p.block[r]);
  std::string compute = std::string(cuda ? "  #pragma unroll\n" : "") + "  for (int polyk_m = 0; polyk_m < " + str(M) + "; ++polyk_m) {\n";
  long long after = M;
  for (unsigned r = 1; r < rank; ++r) {
    after /= per[r];
    std::string a = after == 1 ? "polyk_m" : "(polyk_m / " + str(after) + ")";
    if (r > 1) a = "(" + a + " % " + str(per[r]) + ")";
    compute += "    const int polyk_l" + str(r) + " = (int)threadIdx." + axes[r - 1] + (per[r] == 1 ? "" : " + " + str(p.block[r]) + " * " + a) + ";\n";
  }
  compute += "    const polyk_idx " + names[0] + " = polyk_i0 + polyk_c";
  for (unsigned r = 1; r < rank; ++r) compute += ", " + names[r] + " = polyk_o" + str(r) + " + " + str(p.below[r]) + " + polyk_l" + str(r);
  compute += ";\n    if (" + inDomain + ") " + p.out + "[" + linearIndex(st.write, outT) + "] = " + value + ";\n  }\n";
  o += phase(compute) + "  }\n  }\n}\n\n";

  std::string grid[3] = {"1", "1", "1"};
  grid[gridOuter[0] - 'x'] = "(" + outT.shape[0].str() + " + " + str(p.chunk - 1) + ") / " + str(p.chunk);
  for (unsigned r = 1; r < rank; ++r) grid[axes[r - 1][0] - 'x'] = "(" + outT.shape[r].str() + " + " + str(p.tile[r] - 1) + ") / " + str(p.tile[r]);
  std::string dims = rank == 3 ? str(p.block[2]) + ", " + str(p.block[1]) + ", 1" : str(p.block[1]) + ", 1, 1";
  o += launcher(s, cuda, grid, cuda ? cudaLaunch(fn, grid, dims) : fn + "(", "", iterateCode(s, cuda));
  return o;
}

std::string emitRegisterStreamed(const Scop &s, const StreamPlan &p, Dialect d) {
  const bool cuda = d == Dialect::Cuda;
  const ScopStatement &st = *p.statement;
  const TensorDecl &inT = *s.tensor(p.in), &outT = *s.tensor(p.out);
  const unsigned rank = (unsigned)p.block.size(), last = rank - 1;
  const long long V = p.vector;
  const std::string storage = cuda ? cudaStorageType(inT.type) : cStorageType(inT.type);
  const std::string outStorage = cuda ? cudaStorageType(outT.type) : cStorageType(outT.type);
  const std::string fn = (s.kernels.empty() ? s.name : s.kernels.front().name) + "_rstream";
  StencilText text = stencilText(s, st, inT, outT, storage, d);
  const std::vector<std::string> &names = text.names;

  // The rows the reads of `in` reach: (offset along dim 0, offset along the middle dim) -> the
  // reach along the innermost dim. A row carried from the plane before (the row one further
  // along dim 0 at the same middle offset) shares its chain's window: the union of the chain's reach.
  using Row = std::pair<long long, long long>;
  std::map<Row, std::pair<long long, long long>> reachOfRow; // row -> (left, right)
  for (const std::string &r : st.reads)
    if (isl::map(islCtx(), r).range_tuple_id().name() == p.in) {
      std::vector<long long> c = *shift(r, rank);
      Row row{c[0], rank == 3 ? c[1] : 0};
      auto &lr = reachOfRow[row];
      lr.first = std::max(lr.first, -c[last]);
      lr.second = std::max(lr.second, c[last]);
    }
  std::map<long long, std::pair<long long, long long>> chain; // middle offset -> window reach
  for (const auto &[row, lr] : reachOfRow) {
    auto &w = chain[row.second];
    w.first = std::max(w.first, lr.first);
    w.second = std::max(w.second, lr.second);
  }
  std::map<Row, std::string> reg;
  for (const auto &[row, lr] : reachOfRow) reg[row] = "polyk_w" + str((long long)reg.size());
  auto carried = [&](const Row &row) { return reachOfRow.count({row.first + 1, row.second}) > 0; };
  auto width = [&](const Row &row) { return chain[row.second].first + V + chain[row.second].second; };

  const std::string x0 = "polyk_x0", y = names.size() == 3 ? "polyk_y" : "";
  // Vectors of at most 16 bytes (a run of 8 f32 is two); none where a run is under 4 bytes.
  auto chunkOf = [&](DType t) {
    long long b = dtypeBytes(t), c = std::min(V, 16 / b);
    return c * b >= 4 ? c : 0LL;
  };
  const long long inChunk = chunkOf(inT.type), outChunk = chunkOf(outT.type);
  const std::string inner = inT.shape[last].str();
  // A row's window at plane polyk_i0 + `plane`: V elements from x0 (one vector where aligned), and the reach
  // on either side, each element checked against the tensor (outside it: the padding).
  auto load = [&](const Row &row, const std::string &plane, const std::string &w) {
    const long long left = chain[row.second].first, n = width(row);
    std::string o = "      {\n        const polyk_idx " + names[0] + " = polyk_i0 + " + plane + " + " + str(row.first);
    if (rank == 3) o += ", " + names[1] + " = " + y + " + " + str(row.second);
    o += ";\n        const bool polyk_row = 0 <= " + names[0] + " && " + names[0] + " < " + inT.shape[0].str();
    if (rank == 3) o += " && 0 <= " + names[1] + " && " + names[1] + " < " + inT.shape[1].str();
    o += ";\n        const polyk_idx polyk_at = polyk_base + (" + plane + " + " + str(row.first) + ") * polyk_sp" +
         (rank == 3 ? " + " + str(row.second) + " * polyk_sr" : "") + ";\n";
    const std::string vec = "polyk::Vec<" + storage + ", " + str(inChunk) + ">", loadVec = "polyk::load_vec<" + str(inChunk) + ">(" + p.in + " + polyk_at";
    const std::string runVectors = "          #pragma unroll\n          for (int polyk_q = 0; polyk_q < " + str(V) + "; polyk_q += " + str(inChunk) + ") {\n" +
                                   "            const " + vec + " polyk_v = " + loadVec + " + polyk_q);\n" +
                                   "            #pragma unroll\n            for (int polyk_e = 0; polyk_e < " + str(inChunk) + "; ++polyk_e) " + w + "[" + str(left) +
                                   " + polyk_q + polyk_e] = polyk_v[polyk_e];\n          }\n";
    const long long right = n - V - left;
    if (cuda && inChunk > 0 && n > V && left <= inChunk && right <= inChunk) {
      // (Away from a row's ends, the reach on either side is one vector each, not element loads.)
      o += "        if (POLYK_ALIGNED && polyk_row && " + x0 + " >= " + str(inChunk) + " && " + x0 + " + " + str(V + inChunk) + " <= " + inner + ") {\n" + runVectors;
      if (left > 0)
        o += "          {\n            const " + vec + " polyk_v = " + loadVec + " - " + str(inChunk) + ");\n            #pragma unroll\n            for (int polyk_e = 0; polyk_e < " +
             str(left) + "; ++polyk_e) " + w + "[polyk_e] = polyk_v[" + str(inChunk - left) + " + polyk_e];\n          }\n";
      if (right > 0)
        o += "          {\n            const " + vec + " polyk_v = " + loadVec + " + " + str(V) + ");\n            #pragma unroll\n            for (int polyk_e = 0; polyk_e < " +
             str(right) + "; ++polyk_e) " + w + "[" + str(left + V) + " + polyk_e] = polyk_v[polyk_e];\n          }\n";
      o += "        } else {\n";
    } else {
      o += "        {\n";
    }
    if (cuda && inChunk > 0) {
      o += "        if (POLYK_ALIGNED && polyk_row && " + x0 + " + " + str(V) + " <= " + inner + ") {\n" + runVectors;
      o += "        } else {\n";
    } else {
      o += "        {\n";
    }
    o += "          " + std::string(cuda ? "#pragma unroll\n          " : "") + "for (int polyk_e = 0; polyk_e < " + str(V) + "; ++polyk_e)\n";
    o += "            " + w + "[" + str(left) + " + polyk_e] = polyk_row && " + x0 + " + polyk_e < " + inner + " ? " + p.in + "[polyk_at + polyk_e] : " + text.padding + ";\n";
    o += "        }\n";
    if (n > V) {
      o += "        " + std::string(cuda ? "#pragma unroll\n        " : "") + "for (int polyk_e = -" + str(left) + "; polyk_e < " + str(n - left) + "; ++polyk_e) {\n";
      o += "          if (polyk_e >= 0 && polyk_e < " + str(V) + ") continue;\n";
      o += "          " + w + "[" + str(left) + " + polyk_e] = polyk_row && " + x0 + " + polyk_e >= 0 && " + x0 + " + polyk_e < " + inner + " ? " + p.in +
           "[polyk_at + polyk_e] : " + text.padding + ";\n        }\n";
    }
    return o + "        }\n      }\n";
  };

  Value v = printValue(text.body, d, [&](const Access &a, size_t k) {
    const TensorDecl &t = *s.tensor(a.tensor);
    if (a.tensor != p.in) return paddedLoad(t, a, loadElement(d, t.type, a.tensor + "[" + linearIndex(st.reads[k], t) + "]"), true);
    std::vector<long long> c = *shift(st.reads[k], rank);
    Row row{c[0], rank == 3 ? c[1] : 0};
    return loadElement(d, inT.type, reg.at(row) + "[" + str(chain[row.second].first + c[last]) + " + polyk_e]");
  }, text.types);
  std::string value = storeValue(d, outT.type, convert(v, computeType(outT.type)));

  std::string body;
  body += "  const polyk_idx polyk_i0 = (polyk_idx)blockIdx." + std::string(rank == 3 ? "z" : "y") + " * " + str(p.chunk) + ";\n";
  body += "  const polyk_idx " + x0 + " = ((polyk_idx)blockIdx.x * " + str(p.block[last]) + " + threadIdx.x) * " + str(V) + ";\n";
  if (rank == 3) body += "  const polyk_idx " + y + " = (polyk_idx)blockIdx.y * " + str(p.block[1]) + " + threadIdx.y;\n";
  // The thread's first point in the tensors (row-major, both of the output's shape: streamRefusal)
  // and the strides of a plane and a row: a row's place is then an addition, not a product.
  body += "  const polyk_idx polyk_sr = " + inT.shape[last].str() + ", polyk_sp = " + (rank == 3 ? inT.shape[1].str() + " * polyk_sr" : std::string("polyk_sr")) + ";\n";
  body += "  const polyk_idx polyk_base = polyk_i0 * polyk_sp + " + (rank == 3 ? y + " * polyk_sr + " : std::string("")) + x0 + ";\n";
  body += "  if (" + x0 + " < " + outT.shape[last].str() + (rank == 3 ? " && " + y + " < " + outT.shape[1].str() : "") + ") {\n";
  // The rows a plane reads first (not carried) are fetched a plane ahead, into `polyk_n...`: their
  // loads are in flight while the plane before is computed.
  for (const auto &[row, w] : reg) {
    body += "    " + storage + " " + w + "[" + str(width(row)) + "];\n";
    if (!carried(row)) body += "    " + storage + " polyk_n" + w.substr(6) + "[" + str(width(row)) + "];\n";
  }
  body += "    /* The first plane's rows. */\n";
  for (const auto &[row, w] : reg) body += load(row, "0", w);
  body += "    for (int polyk_c = 0; polyk_c < " + str(p.chunk) + "; ++polyk_c) {\n";
  body += "      if (polyk_i0 + polyk_c >= " + outT.shape[0].str() + ") break;\n";
  body += "      /* The next plane's first rows. */\n";
  body += "      if (polyk_c + 1 < " + str(p.chunk) + ") {\n";
  for (const auto &[row, w] : reg)
    if (!carried(row)) body += load(row, "polyk_c + 1", "polyk_n" + w.substr(6));
  body += "      }\n";
  body += "      " + outStorage + " polyk_o[" + str(V) + "];\n      bool polyk_in[" + str(V) + "], polyk_all = true;\n";
  body += "      " + std::string(cuda ? "#pragma unroll\n      " : "") + "for (int polyk_e = 0; polyk_e < " + str(V) + "; ++polyk_e) {\n";
  body += "        const polyk_idx " + names[0] + " = polyk_i0 + polyk_c";
  if (rank == 3) body += ", " + names[1] + " = " + y;
  body += ", " + names[last] + " = " + x0 + " + polyk_e;\n";
  body += "        polyk_in[polyk_e] = " + names[last] + " < " + outT.shape[last].str() + (rank == 3 ? " && " + names[1] + " < " + outT.shape[1].str() : "") +
          " && (" + text.inDomain + ");\n";
  body += "        polyk_all = polyk_all && polyk_in[polyk_e];\n";
  body += "        if (polyk_in[polyk_e]) polyk_o[polyk_e] = " + value + ";\n      }\n";
  body += "      {\n        const polyk_idx polyk_at = polyk_base + polyk_c * polyk_sp;\n";
  if (cuda && outChunk > 0) {
    const std::string vec = "polyk::Vec<" + outStorage + ", " + str(outChunk) + ">";
    body += "        if (POLYK_ALIGNED && polyk_all) {\n          #pragma unroll\n          for (int polyk_q = 0; polyk_q < " + str(V) + "; polyk_q += " + str(outChunk) + ") {\n";
    body += "            " + vec + " polyk_v;\n";
    body += "            #pragma unroll\n            for (int polyk_e = 0; polyk_e < " + str(outChunk) + "; ++polyk_e) polyk_v.v[polyk_e] = polyk_o[polyk_q + polyk_e];\n";
    body += "            polyk::store_vec<" + str(outChunk) + ">(" + p.out + " + polyk_at + polyk_q, polyk_v);\n          }\n        } else\n";
  }
  body += "        " + std::string(cuda ? "#pragma unroll\n        " : "") + "for (int polyk_e = 0; polyk_e < " + str(V) + "; ++polyk_e)\n";
  body += "          if (polyk_in[polyk_e]) " + p.out + "[polyk_at + polyk_e] = polyk_o[polyk_e];\n      }\n";
  body += "      /* The next plane's carried rows: each the row one further along " + names[0] + ". */\n";
  for (const auto &[row, w] : reg)
    if (carried(row))
      body += "      " + std::string(cuda ? "#pragma unroll\n      " : "") + "for (int polyk_e = 0; polyk_e < " + str(width(row)) + "; ++polyk_e) " + w +
              "[polyk_e] = " + reg.at({row.first + 1, row.second}) + "[polyk_e];\n";
  for (const auto &[row, w] : reg)
    if (!carried(row))
      body += "      " + std::string(cuda ? "#pragma unroll\n      " : "") + "for (int polyk_e = 0; polyk_e < " + str(width(row)) + "; ++polyk_e) " + w +
              "[polyk_e] = polyk_n" + w.substr(6) + "[polyk_e];\n";
  body += "    }\n  }\n";

  long long threads = 1;
  for (unsigned r = 1; r < rank; ++r) threads *= p.block[r];
  std::string o = "/* Streamed in registers (kernel[0] -> stream[" + str(p.chunk) + "], vector[" + str(V) + "]): a thread walks " + str(p.chunk) +
                  " planes along " + names[0] + " at " + str(V) + " consecutive points along " + names[last] + "; each row of " + p.in +
                  " its reads reach is a window of registers, carried along " + names[0] + " where it can be. */\n";
  if (cuda) {
    o += "template <bool POLYK_ALIGNED>\n__global__ void __launch_bounds__(" + str(threads) + ") " + fn + "(" + affineKernelParams(s, true) + ") {\n";
    o += body + "}\n\n";
  } else {
    o += "static void " + fn + "(" + affineKernelParams(s, false) + ", const polyk_idx polyk_blocks[3]) {\n";
    o += "  for (polyk_idx bz = 0; bz < polyk_blocks[2]; ++bz)\n  for (polyk_idx by = 0; by < polyk_blocks[1]; ++by)\n";
    o += "  for (polyk_idx bx = 0; bx < polyk_blocks[0]; ++bx)\n  for (int polyk_t = 0; polyk_t < " + str(threads) + "; ++polyk_t) {\n";
    o += "  const struct { polyk_idx x, y, z; } blockIdx = {bx, by, bz};\n";
    o += "  const struct { polyk_idx x, y, z; } threadIdx = {polyk_t % " + str(p.block[last]) + ", polyk_t / " + str(p.block[last]) + ", 0};\n";
    o += body + "  }\n}\n\n";
  }
  std::string grid[3] = {"1", "1", "1"};
  grid[rank == 3 ? 2 : 1] = "(" + outT.shape[0].str() + " + " + str(p.chunk - 1) + ") / " + str(p.chunk);
  grid[0] = "(" + outT.shape[last].str() + " + " + str(p.tile[last] - 1) + ") / " + str(p.tile[last]);
  if (rank == 3) grid[1] = "(" + outT.shape[1].str() + " + " + str(p.tile[1] - 1) + ") / " + str(p.tile[1]);
  std::string call = fn + "(";
  if (cuda) {
    // The aligned instance where both tensors start on 16 bytes and their rows hold whole vectors.
    std::string aligned = "(uintptr_t)" + p.in + " % 16 == 0 && (uintptr_t)" + p.out + " % 16 == 0 && (" + inner + ") % " + str(V) +
                          " == 0 && (" + outT.shape[last].str() + ") % " + str(V) + " == 0";
    std::string dims = str(p.block[last]) + ", " + (rank == 3 ? str(p.block[1]) : "1") + ", 1";
    call = "(" + aligned + " ? " + fn + "<true> : " + fn + "<false>)<<<dim3((unsigned)(" + grid[0] + "), (unsigned)(" + grid[1] + "), (unsigned)(" + grid[2] +
           ")), dim3(" + dims + "), 0, stream>>>(";
  }
  o += launcher(s, cuda, grid, call, "", iterateCode(s, cuda));
  return o;
}

std::optional<std::string> stencilKernel(const Scop &s, const EmitOptions &opt, Dialect d) {
  if (std::optional<TimeTilePlan> tt = timeTilePlan(s)) {
    if (opt.partition) throw UsageError("--partition: a time-tiled program (kernel[0] -> time[..]) is not partitioned yet; schedule it with --time-tile=0");
    return emitTimeTiled(s, *tt, d);
  }
  // (A window reduction streams as the stencil it unrolls to: windowAsStencil.)
  std::optional<Scop> hold;
  const Scop &form = stencilForm(s, hold);
  if (std::optional<StreamPlan> sp = streamPlan(form)) {
    // (Under --partition, register streams fall back to the kernel polyk-bind mapped: the
    // partition model describes its blocks. A ring's sizes are the user's own: refused.)
    if (opt.partition && sp->vector > 1) return std::nullopt;
    if (opt.partition) throw UsageError("--partition: a streamed stencil (kernel[0] -> stream[..]) is not partitioned yet; schedule it without --stream");
    return sp->vector > 1 ? emitRegisterStreamed(form, *sp, d) : emitStreamed(form, *sp, d);
  }
  return std::nullopt;
}

} // namespace codegen
} // namespace polyk
