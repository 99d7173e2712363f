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

/// The innermost dim of `tensor`'s box, other than its last, along which some statement's read
/// moves with the statement dim on threadIdx.x (the last member of `prefix`'s band of `members`):
/// neighbouring threads read that far apart in the copy. -1 where there is none.
int columnDim(const Scop &s, const std::vector<std::string> &stmts, const std::string &tensor, const isl::union_map &prefix,
              unsigned members) {
  isl::ctx ctx = islCtx();
  int out = -1;
  for (const auto &name : stmts) {
    const ScopStatement &st = *s.statement(name);
    isl::set dom(ctx, st.domain);
    isl::union_map mine = prefix.intersect_domain(isl::union_set(dom));
    if (mine.is_empty() || members == 0) continue;
    isl::pw_multi_aff at = isl::manage(isl_pw_multi_aff_from_map(isl_map_from_union_map(mine.copy())));
    // (Gisted: the pieces' domains would count as involving every dim.)
    isl::pw_aff xMember = isl::manage(isl_pw_aff_gist(at.get_at((int)members - 1).release(), dom.copy()));
    for (const auto &r : st.reads) {
      isl::map a(ctx, r);
      if (a.range_tuple_id().name() != tensor) continue;
      isl::pw_multi_aff pma = isl::manage(isl_pw_multi_aff_from_map(a.copy()));
      for (unsigned x = 0; x < a.domain_tuple_dim(); ++x) {
        if (isl_pw_aff_involves_dims(xMember.get(), isl_dim_in, x, 1) != isl_bool_true) continue;
        for (unsigned d = 0; d + 1 < a.range_tuple_dim(); ++d)
          if (isl_pw_aff_involves_dims(pma.get_at((int)d).get(), isl_dim_in, x, 1) == isl_bool_true) out = std::max(out, (int)d);
      }
    }
  }
  return out;
}

} // namespace

std::vector<SharedTile> sharedTiles(const Scop &s, const std::vector<std::string> &stmts, const isl::union_map &prefix,
                                    const isl::union_map &parallel, unsigned members,
                                    const std::vector<std::string> *tensors) {
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
  std::vector<SharedTile> out;
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
    tile.stride.assign(n, 1);
    // Bank padding: where neighbouring threads read along a box dim other than the last, that
    // dim's stride is made odd (one element after each of its slices: a row of a 2-d box).
    int column = columnDim(s, stmts, name, prefix, members);
    for (size_t d = n - 1; d-- > 0;) {
      tile.stride[d] = tile.stride[d + 1] * tile.size[d + 1];
      if ((int)d == column && tile.stride[d] % 2 == 0) ++tile.stride[d];
    }
    long long b = tile.elements() * dtypeBytes(t->type);
    if (choose && bytes + b > kSharedBytes) continue;
    bytes += b;
    out.push_back(tile);
  }
  return out;
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
    return sharedTiles(s, below, p, isl::union_map::empty(islCtx()), tileBand.as<isl::schedule_node_band>().n_member(), &kc.shared);
  } catch (const std::logic_error &e) {
    fail(kc.at.kernel, kc.name + ": " + e.what());
  }
}

} // namespace polyk
