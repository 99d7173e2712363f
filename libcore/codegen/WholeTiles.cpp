// Partial blocks that run the whole tiles' code (WholeTiles.h).
#include "WholeTiles.h"

#include "polyk/Schedule.h"
#include "polyk/Sizes.h"

#include <isl/aff.h>
#include <isl/ast_build.h>
#include <isl/set.h>

namespace polyk::codegen {

namespace {

std::string tensorOf(const std::string &access) { return isl::map(islCtx(), access).range_tuple_id().name(); }

isl::set anonymous(const isl::set &s) { return isl::manage(isl_set_reset_tuple_id(s.copy())); }

/// `dom` is the product of its first `n` dims' values and the others'.
bool isProduct(const isl::set &dom, unsigned n) {
  unsigned all = dom.tuple_dim();
  isl::set par = isl::manage(isl_set_project_out(dom.copy(), isl_dim_set, n, all - n));
  isl::set rest = isl::manage(isl_set_project_out(dom.copy(), isl_dim_set, 0, n));
  isl::set product = isl::manage(isl_set_flat_product(anonymous(par).release(), anonymous(rest).release()));
  return product.is_equal(anonymous(dom));
}

/// The single affine piece of a single-valued map, over its domain's whole space; null where it
/// has several pieces.
isl::multi_aff onlyPiece(const isl::map &m) {
  isl::pw_multi_aff pma = isl::manage(isl_pw_multi_aff_from_map(m.copy()));
  if (isl_pw_multi_aff_n_piece(pma.get()) != 1) return isl::multi_aff();
  isl::multi_aff out;
  pma.foreach_piece([&](isl::set, isl::multi_aff ma) { out = ma; });
  return out;
}

/// Every read `access` of tensor tile `t` by the points `ext` of statement `dom` (whose staging
/// prefix `prefix` gives) falls inside the tile's box.
bool insideBox(const isl::set &dom, const isl::set &ext, const std::string &access, const SharedTile &t,
               const isl::union_map &prefix, const isl::multi_aff &block) {
  isl::union_map mine = prefix.intersect_domain(isl::union_set(dom));
  isl::map_list maps = mine.get_map_list();
  if (maps.size() != 1) return false;
  isl::multi_aff pre = onlyPiece(maps.at(0)), read = onlyPiece(isl::map(islCtx(), access));
  if (pre.is_null() || read.is_null()) return false;
  // instance -> (element - the box's first element), over anonymous tuples.
  auto bare = [](isl::multi_aff ma) {
    return isl::manage(isl_multi_aff_reset_tuple_id(isl_multi_aff_reset_tuple_id(ma.release(), isl_dim_in), isl_dim_out));
  };
  // The prefix's functions hold on the domain; on the points past the ends its tile band's must
  // still be the blocks' (isl may have simplified them with the domain's bounds).
  unsigned n = block.size(), all = pre.size();
  if (all < n) return false;
  isl::multi_aff tiles = isl::manage(isl_multi_aff_drop_dims(pre.copy(), isl_dim_out, n, all - n));
  isl::map preTiles = isl::manage(isl_map_from_multi_aff(bare(tiles).release())).intersect_domain(ext);
  isl::map blocks = isl::manage(isl_map_from_multi_aff(bare(block).release())).intersect_domain(ext);
  if (!preTiles.is_equal(blocks)) return false;
  isl::multi_aff offsetInTile = bare(read).sub(bare(t.offset.pullback(pre)));
  isl::map within = isl::manage(isl_map_from_multi_aff(offsetInTile.release()));
  std::string x, cons;
  for (size_t d = 0; d < t.size.size(); ++d) {
    std::string sd = std::to_string(d);
    x += (d ? ", " : "") + std::string("x") + sd;
    cons += std::string(d ? " and " : "") + "0 <= x" + sd + " < " + std::to_string(t.size[d]);
  }
  isl::set box(islCtx(), "{ [" + x + "] : " + cons + " }");
  return ext.apply(within).is_subset(box);
}

} // namespace

// (CodegenInternal.h)
std::string domainGuard(const isl::set &dom, const isl::set &ext) {
  isl::set g = anonymous(dom).gist(ext);
  if (isl_set_plain_is_universe(g.get()) == isl_bool_true) return "";
  unsigned params = (unsigned)isl_set_dim(g.get(), isl_dim_param), dims = g.tuple_dim();
  // The dims become parameters of their own names; the condition is then an expression of them.
  isl_set *named = isl_set_copy(g.get());
  // (Named "(i)": the macro's arguments are expressions.)
  for (unsigned d = 0; d < dims; ++d) {
    isl_id *id = isl_set_get_dim_id(dom.get(), isl_dim_set, d);
    std::string arg = "(" + std::string(isl_id_get_name(id)) + ")";
    isl_id_free(id);
    named = isl_set_set_dim_id(named, isl_dim_set, d, isl_id_alloc(islCtx().get(), arg.c_str(), nullptr));
  }
  isl::set onParams = isl::manage(isl_set_params(isl_set_move_dims(named, isl_dim_param, params, isl_dim_set, 0, dims)));
  isl::ast_build build = isl::ast_build::from_context(isl::set::universe(onParams.get_space()));
  isl_ast_expr *e = isl_ast_build_expr_from_set(build.get(), onParams.release());
  std::string text = islExprToC(e);
  isl_ast_expr_free(e);
  return text;
}

isl::schedule_node tileBand(const isl::schedule &bound, int k) {
  isl::schedule_node band;
  std::string name = "kernel_" + std::to_string(k);
  bound.get_root().foreach_descendant_top_down([&](isl::schedule_node n) -> bool {
    if (!band.is_null()) return false;
    if (n.isa<isl::schedule_node_mark>() && markName(n) == name) {
      isl::schedule_node c = n.child(0);
      while (c.isa<isl::schedule_node_mark>()) c = c.child(0);
      if (c.isa<isl::schedule_node_band>()) band = c;
      return false;
    }
    return true;
  });
  return band;
}

isl::multi_aff blockOf(const isl::schedule_node &band, const std::vector<long long> &tile, const ScopStatement &st) {
  isl::union_map all = isl::union_map::from(band.as<isl::schedule_node_band>().get_partial_schedule());
  isl::set dom(islCtx(), st.domain);
  isl::map_list maps = all.intersect_domain(isl::union_set(dom)).get_map_list();
  unsigned n = band.as<isl::schedule_node_band>().n_member(), dims = dom.tuple_dim();
  if (maps.size() != 1 || tile.size() != n || dims < n) return isl::multi_aff();
  isl::multi_aff onDomain = onlyPiece(maps.at(0));
  if (onDomain.is_null()) return isl::multi_aff();
  // The dim each member reads; a member constant on the domain tiles the dim of its place.
  std::vector<int> dimOf(n, -1);
  for (unsigned m = 0; m < n; ++m) {
    isl::aff a = onDomain.at((int)m);
    for (unsigned d = 0; d < dims; ++d)
      if (isl_aff_involves_dims(a.get(), isl_dim_in, d, 1) == isl_bool_true) {
        if (dimOf[m] >= 0) return isl::multi_aff();
        dimOf[m] = (int)d;
      }
    if (dimOf[m] < 0) dimOf[m] = (int)m;
  }
  std::string in, out;
  for (unsigned d = 0; d < dims; ++d) in += (d ? ", " : "") + std::string("d") + std::to_string(d);
  for (unsigned m = 0; m < n; ++m)
    out += std::string(m ? ", " : "") + "floor(d" + std::to_string(dimOf[m]) + "/" + std::to_string(tile[m]) + ")";
  isl::multi_aff block(islCtx(), "{ " + st.name + "[" + in + "] -> [" + out + "] }");
  // It must be the band's own on the domain.
  isl::map own = isl::manage(isl_map_from_multi_aff(onDomain.release())).intersect_domain(dom);
  isl::map mine = isl::manage(isl_map_from_multi_aff(block.copy())).intersect_domain(dom);
  return own.is_equal(mine) ? block : isl::multi_aff();
}

WholeTiles wholeTiles(const Scop &s, const isl::schedule &bound, const KernelConfig &kc, int k, const Staging &staging) {
  if (staging.tiles.empty()) return {};
  isl::schedule_node band = tileBand(bound, k);
  if (band.is_null() || s.sizes.empty()) return {};
  unsigned n = band.as<isl::schedule_node_band>().n_member();
  const std::vector<long long> tile = parseSizes(s.sizes, &s.at.sizes)[k].tile;
  std::set<std::string> promoted(kc.promoted.begin(), kc.promoted.end()), shared(kc.shared.begin(), kc.shared.end());
  WholeTiles out;
  // The blocks holding instances of every statement.
  std::map<std::string, isl::multi_aff> blockOfStmt;
  for (const auto &name : kc.statements) {
    const ScopStatement &st = *s.statement(name);
    isl::multi_aff block = blockOf(band, tile, st);
    if (block.is_null() || isl::set(islCtx(), st.domain).tuple_dim() < n) return {};
    isl::set mine = anonymous(isl::set(islCtx(), st.domain).apply(isl::manage(isl_map_from_multi_aff(block.copy()))));
    out.blocks = out.blocks.is_null() ? mine : out.blocks.intersect(mine);
    blockOfStmt[name] = block;
  }
  // The points the stores write in those blocks: each computing statement must have all of them
  // (an output point that a `where` leaves to its init alone must not take the update's values).
  isl::set stored;
  for (const auto &name : kc.statements) {
    const ScopStatement &st = *s.statement(name);
    if (promoted.count(tensorOf(st.write))) continue;
    isl::set mine = anonymous(isl::set(islCtx(), st.domain)).intersect(anonymous(out.blocks.preimage(blockOfStmt[name])));
    stored = stored.is_null() ? mine : stored.unite(mine);
  }
  for (const auto &name : kc.statements) {
    const ScopStatement &st = *s.statement(name);
    isl::set dom(islCtx(), st.domain);
    unsigned reduced = dom.tuple_dim() - n;
    if (promoted.count(tensorOf(st.write)) && !stored.is_null()) {
      isl::set par = anonymous(isl::manage(isl_set_project_out(dom.copy(), isl_dim_set, n, reduced)));
      if (stored.tuple_dim() != n || !stored.is_subset(par)) return {};
    }
    // The points those blocks run: every point of their tiles, with the statement's reduced
    // values (its domain is a product, below) or none (a store).
    isl::set tiles = anonymous(out.blocks.preimage(blockOfStmt[name]));
    if (!promoted.count(tensorOf(st.write))) {
      // (A store may read other tensors too, an epilogue's bias say: its whole body runs under its
      // guard, so only for the points that exist. Before, such a store sent the kernel's partial
      // blocks to the exact points' code: conv + bias + ReLU 23.6 -> 56 us on R2's shape.)
      if (reduced) return {};
      out.storeGuards[name] = domainGuard(dom, tiles);
      continue;
    }
    if (st.body.find('/') != std::string::npos || st.body.find('%') != std::string::npos) return {};
    // Not a window's (a stencil's 5 x 5): the second copy of Gaussian2D's code, with guarded
    // stores, took nvcc from 56 to 104 registers a thread and the kernel from 269 to 385 us
    // (H100, bench/results/2026-11-26-h100-whole-tiles.txt); its partial blocks are few.
    if (reduced && windowReduction(st, n)) return {};
    if (!isProduct(dom, n)) return {};
    isl::set values = isl::manage(isl_set_insert_dims(
        isl_set_project_out(anonymous(dom).release(), isl_dim_set, 0, n), isl_dim_set, 0, n));
    isl::set ext = tiles.intersect(values);
    for (const auto &r : st.reads) {
      std::string t = tensorOf(r);
      if (promoted.count(t)) continue;
      const SharedTile *copy = staging.tile(t);
      if (!shared.count(t) || !staging.reads(name) || !copy || !insideBox(dom, ext, r, *copy, staging.prefix, blockOfStmt[name])) return {};
    }
  }
  out.apply = true;
  return out;
}

} // namespace polyk::codegen
