// Shared-memory staging (see Promotion.h). A tensor's footprint under one point of the prefix
// (one block, one tile of the reduced loops) is prefix^-1 . reads; isl's simple fixed box hull of
// it gives the box's offset, an affine function of the prefix, and its constant sizes.
#include "polyk/Promotion.h"

#include "polyk/Bind.h"
#include "polyk/Isl.h"

#include <isl/aff.h>
#include <map>
#include <set>
#include <stdexcept>

namespace polyk {

namespace {

/// The dims of `tensor` along which some statement's read moves with the statement dims that
/// member `member` of `prefix`'s band involves (the last member is on threadIdx.x, the one before
/// on threadIdx.y).
std::set<int> movingDims(const Scop &s, const std::vector<std::string> &stmts, const std::string &tensor, const isl::union_map &prefix,
                         int member) {
  isl::ctx ctx = islCtx();
  std::set<int> out;
  if (member < 0) return out;
  for (const auto &name : stmts) {
    const ScopStatement &st = *s.statement(name);
    isl::set dom(ctx, st.domain);
    isl::union_map mine = prefix.intersect_domain(isl::union_set(dom));
    if (mine.is_empty()) continue;
    isl::pw_multi_aff at = isl::manage(isl_pw_multi_aff_from_map(isl_map_from_union_map(mine.copy())));
    // (Gisted: the pieces' domains would count as involving every dim.)
    isl::pw_aff m = isl::manage(isl_pw_aff_gist(at.get_at(member).release(), dom.copy()));
    for (const auto &r : st.reads) {
      isl::map a(ctx, r);
      if (a.range_tuple_id().name() != tensor) continue;
      isl::pw_multi_aff pma = isl::manage(isl_pw_multi_aff_from_map(a.copy()));
      for (unsigned x = 0; x < a.domain_tuple_dim(); ++x) {
        if (isl_pw_aff_involves_dims(m.get(), isl_dim_in, x, 1) != isl_bool_true) continue;
        for (unsigned d = 0; d < a.range_tuple_dim(); ++d)
          if (isl_pw_aff_involves_dims(pma.get_at((int)d).get(), isl_dim_in, x, 1) == isl_bool_true) out.insert((int)d);
      }
    }
  }
  return out;
}

/// The most stores of one warp's store instruction that hit one bank at distinct addresses, over
/// the first warps of the copy of `t` (its groups of `lanes` elements taken in t.copyOrder()).
int storeConflicts(const SharedTile &t, int lanes, int bytes) {
  size_t n = t.size.size();
  std::vector<size_t> order = t.copyOrder();
  long long groups = 1;
  for (size_t d = 0; d < n; ++d) groups *= d + 1 == n ? std::max<long long>(1, t.size[d] / lanes) : t.size[d];
  int worst = 1;
  for (long long warp = 0; warp < 4 && warp * 32 < groups; ++warp)
    for (int k = 0; k < lanes; ++k) {
      std::map<long long, std::set<long long>> banks;
      for (long long u = warp * 32; u < std::min(groups, warp * 32 + 32); ++u) {
        long long rest = u, address = 0;
        for (size_t d : order) {
          long long extent = d + 1 == n ? std::max<long long>(1, t.size[d] / lanes) : t.size[d];
          long long x = d == order.back() ? rest : rest % extent;
          rest /= extent;
          address += (d + 1 == n ? x * lanes : x) * t.stride[d];
        }
        address += k * t.stride[n - 1];
        long long word = address * bytes / 4;
        banks[word % 32].insert(word);
      }
      for (const auto &[bank, words] : banks) worst = std::max(worst, (int)words.size());
    }
  return worst;
}

/// The copy's strides: in the tensor's order, where neighbouring threads read along a box dim
/// other than the last (`column`), that dim's stride is made odd (one element after each of its
/// slices: a row of a 2-d box), against bank conflicts. In another order (`tile.order`), whose
/// copy stores scatter, the dims outside the innermost are padded by multiples of 4 elements (so
/// runs along the innermost stay 16-byte aligned), the padding whose stores conflict least, then
/// the smallest.
void copyStrides(SharedTile &tile, int column, int bytes) {
  const std::vector<long long> &size = tile.size;
  size_t n = size.size();
  std::vector<long long> &stride = tile.stride;
  stride.assign(n, 1);
  if (tile.order.empty()) {
    for (size_t d = n - 1; d-- > 0;) {
      stride[d] = stride[d + 1] * size[d + 1];
      if ((int)d == column && stride[d] % 2 == 0) ++stride[d];
    }
    return;
  }
  const std::vector<int> &order = tile.order;
  int lanes = bytes == 4 && size[n - 1] % 4 == 0 ? 4 : 1;
  // The padded dims: those outside the innermost with more than one element (at most 3).
  std::vector<size_t> padded;
  for (size_t i = 0; i + 1 < n; ++i)
    if (size[(size_t)order[i]] > 1 && padded.size() < 3) padded.push_back(i);
  std::vector<long long> pad(n, 0), best;
  int bestConflicts = 0;
  long long bestElements = 0;
  long long combos = 1LL << (3 * padded.size());
  for (long long c = 0; c < combos; ++c) {
    for (size_t j = 0; j < padded.size(); ++j) pad[padded[j]] = 4 * ((c >> (3 * j)) & 7);
    stride[(size_t)order[n - 1]] = 1;
    for (size_t i = n - 1; i-- > 0;) stride[(size_t)order[i]] = stride[(size_t)order[i + 1]] * size[(size_t)order[i + 1]] + pad[i];
    int conflicts = storeConflicts(tile, lanes, bytes);
    long long elements = tile.elements();
    if (best.empty() || conflicts < bestConflicts || (conflicts == bestConflicts && elements < bestElements)) {
      best = stride;
      bestConflicts = conflicts;
      bestElements = elements;
    }
  }
  stride = best;
}

/// Widens an f32 box along the tensor's last dim to whole aligned 16-byte vectors, where its first
/// element there is a multiple of 4 plus a constant at every point (a stencil's or a padded
/// convolution's halo: 64 b - 2 becomes 64 b - 4, 68 elements 72), the tensor's rows hold whole
/// vectors (a param extent: checked where the copy runs), and the extra elements are at most a
/// quarter of the box's row. The copy then loads float4s (codegen's vectorCopy) instead of
/// elements. Only where a block copies once (one reduced tile: a weighted stencil's window). H100
/// (bench/results/2026-11-27-h100-aligned-copy.txt): Gaussian2D 8192^2 264.8 -> 234.7 us; the conv
/// layers, whose copies follow the channel tiles, ran 0.71-1.06x as fast (geomean 0.894).
void widenToVectors(SharedTile &tile, const TensorDecl &tensor) {
  size_t n = tile.size.size();
  if (tensor.type != DType::F32 || tile.inner() != n - 1) return;
  if (tensor.shape[n - 1].param.empty() && tensor.shape[n - 1].value % 4 != 0) return;
  isl::aff first = tile.offset.get_at((int)n - 1);
  isl::val c = first.get_constant_val();
  if (!quadAligned(first) || !c.is_int()) return;
  long long shift = ((c.get_num_si() % 4) + 4) % 4, size = tile.size[n - 1];
  long long wide = (size + shift + 3) / 4 * 4;
  if (wide == size || 4 * (wide - size) > size) return;
  tile.offset = tile.offset.set_at((int)n - 1, first.add_constant(isl::val(islCtx(), -shift)));
  tile.size[n - 1] = wide;
}

} // namespace

bool quadAligned(const isl::aff &first) {
  if (isl_aff_dim(first.get(), isl_dim_div) != 0) return false;
  for (auto type : {isl_dim_in, isl_dim_param})
    for (int i = 0; i < (int)isl_aff_dim(first.get(), type); ++i) {
      isl::val v = isl::manage(isl_aff_get_coefficient_val(first.get(), type, i));
      if (!v.is_int() || v.get_num_si() % 4 != 0) return false;
    }
  return true;
}

std::vector<SharedTile> sharedTiles(const Scop &s, const std::vector<std::string> &stmts, const isl::union_map &prefix,
                                    const isl::union_map &parallel, unsigned members,
                                    const std::vector<std::string> *tensors, const std::map<std::string, std::vector<int>> &layouts,
                                    long long limit) {
  isl::ctx ctx = islCtx();
  std::map<std::string, isl::union_map> reads;
  std::set<std::string> written;
  for (const auto &name : stmts) {
    const ScopStatement &st = *s.statement(name);
    isl::set dom(ctx, st.domain);
    written.insert(isl::map(ctx, st.write).range_tuple_id().name());
    for (const auto &r : st.reads) {
      isl::map a = isl::map(ctx, r).intersect_domain(dom);
      std::string t = a.range_tuple_id().name();
      reads[t] = reads.count(t) ? reads[t].unite(isl::union_map(a)) : isl::union_map(a);
    }
  }
  std::vector<std::string> order;
  if (tensors) {
    order = *tensors;
  } else {
    for (const auto &t : s.tensors) order.push_back(t.name);
  }
  // Whether each block copies once: its reduced tiles' members (the prefix's after `members`)
  // take one value.
  bool oneCopy = true;
  isl::map_list prefixes = prefix.get_map_list();
  for (int i = 0; i < (int)prefixes.size(); ++i) {
    isl::map m = prefixes.at(i);
    if (m.range_tuple_dim() <= members) continue;
    isl::set reduced = isl::manage(isl_set_project_out(m.range().release(), isl_dim_set, 0, members));
    oneCopy = oneCopy && isl_set_is_singleton(reduced.get()) == isl_bool_true;
  }
  std::vector<SharedTile> out, widened;
  long long bytes = 0;
  for (const auto &name : order) {
    const TensorDecl *t = s.tensor(name);
    bool choose = tensors == nullptr;
    auto reject = [&](const std::string &why) {
      if (!choose) throw std::logic_error("staged tensor " + name + ": " + why);
    };
    if (!t || !reads.count(name)) {
      reject("not read there");
      continue;
    }
    if (written.count(name) || t->shape.empty()) {
      reject("written there, or a scalar");
      continue;
    }
    // Reuse: some element is read by two points of the parallel band.
    if (choose && reads[name].reverse().apply_range(parallel).is_single_valued()) continue;
    isl::union_map footprint = prefix.reverse().apply_range(reads[name]);
    isl::map_list maps = footprint.get_map_list();
    if (maps.size() != 1) {
      reject("its footprint spans several prefix spaces");
      continue;
    }
    isl::fixed_box box = maps.at(0).range_simple_fixed_box_hull();
    if (!box.is_valid()) {
      reject("isl finds no box of fixed size around its footprint");
      continue;
    }
    SharedTile tile;
    tile.tensor = name;
    tile.offset = box.offset();
    isl::multi_val size = box.size();
    for (unsigned d = 0; d < size.size(); ++d) tile.size.push_back(size.at((int)d).get_num_si());
    size_t n = tile.size.size();
    auto layout = layouts.find(name);
    if (layout != layouts.end()) tile.order = layout->second;
    // Bank padding (copyStrides): the innermost dim other than the last along which neighbouring
    // threads (along x) read.
    int column = -1;
    for (int d : movingDims(s, stmts, name, prefix, (int)members - 1))
      if (d + 1 < (int)n) column = std::max(column, d);
    copyStrides(tile, column, dtypeBytes(t->type));
    long long b = tile.bytes(dtypeBytes(t->type));
    if (choose && bytes + b > limit) continue;
    bytes += b;
    out.push_back(tile);
    if (!oneCopy) continue;
    SharedTile wide = tile;
    widenToVectors(wide, *t);
    copyStrides(wide, column, dtypeBytes(t->type));
    widened.push_back(wide);
  }
  if (!oneCopy) return out;
  // The tiles widened to whole vectors where all of them still fit `limit` (polyk-bind's budget,
  // the same in polyk-emit: both take the same tiles); else as they are.
  long long wideBytes = 0;
  for (const auto &w : widened) wideBytes += w.bytes(dtypeBytes(s.tensor(w.tensor)->type));
  return wideBytes <= limit ? widened : out;
}

std::vector<int> runLayout(const Scop &s, const std::vector<std::string> &stmts, const SharedTile &tile, const isl::union_map &prefix,
                           unsigned members, long long runX, long long runY, const std::vector<long long> &points) {
  int n = (int)tile.size.size();
  std::set<int> x = movingDims(s, stmts, tile.tensor, prefix, (int)members - 1);
  std::set<int> y = x.empty() ? movingDims(s, stmts, tile.tensor, prefix, (int)members - 2) : std::set<int>{};
  int inner = runX > 1 && !x.empty() ? *x.rbegin() : runY > 1 && !y.empty() ? *y.rbegin() : n - 1;
  if (inner == n - 1 && x.empty() && y.empty())
    for (int m = (int)members - 3; m >= 0; --m) {
      if (m >= (int)points.size() || points[(size_t)m] <= 1) continue;
      std::set<int> z = movingDims(s, stmts, tile.tensor, prefix, m);
      if (z.empty()) continue;
      inner = *z.rbegin();
      break;
    }
  if (inner == n - 1) return {};
  std::vector<int> order;
  for (int d = 0; d < n; ++d)
    if (d != inner) order.push_back(d);
  order.push_back(inner);
  return order;
}

isl::union_map stagingPrefix(const isl::schedule_node &tileBand, const isl::schedule_node &kTiles) {
  isl::union_set dom = nodeDomain(kTiles);
  return isl::manage(isl_union_map_flat_range_product(
      isl::union_map::from(tileBand.as<isl::schedule_node_band>().get_partial_schedule()).intersect_domain(dom).release(),
      isl::union_map::from(kTiles.as<isl::schedule_node_band>().get_partial_schedule()).intersect_domain(dom).release()));
}

std::vector<SharedTile> stagedTiles(const Scop &s, const isl::schedule &bound, int k, std::vector<std::string> *stmts,
                                    isl::union_map *prefix, unsigned *reducedMembers) {
  const KernelConfig &kc = s.kernels.at((size_t)k);
  if (kc.shared.empty()) return {};
  isl::schedule_node kernel = findMark(bound, "kernel_" + std::to_string(k)), mark;
  if (kernel.is_null()) throw std::logic_error("no kernel_" + std::to_string(k) + " mark");
  kernel.foreach_descendant_top_down([&](isl::schedule_node n) -> bool {
    if (mark.is_null() && n.isa<isl::schedule_node_mark>() && markName(n) == "shared") mark = n;
    return mark.is_null();
  });
  isl::schedule_node tileBand = kernel.child(0);
  while (tileBand.isa<isl::schedule_node_mark>()) tileBand = tileBand.child(0);
  if (mark.is_null() || !tileBand.isa<isl::schedule_node_band>() || !mark.parent().isa<isl::schedule_node_band>() ||
      isl_schedule_node_is_equal(mark.parent().get(), tileBand.get()) == isl_bool_true)
    fail(s.at.schedule, "kernel_" + std::to_string(k) + ": the \"shared\" mark must sit below the tile band and a band of reduced tiles");
  isl::schedule_node kTiles = mark.parent();
  if (reducedMembers) *reducedMembers = kTiles.as<isl::schedule_node_band>().n_member();
  std::vector<std::string> below = statementsIn(s, nodeDomain(kTiles));
  if (stmts) *stmts = below;
  isl::union_map p = stagingPrefix(tileBand, kTiles);
  if (prefix) *prefix = p;
  try {
    std::map<int, KernelSizes> sizes = parseSizes(s.sizes, &s.at.sizes);
    long long budget = sizes.count(k) ? sharedBudget(sizes.at(k)) : kStaticShared;
    return sharedTiles(s, below, p, isl::union_map::empty(islCtx()), tileBand.as<isl::schedule_node_band>().n_member(), &kc.shared,
                       kc.sharedLayout, budget);
  } catch (const std::logic_error &e) {
    fail(kc.at.kernel, kc.name + ": " + e.what());
  }
}

} // namespace polyk
