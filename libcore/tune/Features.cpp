// The cost model's analytical features (TuneModel.h; CNNOpt §4.1): from a program's kernels under
// its default schedule (which band members and reduced dims each read involves, the extents) and
// a configuration's sizes, without building the variant.
#include "polyk/TuneModel.h"

#include "polyk/Bind.h"
#include "polyk/Isl.h"
#include "polyk/Schedule.h"
#include "polyk/Sizes.h"
#include "polyk/Types.h"

#include <isl/aff.h>
#include <isl/map.h>
#include <algorithm>
#include <cmath>
#include <map>

namespace polyk {

double KernelShape::work() const {
  double w = reducedIterations;
  for (long long e : extent) w *= (double)e;
  return w;
}

double KernelShape::Box::elements(const std::vector<double> &sizes) const {
  double e = 1;
  for (const auto &d : dims) {
    double extent = (double)d.spread + 1;
    for (size_t i = 0; i < d.coef.size() && i < sizes.size(); ++i) extent += (double)d.coef[i] * (sizes[i] - 1);
    e *= extent;
  }
  return e;
}

std::string KernelShape::Box::expression(const std::vector<std::string> &names) const {
  std::string o;
  for (const auto &d : dims) {
    std::string extent = std::to_string(d.spread + 1);
    bool any = false;
    for (size_t i = 0; i < d.coef.size() && i < names.size(); ++i) {
      if (d.coef[i] == 0) continue;
      extent += " + " + (d.coef[i] == 1 ? "" : std::to_string(d.coef[i]) + " * ") + "(" + names[i] + " - 1)";
      any = true;
    }
    if (!any && d.spread == 0) continue; // a dim of extent 1
    size_t used = 0, at = 0;
    for (size_t i = 0; i < d.coef.size() && i < names.size(); ++i)
      if (d.coef[i] != 0) ++used, at = i;
    if (used == 1 && d.spread == 0 && d.coef[at] == 1) extent = names[at]; // a tile's own extent
    else if (any) extent = "(" + extent + ")";
    o += (o.empty() ? "" : " * ") + extent;
  }
  return (o.empty() ? "" : o + " * ") + std::to_string(bytes);
}

namespace {

/// Read `a` of a statement with `dims` dims, of which statement dim d is index[d] in the box's
/// numbering (band members, then reduced dims; -1: none), merged into `box`.
void addToBox(KernelShape::Box &box, const isl::map &a, const std::vector<int> &index, size_t numbered) {
  isl_pw_multi_aff *pma = isl_pw_multi_aff_from_map(a.copy());
  unsigned out = (unsigned)isl_pw_multi_aff_dim(pma, isl_dim_out);
  bool first = box.dims.empty();
  if (first) {
    KernelShape::Box::Dim dim;
    dim.coef.assign(numbered, 0);
    box.dims.assign(out, dim);
  }
  struct Piece {
    std::vector<long long> coef;
    long long constant = 0;
    bool affine = false;
  };
  for (unsigned t = 0; t < out && t < box.dims.size(); ++t) {
    isl_pw_aff *pa = isl_pw_multi_aff_get_pw_aff(pma, (int)t);
    Piece piece;
    piece.coef.assign(numbered, 0);
    std::pair<Piece *, const std::vector<int> *> user(&piece, &index);
    isl_pw_aff_foreach_piece(
        pa,
        [](isl_set *set, isl_aff *aff, void *user) -> isl_stat {
          auto *p = static_cast<std::pair<Piece *, const std::vector<int> *> *>(user);
          Piece &pc = *p->first;
          if (!pc.affine) {
            pc.affine = true;
            for (size_t d = 0; d < p->second->size(); ++d) {
              int i = (*p->second)[d];
              isl_val *c = isl_aff_get_coefficient_val(aff, isl_dim_in, (int)d);
              if (i >= 0 && isl_val_is_int(c)) pc.coef[(size_t)i] = std::max<long long>(pc.coef[(size_t)i], std::labs(isl_val_get_num_si(c)));
              isl_val_free(c);
            }
            isl_val *k = isl_aff_get_constant_val(aff);
            pc.constant = isl_val_is_int(k) && isl_aff_involves_dims(aff, isl_dim_param, 0, isl_aff_dim(aff, isl_dim_param)) == isl_bool_false
                              ? isl_val_get_num_si(k)
                              : 0;
            isl_val_free(k);
          }
          isl_set_free(set);
          isl_aff_free(aff);
          return isl_stat_ok;
        },
        &user);
    isl_pw_aff_free(pa);
    KernelShape::Box::Dim &d = box.dims[t];
    for (size_t i = 0; i < numbered; ++i) d.coef[i] = std::max(d.coef[i], piece.coef[i]);
    // The spread of the constant offsets: kept as a range [lo, hi] in `spread` and `lo`.
    if (first) {
      d.spread = 0;
      d.lo = piece.constant;
    } else {
      long long lo = std::min(d.lo, piece.constant), hi = std::max(d.lo + d.spread, piece.constant);
      d.lo = lo;
      d.spread = hi - lo;
    }
  }
  isl_pw_multi_aff_free(pma);
}

} // namespace

isl::schedule_node kernelBand(const isl::schedule &tree, int k, size_t members) {
  isl::schedule_node band = findMark(tree, "kernel_" + std::to_string(k));
  if (band.is_null() || members == 0) return {};
  band = band.child(0);
  while (band.isa<isl::schedule_node_mark>()) band = band.child(0);
  return band.isa<isl::schedule_node_band>() ? band : isl::schedule_node();
}

std::vector<long long> bandExtents(const isl::schedule_node &band, const std::vector<long long> &tile, const isl::set &params) {
  isl::union_set dom = nodeDomain(band).intersect_params(params);
  isl::multi_union_pw_aff mupa = band.as<isl::schedule_node_band>().get_partial_schedule();
  isl::set tiles = isl::manage(isl_set_from_union_set(isl::union_map::from(mupa).intersect_domain(dom).range().release()));
  std::vector<long long> extent;
  for (size_t m = 0; m < tile.size(); ++m)
    extent.push_back((tiles.dim_max_val((int)m).get_num_si() - tiles.dim_min_val((int)m).get_num_si() + 1) * tile[m]);
  return extent;
}

std::vector<KernelShape> kernelShapes(const Scop &flat) {
  isl::ctx ctx = islCtx();
  std::map<int, KernelSizes> used;
  Scop sched = schedule(flat, {}, &used);
  isl::schedule tree = readIslSchedule(sched.schedule);
  isl::set params(ctx, paramDefaults(flat));
  std::vector<KernelShape> out;
  for (const auto &[k, sz] : used) {
    size_t n = sz.tile.size();
    isl::schedule_node band = kernelBand(tree, k, n);
    if (band.is_null()) continue;
    KernelShape ks;
    ks.kernel = k;
    isl::union_set dom = nodeDomain(band).intersect_params(params);
    isl::multi_union_pw_aff mupa = band.as<isl::schedule_node_band>().get_partial_schedule();
    ks.extent = bandExtents(band, sz.tile, params);
    isl::set_list sets = dom.get_set_list();
    for (int i = 0; i < (int)sets.size(); ++i) {
      isl::set s = sets.at(i);
      const ScopStatement *st = sched.statement(isl_set_get_tuple_name(s.get()));
      if (!st) continue;
      unsigned dims = s.tuple_dim();
      // The statement dims each member involves; the others are its reduced loops.
      std::vector<std::vector<bool>> involves(n, std::vector<bool>(dims, false));
      std::vector<bool> inBand(dims, false);
      for (size_t m = 0; m < n; ++m) {
        isl_space *one = isl_space_add_dims(isl_space_from_domain(s.get_space().release()), isl_dim_out, 1);
        isl::union_pw_aff member = mupa.get_at((int)m);
        isl_pw_aff *pa = isl_union_pw_aff_extract_pw_aff(member.get(), one); // (keeps the union, takes the space)
        for (unsigned d = 0; d < dims; ++d)
          if (isl_pw_aff_involves_dims(pa, isl_dim_in, d, 1) == isl_bool_true) involves[m][d] = inBand[d] = true;
        isl_pw_aff_free(pa);
      }
      std::vector<unsigned> reducedDims;
      std::vector<long long> reducedExtent;
      double trip = 1;
      for (unsigned d = 0; d < dims; ++d) {
        if (inBand[d]) continue;
        long long e = s.dim_max_val((int)d).get_num_si() - s.dim_min_val((int)d).get_num_si() + 1;
        reducedDims.push_back(d);
        reducedExtent.push_back(e);
        trip *= (double)std::max(1LL, e);
      }
      // The reads of the innermost statements (a reduction's update: the init's and the store's
      // run once a point), less an update's read of what it writes (its accumulator, in registers).
      if (trip < ks.reducedIterations) continue;
      if (trip > ks.reducedIterations || ks.reads.empty()) ks.reads.clear(), ks.boxes.clear();
      ks.reducedIterations = trip;
      ks.reducedExtent = reducedExtent;
      std::string written = isl::map(ctx, st->write).range_tuple_id().name();
      std::vector<int> index(dims, -1);
      for (unsigned d = 0; d < dims; ++d)
        for (size_t m = 0; m < n && index[d] < 0; ++m)
          if (involves[m][d]) index[d] = (int)m;
      for (size_t q = 0; q < reducedDims.size(); ++q) index[reducedDims[q]] = (int)(n + q);
      for (const auto &text : st->reads) {
        isl::map a(ctx, text);
        if (a.range_tuple_id().name() == written) continue;
        std::string tensor = a.range_tuple_id().name();
        auto box = std::find_if(ks.boxes.begin(), ks.boxes.end(), [&](const KernelShape::Box &b) { return b.tensor == tensor; });
        if (box == ks.boxes.end()) {
          ks.boxes.push_back({tensor, sched.tensor(tensor) ? dtypeBytes(sched.tensor(tensor)->type) : 4, {}});
          box = ks.boxes.end() - 1;
        }
        addToBox(*box, a, index, n + reducedDims.size());
        KernelShape::Read r;
        const TensorDecl *t = sched.tensor(a.range_tuple_id().name());
        r.bytes = t ? dtypeBytes(t->type) : 4;
        r.members.assign(n, false);
        for (size_t m = 0; m < n; ++m)
          for (unsigned d = 0; d < dims; ++d)
            if (involves[m][d] && isl_map_involves_dims(a.get(), isl_dim_in, d, 1) == isl_bool_true) r.members[m] = true;
        for (unsigned d : reducedDims) r.reduced.push_back(isl_map_involves_dims(a.get(), isl_dim_in, d, 1) == isl_bool_true);
        ks.reads.push_back(r);
      }
    }
    out.push_back(ks);
  }
  return out;
}

const std::vector<std::string> &featureNames() {
  static const std::vector<std::string> names = {
      "log2_threads",       "log2_points_per_thread", "log2_blocks",          "waves",           "last_wave_fill",
      "occupancy",          "log2_registers",         "log2_reduce_tile",     "log2_tile_bytes", "log2_global_bytes",
      "loads_per_fma",      "log2_intensity",         "log2_block_x",         "log2_tile_x",     "vector",
      "points",             "prefetch",               "log2_work",            "kernels"};
  return names;
}

bool featuresDescribe(const std::string &param) {
  return param != "emit.unroll" && param != "emit.blocks" && param != "bind.shared" && param != "emit.combine";
}

std::vector<double> features(const std::vector<KernelShape> &shapes, const Space &space, const std::vector<long long> &config,
                             const FeatureOptions &o) {
  // (Each configuration's sizes afresh: ranking 20000 of them must not spend isl's budget of one
  // file, or every parse after it fails.)
  resetIslBudget();
  std::map<int, KernelSizes> sizes = parseSizes(sizesOf(space, config));
  StageOptions stage = stageOptionsOf(space, config);
  const KernelShape *main = nullptr;
  for (const auto &s : shapes)
    if (sizes.count(s.kernel) && (!main || s.work() > main->work())) main = &s;
  std::vector<double> f(featureNames().size(), 0.0);
  f.back() = (double)shapes.size();
  if (!main) return f;
  const KernelSizes &sz = sizes.at(main->kernel);
  size_t n = main->extent.size();
  auto at = [&](const std::vector<long long> &v, size_t m) { return m < v.size() && v[m] > 0 ? (double)v[m] : 1.0; };
  double threads = 1, points = 1, blocks = 1, outputs = 1;
  for (size_t m = 0; m < n; ++m) {
    threads *= at(sz.block, m);
    points *= std::max(1.0, at(sz.tile, m) / at(sz.block, m));
    blocks *= std::ceil((double)main->extent[m] / at(sz.tile, m));
    outputs *= at(sz.tile, m);
  }
  // A reduced tile: the reduce sizes where given, else the whole reduction in one.
  double reduceTile = 1;
  if (!sz.reduce.empty()) {
    for (size_t r = 0; r < sz.reduce.size(); ++r)
      reduceTile *= std::min<double>((double)sz.reduce[r], r < main->reducedExtent.size() ? (double)main->reducedExtent[r] : 1e18);
  } else {
    reduceTile = main->reducedIterations;
  }
  double tiles = std::max(1.0, main->reducedIterations / reduceTile);
  // A block's boxes over its tile and a reduced tile (each reduced dim's tile: its reduce size, or
  // the whole dim where the reduced loops are not tiled).
  std::vector<double> boxSizes;
  for (size_t m = 0; m < n; ++m) boxSizes.push_back(at(sz.tile, m));
  for (size_t q = 0; q < main->reducedExtent.size(); ++q)
    boxSizes.push_back(q < sz.reduce.size() ? std::min<double>((double)sz.reduce[q], (double)main->reducedExtent[q])
                                            : (double)main->reducedExtent[q]);
  double footprint = 0, tileBytes = 0, loadsPerFma = 0, fragment = 0;
  for (const auto &b : main->boxes) {
    double e = b.elements(boxSizes);
    footprint += e;
    tileBytes += e * b.bytes;
  }
  for (const auto &r : main->reads) {
    double reuse = 1, mine = 1;
    for (size_t m = 0; m < n; ++m) {
      double p = std::max(1.0, at(sz.tile, m) / at(sz.block, m));
      if (r.members[m]) mine *= p;
      else reuse *= p;
    }
    loadsPerFma += 1.0 / reuse;
    fragment += mine;
  }
  double registers = std::min(255.0, 24 + points + fragment + (stage.prefetch != "off" ? tileBytes / 4 / threads : 0));
  double byThreads = std::floor(o.threadsPerSm / threads);
  double byRegisters = std::floor(o.registersPerSm / (registers * threads));
  double byShared = tileBytes > 0 && !sz.reduce.empty() ? std::floor(o.sharedPerSm / tileBytes) : 32;
  double perSm = std::max(1.0, std::min({byThreads, byRegisters, byShared, 32.0}));
  double waves = blocks / (o.sms * perSm);
  double fma = outputs * reduceTile;
  auto lg = [](double v) { return std::log2(std::max(1.0, v)); };
  f = {lg(threads),
       lg(points),
       lg(blocks),
       waves,
       waves / std::ceil(std::max(waves, 1e-9)),
       perSm * threads / o.threadsPerSm,
       lg(registers),
       lg(reduceTile),
       lg(tileBytes),
       lg(tileBytes * tiles * blocks),
       loadsPerFma,
       std::log2(std::max(1e-9, fma / std::max(1.0, footprint))),
       lg(at(sz.block, n - 1)),
       lg(at(sz.tile, n - 1)),
       (double)std::max(1LL, sz.vector),
       stage.points == "blocked" ? 2.0 : stage.points == "cyclic" ? 1.0 : 0.0,
       stage.prefetch == "off" ? 0.0 : 1.0,
       lg(main->work()),
       (double)shapes.size()};
  return f;
}

} // namespace polyk
