// polyk-bind on the affine path (AffineSchedule.cpp's trees). Each kernel's tile band goes to
// the grid and its point band, tiled by the block sizes, to the threads: the innermost member
// on x, the next on y, the outer ones folded into z (`blocks_z_z_y_x`: b_z = m0 * count1 + m1).
// A thread takes the points of its tile that are congruent to its id (a cyclic distribution, so
// neighbouring threads touch neighbouring elements). An accumulator whose every element is
// accessed at one point of the parallel band only (a reduction's init, update and store) is kept
// in a register (`promoted`): that point runs on one thread, in order.
#include "polyk/Bind.h"

#include "polyk/Isl.h"
#include "polyk/Promotion.h"
#include "polyk/Schedule.h"
#include "polyk/Types.h"

#include <spdlog/spdlog.h>

#include <functional>
#include <set>
#include <sstream>

namespace polyk {

namespace {

std::vector<std::string> axesOf(unsigned n) {
  std::vector<std::string> a(n, "z");
  if (n >= 1) a[n - 1] = "x";
  if (n >= 2) a[n - 2] = "y";
  return a;
}

std::string join(const std::vector<std::string> &v, const std::string &sep) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) s += (i ? sep : "") + v[i];
  return s;
}

/// Per member of `band`: the number of values it takes (max + 1; its min is 0), as a number where
/// constant, else as C of the parameters; `atDefaults`: at the parameters' values.
struct Counts {
  std::vector<std::string> c;
  std::vector<long long> atDefaults;
  std::vector<bool> constant;
};

Counts countsOf(const Scop &in, const isl::schedule_node_band &band) {
  isl::ctx ctx = islCtx();
  isl::union_map m = isl::union_map::from(band.get_partial_schedule());
  isl::set values = m.intersect_domain(nodeDomain(band)).range().as_set();
  isl::set atDefaults = values.intersect_params(isl::set(ctx, paramDefaults(in)));
  Counts out;
  for (unsigned i = 0; i < band.n_member(); ++i) {
    long long n = atDefaults.dim_max_val((int)i).get_num_si() + 1;
    isl::pw_aff last = isl::manage(isl_set_dim_max(values.copy(), (int)i));
    bool constant = isl_pw_aff_is_cst(last.get()) == isl_bool_true;
    isl::pw_aff one = isl::manage(isl_pw_aff_val_on_domain(isl_pw_aff_domain(last.copy()), isl_val_one(ctx.get())));
    out.c.push_back(constant ? std::to_string(n) : cExpression(last.add(one)));
    out.atDefaults.push_back(n);
    out.constant.push_back(constant);
  }
  return out;
}

/// Accumulators of the kernel kept in registers: temporaries that only its statements access,
/// each element at one point of the parallel band, and each point touching one element. In a
/// kernel whose band is one member (polyk-schedule --fusion=all: a thread per instance), also a
/// temporary whose every access has the instance as its first subscript and whose other dims are
/// constants of at most kPrivateElements elements in all: polyk-emit keeps the instance's row as
/// a thread's array, indexed by those dims (Fousek's intermediates held by one thread).
constexpr long long kPrivateElements = 64;

/// Every access of tensor `name` (each map restricted to its statement's domain), and whether a
/// statement outside `stmts` makes one.
std::pair<isl::union_map, bool> accessesOf(const Scop &in, const std::string &name, const std::vector<std::string> &stmts) {
  isl::ctx ctx = islCtx();
  isl::union_map accesses = isl::union_map::empty(ctx);
  bool outside = false;
  for (const auto &st : in.statements) {
    std::vector<std::string> maps = st.reads;
    maps.push_back(st.write);
    for (const auto &text : maps) {
      isl::map a(ctx, text);
      if (a.range_tuple_id().name() != name) continue;
      if (std::find(stmts.begin(), stmts.end(), st.name) == stmts.end()) outside = true;
      accesses = accesses.unite(isl::union_map(a.intersect_domain(isl::set(ctx, st.domain))));
    }
  }
  return {accesses, outside};
}

std::vector<std::string> registerTemporaries(const Scop &in, const std::vector<std::string> &stmts,
                                             const isl::union_map &bandSchedule, unsigned members) {
  std::vector<std::string> out;
  for (const auto &t : in.tensors) {
    if (t.role != Role::Temporary) continue;
    auto [accesses, outside] = accessesOf(in, t.name, stmts);
    if (outside || accesses.is_empty()) continue;
    if (!accesses.reverse().apply_range(bandSchedule).is_single_valued()) continue;
    if (bandSchedule.reverse().apply_range(accesses).is_single_valued()) {
      out.push_back(t.name);
      continue;
    }
    // A thread's row of the temporary (the instance first, constant dims after it).
    bool row = members == 1 && t.shape.size() > 1;
    long long elements = 1;
    for (size_t d = 1; row && d < t.shape.size(); ++d) {
      row = t.shape[d].param.empty() && t.shape[d].value > 0;
      elements *= row ? t.shape[d].value : 1;
    }
    row = row && elements <= kPrivateElements;
    isl::map_list maps = accesses.get_map_list();
    for (int i = 0; row && i < (int)maps.size(); ++i) {
      isl::map m = maps.at(i);
      row = isl_map_dim(m.get(), isl_dim_in) > 0 && isl_map_dim(m.get(), isl_dim_out) > 0;
      if (row) row = m.is_subset(isl::manage(isl_map_equate(m.copy(), isl_dim_in, 0, isl_dim_out, 0)));
    }
    if (row) out.push_back(t.name);
  }
  return out;
}

/// Inserts the thread band `ids` (coincident, permutable) at `at`, under the mark `threadsMark`;
/// returns the mark.
isl::schedule_node insertThreads(const isl::schedule_node &at, const isl::multi_union_pw_aff &ids, const std::string &threadsMark) {
  isl::schedule_node_band band = at.insert_partial_schedule(ids).as<isl::schedule_node_band>();
  for (unsigned m = 0; m < band.n_member(); ++m) band = band.member_set_coincident((int)m, 1).as<isl::schedule_node_band>();
  return band.set_permutable(1).insert_mark(isl::id(islCtx(), threadsMark));
}

/// A thread's points in runs: along each member m, point d of the tile (0 <= d < T) belongs to
/// thread floor(d / V) mod B, as its point V floor(d / (V B)) + d mod V (V = run[m], B =
/// block[m]). V = 1 is the cyclic distribution, V = T / B the blocked one; between them, runs of
/// consecutive points dealt to the threads in turn, so a thread's run along x is read as one
/// vector from a staged copy while neighbouring threads' runs stay neighbours (no bank conflict).
/// Returns {points, ids} of the point band `d`.
std::pair<isl::multi_union_pw_aff, isl::multi_union_pw_aff> runDistribution(const isl::multi_union_pw_aff &d,
                                                                            const std::vector<long long> &block,
                                                                            const std::vector<long long> &run) {
  isl::ctx ctx = islCtx();
  isl::multi_val v = isl::multi_val::zero(d.space()), b = v, vb = v;
  for (unsigned m = 0; m < block.size(); ++m) {
    v = v.set_at((int)m, isl::val(ctx, run[m]));
    b = b.set_at((int)m, isl::val(ctx, block[m]));
    vb = vb.set_at((int)m, isl::val(ctx, run[m] * block[m]));
  }
  auto floorDiv = [](const isl::multi_union_pw_aff &a, const isl::multi_val &by) {
    return isl::manage(isl_multi_union_pw_aff_floor(a.scale_down(by).release()));
  };
  isl::multi_union_pw_aff runIndex = floorDiv(d, v);                       // floor(d / V)
  isl::multi_union_pw_aff ids = runIndex.sub(floorDiv(runIndex, b).scale(b)); // floor(d / V) mod B
  isl::multi_union_pw_aff points = floorDiv(d, vb).flat_range_product(d.sub(runIndex.scale(v)));
  return {points, ids};
}

/// Register tiles (below) with the thread band's and the points band's schedules given: `seq` is
/// the kernel's sequence (init, update, store), the point band above it already removed.
isl::schedule_node registerTiles(isl::schedule_node seq, const isl::multi_union_pw_aff &points, const isl::multi_union_pw_aff &ids,
                                 const std::string &threadsMark, bool staged) {
  isl::ctx ctx = islCtx();
  if (!staged) seq = insertThreads(seq, ids, threadsMark).child(0).child(0);
  int seqDepth = seq.tree_depth();
  for (int c = 0; c < (int)seq.n_children(); ++c) {
    isl::union_set filter = seq.child(c).as<isl::schedule_node_filter>().get_filter();
    isl::schedule_node at = seq.child(c);
    if (staged) {
      at = at.child(0);
      bool update = at.isa<isl::schedule_node_band>();
      if (update) at = at.child(0);
      at = insertThreads(at, ids.intersect_domain(filter), threadsMark);
      if (update) at = at.insert_mark(isl::id(ctx, "shared"));
    }
    while (at.n_children() > 0) at = at.child(0);
    at = at.insert_partial_schedule(points.intersect_domain(filter)).insert_mark(isl::id(ctx, "registers"));
    seq = at.ancestor(at.tree_depth() - seqDepth);
  }
  return staged ? seq.parent() : seq.parent().parent().parent(); // (thread band, threads mark,) tile band
}

/// A reduction kernel whose threads own register tiles: `micro` is the point band tiled by the
/// block sizes (its outer band, a thread's points; its inner one, the thread ids), or, `blocked`,
/// by the points a thread owns (outer, the thread ids; inner, the points). The thread band
/// takes the place of both, and the points band sinks to each statement of the sequence below,
/// under the update's reduced loops, marked `registers` (emit unrolls it): init all points, then
/// for each reduced iteration update them all, then store them.
/// `staged`: the update's operands are staged in shared memory; the thread band goes above the
/// init and the store, and in the update below the band of the reduced tiles, under a `shared`
/// mark (there the block copies each tile's operands, all its threads together, before they
/// split). Returns the tile band.
isl::schedule_node registerTiles(isl::schedule_node micro, const std::string &threadsMark, bool staged, bool blocked) {
  isl::multi_union_pw_aff points = micro.as<isl::schedule_node_band>().get_partial_schedule();
  isl::schedule_node thread = micro.child(0);
  isl::multi_union_pw_aff ids = thread.as<isl::schedule_node_band>().get_partial_schedule();
  if (blocked) std::swap(points, ids); // (the point band was tiled by the points a thread owns)
  return registerTiles(deleteNode(deleteNode(thread).parent()), points, ids, threadsMark, staged);
}

/// The band of the reduced tiles below a kernel's point band (the update's first band, in the
/// sequence init, update, store), and the update's statements; null where there is none.
isl::schedule_node reducedTiles(const isl::schedule_node &point) {
  isl::schedule_node seq = point.child(0);
  if (!seq.isa<isl::schedule_node_sequence>()) return {};
  for (int c = 0; c < (int)seq.n_children(); ++c)
    if (seq.child(c).child(0).isa<isl::schedule_node_band>()) return seq.child(c).child(0);
  return {};
}

/// Each statement instance of `dom` -> its first `n` dims (its point of the parallel band).
isl::union_map parallelPoints(const isl::union_set &dom, unsigned n) {
  isl::union_map out = isl::union_map::empty(islCtx());
  isl::set_list sets = dom.get_set_list();
  for (int i = 0; i < (int)sets.size(); ++i) {
    isl::set s = sets.at(i);
    unsigned dims = s.tuple_dim();
    isl::map id = isl::manage(isl_map_identity(isl_space_map_from_set(s.get_space().release()))).intersect_domain(s);
    id = isl::manage(isl_map_project_out(id.release(), isl_dim_out, n, dims - n));
    out = out.unite(isl::union_map(isl::manage(isl_map_reset_tuple_id(id.release(), isl_dim_out))));
  }
  return out;
}

constexpr long long kSharedInput = 16 * 1024;

/// A kernel of polyk-schedule --fusion=shared (`threads[..]` in its sizes): the tile band, the
/// block's instances, to the grid; the threads are dealt each function's points by polyk-emit
/// (codegen/MapKernels.cpp), so the point band only gets a `map_block` mark. Kept by a thread: the
/// reductions' accumulators (its init, update and store of one point run in that thread); kept in
/// shared memory (`shared`): the temporaries only this kernel touches, each access at the
/// instance of its statement, whose rows are constant (a block's rows); and the small inputs that
/// every instance reads (not at its own instance), copied once a block.
isl::schedule bindMapBlock(const Scop &in, const isl::schedule_node_band &tileBand, const KernelSizes &sz, const std::string &kname,
                           KernelConfig &kc, const std::function<void(const std::string &)> &sizeError) {
  isl::ctx ctx = islCtx();
  if (tileBand.n_member() != 1 || sz.tile.size() != 1 || sz.block.size() != 1)
    sizeError(kname + ": threads[..] needs a band of one member (the instance) and one tile and block size");
  if (sz.block[0] > 1024) sizeError(kname + ": more than 1024 threads per block");
  Counts tiles = countsOf(in, tileBand);
  kc.grid[0] = tiles.c[0];
  kc.block[0] = (int)sz.block[0];
  std::set<std::string> accumulators;
  for (const auto &name : kc.statements)
    if (const ScopStatement *st = in.statement(name); st->kind == StmtKind::Init) accumulators.insert(isl::map(ctx, st->write).range_tuple_id().name());
  long long bytes = 0;
  for (const auto &t : in.tensors) {
    if (t.role == Role::Input) {
      // An input no access reads at its statement's instance (an MLP's weights, read by every
      // instance), of constant shape and at most kSharedInput bytes: the block copies it once.
      bool constant = !t.shape.empty(), perInstance = false, read = false;
      long long elements = 1;
      for (size_t d = 0; d < t.shape.size(); ++d) {
        constant = constant && t.shape[d].param.empty() && t.shape[d].value > 0;
        // (As polyk-emit lays the copy out: the last dim padded by one where there are several.)
        elements *= constant ? t.shape[d].value + (d + 1 == t.shape.size() && t.shape.size() > 1 ? 1 : 0) : 1;
      }
      for (const auto &name : kc.statements)
        for (const auto &r : in.statement(name)->reads) {
          isl::map a(ctx, r);
          if (a.range_tuple_id().name() != t.name) continue;
          read = true;
          perInstance |= isl_map_involves_dims(a.get(), isl_dim_in, 0, 1) == isl_bool_true;
        }
      if (read && constant && !perInstance && elements * dtypeBytes(t.type) <= kSharedInput) {
        kc.shared.push_back(t.name);
        bytes += elements * dtypeBytes(t.type);
      }
      continue;
    }
    if (t.role != Role::Temporary) continue;
    bool row = t.shape.size() >= 1;
    long long elements = 1;
    for (size_t d = 1; row && d < t.shape.size(); ++d) {
      row = t.shape[d].param.empty() && t.shape[d].value > 0;
      elements *= row ? t.shape[d].value : 1;
    }
    auto [accesses, outside] = accessesOf(in, t.name, kc.statements);
    if (accesses.is_empty() || outside) continue;
    isl::map_list maps = accesses.get_map_list();
    for (int i = 0; row && i < (int)maps.size(); ++i) {
      isl::map a = maps.at(i);
      row = isl_map_dim(a.get(), isl_dim_out) > 0 && a.is_subset(isl::manage(isl_map_equate(a.copy(), isl_dim_in, 0, isl_dim_out, 0)));
    }
    if (accumulators.count(t.name)) {
      kc.promoted.push_back(t.name);
    } else if (row) {
      kc.shared.push_back(t.name);
      bytes += elements * dtypeBytes(computeType(t.type)) * sz.tile[0]; // (rows hold the compute type)
    }
  }
  if (bytes > kStaticShared)
    sizeError(kname + ": a block's rows of " + std::to_string(sz.tile[0]) + " instances take " + std::to_string(bytes) +
              " bytes of shared memory, more than " + std::to_string(kStaticShared) + "; take fewer instances a block (tile)");
  isl::schedule_node point = tileBand.child(0).insert_mark(isl::id(ctx, "map_block"));
  return point.parent().insert_mark(isl::id(ctx, "blocks_x")).schedule();
}

} // namespace

Scop bindAffine(const Scop &in, const BindOptions &options) {
  isl::ctx ctx = islCtx();
  isl::schedule sched = readIslSchedule(in.schedule);
  std::map<int, KernelSizes> sizes = boundSizes(in, options);
  auto sizeError = [&](const std::string &message) { polyk::sizeError(in, options, message); };
  Scop out = in;
  out.kind = "bound";
  out.kernels.clear();
  for (int k = 0;; ++k) {
    isl::schedule_node mark = findMark(sched, "kernel_" + std::to_string(k));
    if (mark.is_null()) break;
    KernelConfig kc;
    kc.name = in.name + "_k" + std::to_string(k);
    kc.statements = statementsIn(in, nodeDomain(mark));
    isl::schedule_node node = mark.child(0);
    if (!node.isa<isl::schedule_node_band>()) {
      out.kernels.push_back(kc); // no parallel dim: one thread
      continue;
    }
    isl::schedule_node_band tileBand = node.as<isl::schedule_node_band>();
    unsigned n = tileBand.n_member();
    std::string kname = "kernel " + std::to_string(k);
    if (!tileBand.child(0).isa<isl::schedule_node_band>() || tileBand.child(0).as<isl::schedule_node_band>().n_member() != n)
      fail(in.at.schedule, "kernel_" + std::to_string(k) + ": the tile band needs a point band of as many members below it");
    const KernelSizes &sz = sizes[k];
    if (!sz.threads.empty()) {
      sched = bindMapBlock(in, tileBand, sz, kname, kc, sizeError);
      out.kernels.push_back(kc);
      continue;
    }
    if (sz.block.size() != n || sz.tile.size() != n)
      sizeError(kname + ": sizes do not match its band of " + std::to_string(n) + " members");
    for (unsigned m = 0; m < n; ++m)
      if (sz.block[m] > sz.tile[m])
        sizeError(kname + ": block size " + std::to_string(sz.block[m]) + " exceeds tile size " + std::to_string(sz.tile[m]));
    std::vector<std::string> axes = axesOf(n);
    Counts tiles = countsOf(in, tileBand);
    long long z = 1, threadsZ = 1;
    std::string zC = "1";
    size_t zMembers = 0;
    for (unsigned m = 0; m < n; ++m) {
      if (axes[m] == "x") kc.grid[0] = tiles.c[m], kc.block[0] = (int)sz.block[m];
      if (axes[m] == "y") kc.grid[1] = tiles.c[m], kc.block[1] = (int)sz.block[m];
      if (axes[m] != "z") continue;
      ++zMembers;
      z *= tiles.atDefaults[m];
      threadsZ *= sz.block[m];
      zC = zC == "1" ? tiles.c[m] : zC + " * " + tiles.c[m];
      (void)zMembers;
    }
    bool zConstant = true;
    for (unsigned m = 0; m < n; ++m) zConstant = zConstant && (axes[m] != "z" || tiles.constant[m]);
    kc.grid[2] = zConstant ? std::to_string(z) : "(" + zC + ")";
    kc.block[2] = (int)threadsZ;
    if (tiles.atDefaults[n - 1] > (1LL << 31) - 1) sizeError(kname + ": more than 2^31 - 1 blocks along x; use larger tiles");
    if (n >= 2 && tiles.atDefaults[n - 2] > 65535) sizeError(kname + ": more than 65535 blocks along y; use larger tiles");
    if (z > 65535) sizeError(kname + ": more than 65535 blocks along z (" + std::to_string(z) + "); use larger tiles of the outer dims");
    if (threadsZ > 64) sizeError(kname + ": more than 64 threads along z");
    if ((long long)kc.block[0] * kc.block[1] * kc.block[2] > 1024) sizeError(kname + ": more than 1024 threads per block");

    isl::union_map bandSchedule = isl::union_map::from(tileBand.get_partial_schedule())
                                      .range_product(isl::union_map::from(tileBand.child(0).as<isl::schedule_node_band>().get_partial_schedule()));
    kc.promoted = registerTemporaries(in, kc.statements, bandSchedule, n);

    isl::schedule_node point = tileBand.child(0);
    isl::multi_val bs = isl::multi_val::zero(bandSpace(point));
    for (unsigned m = 0; m < n; ++m) bs = bs.set_at((int)m, isl::val(ctx, sz.block[m]));
    bool sequence = point.child(0).isa<isl::schedule_node_sequence>();
    bool whole = true, micro = false;
    for (unsigned m = 0; m < n; ++m) {
      whole = whole && sz.tile[m] % sz.block[m] == 0;
      micro = micro || sz.tile[m] > sz.block[m];
    }
    // A register tile's accumulators must fit in a thread's 255 registers (f64 takes two each).
    if (sequence && whole && micro && !kc.promoted.empty()) {
      long long points = 1, words = 1;
      std::string shape;
      for (unsigned m = 0; m < n; ++m) {
        points *= sz.tile[m] / sz.block[m];
        shape += (m ? " x " : "") + std::to_string(sz.tile[m] / sz.block[m]);
      }
      for (const auto &t : kc.promoted)
        if (const TensorDecl *d = in.tensor(t)) {
          long long row = 1; // a thread's row of it (one band member: polyk-emit's privateRows)
          for (size_t i = 1; n == 1 && i < d->shape.size(); ++i) row *= d->shape[i].param.empty() ? d->shape[i].value : 1;
          words = std::max<long long>(words, row * ((dtypeBytes(d->type) + 3) / 4));
        }
      if (points * words > 255)
        sizeError(kname + ": a register tile of " + shape + " = " + std::to_string(points) + " points a thread needs " +
                  std::to_string(points * words) + " registers for its accumulators, more than the 255 a thread has; "
                  "use smaller tiles or larger blocks");
    }
    // Staging: the tensors the update reads in one tile of its reduced loops, where several
    // threads read each element and the boxes fit.
    isl::schedule_node kTiles;
    if (sequence && whole && micro && !sz.reduce.empty() && options.shared != "off") kTiles = reducedTiles(point);
    if (!kTiles.is_null()) {
      isl::union_set dom = nodeDomain(kTiles);
      std::vector<std::string> stmts = statementsIn(in, dom);
      isl::union_map prefix = stagingPrefix(tileBand, kTiles);
      const long long budget = sharedBudget(sz);
      std::vector<SharedTile> tiles = sharedTiles(in, stmts, prefix, parallelPoints(dom, n), n, nullptr, {}, budget);
      // Runs of points read as vectors: their dim innermost in the copy (runLayout).
      long long runX = sz.vector > 1 ? sz.vector : 1, runY = sz.vector > 1 && n >= 2 ? std::max(1LL, sz.vectorY) : 1;
      std::vector<long long> points;
      for (unsigned m = 0; m < n; ++m) points.push_back(sz.tile[m] / sz.block[m]);
      for (const auto &t : tiles) {
        kc.shared.push_back(t.tensor);
        std::vector<int> order = runLayout(in, stmts, t, prefix, n, runX, runY, points);
        if (!order.empty()) kc.sharedLayout[t.tensor] = order;
      }
      // The copies in their final layouts (a run's dim innermost pads other rows): the last staged
      // tensors dropped while they exceed the budget (48 KB, the static limit, unless the sizes
      // give shared[..]), as ptxas would refuse the kernel (polyk-tune found abcd-aebf-dfce sizes
      // whose B took 48 KB alone: "uses too much shared data").
      auto bytes = [&] {
        long long b = 0;
        for (const auto &t : sharedTiles(in, stmts, prefix, parallelPoints(dom, n), n, &kc.shared, kc.sharedLayout, budget))
          b += t.bytes(dtypeBytes(in.tensor(t.tensor)->type));
        return b;
      };
      while (!kc.shared.empty() && bytes() > budget) {
        spdlog::info("{}: {} not staged: the staged copies would take more than {} bytes of shared memory{}", kname, kc.shared.back(),
                     budget, sz.shared > 0 ? "" : " (more with kernel[k] -> shared[BYTES])");
        kc.sharedLayout.erase(kc.shared.back());
        kc.shared.pop_back();
      }
    }
    // Blocked points by default for window reductions, padded sums and stencils (Schedule.h).
    bool blockedAuto = false;
    for (const auto &name : kc.statements) blockedAuto = blockedAuto || blockedPoints(in, *in.statement(name), n);
    bool blocked = sequence && whole && micro && (options.points == "blocked" || (options.points == "auto" && blockedAuto));
    // (A streamed stencil's vector is its own: polyk-emit's register streams, TimeTiles.h.)
    if (sz.vector > 1 && sz.stream <= 0) {
      long long perThread = sz.tile[n - 1] / sz.block[n - 1];
      if (!(sequence && whole && micro))
        sizeError(kname + ": vector[" + std::to_string(sz.vector) + "] applies to register tiles only (a reduction whose tile holds several points a thread)");
      if (perThread % sz.vector != 0)
        sizeError(kname + ": vector[" + std::to_string(sz.vector) + "] does not divide the " + std::to_string(perThread) +
                  " points a thread owns along x");
    }
    if (sz.vectorY > 1) {
      long long perThread = n >= 2 ? sz.tile[n - 2] / sz.block[n - 2] : 0;
      if (!(sequence && whole && micro) || sz.vector <= 1 || n < 2)
        sizeError(kname + ": vector[" + std::to_string(sz.vectorY) + ", " + std::to_string(sz.vector) +
                  "]: runs along y apply to register tiles of two or more members with runs along x");
      if (perThread % sz.vectorY != 0)
        sizeError(kname + ": vector[" + std::to_string(sz.vectorY) + ", " + std::to_string(sz.vector) + "]: " +
                  std::to_string(sz.vectorY) + " does not divide the " + std::to_string(perThread) + " points a thread owns along y");
    }
    if (sequence && whole && micro && sz.vector > 1) {
      // Runs of `vector` consecutive points along x, the other members as --points says.
      std::vector<long long> run(n, 1);
      for (unsigned m = 0; m < n; ++m) run[m] = blocked ? sz.tile[m] / sz.block[m] : 1;
      run[n - 1] = sz.vector;
      if (n >= 2 && sz.vectorY > 1) run[n - 2] = sz.vectorY;
      auto [points, ids] = runDistribution(point.as<isl::schedule_node_band>().get_partial_schedule(), sz.block, run);
      node = registerTiles(deleteNode(point), points, ids, "threads_" + join(axes, "_"), !kc.shared.empty());
      node = node.insert_mark(isl::id(ctx, "blocks_" + join(axes, "_")));
      sched = node.schedule();
      out.kernels.push_back(kc);
      continue;
    }
    if (blocked)
      for (unsigned m = 0; m < n; ++m) bs = bs.set_at((int)m, isl::val(ctx, sz.tile[m] / sz.block[m]));
    point = point.as<isl::schedule_node_band>().tile(bs);
    if (sequence && whole && micro) {
      node = registerTiles(point, "threads_" + join(axes, "_"), !kc.shared.empty(), blocked);
    } else {
      point = point.child(0).insert_mark(isl::id(ctx, "threads_" + join(axes, "_")));
      node = point.parent().parent();
      // A statement without reduced dims: a thread's points unrolled (marked `registers`), so that
      // neighbours' loads shared by its points (a stencil's) are loaded once.
      if (!sequence && whole && micro) node = node.child(0).insert_mark(isl::id(ctx, "registers")).parent();
    }
    node = node.insert_mark(isl::id(ctx, "blocks_" + join(axes, "_")));
    sched = node.schedule();
    out.kernels.push_back(kc);
  }
  out.schedule = printScheduleBlock(sched);
  out.sizes = printSizes(sizes);
  out.provenance.push_back(currentStage("polyk-bind"));
  return out;
}

namespace {

/// `b_x, b_y, b_z0, ..., t_x, t_y, t_z0, ...` for a band of `n` members.
std::vector<std::string> idNames(unsigned n) {
  std::vector<std::string> v;
  for (char p : {'b', 't'}) {
    v.push_back(std::string(1, p) + "_x");
    v.push_back(std::string(1, p) + "_y");
    for (unsigned i = 0; i + 2 < n; ++i) v.push_back(std::string(1, p) + "_z" + std::to_string(i));
  }
  return v;
}

std::string idTuple(unsigned n) {
  std::string s = "[";
  for (const auto &id : idNames(n)) s += (s.size() > 1 ? ", " : "") + id;
  return s + "]";
}

} // namespace

isl::set affineMappingContext(const KernelConfig &kc, const AffineKernelIds &ids) {
  std::ostringstream os;
  os << idTuple(ids.members) << " -> { : ";
  auto bound = [&](const std::string &id, const std::string &limit) {
    bool numeric = limit.find_first_not_of("0123456789") == std::string::npos;
    os << " and 0 <= " << id << (numeric ? " < " + limit : "");
  };
  os << "0 = 0";
  bound("b_x", kc.grid[0]);
  bound("b_y", kc.grid[1]);
  bound("t_x", std::to_string(kc.block[0]));
  bound("t_y", std::to_string(kc.block[1]));
  for (size_t i = 0; i < ids.blocksZ.size(); ++i) bound("b_z" + std::to_string(i), ids.blocksZ[i]);
  for (size_t i = 0; i < ids.threadsZ.size(); ++i) bound("t_z" + std::to_string(i), std::to_string(ids.threadsZ[i]));
  os << " }";
  return isl::set(islCtx(), os.str());
}

std::string AffineKernelIds::prologue() const {
  std::string o = "  const polyk_idx b_x = blockIdx.x, b_y = blockIdx.y, t_x = threadIdx.x, t_y = threadIdx.y;\n";
  o += "  (void)b_x; (void)b_y; (void)t_x; (void)t_y;\n";
  auto split = [&](const std::string &p, const std::string &from, const std::vector<std::string> &counts) {
    if (counts.empty()) return;
    o += "  polyk_idx " + p + "_rest = " + from + ";\n";
    for (size_t i = counts.size(); i-- > 0;) {
      std::string id = p + "_z" + std::to_string(i);
      // ((void): a kernel whose statements do not use a member of z, e.g. one thread along it)
      if (i == 0) o += "  const polyk_idx " + id + " = " + p + "_rest;\n  (void)" + id + ";\n";
      else o += "  const polyk_idx " + id + " = " + p + "_rest % (" + counts[i] + ");\n  " + p + "_rest /= (" + counts[i] + ");\n";
    }
  };
  split("b", "blockIdx.z", blocksZ);
  std::vector<std::string> t;
  for (long long c : threadsZ) t.push_back(std::to_string(c));
  split("t", "threadIdx.z", t);
  return o;
}

namespace {

/// Below each `shared` mark, before its threads, a statement `polyk_stage[]` that every thread of
/// the block runs at each point of the bands above (an isl extension, as PPCG adds its copies and
/// barriers). It prints nothing; the mark prints the copies and barriers. Without it, isl would
/// hoist the threads' guard (a thread of a partial tile without points) out of the reduced tiles'
/// loop, and such threads would skip the barriers.
isl::schedule stageStatements(isl::schedule sched) {
  while (true) {
    isl::schedule_node mark;
    sched.get_root().foreach_descendant_top_down([&](isl::schedule_node n) -> bool {
      if (!mark.is_null()) return false;
      if (n.isa<isl::schedule_node_mark>() && markName(n) == "shared" && !n.child(0).isa<isl::schedule_node_extension>()) mark = n;
      return mark.is_null();
    });
    if (mark.is_null()) return sched;
    isl::schedule_node child = mark.child(0);
    isl::union_set points = isl::manage(isl_schedule_node_get_prefix_schedule_union_map(child.get())).range();
    isl::set stage(islCtx(), "{ polyk_stage[] }");
    isl::union_map ext = isl::manage(isl_union_map_from_domain_and_range(points.release(), isl::union_set(stage).release()));
    isl::schedule_node graft = isl::manage(isl_schedule_node_from_extension(ext.release()));
    sched = isl::manage(isl_schedule_node_graft_before(child.release(), graft.release())).schedule();
  }
}

} // namespace

AffineMapping applyAffineMapping(const isl::schedule &bound, const Scop &s) {
  isl::ctx ctx = islCtx();
  AffineMapping out;
  std::map<int, KernelSizes> sizes = parseSizes(s.sizes, &s.at.sizes);
  isl::schedule sched = bound;
  while (true) {
    isl::schedule_node mark;
    int kernel = -1;
    sched.get_root().foreach_descendant_top_down([&](isl::schedule_node n) -> bool {
      if (!mark.is_null()) return false;
      if (n.isa<isl::schedule_node_mark>()) {
        std::string name = markName(n);
        if (name.rfind("kernel_", 0) == 0) kernel = std::stoi(name.substr(7));
        if (name.rfind("blocks_", 0) == 0 || name.rfind("threads_", 0) == 0) mark = n;
      }
      return mark.is_null();
    });
    if (mark.is_null()) break;
    std::string name = markName(mark);
    bool blocks = name[0] == 'b';
    std::vector<std::string> axes;
    std::stringstream ss(name.substr(blocks ? 7 : 8));
    for (std::string a; std::getline(ss, a, '_');) axes.push_back(a);
    isl::schedule_node_band band = mark.child(0).as<isl::schedule_node_band>();
    unsigned n = band.n_member();
    if (n != axes.size()) throw std::runtime_error("mapping mark " + name + " over a band of another size");
    AffineKernelIds &ids = out.kernels[kernel];
    ids.members = n;
    Counts counts = countsOf(s, band);
    std::string p = blocks ? "b_" : "t_";
    // A kernel may map several bands to its threads (a staged kernel's init, update and store):
    // the ids are the same for all.
    if (blocks) ids.blocksZ.clear();
    else ids.threadsZ.clear();
    std::ostringstream os;
    os << idTuple(n) << " -> { [";
    for (unsigned i = 0; i < n; ++i) os << (i ? ", " : "") << "m" << i;
    os << "] : 0 = 0";
    unsigned z = 0;
    for (unsigned i = 0; i < n; ++i) {
      std::string id = axes[i] == "z" ? p + "z" + std::to_string(z++) : p + axes[i];
      os << " and m" << i << " = " << id;
      if (axes[i] != "z") continue;
      if (blocks) ids.blocksZ.push_back(counts.c[i]);
      else ids.threadsZ.push_back(sizes.count(kernel) && i < sizes[kernel].block.size() ? sizes[kernel].block[i] : counts.atDefaults[i]);
    }
    os << " }";
    isl::union_map m = isl::union_map::from(band.get_partial_schedule());
    isl::union_set bandDomain = nodeDomain(band);
    isl::union_set filter = m.intersect_range(isl::union_set(isl::set(ctx, os.str()))).domain();
    isl::schedule_node node = deleteNode(mark);
    // Threads below a `shared` mark: the filter stays where the band is, so the loops above it
    // (the reduced tiles, whose copies and barriers every thread of the block runs) do not
    // depend on the thread.
    if (node.has_parent() && node.parent().isa<isl::schedule_node_mark>() && markName(node.parent()) == "shared") {
      sched = node.insert_filter(filter).schedule();
      continue;
    }
    while (!(node.isa<isl::schedule_node_mark>() && markName(node).rfind("kernel_", 0) == 0)) node = node.parent();
    node = node.child(0);
    filter = filter.unite(nodeDomain(node).subtract(bandDomain));
    sched = node.insert_filter(filter).schedule();
  }
  out.schedule = stageStatements(sched);
  return out;
}

} // namespace polyk
