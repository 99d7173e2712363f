// Dependences, scheduling, fusion and tiling (Panamera §4.1-4.2). See Schedule.h.
#include "polyk/Schedule.h"
#include "polyk/IntMath.h"

#include "polyk/Isl.h"

#include <isl/options.h>
#include <isl/schedule.h>
#include <isl/schedule_node.h>
#include <isl/union_map.h>
#include <algorithm>
#include <spdlog/spdlog.h>
#include <sstream>

namespace polyk {

namespace {

constexpr int kScheduleMaxConstantTerm = 8;

/// Program order with every statement at its own constant first dimension, padded to one
/// schedule space: flow analysis needs statements ordered at the same point (ISL-NOTES.md).
isl::union_map initialSchedule(const Scop &s) {
  size_t maxDims = 0;
  for (const auto &st : s.statements) maxDims = std::max<size_t>(maxDims, isl::set(islCtx(), st.domain).tuple_dim());
  isl::union_map m = isl::union_map::empty(islCtx());
  for (size_t k = 0; k < s.statements.size(); ++k) {
    isl::set d(islCtx(), s.statements[k].domain);
    unsigned n = d.tuple_dim();
    std::ostringstream os;
    os << "{ " << s.statements[k].name << "[";
    for (unsigned i = 0; i < n; ++i) os << (i ? ", " : "") << "d" << i;
    os << "] -> [" << k;
    for (size_t i = 0; i < maxDims; ++i) os << ", " << (i < n ? "d" + std::to_string(i) : "0");
    os << "] }";
    m = m.unite(isl::union_map(isl::map(islCtx(), os.str())));
  }
  return m;
}

std::string islString(const isl::union_map &m) { return islStr(m); }

/// The statements of phase `ph` in program order, each in its own band over its own dims.
isl::schedule programOrder(const Scop &scop, const std::vector<int> &phase, int ph) {
  isl::ctx ctx = islCtx();
  isl::schedule out;
  for (size_t k = 0; k < scop.statements.size(); ++k) {
    const ScopStatement &st = scop.statements[k];
    if (st.kind == StmtKind::Init || phase[k] != ph) continue;
    isl::set d(ctx, st.domain);
    isl::schedule one = isl::schedule::from_domain(isl::union_set(d));
    unsigned n = d.tuple_dim();
    if (n > 0) {
      std::ostringstream os;
      os << "[";
      for (unsigned m = 0; m < n; ++m) {
        os << (m ? ", " : "") << "{ " << st.name << "[";
        for (unsigned i = 0; i < n; ++i) os << (i ? ", " : "") << "d" << i;
        os << "] -> [(d" << m << ")] }";
      }
      os << "]";
      isl::schedule_node band = one.get_root().child(0).insert_partial_schedule(isl::multi_union_pw_aff(ctx, os.str()));
      for (unsigned m = 0; m < n; ++m)
        band = band.as<isl::schedule_node_band>().member_set_coincident(m, st.dims[m] == "parallel" || st.kind != StmtKind::Reduce);
      one = band.schedule();
    }
    out = out.is_null() ? one : isl::manage(isl_schedule_sequence(out.release(), one.release()));
  }
  return out;
}

} // namespace

std::vector<int> bandMemberDims(const isl::schedule_node_band &band, const std::string &stmt) {
  std::vector<int> out(band.n_member(), -1);
  isl::multi_union_pw_aff mupa = band.get_partial_schedule();
  for (unsigned m = 0; m < band.n_member(); ++m) {
    isl::union_map um = isl::union_map::from(isl::multi_union_pw_aff(mupa.at(m)));
    isl::map_list maps = um.get_map_list();
    for (int i = 0; i < (int)maps.size(); ++i) {
      isl::map mp = maps.at(i);
      if (mp.domain_tuple_id().name() != stmt) continue;
      for (unsigned d = 0; d < mp.domain_tuple_dim(); ++d)
        if (mapInvolvesInputDim(mp, d)) out[m] = out[m] == -1 ? (int)d : -2;
    }
    if (out[m] == -2) out[m] = -1;
  }
  return out;
}

namespace {


/// Streaming multiprocessors of the H100 the default sizes are measured on.
constexpr long long kSMs = 132;
/// The largest split of a y-reduce's rows that defaultSizes grows to fill the last wave.
constexpr long long kWaveSplitsMax = 32;

/// Threads along a y-reduce's P columns of `bytes`-byte elements when each takes V consecutive
/// ones: a warp, or fewer for narrow tensors. 1-byte columns whose warp-wide column tiles give
/// fewer than 2 blocks per SM take 8 threads where those give 2 (each thread then reads V bytes a
/// row from twice the blocks or more): H100, bool [768, 21128] over dim 0, vector[4] in 661 blocks
/// of 8 x 32 threads against vector[2] in 331 blocks of 32 x 8, medians of three runs, 16.61 ->
/// 12.90 us (bench/results/2026-11-23-h100-columns.txt, H3; f16, f32 and i32 did not gain).
long long columnThreads(long long P, long long V, int bytes) {
  long long warp = std::min<long long>(32, pow2Ceil(ceilDiv(P, V)));
  if (bytes == 1 && V > 1 && ceilDiv(P, warp * V) < 2 * kSMs && ceilDiv(P, 8 * V) >= 2 * kSMs) return 8;
  return warp;
}

/// Batched columns of short runs (defaultSizes): runs (BandShape::run) of kShortRunMin to
/// kShortRunMax columns, at least kShortRunMinRuns of them (fewer fit in the warp-wide column
/// tiles: [2, 2097153, 2]) and kShortRunMinRows rows (sum f16 [98465, 218, 3] lost, 72.5 -> 93.7
/// us, 7 rows a thread; [6729, 1145, 7] won: the threshold lies between), fixed extents.
constexpr long long kShortRunMin = 2, kShortRunMax = 8, kShortRunMinRuns = 32, kShortRunMinRows = 512;
bool shortRun(const BandShape &b) {
  if (b.run < kShortRunMin || b.run > kShortRunMax || b.contiguous < 0) return false;
  for (size_t m = 0; m < b.extent.size(); ++m) {
    if (b.symbolic[m]) return false;
    if (b.reduced[m] && b.extent[m] < kShortRunMinRows) return false;
  }
  return b.extent[b.contiguous] >= kShortRunMinRuns * b.run;
}

/// Vectors a thread at least on a short row (defaultSizes: x-reduces of under 2048 elements).
constexpr long long kShortRowVectors = 4;

/// Mid rows (defaultSizes): x-reduces of 2048 elements or more, but at most kMidRowVectors
/// vectors, over at least kMidRowMinRows rows, take a warp a row like the short ones.
constexpr long long kMidRowVectors = 1024, kMidRowMinRows = 16 * kSMs;

/// Narrow whole-column blocks of a y-reduce (defaultSizes): kNarrowColumns columns a block, one
/// element each (8 f32 are one 32-byte sector a row), kNarrowRows threads over the reduced dim.
constexpr long long kNarrowColumns = 8, kNarrowRows = 64;
/// Smallest all-reduce (bytes) whose vectors need not divide its extent (vectorWidth).
constexpr long long kTailBytes = 256 << 10;

/// Whether a y-reduce of R rows and P columns takes narrow whole-column blocks: at most 32 rows
/// a thread, and at least 64 blocks (half the SMs: [1024, 512] in 64 blocks 7.49 -> 6.24 us).
bool narrowColumns(long long P, long long R) {
  return R <= 32 * kNarrowRows && ceilDiv(P, kNarrowColumns) >= 64;
}

/// A y-reduce over many rows: where its columns are too few for whole-column blocks, two outputs
/// per thread still pay (two independent accumulators, 8 bytes a row for f32) despite combining
/// each output's partials: H100, [131072, 1024] over dim 0 with vector[2]
/// (bench/results/2026-11-22-h100-size-variants.txt): max f16 142 -> 120 us, max f32 203 -> 190
/// us, sum f32 194 -> 190 us. From 8192 rows: [8192, 768] over dim 0 with vector[2] (f32) or [4]
/// (f16, bool) and ~4 blocks per SM, medians of three runs against one output per thread and ~8
/// blocks per SM (bench/results/2026-11-23-h100-yreduce.txt): sum f32 19.65 -> 17.15 us, max f32
/// 20.03 -> 18.78, sum f16 14.40 -> 12.70, max f16 14.85 -> 14.18, and bool 12.26 -> 10.66; at
/// 1024 rows ([1024, 1024] over dim 0) vectors were 9-29% slower.
bool tallColumns(const BandShape &b) {
  for (size_t m = 0; m < b.extent.size(); ++m)
    if (b.reduced[m] && b.extent[m] >= 8192) return true;
  return false;
}

/// BandShape::elementBytes: the narrowest element any statement of `dom` reads or writes.
int narrowestBytes(const Scop &scop, const isl::union_set &dom) {
  int narrowest = 16;
  for (const auto &st : scop.statements) {
    if (dom.intersect(isl::union_set(isl::set(islCtx(), st.domain))).is_empty()) continue;
    std::vector<std::string> accesses = st.reads;
    accesses.push_back(st.write);
    for (const auto &a : accesses)
      if (const TensorDecl *t = scop.tensor(isl::map(islCtx(), a).range_tuple_id().name()))
        narrowest = std::min(narrowest, dtypeBytes(t->type));
  }
  return narrowest;
}

/// Rows of an x-reduce from this many elements may start anywhere: their vectors line up with
/// aligned addresses (alignRows), the partial first and last read element by element.
constexpr long long kAlignedRowsMin = 2048;

/// The identity on `space` with dim `j` replaced by `value` (an affine function of the dims).
isl::multi_aff withDim(const isl::space &space, unsigned j, const isl::aff &value) {
  return isl::multi_aff::identity_on_domain(space).set_at((int)j, value);
}

/// An x-reduce's rows (kind reduce, its last dim reduced): for each read that moves along the last
/// dim j, its linear index at j = 0, a function of the other dims (the row's first element); null
/// where some read moves by other than a unit step or has no affine linear index.
std::optional<std::vector<isl::aff>> rowStarts(const Scop &scop, const ScopStatement &st) {
  isl::ctx ctx = islCtx();
  isl::set dom(ctx, st.domain);
  unsigned n = dom.tuple_dim();
  if (st.kind != StmtKind::Reduce || n == 0 || st.dims.size() != n || st.dims.back() != "reduced") return std::nullopt;
  unsigned j = n - 1;
  isl::space space = dom.get_space();
  isl::aff var = isl::manage(isl_aff_var_on_domain(isl_local_space_from_space(space.copy()), isl_dim_set, j));
  isl::multi_aff step = withDim(space, j, var.add_constant(isl::val(ctx, 1)));
  isl::multi_aff atZero = withDim(space, j, var.scale(isl::val(ctx, 0)));
  isl::set both = dom.intersect(dom.preimage(step));
  auto same = [&](const isl::pw_aff &f, const isl::multi_aff &g) {
    return f.intersect_domain(both).ne_set(f.pullback(g).intersect_domain(both)).is_empty();
  };
  std::vector<isl::aff> out;
  for (const auto &r : st.reads) {
    const TensorDecl *t = scop.tensor(isl::map(ctx, r).range_tuple_id().name());
    isl::pw_aff index = t ? linearIndexAff(r, *t) : isl::pw_aff();
    if (index.is_null()) return std::nullopt;
    if (same(index, step)) continue; // a broadcast along the row
    // A unit step: the index less j is the same all along the row, its value at j = 0.
    isl::pw_aff base = index.sub(isl::pw_aff(var));
    if (!same(base, step) || !same(base, atZero)) return std::nullopt;
    isl::pw_aff start = base.pullback(atZero);
    if (isl_pw_aff_isa_aff(start.get()) != isl_bool_true) return std::nullopt;
    out.push_back(isl::manage(isl_pw_aff_as_aff(start.release())));
  }
  return out;
}

/// Whether `f` is 0 everywhere on `dom`.
bool zeroOn(const isl::aff &f, const isl::set &dom) {
  return isl::manage(isl_pw_aff_non_zero_set(isl::pw_aff(f).intersect_domain(dom).release())).is_empty();
}

/// The largest power of 2 of at most V that every row start of `starts` is a multiple of, on `dom`.
int rowAlignment(const std::vector<isl::aff> &starts, const isl::set &dom, int V) {
  for (int w = V; w > 1; w /= 2) {
    bool aligned = true;
    for (const auto &s : starts) aligned = aligned && zeroOn(s.mod(isl::val(islCtx(), w)), dom);
    if (aligned) return w;
  }
  return 1;
}

/// BandShape::vector: consecutive elements per thread, so nvcc can turn them into one 16-byte
/// access (HOPPER.md: 16-byte accesses per thread, coalesced across the warp).
int vectorWidth(const BandShape &shape) {
  int c = shape.contiguous;
  bool reduction = std::count(shape.reduced.begin(), shape.reduced.end(), true) > 0;
  // A symbolic contiguous extent may not be a multiple of V: 1, except where the reduction runs
  // along it (an x-reduce: GEMV's y(i) +=! A(i, k) * x(k)), whose vectors polyk-emit reads in a
  // kernel instance the launcher runs only where the extent is a multiple of V (its value here
  // decides V). Other symbolic extents do not matter (sg7: [B, 128, 768] over b and s reads 768
  // columns).
  if (c < 0 || (c < (int)shape.symbolic.size() && shape.symbolic[c] && !(reduction && shape.reduced[c]))) return 1;
  bool columns = reduction && !shape.reduced[c]; // a y-reduce: each thread owns V consecutive outputs
  int narrowest = shape.elementBytes;
  // A run of elementwise statements of 4- and 8-byte elements (a reduction over unit dims, a
  // copy: unitDimReduction) reads whole vectors, one a thread; initialisations keep theirs. H200, one call
  // (bench/results/2026-11-29-h200-unit-dim-copies.txt): min i32 [1, 1, 10220984] over dim 0 32.0
  // -> 24.4 us, sum f32 [1000, 1, 5000] over dim 1 14.4 -> 14.1; narrower ones were slower with
  // vector loads and element stores (bf16 [618, 1, 42630, 1] 36.0 -> 84.2, bool 18.8 -> 82.0).
  // Where one vector a thread would leave fewer than 2 blocks of 256 per SM, one element a
  // thread keeps the blocks (y(i) = exp(x(i)) over 100000 f32: 391 blocks, not 98).
  if (!reduction && shape.extent.size() < 2 &&
      (narrowest < 4 || shape.initOnly || ceilDiv(shape.extent[0], 256LL * (16 / narrowest)) < 2 * kSMs))
    return 1;
  if (columns && shortRun(shape)) {
    // Short runs (defaultSizes): 4- and 8-byte elements one a thread; narrower ones the largest
    // power of 2 dividing the run, of at most 8 bytes.
    int w = 1;
    while (narrowest < 4 && shape.run % (2 * w) == 0 && 2 * w * narrowest <= 8) w *= 2;
    return w;
  }
  int v = 16 / narrowest;
  // 1-byte columns: at most 4 a thread. Twice the threads over the same columns, each doing half
  // the per-byte work (bool [1024, 131072] over dim 0: vector[8], 512 blocks, 45% achieved
  // occupancy, 57.2 us; vector[4], 1024 blocks, 54.5 us; H100, bench/results/2026-11-22-h100-epilogue.txt, F).
  if (columns && narrowest == 1) v = std::min(v, 4);
  long long P = shape.extent[c];
  // V must divide the extent (a y-reduce's thread must own a whole vector of outputs), and a
  // y-reduce's columns alone must still give 2 blocks per SM (column tiles of columnThreads(P, V)
  // * V, defaultSizes): then no column is split over blocks, whose combines of every output's
  // partials cost more than the vectors save (H100, bench/results 2026-11-22, with the per-lane
  // epilogue of then: [1024, 1024] f16 over dim 0 8.6 -> 21 us with vector[8] and 16 blocks a
  // column; [1024, 131072] 128 -> 100 us with 512 column blocks).
  // One run of elements reduced (an all-reduce, coalesced to one dim) of a constant extent and at
  // least kTailBytes: its partial last vector is read element by element (polyk-emit isolates
  // the whole ones: VectorReads::isolateWholeVectors), so V need not divide it. H200, old and new
  // in one call (bench/results/2026-11-28-h200-vector-tails.txt): 4-400 MB of odd extents
  // 1.13-1.41x (sum f32 10134509 20.5 -> 17.5 us, as fast as 10134508), 20 drawn ones of 0.35-48
  // MB 0.96-1.22x (geomean 1.07); below 256 KB (one block, latency-bound) 0.85-1.09x, max i32
  // 23155 5.9 -> 6.9 us: those keep V dividing the extent. Rows of other extents start
  // unaligned: no vectors there.
  bool run = reduction && shape.reduced[c] && !(c < (int)shape.symbolic.size() && shape.symbolic[c]) &&
             shape.extent[c] * narrowest >= kTailBytes;
  for (size_t m = 0; m < shape.extent.size(); ++m) run = run && ((int)m == c || shape.extent[m] == 1);
  auto fits = [&](int w) {
    // A partial last tile of whole vectors is fine: isl guards the threads past the end.
    return (P % w == 0 || run || (!columns && shape.rowAlign % w == 0 && P >= kAlignedRowsMin)) &&
           (!columns || w == 1 || ceilDiv(P, columnThreads(P, w, narrowest) * w) >= 2 * kSMs);
  };
  while (v > 1 && !fits(v)) v /= 2;
  // Tall columns: 2 outputs a thread for 4- and 8-byte elements, 4 for narrower ones.
  // H100 (bench/results/2026-11-22-h100-epilogue.txt): bool [131072, 1024] over dim 0 88.6 ->
  // 72.4 us with vector[4] and 528 blocks, vector[8] and [16] slower (108-170 us; with the atomic
  // return too: 67.9, 84 against 62.1 us); f16 sum / max 111.0 / 111.9 -> 104.4-105.1 / 106.0 us
  // with vector[4] once the ordered return's partials lay slot-major (vector[8]: 111 us).
  int tall = narrowest >= 4 ? 2 : 4;
  if (columns && v == 1 && P % tall == 0 && tallColumns(shape)) return tall;
  return v;
}

BandShape analyseBandShape(const Scop &scop, const isl::schedule_node_band &band);

} // namespace

BandShape analyseBand(const Scop &scop, const isl::schedule_node_band &band) {
  BandShape shape = analyseBandShape(scop, band);
  shape.elementBytes = narrowestBytes(scop, nodeDomain(band));
  // Rows reduced along their contiguous member (an x-reduce): how their starts align.
  if (shape.form == Form::XReduce && shape.contiguous >= 0 && shape.reduced[shape.contiguous] && shape.elementBytes <= 8)
    for (const auto &st : scop.statements) {
      isl::set dom(islCtx(), st.domain);
      if (st.kind != StmtKind::Reduce || nodeDomain(band).intersect(isl::union_set(dom)).is_empty()) continue;
      std::optional<std::vector<isl::aff>> starts = rowStarts(scop, st);
      if (starts && !starts->empty()) shape.rowAlign = rowAlignment(*starts, dom, 16 / shape.elementBytes);
      break;
    }
  shape.initOnly = true;
  for (const auto &st : scop.statements)
    if (st.kind != StmtKind::Init && !nodeDomain(band).intersect(isl::union_set(isl::set(islCtx(), st.domain))).is_empty())
      shape.initOnly = false;
  shape.vector = vectorWidth(shape);
  return shape;
}

namespace {

/// Whether dim `m` of `points` has a lower (upper) bound that is the same number for every value of
/// the parameters.
bool boundIsConstant(const isl::set &points, unsigned m, bool upper) {
  isl_pw_aff *b = (upper ? isl_set_dim_max : isl_set_dim_min)(points.copy(), (int)m);
  bool cst = isl_pw_aff_is_cst(b) == isl_bool_true;
  isl_pw_aff_free(b);
  return cst;
}

/// BandShape::run of y-reduce `st`, whose column dim `column` has P columns: the elements of the
/// trailing subscripts that no reduced dim moves (x[floor(j / C), i, j mod C]: C), where each read
/// has some and they are fewer than P; 0 otherwise.
long long columnRun(const Scop &scop, const ScopStatement &st, int column, long long P) {
  if (column < 0) return 0;
  long long run = P;
  for (const auto &r : st.reads) {
    isl::map read(islCtx(), r);
    const TensorDecl *t = scop.tensor(read.range_tuple_id().name());
    isl::pw_multi_aff at = isl::manage(isl_pw_multi_aff_from_map(read.release()));
    int n = (int)subscriptCount(at), last = -1, lastColumn = -1;
    for (int k = 0; k < n; ++k) {
      for (size_t d = 0; d < st.dims.size(); ++d)
        if (st.dims[d] == "reduced" && subscriptMoves(at, (unsigned)k, d)) last = k;
      if (subscriptMoves(at, (unsigned)k, (size_t)column)) lastColumn = k;
    }
    if (!t || last < 0 || lastColumn <= last || (int)t->shape.size() != n) return 0;
    long long c = 1;
    for (int k = last + 1; k < n; ++k) {
      if (!t->shape[k].param.empty()) return 0;
      c *= t->shape[k].value;
    }
    run = std::min(run, c);
  }
  return run < P ? run : 0;
}

BandShape analyseBandShape(const Scop &scop, const isl::schedule_node_band &band) {
  BandShape shape;
  isl::union_set dom = nodeDomain(band);
  isl::union_map sched = isl::union_map::from(band.get_partial_schedule());
  // Numbers for the size rule: symbolic extents at the program's values.
  isl::set points = sched.intersect_domain(dom).range().as_set();
  isl::set range = points.intersect_params(isl::set(islCtx(), paramDefaults(scop)));
  for (unsigned m = 0; m < band.n_member(); ++m) {
    isl::val lo = range.dim_min_val(m), hi = range.dim_max_val(m);
    shape.extent.push_back(hi.sub(lo).add(isl::val(islCtx(), 1)).get_num_si());
    shape.reduced.push_back(!band.member_get_coincident(m));
    shape.symbolic.push_back(!boundIsConstant(points, m, false) || !boundIsConstant(points, m, true));
  }
  // The form and the contiguous dim come from the reduction statement of the kernel (if any).
  for (const auto &st : scop.statements) {
    if (st.kind != StmtKind::Reduce) continue;
    if (dom.intersect(isl::union_set(isl::set(islCtx(), st.domain))).is_empty()) continue;
    shape.form = st.form;
    std::vector<int> dimOf = bandMemberDims(band, st.name);
    for (unsigned m = 0; m < dimOf.size(); ++m) {
      if (dimOf[m] < 0) continue;
      shape.reduced[m] = st.dims[dimOf[m]] == "reduced";
      // Coalesced dims are in layout order: the last one is the contiguous one.
      if (dimOf[m] == (int)st.dims.size() - 1) shape.contiguous = (int)m;
    }
    if (st.form == Form::YReduce && shape.contiguous >= 0)
      shape.run = columnRun(scop, st, dimOf[shape.contiguous], shape.extent[shape.contiguous]);
    return shape;
  }
  shape.contiguous = (int)band.n_member() - 1;
  return shape;
}

} // namespace

namespace {

/// Inserts a sequence where a leaf holds a reduction with other statements, so each reduction has
/// its own leaf, and a
/// `reduction` mark above each of those leaves (Panamera §5: the mark asks the code generator to
/// treat the statement with the partial / block / atomic scheme).
isl::schedule markReductions(isl::schedule sched, const Scop &scop) {
  isl::union_set reductions = isl::union_set::empty(islCtx());
  for (const auto &st : scop.statements)
    if (st.kind == StmtKind::Reduce) reductions = reductions.unite(isl::union_set(isl::set(islCtx(), st.domain)));
  // Find an unmarked reduction leaf, split or mark it, and look again: edits invalidate nodes.
  bool changed = true;
  while (changed) {
    changed = false;
    isl::schedule_node found;
    sched.get_root().foreach_descendant_top_down([&](isl::schedule_node node) -> bool {
      if (!found.is_null()) return false;
      if (!node.isa<isl::schedule_node_leaf>()) return true;
      isl::union_set red = nodeDomain(node).intersect(reductions);
      if (red.is_empty()) return true;
      if (node.has_parent() && node.parent().isa<isl::schedule_node_mark>()) return true;
      found = node;
      return false;
    });
    if (found.is_null()) break;
    isl::union_set dom = nodeDomain(found);
    isl::union_set red = dom.intersect(reductions);
    isl::union_set other = dom.subtract(reductions);
    bool single = other.is_empty() && red.get_set_list().size() == 1;
    if (!single) {
      isl::union_set_list filters(islCtx(), 2);
      if (!other.is_empty()) filters = filters.add(other);
      for (const auto &st : scop.statements) {
        if (st.kind != StmtKind::Reduce) continue;
        isl::union_set f = red.intersect(isl::union_set(isl::set(islCtx(), st.domain)));
        if (!f.is_empty()) filters = filters.add(f);
      }
      sched = found.insert_sequence(filters).schedule();
    } else {
      sched = found.insert_mark(isl::id(islCtx(), "reduction")).schedule();
    }
    changed = true;
  }
  return sched;
}

} // namespace

void accessRelations(const Scop &scop, isl::union_map &writes, isl::union_map &reads) {
  isl::ctx ctx = islCtx();
  writes = isl::union_map::empty(ctx), reads = isl::union_map::empty(ctx);
  for (const auto &st : scop.statements) {
    isl::set dom(ctx, st.domain);
    auto access = [&](const std::string &m) { return isl::union_map(isl::map(ctx, m).intersect_domain(dom)); };
    writes = writes.unite(access(st.write));
    for (const auto &r : st.reads) reads = reads.unite(access(r));
    if (st.kind == StmtKind::Reduce) reads = reads.unite(access(st.write));
  }
}

KernelSizes defaultSizes(const BandShape &b) {
  // Panamera Part 1: more work per thread, fewer blocks, fewer atomics, but enough blocks to keep
  // the H100's 132 SMs streaming. Block counts measured by bench/sweep.sh (docs/sizes.md):
  // 528 blocks of 512 threads for an all-reduce, about 1024 blocks for a y-reduce, and a whole
  // short row in one block.
  KernelSizes s;
  size_t n = b.extent.size();
  s.tile.assign(n, 1);
  s.block.assign(n, 1);
  if (n == 0) return s;
  if (n == 1) {
    long long e = b.extent[0];
    if (e == 1 && !b.reduced[0] && !(b.symbolic.size() > 0 && b.symbolic[0])) {
      // One element (the initialisation of a reduction into a single output): one thread, so
      // it runs inside the reduction's one-thread kernel (kernelGroups), a launch saved. H200,
      // the random suite's prod bf16 [1, 1, 1] over dims 0 and 2: 5.68 -> 3.42 us
      // (bench/results/2026-11-28-h200-random-reductions.txt).
      return s;
    }
    long long threads = b.reduced[0] ? 512 : 256;
    threads = std::min(threads, std::max<long long>(32, pow2Ceil(e)));
    long long perThread = std::max<long long>(1, ceilDiv(e, threads * 4 * kSMs));
    if (!b.reduced[0]) {
      // A reduction's parallel member (its reduced dims of extent 1, which isl drops from the
      // band: [N, 1] over dim 1, where it is not a copy: && into numbers, float max and min)
      // owns one output a thread, as polyk-bind requires.
      perThread = b.form == Form::Elementwise ? std::min<long long>(perThread, 4) : 1;
      if (b.form == Form::Elementwise && b.vector > 1) perThread = b.vector; // one vector a thread
    } else if (e <= threads * 16 * b.vector) {
      perThread = roundUp(ceilDiv(e, threads), b.vector); // one block: a direct store
    } else {
      // At least 4 vectors a thread while that leaves a block per SM: a block reduction and a
      // partial per 2 KB read cost more than the reads at mid sizes (1M elements: 128 blocks).
      perThread = std::max(perThread, std::min<long long>(4 * b.vector, ceilDiv(e, threads * kSMs)));
      perThread = roundUp(perThread, b.vector); // whole vectors
      // Fewer than 2 blocks of 512 per SM leave SMs idle or half fed (1M elements: 128 blocks on
      // 132 SMs): blocks of 256 with the same work per thread, twice as many (H100, run C of
      // bench/results/2026-11-22-h100-size-variants.txt:
      // max f32 10.5 -> 9.4 us, sum i32 8.9 -> 8.3 us, sum f32 9.1 -> 8.8 us).
      if (threads == 512 && ceilDiv(e, threads * perThread) < 2 * kSMs) threads = 256;
    }
    s.block[0] = threads;
    s.tile[0] = threads * perThread;
    return s;
  }
  // Two members (x-reduce after scheduling): one parallel, one reduced. Rows of elementwise
  // statements (both parallel: a consumer of an x-reduce's result) take the sizes of an x-reduce
  // over the contiguous dim, so they get the reduction's blocks and can share its kernel.
  int red = b.reduced[1] ? 1 : b.reduced[0] ? 0 : std::max(b.contiguous, 0), par = 1 - red;
  long long P = b.extent[par], R = b.extent[red];
  if (b.contiguous == red || b.contiguous < 0) {
    // Rows reduced along their contiguous dim: threads along the row; a short row stays in one
    // block (its result is stored directly: no atomic, no initialisation).
    // Threads along the row take b.vector consecutive elements at a time.
    long long V = red == b.contiguous ? b.vector : 1;
    // Long rows: 512 threads a row, or 256 where the rows outnumber the 4 blocks of 512 an SM
    // holds, so one wave of 8 per SM covers them (768 rows of 21128: 1.45 waves of 512).
    // Short rows of narrow vectors (under 8 bytes) or of one warp's pass: at least
    // kShortRowVectors vectors a thread (a power of 2 of threads a row, at most a warp), more rows
    // a block. A warp a row left most lanes idle and moved a few bytes a load: H200, one call with
    // the peers (bench/results/2026-11-29-h200-short-rows.txt), or bool [361197, 86] over dim 1
    // (43 vectors of 2) 57.4 -> 24.1 us, prod bf16 [234195, 51] 35.5 -> 16.8, prod bf16 rows of
    // 206 332.9 -> 194.6, prod i32 [8099829, 25] 724.5 -> 239.2. Rows of 8- and 16-byte vectors
    // over one pass keep a warp: min i32 [28904, 10, 114] over dim 2 (57 vectors of 8 bytes) lost,
    // 55.6 -> 72.6 us. And 16-byte vectors need 4 threads a row at least: min f16 [1297320, 88]
    // over dim 1 (11 vectors) lost with 2, 84.4 -> 119.9 us; bool [1048576, 512] (32 vectors, 8
    // threads) won.
    long long vectors = ceilDiv(R, V), bytes = V * b.elementBytes;
    // Rows of fewer than 2 kShortRowVectors vectors: one thread a row, no reduction across
    // threads (two, each 2-4 vectors, then a shuffle, ran min f16 [1097652, 5] over dim 1 at 20.7
    // us against 9.1, max bf16 [800000, 7] 16.8 against 8.8, sum f32 [400000, 5] 10.7 against 7.5;
    // H200, bench/results/2026-11-29-h200-tiny-rows.txt).
    long long fewer = vectors < 2 * kShortRowVectors ? 1 : std::min<long long>(32, pow2Floor(ceilDiv(vectors, kShortRowVectors)));
    bool shortRow = R < 2048 && (bytes < 8 || (vectors <= 32 && (bytes < 16 || fewer >= 4)));
    // Rows of 2048 elements or more read by a block each, unless they are mid rows: at most
    // kMidRowVectors vectors (16 KB), many of them. There a block's threads took 1-4 vectors each
    // and a block reduction; a warp a row takes 8-32 and a warp's shuffles. H200, one call
    // (bench/results/2026-11-29-h200-mid-rows.txt): min bf16 [3680, 2131] over dim 1 14.7 -> 10.6
    // us, bool [2651, 5283] 12.6 -> 11.2, sum bf16 [11087, 5757] 46.4 -> 41.0 (torch.compile 40.4),
    // [5888, 3985] 20.5 -> 20.7; rows of 2354-13157 vectors were slower with a warp (or bool
    // [10066, 37654] 123.5 -> 132.4). A fresh draw of 25 around the rule: 12 changed, 1.17x
    // (0.93-1.40). Not for extents of params, sized at their defaults: GEMV (M, K of 4096) lost,
    // 27.0 -> 28.0 us at 4096^2, 15.7 -> 35.2 at 1001 x 4099.
    bool fixed = std::none_of(b.symbolic.begin(), b.symbolic.end(), [](bool v) { return v; });
    bool midRow = fixed && R >= 2048 && vectors <= kMidRowVectors && P >= kMidRowMinRows;
    long long bx = R >= 2048 && !midRow ? (P > 4 * kSMs ? 256 : 512)
                   : shortRow           ? fewer
                                        : std::min<long long>(32, pow2Ceil(vectors));
    long long by = bx >= 512 ? 1 : std::max<long long>(1, 256 / bx);
    by = std::min(by, pow2Ceil(P));
    if (R < 2048 && P < kSMs) {
      // Few short rows ([40, 20, 10, 5] over dims 0, 2, 3: 20 rows of 2000) would leave most SMs
      // idle: a block of up to 512 threads per row instead.
      bx = std::min<long long>(512, pow2Ceil(ceilDiv(R, V)));
      by = std::min(pow2Ceil(P), std::max<long long>(1, 256 / bx));
    }
    long long rowBlocks = R < 2048 || midRow ? 1 : std::max<long long>(1, std::min(ceilDiv(2 * kSMs, ceilDiv(P, by)), ceilDiv(R, bx * 4)));
    s.block[red] = bx;
    s.block[par] = by;
    s.tile[red] = roundUp(ceilDiv(R, rowBlocks), bx * V);
    s.tile[par] = by;
  } else {
    // Columns (a y-reduce): threads along the contiguous parallel dim, each owning b.vector
    // consecutive outputs (16 bytes a row: one load), the reduced dim split over threadIdx.y and
    // over enough blocks (about 8 per SM) to fill the machine.
    long long V = b.contiguous == par ? b.vector : 1;
    long long bx = columnThreads(P, V, b.elementBytes);
    long long by = std::max<long long>(1, 256 / bx);
    by = std::min(by, pow2Ceil(R));
    long long colBlocks = ceilDiv(P, bx * V);
    bool fixedRows = !(red < (int)b.symbolic.size() && b.symbolic[red]);
    if (fixedRows && (R <= 8 || (R <= 32 && ceilDiv(P, 128 * V) >= 2 * kSMs))) {
      // Few rows: each thread reduces its whole column, no block reduction; blocks of up to 128
      // threads while they leave 2 blocks an SM. H200 (bench/results/2026-11-28-h200-random-reductions.txt):
      // the random suite's prod f32 [2, 314, 5, 851] over dim 0 16.4 -> 8.3 us (32 x 2 threads
      // -> 128 x 1); 30 shapes of 2-16 rows: R <= 8 1.0-1.5x (geomean 1.20) at any width, R = 16
      // 0.92-0.95x where the columns give fewer than 2 blocks of 128 an SM, 1.03-1.14x where they
      // give more; 12-32 rows of 1-10M columns (bool, bf16, f32) 1.07-5.8x, the random suite's
      // or bool [14, 10187129] 391 -> 75 us and min bf16 [22, 501 x 31502] 442 -> 186 us.
      long long threads = bx;
      while (threads < 128 && ceilDiv(P, 2 * threads * V) >= 2 * kSMs) threads *= 2;
      s.block[par] = threads;
      s.block[red] = 1;
      s.tile[par] = threads * V;
      s.tile[red] = R;
      return s;
    }
    if (shortRun(b)) {
      // Batched columns of short runs (x[A, B, C] over b, C of 2 to 8): a block takes whole runs,
      // k of them (at least 16 bytes a row), its threads C / V across each run and the rest along
      // the rows, so a warp reads consecutive addresses; all of R in one block where the runs'
      // blocks alone give 8 an SM, else about 3200 blocks. The warp-wide columns it replaces read
      // 32 / C runs of as many tensors' rows a load. H200, one call with the peers
      // (bench/results/2026-11-29-h200-short-runs.txt): 20 cases (12 drawn) 1.56x the warp-wide
      // columns, 0.77 -> 1.20 of the best peer; sum f32 [4000, 4000, 4] 108.9 -> 74.5 us, bf16
      // 99.9 -> 41.1 (2 runs a block of 2 x 128 threads with vectors of 4), [100, 100000, 6]
      // 157.7 -> 75.3 (32 blocks a run).
      long long k = std::max<long long>(1, 16 / (b.run * b.elementBytes));
      long long across = k * b.run / V;
      long long along = std::min(std::max<long long>(16, 256 / across / 16 * 16), pow2Ceil(R));
      long long runBlocks = ceilDiv(P, k * b.run);
      long long rowBlocks = runBlocks >= 8 * kSMs ? 1 : std::min(ceilDiv(24 * kSMs, runBlocks), ceilDiv(R, along * 16));
      s.block[par] = across;
      s.block[red] = along;
      s.tile[par] = k * b.run;
      s.tile[red] = roundUp(ceilDiv(R, rowBlocks), along);
      return s;
    }
    // Wide columns with vectors: 2 blocks per SM fill the machine (more bytes in flight per
    // thread), which the columns alone give (vectorWidth), so no column is split (its partials
    // would need combining). Tall columns with vectors: about 4 blocks per SM (bool [131072, 1024]
    // over dim 0 with vector[4], atomic return: 264 blocks 79.8 us, 528 blocks 62.1 us, 1064
    // blocks 62.5 us; bench/results/2026-11-22-h100-epilogue.txt, D). Otherwise about 8. At least
    // 8 rows a thread, 16 with vectors, whose combine costs a partial per lane: [8192, 768] over
    // dim 0 with vector[4] in 384 blocks (16 rows) against 516 (12 rows), medians of three runs:
    // sum f16 13.60 -> 12.61 us, max f16 14.91 -> 14.21, and bool 11.68 -> 10.69
    // (bench/results/2026-11-23-h100-yreduce.txt).
    bool wide = V > 1 && colBlocks >= 2 * kSMs;
    long long target = wide ? 2 * kSMs : V > 1 ? 4 * kSMs : 8 * kSMs;
    long long rowsPerThread = V > 1 ? 16 : 8;
    const long long maxRedBlocks = ceilDiv(R, by * rowsPerThread);
    long long redBlocks = std::max<long long>(1, std::min(ceilDiv(target, colBlocks), maxRedBlocks));
    if (V == 1 && redBlocks > 1 && redBlocks <= kWaveSplitsMax) {
      // Whole waves: 8 blocks of 256 an SM are resident at once, so 1.41 waves of equal blocks take
      // as long as 2. More splits of the rows until the last wave is at least 90% full. H200, one
      // call each (bench/results/2026-11-29-h200-wave-tail.txt): 7 changed cases old / new 1.13x, sum
      // f32 [100000, 4097] over dim 0 579 -> 470 us (9 -> 15 splits), min f16 [22143, 2057] 61.1 ->
      // 48.1 (17 -> 30); but sum f16 [199444, 155] 38.0 -> 45.0 (212 -> 400 splits of 5 column
      // tiles: the partials' combine grows), hence only splits of at most kWaveSplitsMax.
      auto full = [&](long long rb) { return 10 * colBlocks * rb >= 9 * roundUp(colBlocks * rb, target); };
      while (redBlocks < maxRedBlocks && !full(redBlocks)) ++redBlocks;
    }
    if (redBlocks > 1 && V == 1 && narrowColumns(P, R)) {
      // Mid-height columns that the rule above would split: narrow column groups with the whole
      // of R in one block instead, so no partial is combined (H100, sum f32 over dim 0, medians
      // of three runs, bench/results/2026-11-23-h100-columns.txt: [1024, 1024] 8.67 -> 7.49 us,
      // [2048, 1024] 10.62 -> 9.31, [256, 4096] 8.42 -> 7.36, [1024, 512] 7.49 -> 6.24; f16
      // [1024, 1024] 7.74 -> 6.37, bool 7.14 -> 5.86). 64 threads over R: 32 rows a thread at
      // most; [4096, 1024] (64 rows) was slower, 14.27 -> 14.75 us. 4 columns a block (256
      // blocks) or 128 threads over R were slower than 8 and 64.
      s.block[par] = kNarrowColumns;
      s.block[red] = std::min<long long>(kNarrowRows, pow2Ceil(R));
      s.tile[par] = kNarrowColumns;
      s.tile[red] = roundUp(R, s.block[red]);
      return s;
    }
    s.block[par] = bx;
    s.block[red] = by;
    s.tile[par] = bx * V;
    s.tile[red] = roundUp(ceilDiv(R, redBlocks), by);
  }
  return s;
}

namespace {

/// Misaligned rows: an x-reduce whose rows start where V-element vectors (16 bytes of its
/// narrowest element) do not (rows of an odd length) could only read element by element. Its
/// reduced dim j shifted by the row start's remainder mod V, j' = j + (start mod V), puts every
/// multiple of V of j' at an aligned address: polyk-bind's vectors then read whole ones with one
/// load each, and polyk-emit isolates the partial first and last of each row (read element by
/// element). Rows of at least kAlignedRowsMin elements, whose reads all start at the same
/// remainder, of inputs no statement writes (no producer shares the band); the row then spans
/// R + V - 1 values of j', which the sizes take as its extent.
Scop alignRows(const Scop &scop) {
  isl::ctx ctx = islCtx();
  std::set<std::string> written;
  for (const auto &st : scop.statements) written.insert(isl::map(ctx, st.write).range_tuple_id().name());
  Scop out = scop;
  for (auto &st : out.statements) {
    std::optional<std::vector<isl::aff>> starts = rowStarts(scop, st);
    if (!starts || starts->empty() || st.form != Form::XReduce) continue;
    isl::set dom(ctx, st.domain);
    unsigned j = dom.tuple_dim() - 1;
    if (!boundIsConstant(dom, j, false) || !boundIsConstant(dom, j, true) || !dom.dim_min_val((int)j).is_zero() ||
        dom.dim_max_val((int)j).get_num_si() + 1 < kAlignedRowsMin)
      continue;
    bool produced = false;
    for (const auto &r : st.reads) produced |= written.count(isl::map(ctx, r).range_tuple_id().name()) > 0;
    int bytes = narrowestBytes(scop, isl::union_set(dom));
    if (produced || bytes > 8) continue;
    int V = 16 / bytes;
    if (rowAlignment(*starts, dom, V) == V) continue;
    isl::val v(ctx, V);
    isl::aff shift = starts->front().mod(v);
    bool together = true;
    for (const auto &s : *starts) together = together && zeroOn(s.mod(v).sub(shift), dom);
    if (!together) continue;
    isl::space space = dom.get_space();
    isl::aff var = isl::manage(isl_aff_var_on_domain(isl_local_space_from_space(space.copy()), isl_dim_set, j));
    isl::multi_aff back = withDim(space, j, var.sub(shift)); // S[.., j'] -> S[.., j]
    isl::map forward = isl::manage(isl_map_from_multi_aff(back.copy())).reverse().intersect_domain(dom);
    isl::set shifted = dom.apply(forward);
    // (Accesses simplified on the domains first: flatten's x[floor(j / R), i, j mod R] is x[0, i, j]
    // on a row, and pulled back unsimplified it splits in two.)
    auto move = [&](const std::string &access) {
      isl::pw_multi_aff f = isl::manage(isl_pw_multi_aff_from_map(isl::map(ctx, access).release()));
      f = isl::manage(isl_pw_multi_aff_gist(f.release(), dom.copy())).pullback(back);
      return islStr(isl::manage(isl_pw_multi_aff_gist(f.release(), shifted.copy())));
    };
    st.domain = islStr(shifted);
    for (auto &r : st.reads) r = move(r);
    st.write = move(st.write);
    st.recovery = islStr(isl::manage(isl_multi_aff_gist(isl::multi_aff(ctx, st.recovery).pullback(back).release(), shifted.copy())));
  }
  return out;
}

Scop scheduleChecked(const Scop &input, const ScheduleOptions &options, std::map<int, KernelSizes> *usedSizes) {
  isl::ctx ctx = islCtx();
  const Scop scop = alignRows(input);
  std::map<int, KernelSizes> requested = parseSizes(options.sizes);

  isl::union_map writes, reads;
  accessRelations(scop, writes, reads);
  isl::union_access_info info(reads);
  info = info.set_must_source(writes).set_schedule_map(initialSchedule(scop));
  isl::union_map flow = info.compute_flow().may_dependence();

  // Reduction dependences (a reduction statement on itself) are relaxed: associativity lets the
  // reduced dims run in parallel; emit restores them with partials, block reduction and atomics.
  isl::union_map reductionDeps = isl::union_map::empty(ctx);
  for (const auto &st : scop.statements) {
    if (st.kind != StmtKind::Reduce) continue;
    isl::union_set d(isl::set(ctx, st.domain));
    reductionDeps = reductionDeps.unite(flow.intersect_domain(d).intersect_range(d));
  }
  // Phases: a statement that reads a reduction's result must run after the whole reduction, that
  // is in a later kernel (Panamera forbids the pattern; softmax and layer norm need it). A phase
  // is the number of reductions on the longest producer chain before a statement; the isl
  // scheduler fuses within a phase, and phases run in sequence: the fewest kernels that are right.
  std::vector<int> phase(scop.statements.size(), 0);
  std::map<std::string, size_t> writer;
  for (size_t k = 0; k < scop.statements.size(); ++k) {
    const ScopStatement &st = scop.statements[k];
    if (st.kind == StmtKind::Init) continue;
    for (const auto &r : st.reads) {
      auto w = writer.find(isl::map(ctx, r).range_tuple_id().name());
      if (w == writer.end()) continue;
      const ScopStatement &p = scop.statements[w->second];
      phase[k] = std::max(phase[k], phase[w->second] + (p.kind == StmtKind::Reduce ? 1 : 0));
    }
    writer[isl::map(ctx, st.write).range_tuple_id().name()] = k;
  }
  isl::schedule computed;
  for (int ph = 0;; ++ph) {
    isl::union_set main = isl::union_set::empty(ctx);
    bool anyParallelReduction = false;
    for (size_t k = 0; k < scop.statements.size(); ++k) {
      const ScopStatement &st = scop.statements[k];
      if (st.kind == StmtKind::Init || phase[k] != ph) continue;
      main = main.unite(isl::union_set(isl::set(ctx, st.domain)));
      if (st.kind == StmtKind::Reduce && st.dims.size() > 1) anyParallelReduction = true;
    }
    if (main.is_empty()) break;
    isl::union_map validity = flow.intersect_domain(main).intersect_range(main).subtract(reductionDeps);
    isl::union_map coincidence = validity.unite(reductionDeps.intersect_domain(main));
    // Independent reductions with the same reduced dims and extents (Panamera §5.3, Fig. 8): a
    // proximity edge between equal points asks the scheduler to fuse them into one band, so they
    // share one kernel and one hardware configuration; nothing orders them, so it is legal.
    isl::union_map proximity = coincidence;
    std::vector<const ScopStatement *> reductions;
    for (size_t k = 0; k < scop.statements.size(); ++k)
      if (phase[k] == ph && scop.statements[k].kind == StmtKind::Reduce) reductions.push_back(&scop.statements[k]);
    for (size_t a = 0; a + 1 < reductions.size(); ++a) {
      const ScopStatement &r0 = *reductions[a], &r1 = *reductions[a + 1];
      isl::set d0(ctx, r0.domain), d1(ctx, r1.domain);
      if (r0.dims != r1.dims) continue;
      std::string args;
      for (size_t d = 0; d < r0.dims.size(); ++d) args += (d ? ", d" : "d") + std::to_string(d);
      isl::map same = isl::map(ctx, "{ " + r0.name + "[" + args + "] -> " + r1.name + "[" + args + "] }")
                          .intersect_domain(d0)
                          .intersect_range(d1);
      if (!same.domain().is_equal(d0) || !same.range().is_equal(d1)) continue;
      proximity = proximity.unite(isl::union_map(same));
    }
    isl::schedule_constraints sc = isl::schedule_constraints::on_domain(main)
                                       .set_validity(validity)
                                       .set_coincidence(coincidence)
                                       .set_proximity(proximity);
    // Outer parallelism turns a y-reduce into an x-reduce (§4.1); with no parallel dim at all (only
    // all-reduces) it would only keep producers out of their reduction's band.
    isl_options_set_schedule_outer_coincidence(ctx.get(), anyParallelReduction ? 1 : 0);
    // Constant terms of at most 8: polyk's schedules need none beyond small shifts, and unbounded
    // ones let the ILP run for hours on accesses edited into odd quasi-affine forms (a hand-edited
    // sg8 scop: > 2 h, now 0.06 s; every example's schedule is byte-identical).
    isl_options_set_schedule_max_constant_term(ctx.get(), kScheduleMaxConstantTerm);
    isl::schedule part;
    try {
      part = sc.compute_schedule();
    } catch (const isl::exception &e) {
      // The scheduler's ILP can fail (e.g. "unbounded optimum" when a 1-D producer feeds a 2-D
      // reduction through a linearised index); program order, one band per statement, is
      // always valid within a phase.
      spdlog::info("isl scheduler failed on phase {} ({}); using program order", ph, e.what());
      part = programOrder(scop, phase, ph);
    }
    computed = computed.is_null() ? part : isl::manage(isl_schedule_sequence(computed.release(), part.release()));
  }

  // Each initialisation runs as its own kernel before the rest: after relaxation nothing else
  // orders it before the atomic updates of other blocks.
  isl::schedule full;
  for (const auto &st : scop.statements) {
    if (st.kind != StmtKind::Init) continue;
    isl::set d(ctx, st.domain);
    isl::schedule s = isl::schedule::from_domain(isl::union_set(d));
    unsigned n = d.tuple_dim();
    if (n > 0) {
      std::ostringstream os;
      os << "[{ " << st.name << "[";
      for (unsigned i = 0; i < n; ++i) os << (i ? ", " : "") << "d" << i;
      os << "] -> [(d0)] }]";
      isl::multi_union_pw_aff mupa(ctx, os.str());
      isl::schedule_node band = s.get_root().child(0).insert_partial_schedule(mupa);
      s = band.as<isl::schedule_node_band>().member_set_coincident(0, 1).schedule();
    }
    full = full.is_null() ? s : isl::manage(isl_schedule_sequence(full.release(), s.release()));
  }
  full = full.is_null() ? computed : isl::manage(isl_schedule_sequence(full.release(), computed.release()));

  // Kernels are the children of the top-level sequence (or the whole tree).
  std::map<int, KernelSizes> used;
  isl::schedule_node root = full.get_root().child(0);
  int nKernels = root.isa<isl::schedule_node_sequence>() ? (int)root.n_children() : 1;
  for (int k = 0; k < nKernels; ++k) {
    isl::schedule_node node = full.get_root().child(0);
    if (node.isa<isl::schedule_node_sequence>()) node = node.child(k).child(0);
    while (!node.isa<isl::schedule_node_band>() && !node.isa<isl::schedule_node_leaf>() && node.n_children() == 1)
      node = node.child(0);
    if (!node.isa<isl::schedule_node_band>()) {
      used[k] = {};
      node = node.insert_mark(isl::id(ctx, "kernel_" + std::to_string(k)));
      full = node.schedule();
      continue;
    }
    isl::schedule_node_band band = node.as<isl::schedule_node_band>();
    BandShape shape = analyseBand(scop, band);
    KernelSizes sz = defaultSizes(shape);
    sz.vector = shape.vector;
    if (auto it = requested.find(k); it != requested.end()) {
      if (!it->second.tile.empty()) sz.tile = it->second.tile;
      if (!it->second.block.empty()) sz.block = it->second.block;
      // Given tiles may not hold whole vectors: without a vector entry they get none.
      if (it->second.vector > 0) sz.vector = it->second.vector;
      else if (!it->second.tile.empty()) sz.vector = 1;
      if (it->second.vectorY > 0)
        throw UsageError("--sizes: kernel[" + std::to_string(k) + "]: vector[Vy, Vx] applies to the register tiles of affine programs only");
      if (it->second.shared > 0)
        throw UsageError("--sizes: kernel[" + std::to_string(k) + "]: shared[..] applies to the staged copies of affine programs only");
    }
    if (sz.tile.size() != band.n_member() || sz.block.size() != band.n_member())
      throw UsageError("--sizes: kernel[" + std::to_string(k) + "] has a band of " + std::to_string(band.n_member()) +
                       " members; give that many tile and block sizes");
    used[k] = sz;
    isl::multi_val tile = isl::multi_val::zero(bandSpace(band));
    for (unsigned m = 0; m < band.n_member(); ++m) tile = tile.set_at(m, isl::val(ctx, sz.tile[m]));
    node = band.tile(tile);
    node = node.insert_mark(isl::id(ctx, "kernel_" + std::to_string(k)));
    full = node.schedule();
  }
  for (const auto &[k, sz] : requested)
    if (k < 0 || k >= nKernels)
      throw UsageError("--sizes: there is no kernel[" + std::to_string(k) + "] (kernels 0 to " + std::to_string(nKernels - 1) + ")");
  full = markReductions(full, scop);

  Scop out = scop;
  out.kind = "schedule";
  out.schedule = printScheduleBlock(full);
  out.sizes = printSizes(used);
  out.flow = islString(flow);
  out.reductionDeps = islString(reductionDeps);
  out.provenance.push_back(currentStage("polyk-schedule"));
  if (usedSizes) *usedSizes = used;
  return out;
}

} // namespace

Scop schedule(const Scop &scop, const ScheduleOptions &options, std::map<int, KernelSizes> *usedSizes) {
  bool affine = !scop.statements.empty() && scop.statements.front().form == Form::Affine;
  if (!affine && options.fusion != "auto")
    throw UsageError("--fusion=" + options.fusion + " applies to affine programs (stencils, products, maps); this program's statements "
                     "take the reduction path, whose kernels polyk-emit fuses where each block reads only its own results");
  return reportedAt(scop.at.statements, "polyk-schedule", [&] {
    return affine ? scheduleAffine(scop, options, usedSizes) : scheduleChecked(scop, options, usedSizes);
  });
}

} // namespace polyk
