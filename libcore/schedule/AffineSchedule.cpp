// polyk-schedule on the affine path (flatten/Affine.cpp). Each program statement is one kernel
// (a reduction's init, update and store together), in program order; its band is the statement's
// parallel dims (the left-hand side's indices), tiled, and a reduction's update loops over its
// reduced dims inside each point, between the init and the store. isl computes the flow
// dependences and checks the schedule against them: every dependence goes forward, and none
// crosses two points of a kernel's parallel band (they run on different threads).
#include "polyk/Emit.h"
#include "polyk/IntMath.h"
#include "polyk/MapFusion.h"
#include "polyk/Schedule.h"
#include "polyk/TimeTiles.h"

#include "polyk/Isl.h"

#include <isl/schedule.h>
#include <isl/schedule_node.h>
#include <isl/union_map.h>
#include <algorithm>
#include <map>
#include <numeric>
#include <sstream>
#include <stdexcept>

namespace polyk {

namespace {


/// The statements of one kernel: a program statement's scop statements (init, update, store).
std::vector<std::vector<const ScopStatement *>> kernelsOf(const Scop &s) {
  std::vector<std::vector<const ScopStatement *>> out;
  std::string source;
  for (const auto &st : s.statements) {
    if (out.empty() || st.source != source) out.emplace_back();
    out.back().push_back(&st);
    source = st.source;
  }
  return out;
}

size_t parallelDims(const ScopStatement &st) {
  return (size_t)std::count(st.dims.begin(), st.dims.end(), "parallel");
}

/// `[{ S[i, j, k] -> [(i)]; T[i, j] -> [(i)] }, ...]`: dims `first` to `last` - 1 of each statement
/// (parallel dims come first in every statement of a kernel), member m taking dim `order[m]`
/// where an order is given.
isl::multi_union_pw_aff bandOf(const std::vector<const ScopStatement *> &stmts, size_t first, size_t last,
                               const std::vector<size_t> &order = {}) {
  std::ostringstream os;
  os << "[";
  for (size_t i = first; i < last; ++i) {
    size_t m = order.empty() ? i : order[i];
    os << (i > first ? ", " : "") << "{ ";
    bool firstStmt = true;
    for (const ScopStatement *st : stmts) {
      if (st->dims.size() < last) continue;
      os << (firstStmt ? "" : "; ") << st->name << "[";
      for (size_t i = 0; i < st->dims.size(); ++i) os << (i ? ", " : "") << "d" << i;
      os << "] -> [(d" << m << ")]";
      firstStmt = false;
    }
    os << " }";
  }
  os << "]";
  return isl::multi_union_pw_aff(islCtx(), os.str());
}

isl::schedule_node setBandFlags(isl::schedule_node node, bool coincident) {
  isl::schedule_node_band band = node.as<isl::schedule_node_band>();
  for (unsigned m = 0; m < band.n_member(); ++m) band = band.member_set_coincident((int)m, coincident).as<isl::schedule_node_band>();
  return band.set_permutable(coincident ? 1 : 0);
}

/// One kernel's tree: the parallel band (the first `par` dims) over all its statements, then (a
/// reduction) the sequence init, update (its reduced band), store; under --fusion=all, the sequence
/// of every statement, each with its other dims as a band run by the thread.
isl::schedule kernelSchedule(const std::vector<const ScopStatement *> &stmts, const std::vector<size_t> &order, size_t par) {
  isl::ctx ctx = islCtx();
  isl::union_set dom = isl::union_set::empty(ctx);
  for (const ScopStatement *st : stmts) dom = dom.unite(isl::union_set(isl::set(ctx, st->domain)));
  isl::schedule s = isl::schedule::from_domain(dom);
  isl::schedule_node node = s.get_root().child(0);
  if (par > 0) node = setBandFlags(node.insert_partial_schedule(bandOf(stmts, 0, par, order)), true).child(0);
  if (stmts.size() > 1) {
    isl::union_set_list filters(ctx, (int)stmts.size());
    for (const ScopStatement *st : stmts) filters = filters.add(isl::union_set(isl::set(ctx, st->domain)));
    node = isl::manage(isl_schedule_node_insert_sequence(node.release(), filters.release()));
  }
  for (size_t k = 0; k < stmts.size(); ++k) {
    const ScopStatement &st = *stmts[k];
    if (st.dims.size() == par) continue;
    isl::schedule_node leaf = stmts.size() > 1 ? node.child((int)k).child(0) : node;
    leaf = setBandFlags(leaf.insert_partial_schedule(bandOf({&st}, par, st.dims.size())), false);
    node = stmts.size() > 1 ? leaf.parent().parent() : leaf;
  }
  return node.schedule();
}

/// The operands of a reduction's update: its reads that move with the reduced dims (not the
/// accumulator's), as functions of the statement's dims.
std::vector<isl::pw_multi_aff> operands(const ScopStatement &update, size_t par) {
  std::vector<isl::pw_multi_aff> out;
  for (const auto &text : update.reads) {
    isl::map a(islCtx(), text);
    if (isl_map_involves_dims(a.get(), isl_dim_in, par, a.domain_tuple_dim() - par) != isl_bool_true) continue;
    out.push_back(isl::manage(isl_pw_multi_aff_from_map(a.copy())));
  }
  return out;
}

/// Whether some subscript of `read` moves with statement dim `dim`.
bool movesAny(const isl::pw_multi_aff &read, size_t dim) {
  for (unsigned sub = 0; sub < subscriptCount(read); ++sub)
    if (subscriptMoves(read, sub, dim)) return true;
  return false;
}

/// The most elements a read of `update` moves by a step of a parallel dim (a convolution's
/// stride; 1 for stride 1).
long long parallelStride(const ScopStatement &update, size_t par) {
  struct Piece {
    size_t par;
    long long stride = 1;
  } piece{par};
  for (const auto &text : update.reads) {
    isl::pw_multi_aff r = isl::manage(isl_pw_multi_aff_from_map(isl::map(islCtx(), text).release()));
    for (unsigned sub = 0; sub < subscriptCount(r); ++sub)
      isl_pw_aff_foreach_piece(
          r.get_at((int)sub).get(),
          [](isl_set *set, isl_aff *aff, void *user) -> isl_stat {
            Piece &p = *static_cast<Piece *>(user);
            for (size_t d = 0; d < p.par; ++d) {
              isl::val c = isl::manage(isl_aff_get_coefficient_val(aff, isl_dim_in, (int)d)).abs();
              // (A rational or huge coefficient counts as a large stride.)
              p.stride = std::max<long long>(p.stride, c.is_int() && c.le(isl::val(c.ctx(), 1 << 20)) ? c.get_num_si() : 1 << 20);
            }
            isl_set_free(set);
            isl_aff_free(aff);
            return isl_stat_ok;
          },
          &piece);
  }
  return piece.stride;
}

/// A convolution's dims by role (statement dims): the output channels k (they move the filter, not
/// the padded input), the output's rows and columns y and x (the padded input's subscripts that a
/// reduced dim moves too, in the input's order), the input channels c (a reduced dim of the input
/// and the filter outside those subscripts); every other parallel dim is a batch (it moves the
/// input, not the filter). NCHW: n, k, y, x / c, fy, fx; NHWC: y, x, k / fy, fx, c.
struct ConvRoles {
  size_t k = 0, y = 0, x = 0, c = 0;
  long long stride = 0; // parallelStride's; 0: not a convolution
  bool ok = false;
};

ConvRoles convRoles(const Scop &scop, const ScopStatement &update, size_t par) {
  ConvRoles roles;
  std::vector<isl::pw_multi_aff> ops = operands(update, par);
  if (ops.size() != 2) return roles;
  auto padded = [&](const isl::pw_multi_aff &r) {
    isl_id *id = isl_pw_multi_aff_get_tuple_id(r.get(), isl_dim_out);
    const TensorDecl *t = scop.tensor(isl_id_get_name(id));
    isl_id_free(id);
    return t && t->padding.has_value();
  };
  if (padded(ops[0]) == padded(ops[1])) return roles;
  const isl::pw_multi_aff &in = padded(ops[0]) ? ops[0] : ops[1], &filter = padded(ops[0]) ? ops[1] : ops[0];
  const size_t dims = update.dims.size();
  std::vector<size_t> spatial, channels;
  std::vector<bool> window(dims, false);
  for (unsigned sub = 0; sub < subscriptCount(in); ++sub) {
    std::vector<size_t> p, r;
    for (size_t d = 0; d < dims; ++d)
      if (subscriptMoves(in, sub, d)) (d < par ? p : r).push_back(d);
    if (p.size() == 1 && !r.empty()) {
      spatial.push_back(p[0]);
      for (size_t d : r) window[d] = true;
    } else if (p.empty() && r.size() == 1) {
      channels.push_back(r[0]);
    }
  }
  std::vector<size_t> ks;
  for (size_t d = 0; d < par; ++d)
    if (movesAny(filter, d) && !movesAny(in, d)) ks.push_back(d);
  if (spatial.size() != 2 || channels.size() != 1 || ks.size() != 1 || window[channels[0]] || !movesAny(filter, channels[0])) return roles;
  roles.k = ks[0], roles.y = spatial[0], roles.x = spatial[1], roles.c = channels[0];
  for (size_t d = 0; d < par; ++d)
    if (d != roles.k && d != roles.y && d != roles.x && movesAny(filter, d)) return roles;
  roles.ok = roles.y != roles.x;
  if (roles.ok) roles.stride = parallelStride(update, par);
  return roles;
}

/// The order of a register-tiled kernel's parallel band (member -> statement dim), outermost first.
/// The innermost parallel dim stays on x (the output's contiguous dim: its stores coalesce). On y
/// goes a dim that moves no operand x moves (the other side of the product, as GEMM's i beside j),
/// so each thread's register tile reuses the loads of both operands: first one that an operand's
/// innermost subscript moves with (the staging copy then reads whole rows), else the innermost.
/// The other dims keep their order, outside (abc-bda-dc: b, a, c; abcd-aebf-dfce: a, c, b, d).
std::vector<size_t> bandOrder(const ScopStatement &update, size_t par) {
  std::vector<size_t> order(par);
  for (size_t m = 0; m < par; ++m) order[m] = m;
  if (par < 3) return order;
  std::vector<isl::pw_multi_aff> reads = operands(update, par);
  size_t x = par - 1, y = par;
  bool yRow = false;
  for (size_t p = 0; p < x; ++p) {
    bool some = false, shared = false, row = false;
    for (size_t r = 0; r < reads.size(); ++r) {
      if (!movesAny(reads[r], p)) continue;
      some = true;
      shared |= movesAny(reads[r], x);
      unsigned n = subscriptCount(reads[r]);
      row |= n > 0 && subscriptMoves(reads[r], n - 1, p);
    }
    if (!some || shared) continue;
    if (y == par || row || !yRow) y = p, yRow = row;
  }
  if (y == par) return order;
  order.erase(order.begin() + (long)y);
  order.insert(order.end() - 1, y);
  // Just outside y (threads along z where x and y leave room), an operand's row dim.
  for (size_t i = par - 2; i-- > 0;) {
    size_t p = order[i];
    bool row = false;
    for (const auto &r : reads) row |= subscriptCount(r) > 0 && subscriptMoves(r, subscriptCount(r) - 1, p);
    if (!row) continue;
    order.erase(order.begin() + (long)i);
    order.insert(order.end() - 2, p);
    break;
  }
  return order;
}

/// Whether runs along y (statement dim `y`; x on `x`) pay: each operand that y moves and x does
/// not has a reduced dim in its last subscript, so its staged copy, transposed to put y's dim
/// innermost, is loaded in whole vectors along the reduced tile (GEMM's A(i, k): GEMM 4096^3 3645
/// -> 3515 us, ab-bc 460 -> 450). Where its last subscript is a parallel dim of one point a block
/// (abc-bda-dc's A(b, d, a)), the copy is scalar either way and the runs cost (286 -> 293 us;
/// bench/results/2026-11-26-h100-y-runs.txt).
bool yRunsPay(const ScopStatement &update, size_t par, size_t y, size_t x) {
  bool some = false;
  for (const auto &r : operands(update, par)) {
    unsigned n = subscriptCount(r);
    bool movesY = false, movesX = false, reducedLast = false;
    for (unsigned d = 0; d < n; ++d) movesY |= subscriptMoves(r, d, y), movesX |= subscriptMoves(r, d, x);
    for (size_t dim = par; n > 0 && dim < update.dims.size(); ++dim) reducedLast |= subscriptMoves(r, n - 1, dim);
    if (!movesY || movesX) continue;
    if (!reducedLast) return false;
    some = true;
  }
  return some;
}

// The SMs of a card (H100 SXM). The rules below take `sms`, the SMs a kernel's grid is spread
// over: a card's times ScheduleOptions::devices (a program partitioned over N GPUs sees each of its
// kernels' grids shared out N ways, so its blocks fill N cards).
constexpr long long kSMsPerCard = 132;
// Split-K by default (SplitK.h), bench/results/2026-11-26-h100-split-k.txt:
// - a register tile (staged reads) where the grid fills under 3/4 of the card's block slots (2
//   blocks an SM, 1 for 64 points a thread): about 2 waves of slots in all, each share at least
//   kSplitShare reduced iterations, for tiles of 16 points a thread or more. The tile stops
//   shrinking at 4 x 4 points where such shares give a wave of slots (GEMM 229 x 448 x 3658: 64 x
//   64 tiles split 14 ways, 101 -> 66 us); not where they give fewer (93 x 744 x 680: 24 tiles of
//   64 x 64 split 2 ways, 21.8 -> 28.2 us);
// - a point a thread (its reads unstaged: each thread's loop over the reduced band waits on its
//   loads, GEMM 298 x 109 x 490 58 us, 48 x 871 x 606 76 us): shares of kPointShare iterations,
//   at most 16 blocks an SM in all.
constexpr long long kSplitShare = 256, kPointShare = 128;
// Split-C of a convolution (a padded sum, one output a thread): reductions of at least
// kConvSplitLength iterations, shares of about kConvSplitShare, at most kMaxConvSplit blocks a tile.
constexpr long long kConvSplitLength = 2048, kConvSplitShare = 288, kMaxConvSplit = 16;

/// Default sizes of an affine kernel's parallel band (extents at the parameters' values).
/// Plain: 32 threads along the innermost dim (fewer for a shorter one), up to 256 in all with the
/// next dim, one point per thread. Stencil (no reduced dims): the same, with 4 consecutive points
/// of the outer dim a thread. Registers (reduced dims: GEMM, contractions): 16 x 16 threads, each
/// owning a register tile of up to 8 points along x and y (the reduction loop
/// runs outside it, so each operand loaded serves the tile's other points), at most 64 points,
/// shrunk while the grid would have fewer blocks than SMs. Outer dims fold into the grid's
/// z, their tiles doubled while z would exceed 65535 blocks.
enum class Shape { Plain, Stencil, Registers, Window };

/// Whether polyk-bind can fold a band's members before its last two into the grid's z and the
/// block's: at most 65535 blocks and 64 threads.
bool withinLaunchLimits(const std::vector<long long> &extent, const std::vector<long long> &tile, const std::vector<long long> &block,
                        size_t par) {
  long long z = 1, threadsZ = 1;
  for (size_t m = 0; m + 2 < par; ++m) z *= (extent[m] + tile[m] - 1) / tile[m], threadsZ *= block[m];
  return z <= 65535 && threadsZ <= 64;
}

/// A 1 x 1 convolution's tiles (no window: a product over the input channels, as a GEMM's of
/// output channels by pixels): 64 output channels a block, 4 a thread, by about 32 pixels: rows of
/// up to 16 whole, 2 a thread along y; longer rows in tiles of at most 32, 2 a thread along x;
/// 16 input channels a staged tile. Where that grid fills under a wave of SMs, 32 output channels
/// a block, 2 a thread, 32 input channels a tile; where it fills 2.5 waves with a long reduction,
/// 4 x 4 points a thread (below). Split as the GEMM path splits a few points a thread (fewer
/// threads than 256 an SM: about 4 waves of 2 blocks an SM, shares of kSplitShare channels).
/// H100, bench/results/2026-11-27-h100-conv1x1.txt (fitted on ResNet-50's 15 layers and 6 drawn at
/// random; the conv tiles' 2 x 2 x 2 points read 2 operands an FMA): ResNet-50's 0.56 -> 1.46x
/// cuDNN, 16 layers drawn afresh 0.78 -> 1.14x, as fast as the same products written as GEMMs.
/// False (sz untouched) where the tiles exceed the grid's or the block's limits.
bool pointwiseSizes(const std::vector<long long> &extent, long long channels, size_t par, size_t reducedDims, const ConvRoles &roles,
                    long long sms, KernelSizes &sz) {
  const long long oy = extent[roles.y], ox = extent[roles.x];
  // The largest divisor of the row from `hi` down to `lo`, or 0.
  auto divisor = [&](long long hi, long long lo) {
    for (long long t = hi; t >= lo; --t)
      if (ox % t == 0) return t;
    return 0LL;
  };
  // 16 threads along k with `pk` channels each; rows of `ty` and `tx` outputs, `py` and `px` a thread.
  auto place = [&](KernelSizes &out, long long pk, long long ty, long long py, long long tx, long long px, long long reduce) {
    out.tile.assign(par, 1), out.block.assign(par, 1);
    out.tile[roles.k] = 16 * pk, out.block[roles.k] = 16;
    out.tile[roles.y] = ty, out.block[roles.y] = ty / py;
    out.tile[roles.x] = tx, out.block[roles.x] = tx / px;
    out.split = 0;
    out.reduce.assign(reducedDims, 1);
    out.reduce[0] = std::max<long long>(1, std::min(channels, reduce));
  };
  auto tiles = [&](long long pk, long long reduce, KernelSizes &out) {
    const long long pixels = 32, perThread = 2, wide = pixels / perThread;
    // (Rows of up to 16 outputs whole, 2 rows a thread; longer rows in the fewest tiles of at most
    // 32, 2 consecutive outputs a thread (55 as 2 x 28, not 3 x 22: 42.7 -> 28.1 us), where that
    // leaves 12 threads or more along x; else tiles of the row's largest divisor from 8 to 16
    // threads, or of 16 (36 as 2 x 24, not 2 x 18: 12.6 against 15.3 us; 41 as 2 x 32, not 2 x 22:
    // 15.0 against 18.5).)
    const long long n = (ox + pixels - 1) / pixels;
    long long px = ox > wide ? perThread : 1, tx = ((ox + n - 1) / n + px - 1) / px * px;
    if (px > 1 && tx / px < 12) {
      const long long t16 = divisor(wide, 8) ? divisor(wide, 8) : wide, p16 = ox >= t16 * perThread ? perThread : 1;
      // (Not where it takes more tiles: 17 as one of 18, not 16 + 1.)
      if ((ox + t16 * p16 - 1) / (t16 * p16) <= n) px = p16, tx = t16 * p16;
    }
    const long long py = perThread / px;
    const long long ty = std::min(std::max(py, pixels / tx / py * py), (oy + py - 1) / py * py);
    place(out, pk, ty, py, tx, px, reduce);
    out.vector = 1;
    long long blocks = 1, threads = 1;
    for (size_t m = 0; m < par; ++m) blocks *= (extent[m] + out.tile[m] - 1) / out.tile[m], threads *= out.block[m];
    if (blocks * threads < sms * 256) {
      const long long slots = 2 * sms, tilesC = (channels + reduce - 1) / reduce;
      long long S = std::min({(4 * slots + blocks - 1) / blocks, tilesC, channels / kSplitShare, kMaxConvSplit});
      if (S >= 2) out.split = S;
    }
    return blocks;
  };
  // A grid of 2.5 waves or more unsplit, with a long reduction (256 channels or more): 4 x 4 points a thread,
  // 4 output channels by 4 consecutive pixels along x where the tile's row divides by 4 (read as
  // one vector), else 2 or 1 along x and the rest along y; rows of up to 32 whole, longer ones in
  // tiles of their largest divisor from 16 to 32, else 32; about 64 pixels a block (H100: 419 x
  // 631 x 34^2 79.2 -> 57.2 us, 727 x 500 x 53^2 156.5 -> 126.2, batch 8 of 512 x 1024 x 14^2
  // 129.3 -> 109.8; 256 x 64 x 56^2, short, 13.6 against 14.0).
  auto deep = [&](KernelSizes &out) {
    const long long tx = ox <= 32 ? ox : divisor(32, 16) ? divisor(32, 16) : 32;
    const long long px = tx % 4 == 0 ? 4 : tx % 2 == 0 ? 2 : 1, py = 4 / px;
    place(out, 4, std::min(std::max(py, 64 / tx / py * py), (oy + py - 1) / py * py), py, tx, px, 16);
    out.vector = px;
  };
  KernelSizes best;
  long long blocks = tiles(4, 16, best);
  if (blocks * std::max<long long>(1, best.split) < sms) tiles(2, 32, best);
  else if (2 * blocks >= 5 * sms && channels >= 256) deep(best);
  // (The member before the last takes the grid's y: at most 65535 blocks.)
  if (!withinLaunchLimits(extent, best.tile, best.block, par) ||
      (par >= 2 && (extent[par - 2] + best.tile[par - 2] - 1) / best.tile[par - 2] > 65535))
    return false;
  sz.tile = best.tile, sz.block = best.block, sz.vector = best.vector, sz.split = best.split, sz.reduce = best.reduce;
  return true;
}

/// A convolution's register tiles (a padded sum over k, y, x; CNNOpt's RS kernel as polyk's
/// register tiles over staged copies), and split-C (CNNOpt §3.2's tail effect) where their grid
/// is short of blocks. H100, bench/results/2026-11-27-h100-conv-fit.txt (each layer's variants
/// timed beside its old defaults in one call):
/// - Wide (the grid has 96 blocks or more at 32 x 8 x 32 outputs): 32 x 8 x 32 outputs a block of 4
///   x 8 x 8 threads, each owning 8 output channels x 4 consecutive x (polyk-bind's blocked
///   points: the filter's staged copy has k innermost, read as float4s; the 6 inputs of a row of
///   the window serve the 4 outputs), the input channels 4 a staged tile. Rows of up to 40 take
///   one tile (Y12's 34: 36 wide, 7 rows a tile, 302 -> 174 us; Y18's 17: 20 x 6, 332 -> 185 split
///   2 ways); wider rows keep 32 (36 or 40 wide: Y2 106 -> 145 / 119, Y8 154 -> 197 / 202).
/// - Narrow (fewer blocks): 8 x 8 x 32 outputs a block of 4 x 4 x 16 threads, 2 x 2 x 2 points
///   each (R9's exhaustive search ranked it first; D1-D6, R2, R6 1.04-1.25x over 1 x 8 x 32
///   threads of 8 channels), the input channels 8 a tile.
/// - Rows of fewer than 14 outputs (R10, R12: 7), and rows of up to 32 where the filter spans
///   under 3 strides (R4, R7: 3 x 3 at stride 2): whole rows, up to 64 pixels a block, 4 threads of
///   2 channels each along k (R12 split 4 ways 135 -> 44 us; R10 133 -> 53; R7 78 -> 30 split 2
///   ways; R4 39.6 -> 28.1).
/// - Other strided convs: the wide tiles where the filter spans 3 strides or more (R1's 7 x 7 at
///   stride 2: 59 -> 23 us, each thread's 4 outputs reuse its row of 13 inputs); else one output a
///   thread (3 x 3 at stride 2 with wide tiles: R4 39 -> 88, R7 78 -> 115).
/// - Split-C: the input channels' tiles shared out over S blocks, S about 2 waves of the card's
///   SMs over the grid's blocks, each share at least kConvSplitShare iterations (R9 70 -> 40 us at
///   4 ways, D6 and R6 38 -> 25.5 at 2, Y18 248 -> 185 at 2).
void convSizes(const std::vector<long long> &extent, const std::vector<long long> &updateExtents, size_t par, const ConvRoles &roles,
               long long reducedIterations, long long sms, KernelSizes &sz) {
  const size_t K = roles.k, Y = roles.y, X = roles.x;
  // Tiles by role (k, y, x); a batch's dims take one point a block.
  auto place = [&](long long k, long long y, long long x) {
    std::vector<long long> v(par, 1);
    v[K] = k, v[Y] = y, v[X] = x;
    return v;
  };
  auto blocks = [&](const std::vector<long long> &tile) {
    long long b = 1;
    for (size_t m = 0; m < par; ++m) b *= (extent[m] + tile[m] - 1) / tile[m];
    return b;
  };
  const long long oy = extent[Y], ox = extent[X];
  // (polyk-bind puts the band's innermost member on threadIdx.x: x or k, never a batch, whose one
  // point a block would leave the warps' accesses uncoalesced; an empty output takes no tiles.)
  if ((X != par - 1 && K != par - 1) || oy < 1 || ox < 1) return;
  // The filter's widest dim and its window (the reduced dims but the input channels).
  long long filter = 1, window = 1;
  for (size_t d = par; d < updateExtents.size(); ++d)
    if (d != roles.c) filter = std::max(filter, updateExtents[d]), window *= std::max<long long>(1, updateExtents[d]);
  // (The wide tiles' 4 consecutive outputs a thread run along x: x innermost, as NCHW has it.)
  const bool xInner = X == par - 1;
  // (Else, a layout whose tiles it cannot take, the conv tiles below.)
  if (window == 1 && xInner && roles.c == par && pointwiseSizes(extent, updateExtents[roles.c], par, updateExtents.size() - par, roles, sms, sz))
    return;
  // (A filter under 3 strides gives a thread's consecutive outputs few inputs in common.)
  const long long stride = roles.stride;
  const bool sparse = stride > 1 && filter < 3 * stride;
  const bool shortRows = ox < 14 || (sparse && ox <= 32);
  // (96 blocks on the H100's 132 SMs; a grid shared over --devices N cards needs N times more.)
  const bool rs = !shortRows && xInner && blocks(place(32, 8, 32)) * kSMsPerCard >= 96 * sms;
  if (sparse && !shortRows) return;
  std::vector<long long> tile, block;
  if (shortRows) {
    long long ty = std::min(oy, std::max<long long>(1, 64 / ox));
    tile = place(8, ty, ox), block = place(4, ty, ox);
    // A batch of such images at stride 1: 2 images a thread, so each staged filter tile serves
    // twice the pixels (H100, batch 8: R12 304 -> 229 us, 384 x 192 x 9^2 191 -> 151, 640 x 320 x
    // 12^2 686 -> 570; batch 4 of R12 160 -> 119 split 2 ways; at stride 2 slower: R10 431 -> 514;
    // bench/results/2026-11-27-h100-conv-batch-points.txt).
    for (size_t m = 0; m < par && stride == 1; ++m)
      if (m != K && m != Y && m != X && extent[m] >= 2) {
        tile[m] = 2;
        break;
      }
  } else if (rs) {
    auto cover = [](long long n, long long t) { return (n + t - 1) / t * t; };
    long long tx = ox <= 40 ? (ox + 3) / 4 : 8, ty = 8;
    if (oy <= 40)
      for (long long t : {7, 6})
        if (cover(oy, t) < cover(oy, ty)) ty = t;
    tile = place(32, ty, 4 * tx), block = place(4, ty, tx);
  } else {
    tile = place(8, 8, 32), block = place(4, 4, 16);
  }
  if (!withinLaunchLimits(extent, tile, block, par)) return;
  sz.tile = tile;
  sz.block = block;
  sz.vector = rs ? 4 : 1;
  sz.reduce.assign(updateExtents.begin() + (long)par, updateExtents.end());
  // The input channels a staged tile, by the filter's size: about 36 window iterations a tile
  // for the wide tiles (a 3 x 3 filter 4 channels, 1 x 1 8), 128 for the others (3 x 3: 8,
  // 5 x 5: 4), at most 8. H100, bench/results/2026-11-27-h100-conv-rs-channel-tiles.txt: 1 x 1
  // layers at 4 / 8 / 16 / 32 channels, 727 x 500 x 53^2 217 / 163 / 192 / 241 us, 993 x 864 x
  // 29^2 157 / 115 / 132 / 182; 5 x 5 layers at 8 / 4 / 2, 90 x 28 x 48^2 51.6 / 39.1 / 42.0, 43 x
  // 39 x 53^2 58.1 / 34.7 / 39.8; Y12 at 2 / 4 / 8 300 / 307 / 375.
  long long channels = 1;
  while (channels < 8 && 2 * channels * window <= (rs ? 36 : 128)) channels *= 2;
  long long &c = sz.reduce[roles.c - par];
  c = std::max<long long>(1, std::min<long long>(c, channels));
  long long tilesC = (updateExtents[roles.c] + c - 1) / c;
  long long S = std::min({2 * sms / std::max<long long>(1, blocks(tile)), tilesC, reducedIterations / kConvSplitShare, kMaxConvSplit});
  // (Split-K shares out the first reduced member's tiles: the input channels only where they come
  // first, as in NCHW's c, fy, fx; NHWC's fy, fx, c stays whole.)
  if (S >= 2 && roles.c == par) sz.split = S;
}

/// `reducedIterations` (0: none): a sum's reduced iterations; where their shares of kSplitShare
/// give 4 x 4-point tiles 2 waves of blocks, the register tile stops shrinking there, and
/// scheduleAffine splits its reduced band over blocks instead.
KernelSizes affineSizes(const std::vector<long long> &extent, Shape shape, long long reducedIterations, long long sms) {
  bool reduction = shape == Shape::Registers;
  KernelSizes s;
  size_t n = extent.size();
  s.tile.assign(n, 1);
  s.block.assign(n, 1);
  if (n == 0) return s;
  if (n == 1) {
    s.block[0] = s.tile[0] = std::min<long long>(256, std::max<long long>(32, pow2Ceil(extent[0])));
    return s;
  }
  if (shape == Shape::Window) {
    // 64 x 64 outputs a block of 8 x 32 threads (Gaussian2D 8192^2: 527 -> 268 us; 32 x 64 292,
    // 128 x 32 269, 64 x 128 351; bench/results/2026-11-24-h100-gaussian-window.txt).
    s.block = {8, 32};
    s.tile = {std::max<long long>(8, std::min<long long>(64, pow2Ceil(extent[0]))),
              std::max<long long>(32, std::min<long long>(64, pow2Ceil(extent[1])))};
    return s;
  }
  // A reduction's short innermost dim (N-body's 3 coordinates) lies whole in each thread's
  // register tile: its points share the work that does not depend on it (the distance), and no
  // thread idles (4 threads along it, one idle: 62.0 ms; whole: see docs/affine.md).
  bool wholeX = reduction && extent[n - 1] <= 4;
  long long bx = wholeX ? 1 : std::min<long long>(reduction ? 16 : 32, pow2Ceil(extent[n - 1]));
  long long by = std::min<long long>(256 / bx, pow2Ceil(extent[n - 2]));
  if (reduction && !wholeX) by = std::min<long long>(by, 16);
  if (wholeX) {
  } else if (reduction && n > 2 && pow2Ceil(extent[n - 1]) <= bx) {
    // A short x: 2 points a thread along it, 8 along y, so the tile still reuses loads
    // (abcdef-gdab-efgc: 16 x 16 outputs as 8 x 2 threads, 16 more along z: 122 us; 16 x 4
    // threads 203 us; bench/results/2026-11-24-h100-contraction-sizes.txt).
    bx = std::max<long long>(1, bx / 2);
    by = std::max<long long>(1, std::min<long long>(by, pow2Ceil(extent[n - 2]) / 8));
  } else if (reduction && extent[n - 2] % 8 == 0 && extent[n - 2] < 4 * by) {
    // A y of a few whole blocks of 8: 8 threads with 4 to 7 points each (abcd-aebf-dfce's 48: 6,
    // with 2 threads along z, 1368 us; 16 threads with 3 points 1523 us).
    by = 8;
  }
  s.block[n - 1] = s.tile[n - 1] = bx;
  if (wholeX) s.tile[n - 1] = extent[n - 1];
  s.block[n - 2] = s.tile[n - 2] = by;
  if (reduction) {
    auto blocks = [&] {
      long long b = 1;
      for (size_t m = 0; m < n; ++m) b *= (extent[m] + s.tile[m] - 1) / s.tile[m];
      return b;
    };
    // Register tiles along x and y only: along the outer (z) members too, isl took seconds to
    // build the kernels of a 6-dim contraction (abcdef-gdab-efgc: 1.2 s, 10 s under ASan).
    // (An extent of a few blocks but not a power of 2 takes whole blocks: abcd-aebf-dfce's 48 is
    // 3 points of 16 threads, not 4 with one always outside.)
    for (size_t m = n - 2; m < (wholeX ? n - 1 : n); ++m)
      for (long long r = 8; r > 1; r /= 2)
        if (extent[m] != pow2Ceil(extent[m]) && extent[m] % s.block[m] == 0 && extent[m] / s.block[m] <= r &&
            extent[m] / s.block[m] > r / 2) {
          s.tile[m] = extent[m];
          break;
        } else if (s.block[m] * r <= pow2Ceil(extent[m])) {
          s.tile[m] = s.block[m] * r;
          break;
        }
    // Fewer than 256 threads: the next member outside takes threads along z (bandOrder puts there
    // a dim along which an operand's rows run, for its staging copy: abcdef-gdab-efgc's c).
    if (n > 2 && bx * by < 256)
      s.block[n - 3] = s.tile[n - 3] = std::min<long long>(256 / (bx * by), pow2Ceil(extent[n - 3]));
    // At most 64 accumulators a thread (registers), outer members' tiles halved first.
    auto points = [&] {
      long long p = 1;
      for (size_t m = 0; m < n; ++m) p *= s.tile[m] / s.block[m];
      return p;
    };
    auto halve = [&](size_t m) { s.tile[m] = s.block[m] * std::max<long long>(1, s.tile[m] / s.block[m] / 2); };
    for (size_t m = 0; m < n && points() > 64; ++m)
      while (points() > 64 && s.tile[m] > s.block[m]) halve(m);
    // Fewer blocks than SMs: halve the largest register tile, inner members first. (The operands
    // of a reduced tile are staged in shared memory, so a large tile rereads little: GEMM 4096^3
    // with 8 x 8 points 5288 us, 4 x 4 6181 us; 1024^3 with 4 x 4 points, 256 blocks, 126 us, 4 x 2
    // 155 us; bench/results/2026-11-24-h100-gemm-sizes.txt.)
    long long threads = 1;
    for (long long b : s.block) threads *= b;
    // (And fewer threads than 256 a SM: N-body's blocks of 16 x 4 threads with 8 points each,
    // 512 blocks, ran at 148 ms, 72 ms with 4 points.)
    bool stopChecked = false;
    while (blocks() < sms || blocks() * threads < sms * 256) {
      // (Checked once, at the first tile of 16 points or fewer; it stops only at 16, where
      // scheduleAffine's split applies: 16 points or more, under 3/4 of 2 blocks an SM.)
      if (reducedIterations > 0 && !wholeX && points() <= 16 && !stopChecked) {
        stopChecked = true;
        if (points() == 16 && 4 * blocks() < 3 * 2 * sms && blocks() * (reducedIterations / kSplitShare) >= 2 * sms) break;
      }
      size_t best = n;
      for (size_t m = wholeX ? n - 1 : n; m-- > 0;)
        if (s.tile[m] > s.block[m] && (best == n || s.tile[m] / s.block[m] > s.tile[best] / s.block[best])) best = m;
      if (best == n) break;
      halve(best);
    }
    // 8 x 8 points run one block an SM: where the last wave of blocks would leave most SMs idle
    // (the grid's blocks fill under 70% of its waves), 8 x 4 points, two blocks an SM, halve the
    // tail. H100 (bench/results/2026-11-26-h100-gemm-waves.txt): GEMM 1509 x 1521 x 837 (144
    // blocks of 8 x 8: 55% of 2 waves) 223 -> 187 us, 1672 x 1414 x 1010 (64%) 274 -> 223, but
    // 2154 x 1499 x 1066 (77%) 290 against 302, 2330 x 1662 x 1613 (94%) 430 against 454.
    if (!wholeX && points() == 64 && s.tile[n - 1] / s.block[n - 1] == 8 && s.tile[n - 2] / s.block[n - 2] == 8) {
      long long b = blocks(), waves = (b + sms - 1) / sms;
      if (b < 7 * waves * sms / 10) s.tile[n - 1] /= 2;
    }
  }
  if (shape == Shape::Stencil && n > 2) {
    // A stencil's outer dim: 4 consecutive points a thread (unrolled: the loads of the planes
    // between them are shared).
    s.tile[n - 3] = std::min<long long>(4, pow2Ceil(extent[n - 3]));
  }
  if (n > 2) {
    auto zBlocks = [&] {
      long long z = 1;
      for (size_t m = 0; m + 2 < n; ++m) z *= (extent[m] + s.tile[m] - 1) / s.tile[m];
      return z;
    };
    // (With threads along that member while a block has room: points of their own per thread
    // along z cost isl seconds in 6-dim contractions.)
    while (zBlocks() > 65535 && s.tile[n - 3] < extent[n - 3]) {
      long long threads = 1;
      for (long long b : s.block) threads *= b;
      if (s.tile[n - 3] == s.block[n - 3] && threads * 2 <= 1024) s.block[n - 3] *= 2;
      s.tile[n - 3] *= 2;
    }
  }
  return s;
}

/// Tiles the reduced band below the tiled kernel band `tiles` (the update's, in the sequence
/// init, update, store) by `sizes`; returns the tile band again.
isl::schedule_node tileReducedBand(isl::schedule_node tiles, const std::vector<long long> &sizes) {
  isl::schedule_node seq = tiles.child(0).child(0);
  if (!seq.isa<isl::schedule_node_sequence>()) return tiles;
  int depth = tiles.tree_depth();
  for (int c = 0; c < (int)seq.n_children(); ++c) {
    isl::schedule_node band = seq.child(c).child(0);
    if (!band.isa<isl::schedule_node_band>()) continue;
    isl::schedule_node_band b = band.as<isl::schedule_node_band>();
    if (b.n_member() != sizes.size()) continue;
    isl::multi_val mv = isl::multi_val::zero(bandSpace(b));
    for (unsigned m = 0; m < sizes.size(); ++m) mv = mv.set_at((int)m, isl::val(islCtx(), sizes[m]));
    seq = b.tile(mv).parent().parent();
  }
  return seq.ancestor(seq.tree_depth() - depth);
}

/// A reduced tile's iterations per reduced dim. A reduced dim (other than the innermost) that an
/// operand's innermost subscript moves with takes 8, so that the staging copy reads rows of 32
/// bytes (abcd-aebf-dfce: B(d, f, c, e) along e). The innermost takes about 8 KiB of operands a
/// block reads per tile, between 16 (8 where another reduced dim is tiled) and 256, a power of
/// 2. Per iteration, an operand touches, of each of its tensor's dims, the tile's extent along
/// the parallel dims it moves with (1 for the others), or the reduced tile's; each tensor counts
/// once, at its largest read. GEMM with 64 x 64 tiles reads 512 bytes an iteration (16); N-body's
/// masses and positions about 20 (256: 62.0 ms, 72.4 ms with 16;
/// bench/results/2026-11-24-h100-nbody-reduce-tiles.txt). `tile` and `extent`: per statement dim.
std::vector<long long> reducedTiles(const Scop &scop, const ScopStatement &update, size_t par, const std::vector<long long> &tile,
                                    const std::vector<long long> &extent) {
  size_t n = update.dims.size();
  std::vector<long long> reduce(n - par, 1);
  if (reduce.empty()) return reduce;
  std::vector<isl::pw_multi_aff> reads = operands(update, par);
  bool other = false;
  for (const auto &r : reads) {
    unsigned last = subscriptCount(r) - 1;
    for (size_t d = par; d + 1 < n; ++d)
      if (subscriptCount(r) > 0 && subscriptMoves(r, last, d)) reduce[d - par] = std::min<long long>(8, extent[d]), other = true;
  }
  std::map<std::string, long long> elements;
  for (const auto &r : reads) {
    long long e = 1;
    for (unsigned sub = 0; sub < subscriptCount(r); ++sub) {
      long long along = 1;
      for (size_t d = 0; d + 1 < n; ++d)
        if (subscriptMoves(r, sub, d)) along = std::max(along, d < par ? tile[d] : reduce[d - par]);
      e *= along;
    }
    isl_id *id = isl_pw_multi_aff_get_tuple_id(r.get(), isl_dim_out);
    std::string t = isl_id_get_name(id);
    isl_id_free(id);
    elements[t] = std::max(elements[t], e);
  }
  long long bytes = 0;
  for (const auto &[t, e] : elements) bytes += e * dtypeBytes(scop.tensor(t)->type);
  long long kt = other ? 8 : 16;
  while (kt < 256 && bytes * kt * 2 <= 8192) kt *= 2;
  reduce.back() = std::min<long long>(kt, std::max<long long>(1, extent[n - 1]));
  return reduce;
}

/// A short x (16 or fewer, affineSizes' 2 points a thread along it) reuses few loads of the operands
/// x moves: 4 points a thread along the innermost member beyond z whose dim none of them moves, so
/// each of their loads serves 4 (abcdef-gdab-efgc, d: 100.7 -> 83.4 us on the H100;
/// along e, which B moves, 181.8; bench/results/2026-11-26-h100-contraction-outer-points.txt),
/// where the points stay at most 64 and the grid at least 2 waves of blocks.
void outerPoints(const ScopStatement &update, size_t par, const std::vector<size_t> &order, const std::vector<long long> &extent,
                 long long sms, KernelSizes &sz) {
  if (par < 4 || pow2Ceil(extent[par - 1]) > 16 || sz.tile.size() != par || sz.block.size() != par) return;
  std::vector<isl::pw_multi_aff> reads = operands(update, par);
  long long points = 1, blocks = 1;
  for (size_t m = 0; m < par; ++m) points *= sz.tile[m] / sz.block[m], blocks *= (extent[m] + sz.tile[m] - 1) / sz.tile[m];
  if (points * 4 > 64) return;
  for (size_t m = par - 3; m-- > 0;) {
    if (sz.tile[m] != sz.block[m] || extent[m] < 4 * sz.tile[m]) continue;
    bool shared = true, some = false;
    for (const auto &r : reads) {
      some |= movesAny(r, order[m]);
      shared &= !(movesAny(r, order[par - 1]) && movesAny(r, order[m]));
    }
    if (!some || !shared) continue;
    long long after = blocks / ((extent[m] + sz.tile[m] - 1) / sz.tile[m]) * ((extent[m] + 4 * sz.tile[m] - 1) / (4 * sz.tile[m]));
    if (after < 2 * sms) return;
    sz.tile[m] *= 4;
    return;
  }
}

/// Tiles for a contraction of small extents (the COGENT / CCSD(T) family: abcdef-gdab-efgc's
/// 16s, TCCG's sd_t_d1 / d2): every output member moves exactly one of the two factors, all at
/// most 64, x at most 32. affineSizes tiles x and y only; with such extents that left 2 points a
/// thread, idle threads past odd extents (17 columns as 32) and a block a point of every outer
/// member (random draws at 0.3x einsum, bench/results/2026-11-27-h100-contraction-draw.txt).
/// Here, over several members:
/// - x whole along the threads (one point each): a warp stores whole rows, none idle;
/// - register points along one member of each factor: the member and count (8 down to 4) with
///   the most points over the square of the waste past its extent (24 tiled as 7s: 28 / 24),
///   then a factor's innermost subscript (its copy's rows are
///   read as vectors), then the innermost member;
/// - the other threads, to 256: first along the output's next dim where x leaves a warp's row
///   short (a warp then stores 32 consecutive outputs), then to the factor whose staged tile is
///   smaller, along its members from the output's innermost, each the count with the most threads
///   over the square of its waste (23 as 12s, not 21s).
/// H100 (bench/results/2026-11-27-h100-contraction-short-x.txt): abcdef-gdab-efgc 84.4 -> 71.2 us
/// with one block an SM, 63.1 with two (AffineKernels.cpp: a short reduced loop); e 4 / d 4
/// threads 92.1. Returns whether it applies (sz then set).
bool smallContractionTiles(const Scop &scop, const ScopStatement &update, size_t par, const std::vector<size_t> &order,
                           const std::vector<long long> &extent, long long sms, KernelSizes &sz) {
  if (par < 4 || sz.tile.size() != par || sz.block.size() != par || extent[par - 1] > 32) return false;
  for (size_t m = 0; m < par; ++m)
    if (extent[m] > 64 || extent[m] < 1) return false;
  std::vector<isl::pw_multi_aff> reads = operands(update, par);
  if (reads.size() != 2) return false;
  std::vector<int> factor(par);
  for (size_t m = 0; m < par; ++m) {
    bool a = movesAny(reads[0], order[m]), b = movesAny(reads[1], order[m]);
    if (a == b) return false;
    factor[m] = a ? 0 : 1;
  }
  const size_t x = par - 1;
  const int q = factor[x], p = 1 - q;
  // waste: the share of a tile's points past the extent
  auto waste = [&](long long ext, long long t) { return double((ext + t - 1) / t * t) / double(ext); };
  auto innermostOf = [&](int f, size_t m) {
    unsigned last = subscriptCount(reads[f]) - 1;
    return subscriptMoves(reads[f], last, order[m]);
  };
  KernelSizes s = sz;
  std::fill(s.tile.begin(), s.tile.end(), 1);
  std::fill(s.block.begin(), s.block.end(), 1);
  s.tile[x] = s.block[x] = extent[x];
  std::vector<bool> taken(par, false);
  taken[x] = true;
  for (int f : {p, q}) {
    size_t best = par;
    long long bestPoints = 0;
    double bestScore = 0;
    for (size_t m = x; m-- > 0;) {
      if (taken[m] || factor[m] != f) continue;
      for (long long pts = std::min<long long>(8, extent[m]); pts >= 4; --pts) {
        double w = waste(extent[m], pts), score = pts / (w * w) + (innermostOf(f, m) ? 0.5 : 0.0);
        if (score > bestScore + 1e-9) best = m, bestPoints = pts, bestScore = score;
      }
    }
    if (best == par) return false;
    s.tile[best] = bestPoints;
    taken[best] = true;
  }
  // Threads: the output's dims from the innermost, by the write's subscripts.
  isl::pw_multi_aff write = isl::manage(isl_pw_multi_aff_from_map(isl::map(islCtx(), update.write).release()));
  std::vector<size_t> outward; // members in the output's order, innermost first
  for (unsigned sub = subscriptCount(write); sub-- > 0;)
    for (size_t m = 0; m < par; ++m)
      if (subscriptMoves(write, sub, order[m]) && std::find(outward.begin(), outward.end(), m) == outward.end()) outward.push_back(m);
  long long left = 256 / extent[x];
  auto footprint = [&](int f) {
    long long e = 1;
    for (size_t m = 0; m < par; ++m)
      if (factor[m] == f) e *= s.tile[m];
    return e;
  };
  // Both factors' staged tiles, a reduced step each, within 48 KB at the reduced tile of 16 that
  // reducedTiles starts from (otherwise polyk-bind stages neither and the tuner's space loses
  // the defaults), and at most 64 threads along z (the members outside x and y).
  long long bytes = 1;
  for (const auto &r : reads) {
    isl_id *id = isl_pw_multi_aff_get_tuple_id(r.get(), isl_dim_out);
    const TensorDecl *t = scop.tensor(isl_id_get_name(id));
    isl_id_free(id);
    bytes = std::max<long long>(bytes, t ? dtypeBytes(t->type) : 4);
  }
  const long long stagedLimit = 49152 / (16 * bytes);
  auto give = [&](size_t m, long long most) {
    long long z = 1;
    for (size_t o = 0; o + 2 < par; ++o) z *= s.block[o];
    if (m + 2 < par) most = std::min(most, 64 / z);
    long long t = 1;
    double bestScore = 0;
    for (long long c = std::min(most, extent[m]); c >= 1; --c) {
      s.tile[m] = c;
      bool fits = footprint(0) + footprint(1) <= stagedLimit;
      s.tile[m] = 1;
      double w = waste(extent[m], c), score = c / (w * w);
      if (fits && score > bestScore + 1e-9) t = c, bestScore = score;
    }
    s.tile[m] = s.block[m] = t;
    taken[m] = true;
    left /= t;
  };
  if (extent[x] < 32 && outward.size() >= 2 && !taken[outward[1]] && left > 1) give(outward[1], std::min(left, (32 + extent[x] - 1) / extent[x]));
  while (left > 1) {
    int first = footprint(0) <= footprint(1) ? 0 : 1;
    size_t pick = par;
    for (int f : {first, 1 - first}) {
      for (size_t m : outward)
        if (!taken[m] && factor[m] == f && extent[m] > 1) {
          pick = m;
          break;
        }
      if (pick != par) break;
    }
    if (pick == par) break;
    give(pick, left);
  }
  long long threads = 1, blocks = 1;
  for (size_t m = 0; m < par; ++m) threads *= s.block[m], blocks *= (extent[m] + s.tile[m] - 1) / s.tile[m];
  if (threads < 64 || blocks < sms || footprint(0) + footprint(1) > stagedLimit) return false;
  sz.tile = s.tile;
  sz.block = s.block;
  return true;
}

/// The tensor cores over a batch of small products (`mma[1]`, codegen/Mma.h): where the tile's y
/// and x are their whole extents, from 32 to under 128 (a multiple of 16 along y, 8 along x), each
/// warp of 8 x 4 threads takes the whole y x x tile of one point of the two innermost outer
/// members, 4 x 2 of them a block (8 warps), where each of those members is one that a factor does
/// not move with, so the block's copy of that factor serves its points. The copies may take what
/// the device has (shared[..] at --shared-limit: dynamic shared memory). H100
/// (bench/results/2026-11-26-h100-batched-mma.txt): abcd-aebf-dfce 48^6, tile [4, 2, 48, 48] of
/// [4, 2, 8, 4] threads, 147 KB of copies, 1366 -> 947 us ([2, 2] 1464, [4, 4] 1207, [1, 2]
/// 1116); at 64^6 8095 -> 3799. Not for 16 x 16 (abcdef-gdab-efgc: 8 points a thread, 83 -> 197).
/// Returns whether it applies (the tile, block and shared budget then set).
bool batchedMma(const ScopStatement &update, size_t par, const std::vector<size_t> &order, const std::vector<long long> &extent,
                long long sharedLimit, long long sms, KernelSizes &sz) {
  if (par < 4 || sz.tile.size() != par || sz.block.size() != par) return false;
  const long long Y = sz.tile[par - 2], X = sz.tile[par - 1];
  if (Y != extent[par - 2] || X != extent[par - 1] || Y < 32 || X < 32 || Y >= 128 || X >= 128 || Y % 16 != 0 || X % 8 != 0 ||
      (Y / 8) * (X / 4) > 128)
    return false;
  std::vector<isl::pw_multi_aff> reads = operands(update, par);
  auto reused = [&](size_t m) { // some factor moves with the member, some does not
    bool with = false, without = false;
    for (const auto &r : reads) {
      bool any = false;
      for (unsigned d = 0; d < subscriptCount(r); ++d) any |= subscriptMoves(r, d, order[m]);
      (any ? with : without) = true;
    }
    return with && without;
  };
  const size_t inner = par - 3, outer = par - 4;
  if (!reused(inner) || !reused(outer) || extent[inner] < 2 || extent[outer] < 4) return false;
  KernelSizes b = sz;
  for (size_t m = 0; m + 2 < par; ++m) b.tile[m] = b.block[m] = m == inner ? 2 : m == outer ? 4 : 1;
  b.block[par - 2] = 8, b.block[par - 1] = 4;
  long long blocks = 1;
  for (size_t m = 0; m < par; ++m) blocks *= (extent[m] + b.tile[m] - 1) / b.tile[m];
  if (blocks < sms) return false; // (a wave at least)
  b.vector = b.vectorY = 1;
  b.mma = 1;
  b.shared = sharedLimit;
  sz = b;
  return true;
}

/// Extents of a statement's first `n` dims at the parameters' values.
std::vector<long long> extentsAtDefaults(const Scop &scop, const ScopStatement &st, size_t n) {
  isl::set d = isl::set(islCtx(), st.domain).intersect_params(isl::set(islCtx(), paramDefaults(scop)));
  std::vector<long long> e;
  for (size_t m = 0; m < n; ++m) e.push_back(d.dim_max_val((int)m).get_num_si() + 1);
  return e;
}

} // namespace

bool windowReduction(const ScopStatement &update, size_t par) {
  size_t n = update.dims.size();
  if (n <= par) return false;
  std::vector<bool> window(n - par, false);
  for (const auto &text : update.reads) {
    isl::pw_multi_aff r = isl::manage(isl_pw_multi_aff_from_map(isl::map(islCtx(), text).release()));
    for (unsigned sub = 0; sub < subscriptCount(r); ++sub) {
      bool parallel = false;
      for (size_t d = 0; d < par; ++d) parallel = parallel || subscriptMoves(r, sub, d);
      for (size_t d = par; d < n && parallel; ++d)
        if (subscriptMoves(r, sub, d)) window[d - par] = true;
    }
  }
  return std::count(window.begin(), window.end(), false) == 0;
}

bool blockedPoints(const Scop &s, const ScopStatement &st, size_t parallel) {
  if (st.dims.size() <= parallel) {
    // A stencil: a tensor read at two places (a thread's consecutive points share the reads
    // between them).
    std::map<std::string, std::vector<isl::map>> reads;
    for (const auto &text : st.reads) {
      isl::map r(islCtx(), text);
      auto &seen = reads[r.range_tuple_id().name()];
      for (const auto &other : seen)
        if (!other.is_equal(r)) return true;
      seen.push_back(r);
    }
    return false;
  }
  if (windowReduction(st, parallel)) return true;
  for (const auto &r : st.reads) {
    const TensorDecl *t = s.tensor(isl::map(islCtx(), r).range_tuple_id().name());
    if (t && t->padding.has_value()) return true;
  }
  return false;
}

Scop scheduleAffine(const Scop &scop, const ScheduleOptions &options, std::map<int, KernelSizes> *usedSizes) {
  const long long sms = kSMsPerCard * std::max<long long>(1, options.devices);
  isl::ctx ctx = islCtx();
  std::map<int, KernelSizes> requested = parseSizes(options.sizes);
  // Time tiling by itself (--time-tile auto): an iterated stencil whose sizes give kernel[0] no
  // tile, where the default tile over kAutoTimeTile steps fits (else one step a launch).
  if (options.timeTile < 0 && options.stream <= 0 && scop.iterate.active() && scop.statements.size() == 1 &&
      (!requested.count(0) || (requested[0].tile.empty() && requested[0].time == 0 && requested[0].stream == 0))) {
    unsigned rank = isl::set(ctx, scop.statements.front().domain).tuple_dim();
    if (timeTileRefusal(scop, defaultTimeTile(scop, rank, kAutoTimeTile), kAutoTimeTile).empty()) {
      if (!requested.count(0)) requested[0].vector = requested[0].vectorY = 0; // (as parseSizes leaves what is not given)
      requested[0].time = kAutoTimeTile;
    }
  }
  if (options.stream > 0) {
    if (requested.count(0) && requested[0].stream > 0) throw UsageError("--stream: the sizes give kernel[0] -> stream[..] already");
    if (!requested.count(0)) requested[0].vector = requested[0].vectorY = 0; // (as parseSizes leaves what is not given)
    requested[0].stream = options.stream;
  }
  if (options.timeTile > 0) {
    if (requested.count(0) && requested[0].time > 0) throw UsageError("--time-tile: the sizes give kernel[0] -> time[..] already");
    if (!requested.count(0)) requested[0].vector = requested[0].vectorY = 0; // (as parseSizes leaves what is not given)
    requested[0].time = options.timeTile;
  }
  auto kernels = kernelsOf(scop);
  // --fusion=all: one kernel over the statements' common first dim (a dependence that crosses its
  // instances is refused below).
  bool fuseAll = options.fusion == "all" || options.fusion == "shared", fuseShared = options.fusion == "shared";
  const std::string fusionFlag = "--fusion=" + options.fusion;
  std::vector<std::vector<size_t>> coverSets; // --fusion=shared: each kernel's functions (MapDag)
  if (!options.cover.empty() && !fuseShared) throw UsageError("--fusion-cover applies to --fusion=shared");
  if (fuseAll) {
    std::vector<const ScopStatement *> all;
    for (const auto &k : kernels) all.insert(all.end(), k.begin(), k.end());
    for (const ScopStatement *st : all)
      if (st->dims.empty() || st->dims[0] != "parallel")
        throw UsageError(fusionFlag + ": statement " + st->name + " has no parallel first dim to run its instances over");
    kernels = {all};
    if (fuseShared) {
      // The cover's sets, a kernel each (one set of all by default).
      MapDag dag = mapDag(scop);
      if (options.cover.empty()) {
        coverSets.assign(1, std::vector<size_t>(dag.functions.size()));
        std::iota(coverSets[0].begin(), coverSets[0].end(), size_t(0));
      } else {
        coverSets = parseCover(dag, options.cover);
      }
      kernels.clear();
      for (const auto &set : coverSets) {
        std::vector<const ScopStatement *> k;
        for (size_t f : set)
          for (const auto &name : dag.functions[f].statements) k.push_back(scop.statement(name));
        kernels.push_back(k);
      }
    }
  }
  auto parOf = [&](const std::vector<const ScopStatement *> &k) { return fuseAll ? size_t(1) : parallelDims(*k.front()); };

  // Each kernel's shape, and the order of its band's members.
  std::vector<Shape> shapes;
  std::vector<std::vector<size_t>> orders;
  std::vector<ConvRoles> convs; // a convolution's dims (a padded sum: convRoles); else not ok
  for (const auto &k : kernels) {
    size_t par = parOf(k);
    bool reduction = false, padded = false;
    const ScopStatement *update = nullptr;
    for (const ScopStatement *st : k) {
      if (st->dims.size() > par) reduction = true, update = st;
      for (const auto &r : st->reads) {
        const TensorDecl *t = scop.tensor(isl::map(ctx, r).range_tuple_id().name());
        padded |= t && t->padding.has_value();
      }
    }
    // Register tiles for reductions, except over padded reads (convolutions): there the guarded
    // loads of a tile's points share little, and the tiles measured slower on the H100 (conv Y2
    // 433 -> 859 us, D2 50 -> 76 us; bench/results/2026-11-24-h100-affine-tiles-gpu-check.txt),
    // but for a convolution's own register tiles over staged copies (convs: convSizes, below).
    // A 2-d window reduction (Gaussian2D): register tiles of 8 x 2 points, its reads staged
    // (polyk-bind gives each thread consecutive points, whose windows overlap: --points).
    bool window = reduction && par == 2 && windowReduction(*update, par);
    shapes.push_back(fuseAll ? Shape::Plain : !reduction ? Shape::Stencil : window ? Shape::Window : padded ? Shape::Plain : Shape::Registers);
    convs.push_back(!fuseAll && reduction && padded && !window && par >= 3 ? convRoles(scop, *update, par) : ConvRoles{});
    orders.push_back(shapes.back() == Shape::Registers ? bandOrder(*update, par) : std::vector<size_t>{});
  }

  isl::schedule full;
  for (size_t k = 0; k < kernels.size(); ++k) {
    isl::schedule one = kernelSchedule(kernels[k], orders[k], parOf(kernels[k]));
    full = full.is_null() ? one : isl::manage(isl_schedule_sequence(full.release(), one.release()));
  }

  // Flow dependences in the (untiled) program order.
  isl::union_map writes, reads;
  accessRelations(scop, writes, reads);
  isl::union_access_info info(reads);
  // (Under --fusion=all, in the program's own order, a kernel per statement: in the fused order a
  // read of what a later instance writes would find no earlier write, and no dependence.)
  isl::schedule programOrder = full;
  if (fuseAll) {
    programOrder = isl::schedule();
    for (const auto &k : kernelsOf(scop)) {
      isl::schedule one = kernelSchedule(k, {}, parallelDims(*k.front()));
      programOrder = programOrder.is_null() ? one : isl::manage(isl_schedule_sequence(programOrder.release(), one.release()));
    }
  }
  info = info.set_must_source(writes).set_schedule(programOrder);
  isl::union_map flow = info.compute_flow().may_dependence();
  // The schedule respects them (it is built to): every dependence goes forward in time.
  isl::union_map order = full.get_map();
  isl::union_map timed = flow.apply_domain(order).apply_range(order);
  isl::union_set space = order.range();
  isl::union_map forward = isl::manage(isl_union_set_lex_lt_union_set(space.copy(), space.copy()));
  if (!timed.is_subset(forward)) {
    if (fuseAll)
      throw UsageError(fusionFlag + ": a dependence crosses the instances (a statement reads what a later instance writes): " +
                       islStr(timed.subtract(forward).apply_domain(order.reverse()).apply_range(order.reverse())));
    throw std::logic_error("affine schedule violates a flow dependence");
  }

  // Tile each kernel's parallel band.
  std::map<int, KernelSizes> used;
  for (size_t k = 0; k < kernels.size(); ++k) {
    isl::schedule_node node = full.get_root().child(0);
    if (node.isa<isl::schedule_node_sequence>()) node = node.child((int)k).child(0);
    size_t par = parOf(kernels[k]);
    // Within the kernel, no dependence crosses two points of the parallel band.
    if (par > 0) {
      isl::union_map band = isl::union_map::from(node.as<isl::schedule_node_band>().get_partial_schedule());
      isl::union_map within = flow.intersect_domain(nodeDomain(node)).intersect_range(nodeDomain(node));
      isl::union_map crossing = within.apply_domain(band).apply_range(band);
      if (!crossing.is_subset(isl::union_map(crossing.domain().unite(crossing.range()).identity())))
      {
        if (fuseAll)
          throw UsageError(fusionFlag + ": a dependence crosses the instances (a statement reads what another instance wrote): " +
                           islStr(crossing));
        throw std::logic_error("affine kernel " + std::to_string(k) + ": a dependence crosses its parallel band");
      }
    }
    if (par == 0) {
      used[(int)k] = {};
      full = node.insert_mark(isl::id(ctx, "kernel_" + std::to_string(k))).schedule();
      continue;
    }
    if (fuseShared) {
      // A fused map kernel: its sizes are the map's (mapBlockSizes), its band tiled by the
      // instances a block.
      KernelSizes sz = mapBlockSizes(scop, requested.count((int)k) ? requested[(int)k] : KernelSizes{}, coverSets[k]);
      used[(int)k] = sz;
      isl::schedule_node_band b = node.as<isl::schedule_node_band>();
      node = b.tile(isl::multi_val::zero(bandSpace(b)).set_at(0, isl::val(ctx, sz.tile[0])));
      full = node.insert_mark(isl::id(ctx, "kernel_" + std::to_string(k))).schedule();
      continue;
    }
    Shape shape = shapes[k];
    const std::vector<size_t> &order = orders[k];
    std::vector<long long> extents = extentsAtDefaults(scop, *kernels[k].front(), par);
    if (!order.empty()) {
      std::vector<long long> dims = extents;
      for (size_t m = 0; m < par; ++m) extents[m] = dims[order[m]];
    }
    // The reduction's update, and for a sum with no sizes given for its tiles, split-K's room.
    const ScopStatement *update = nullptr;
    for (const ScopStatement *st : kernels[k])
      if (st->dims.size() > par && !fuseAll) update = st;
    // (Not a bool sum: split-K's partials are read with __ldcg, which CUDA has no bool form of.)
    const TensorDecl *sumOut = update ? scop.tensor(isl::map(islCtx(), update->write).range_tuple_id().name()) : nullptr;
    const bool boolSum = sumOut && sumOut->type == DType::Bool;
    const ScopStatement *summed = update && update->op && *update->op == ReduceOp::Sum && !boolSum ? update : nullptr;
    std::vector<long long> updateExtents = update ? extentsAtDefaults(scop, *update, update->dims.size()) : std::vector<long long>{};
    long long reducedIterations = 1;
    for (size_t d = par; d < updateExtents.size(); ++d) reducedIterations *= updateExtents[d];
    bool userTiles = requested.count((int)k) && (!requested[(int)k].tile.empty() || requested[(int)k].split > 0);
    bool splittable = shape == Shape::Registers && summed && !userTiles;
    KernelSizes sz = affineSizes(extents, shape, splittable ? reducedIterations : 0, sms);
    if (shape == Shape::Registers && update && !userTiles && !order.empty() && !smallContractionTiles(scop, *update, par, order, extents, sms, sz))
      outerPoints(*update, par, order, extents, sms, sz);
    if (auto it = requested.find((int)k); it != requested.end()) {
      if (it->second.time > 0) {
        // Time tiling: a larger tile by default (the widening's share of a tile shrinks with it).
        sz.time = it->second.time;
        if (it->second.tile.empty()) sz.tile = defaultTimeTile(scop, (unsigned)par, sz.time);
        for (size_t m = 0; m < sz.block.size() && m < sz.tile.size(); ++m) sz.block[m] = std::min(sz.block[m], sz.tile[m]);
        std::vector<long long> tile = it->second.tile.empty() ? sz.tile : it->second.tile;
        if (std::string why = timeTileRefusal(scop, tile, sz.time); !why.empty())
          throw UsageError("kernel[" + std::to_string(k) + "] -> time[" + std::to_string(sz.time) + "]: " + why);
      }
      if (it->second.stream > 0) {
        // Streaming: one point of each plane a thread (tile = block), the planes walked in order.
        sz.stream = it->second.stream;
        sz.block = it->second.block.empty() ? defaultStreamBlock((unsigned)par) : it->second.block;
        sz.tile = it->second.tile.empty() ? sz.block : it->second.tile;
        // (Register streams without a tile: V points a thread along x.)
        if (it->second.tile.empty() && it->second.vector > 1) sz.tile.back() = sz.block.back() * it->second.vector;
        if (std::string why = streamRefusal(scop, sz.block, sz.tile, std::max(1LL, it->second.vector)); !why.empty())
          throw UsageError("kernel[" + std::to_string(k) + "] -> stream[" + std::to_string(sz.stream) + "]: " + why);
        if (sz.time > 0) throw UsageError("kernel[" + std::to_string(k) + "]: stream and time: a kernel streams or time-tiles, not both");
      } else {
        if (!it->second.tile.empty()) sz.tile = it->second.tile;
        if (!it->second.block.empty()) sz.block = it->second.block;
      }
    }
    if (shape == Shape::Stencil && par == 2 && extents[0] >= 16 && extents[1] >= 64 && sz.time == 0 && sz.stream == 0 &&
        (!requested.count((int)k) || (requested[(int)k].tile.empty() && requested[(int)k].block.empty()))) {
      // A 2-d stencil (not time-tiled or streamed): 16 x 64 outputs a block of 4 x 64 threads, 4
      // consecutive rows a thread (polyk-bind deals a stencil's points blocked: the rows between
      // them are read once). Hotspot 8192^2 322 -> 277 us, 16384^2 1264 -> 1098 (as 32 x 32 of
      // 8 x 32): 0.97 of the copy floor (bench/results/2026-11-27-h100-stencil-rows.txt).
      sz.block = {4, 64};
      sz.tile = {16, 64};
    }
    if (fuseAll && sz.tile != sz.block)
      throw UsageError("--fusion=all: one instance a thread (a thread's rows of the temporaries are its registers); give tile = block");
    // A register tile's points along x in runs of `vector` consecutive ones (polyk-bind): 4 where
    // a reduction's thread owns 8 or more along x, so each run is read from the staged copy as one
    // float4, conflict-free (GEMM 4096^3 4247 -> 4017 us, ab-bc 550 -> 524; GEMM 1024^3's 4 points
    // as one run 83.9 -> 85.7: left cyclic; bench/results/2026-11-25-h100-vector-runs.txt).
    if (sz.tile.size() != par || sz.block.size() != par)
      throw UsageError("--sizes: kernel[" + std::to_string(k) + "] has a band of " + std::to_string(par) +
                       " members; give that many tile and block sizes");
    long long pointsX = sz.block.empty() ? 1 : sz.tile.back() / std::max<long long>(1, sz.block.back());
    bool whole = sz.tile.size() == sz.block.size();
    for (size_t m = 0; whole && m < sz.tile.size(); ++m) whole = sz.block[m] > 0 && sz.tile[m] % sz.block[m] == 0;
    long long pointsY = whole && par >= 2 ? sz.tile[par - 2] / sz.block[par - 2] : 1;
    // Runs along y pay where an operand read along y has a reduced dim last (yRunsPay, below).
    bool yRuns = pointsY >= 8 && pointsY % 4 == 0 && update && par >= 2 &&
                 yRunsPay(*update, par, order.empty() ? par - 2 : order[par - 2], order.empty() ? par - 1 : order[par - 1]);
    // 4 points along x make one run too where y's 8 come in runs (GEMM 1672 x 1414 x 1010 with 8 x
    // 4 points 260 -> 223 us, 2228 x 526 x 2196 338 -> 277; bench/results/2026-11-26-h100-gemm-waves.txt).
    // (4 x 4 points keep theirs cyclic: as one run along x 84.1 -> 85.1 us at 1000^3, with runs along
    // y too 83.5, within noise.)
    sz.vector = shape == Shape::Registers && whole && ((pointsX >= 8 && pointsX % 4 == 0) || (pointsX == 4 && yRuns)) ? 4 : 1;
    if (auto it = requested.find((int)k); it != requested.end() && it->second.vector > 0) sz.vector = it->second.vector;
    // The reduced band (a reduction's update): 16 iterations of its innermost member a tile by
    // default, where threads own register tiles (polyk-bind stages the tiles' operands).
    size_t reducedDims = update ? update->dims.size() - par : 0;
    if (shape == Shape::Window && update) {
      // The whole window in one reduced tile: the block stages its inputs once.
      sz.reduce.assign(updateExtents.begin() + (long)par, updateExtents.end());
    } else if (shape == Shape::Registers && update) {
      std::vector<long long> tileByDim = sz.tile;
      for (size_t m = 0; m < order.size(); ++m) tileByDim[order[m]] = sz.tile[m];
      sz.reduce = reducedTiles(scop, *update, par, tileByDim, updateExtents);
    }
    // And along y where the thread's points there come in runs too: polyk-bind then lays a staged
    // operand read along y only (GEMM's A) out with that dim innermost, so each run is one float4.
    sz.vectorY = sz.vector == 4 && yRuns ? 4 : 1;
    if (auto it = requested.find((int)k); it != requested.end() && it->second.vector > 0) sz.vectorY = std::max<long long>(1, it->second.vectorY);
    if (auto it = requested.find((int)k); it != requested.end() && !it->second.reduce.empty()) {
      if (it->second.reduce.size() != reducedDims)
        throw UsageError("--sizes: kernel[" + std::to_string(k) + "] has a reduced band of " + std::to_string(reducedDims) +
                         " members; give that many reduce sizes");
      sz.reduce = it->second.reduce;
    }
    if (splittable && !sz.reduce.empty() && sz.time == 0 && sz.stream == 0) {
      // Split-K where the grid leaves the card short of blocks (H100, 64 x 64 tiles split to about
      // 528 blocks: GEMM 229 x 448 x 3658 101 -> 66 us, 2021 x 308 x 2346 206 -> 150, 280 x 1342 x
      // 1672 101 -> 79; bench/results/2026-11-26-h100-split-k.txt).
      long long blocks = 1, points = 1;
      for (size_t m = 0; m < par; ++m) blocks *= (extents[m] + sz.tile[m] - 1) / sz.tile[m], points *= sz.tile[m] / sz.block[m];
      long long slots = (points >= 64 ? 1 : 2) * sms;
      long long tiles0 = (updateExtents[par] + sz.reduce[0] - 1) / sz.reduce[0];
      blocks = std::max<long long>(1, blocks); // (an extent of 0 at the params' values)
      long long S = std::min({(2 * slots + blocks - 1) / blocks, tiles0, reducedIterations / kSplitShare});
      // (Not where the grid is one wave already: GEMM 708 x 2724 x 1831, 132 blocks of 8 x 8
      // points, split 4 ways 229 -> 315 us.)
      if (points == 1) S = std::min({(reducedIterations + kPointShare - 1) / kPointShare, tiles0, std::max<long long>(1, 16 * sms / blocks)});
      S = std::min(S, kMaxSplit);
      // A few points a thread (N-body's 3 components) where the grid holds fewer threads than 256
      // an SM: about 4 waves of slots (N-body 131072 on 4 H100s, one thread a body, 7.8 warps an
      // SM unsplit: 3.66x one GPU split 9 ways, 3.77x 17 ways, 3.78x 33 ways, 3.73x 5 ways;
      // bench/results/2026-11-27-h100x4-nbody-splits.txt).
      long long threads = 1;
      for (long long b : sz.block) threads *= b;
      bool fewThreads = points > 1 && points < 16 && blocks * threads < sms * 256;
      if (fewThreads) S = std::min({(4 * slots + blocks - 1) / blocks, tiles0, reducedIterations / kSplitShare, kMaxSplit});
      if ((points == 1 || (points >= 16 && 4 * blocks < 3 * slots) || fewThreads) && S >= 2) sz.split = S;
    }
    bool userConv = requested.count((int)k) && (!requested[(int)k].reduce.empty() || !requested[(int)k].block.empty() ||
                                                 requested[(int)k].vector > 0);
    if (convs[k].ok && summed && !userTiles && !userConv && sz.time == 0 && sz.stream == 0 && reducedDims > 0)
      convSizes(extents, updateExtents, par, convs[k], reducedIterations, sms, sz);
    if (shape == Shape::Plain && summed && !userTiles && sz.reduce.empty() && reducedDims > 0 && sz.time == 0 && sz.stream == 0 &&
        reducedIterations >= kConvSplitLength) {
      // Split-C: a padded sum (a convolution, one output a thread) whose grid holds fewer threads
      // than 4 x 256 an SM, with a long reduction: its input channels in tiles of 8 (the filter's
      // dims whole), shared out so that each block sums about kConvSplitShare iterations (H100,
      // bench/results/2026-11-27-h100-conv-split-c.txt: R12 237 -> 137 us split 16 ways (cuDNN 162),
      // R10 292 -> 125 (4 ways; 16: 134), R9 154 -> 115 (8 ways); R7, R6, R4, D6, D5, reductions of
      // 576 to 1152, ran slower split any way).
      long long threads = 1;
      for (size_t m = 0; m < par; ++m) threads *= ((extents[m] + sz.tile[m] - 1) / sz.tile[m]) * sz.block[m];
      std::vector<long long> reduce(updateExtents.begin() + (long)par, updateExtents.end());
      // (Split-K shares out the first reduced member's tiles: the input channels where they come
      // first, convRoles' c; a padded sum it found no roles in, its first reduced dim.)
      const bool channelsFirst = !convs[k].ok || convs[k].c == par;
      reduce[0] = std::min<long long>(reduce[0], 8);
      long long tiles0 = (updateExtents[par] + reduce[0] - 1) / reduce[0];
      long long S = std::min({reducedIterations / kConvSplitShare, tiles0, kMaxConvSplit});
      if (channelsFirst && threads < 4 * sms * 256 && S >= 2) sz.reduce = reduce, sz.split = S;
    }
    if (auto it = requested.find((int)k); it != requested.end() && it->second.split > 1) {
      // Split-K: the register accumulators' partial sums over shares of the reduced tiles.
      std::string why = !update || sz.reduce.empty() ? "the kernel has no tiled reduced band (a reduction with register tiles)"
                        : !update->op || *update->op != ReduceOp::Sum ? "only sums are split"
                        : boolSum                                   ? "a bool sum is not split"
                        : sz.time > 0 || sz.stream > 0 ? "a time-tiled or streamed kernel is not split"
                                                       : "";
      if (!why.empty()) throw UsageError("kernel[" + std::to_string(k) + "] -> split[" + std::to_string(it->second.split) + "]: " + why);
      sz.split = it->second.split;
    }
    // The tensor cores by default (`mma[1]`: polyk-emit --mma=auto, codegen/Mma.h) for an f32 sum
    // of products on the default 128 x 128 tile where the grid fills at least 1.5 waves of the
    // SMs: the same tile as blocks of [32, 4] threads, 4 x 32 points each. H100, 3xTF32
    // (bench/results/2026-11-26-h100-mma.txt): GEMM 4096^3 3463 -> 2563 us, ab-bc 2048^3 444 ->
    // 345; of 40 random GEMM sizes, those of 128 x 128 tiles and at least 198 blocks 1.06x to
    // 1.17x, but for one of K = 243 (0.95x); smaller tiles or grids mostly slower.
    // (Kernel 0 only: polyk-tune's emit.mma is kernel 0's. Not where the user gave blocks or vector runs.)
    bool userShape = requested.count((int)k) && (requested[(int)k].vector > 0 || !requested[(int)k].block.empty());
    // Else, for a batch of small products, batchedMma.
    bool mmaSum = k == 0 && splittable && !userShape && sz.split == 0 && sz.time == 0 && sz.stream == 0 && !sz.reduce.empty() &&
                  sz.reduce.back() % 8 == 0 && par >= 2 &&
                  mmaProductRefusal(scop, *update, (int)(order.empty() ? par - 2 : order[par - 2]), (int)(order.empty() ? par - 1 : order[par - 1])).empty();
    if (mmaSum && sz.tile[par - 1] == 128 && sz.tile[par - 2] == 128 && sz.block[par - 1] == 16 && sz.block[par - 2] == 16) {
      long long blocks = 1;
      bool outerPoints = false;
      for (size_t m = 0; m < par; ++m) {
        blocks *= (extents[m] + sz.tile[m] - 1) / sz.tile[m];
        outerPoints |= m + 2 < par && sz.tile[m] != sz.block[m];
      }
      if (!outerPoints && 2 * blocks >= 3 * sms) {
        sz.block[par - 2] = 32, sz.block[par - 1] = 4;
        sz.vector = sz.vectorY = 1;
        sz.mma = 1;
      }
    } else if (mmaSum) {
      std::vector<size_t> dims = order;
      for (size_t m = dims.size(); m < par; ++m) dims.push_back(m); // (no order: the band's own)
      batchedMma(*update, par, dims, extents, options.sharedLimit, sms, sz);
    }
    if (auto it = requested.find((int)k); it != requested.end() && it->second.mma > 0) sz.mma = it->second.mma;
    if (auto it = requested.find((int)k); it != requested.end() && it->second.shared > 0) {
      // (A time-tiled or streamed kernel's own buffers stay within the static limit.)
      if (sz.time > 0 || sz.stream > 0)
        throw UsageError("kernel[" + std::to_string(k) + "] -> shared[" + std::to_string(it->second.shared) +
                         "]: a time-tiled or streamed kernel keeps its planes within 48 KB; shared[..] budgets staged copies");
      sz.shared = it->second.shared;
    }
    used[(int)k] = sz;
    isl::schedule_node_band b = node.as<isl::schedule_node_band>();
    isl::multi_val tile = isl::multi_val::zero(bandSpace(b));
    for (unsigned m = 0; m < par; ++m) tile = tile.set_at((int)m, isl::val(ctx, sz.tile[m]));
    node = b.tile(tile);
    if (!sz.reduce.empty()) node = tileReducedBand(node, sz.reduce);
    full = node.insert_mark(isl::id(ctx, "kernel_" + std::to_string(k))).schedule();
  }
  for (const auto &[k, sz] : requested)
    if (k < 0 || k >= (int)kernels.size())
      throw UsageError("--sizes: there is no kernel[" + std::to_string(k) + "] (kernels 0 to " + std::to_string(kernels.size() - 1) + ")");

  Scop out = scop;
  out.kind = "schedule";
  out.schedule = printScheduleBlock(full);
  out.sizes = printSizes(used);
  out.flow = islStr(flow);
  out.reductionDeps = islStr(isl::union_map::empty(ctx));
  out.provenance.push_back(currentStage("polyk-schedule"));
  if (usedSizes) *usedSizes = used;
  return out;
}

} // namespace polyk
