// Kernels that run as one (see EmitParts.h): consecutive kernels of the same launch shape fuse
// when no block reads, or overwrites, what another block of the group writes or reads. That is
// decided on per-block access relations, block[b_x, b_y] -> tensor element, built with isl from the
// mapped schedule, the thread-block ranges of Matz et al. (§4): a group whose relations map every
// block only to itself needs no grid-wide synchronisation, only a barrier between its parts.
// Softmax and layer norm, whose rows fit one block, become one kernel this way.
#include "EmitParts.h"

#include "polyk/Bind.h"

#include <isl/map.h>
#include <string>
#include <isl/set.h>
#include <isl/union_map.h>

namespace polyk::codegen {

namespace {

struct BlockAccesses {
  isl::union_map reads, writes; // block[b_x, b_y] -> element, over the whole grid
  isl::union_map warpReads, warpWrites; // block[b_x, b_y, t_y] -> element
};

/// `elements` (a set with the parameters b_x, b_y, t_x, t_y and the program's) as a map from the
/// block ids to the elements, the thread ids projected out; with `warps`, from block[b_x, b_y, t_y]
/// (one warp each where the block is 32 threads wide), only t_x projected out.
isl::union_map byBlock(const isl::union_set &elements, bool warps) {
  isl::union_map out = isl::union_map::empty(islCtx());
  isl::set context = mappingContext({});
  isl::set_list sets = elements.get_set_list();
  for (int i = 0; i < (int)sets.size(); ++i) {
    isl_set *set = isl_set_align_params(sets.at(i).release(), isl_set_get_space(context.get()));
    isl_map *m = isl_map_from_range(set);
    for (const char *id : {"t_y", "t_x"}) {
      if (warps && std::string(id) == "t_y") continue;
      int pos = isl_map_find_dim_by_name(m, isl_dim_param, id);
      m = isl_map_project_out(m, isl_dim_param, pos, 1);
    }
    for (const char *id : {"t_y", "b_y", "b_x"}) { // block[b_x, b_y] or block[b_x, b_y, t_y]
      if (!warps && std::string(id) == "t_y") continue;
      int pos = isl_map_find_dim_by_name(m, isl_dim_param, id);
      m = isl_map_move_dims(m, isl_dim_in, 0, isl_dim_param, pos, 1);
    }
    m = isl_map_set_tuple_name(m, isl_dim_in, "block");
    out = out.unite(isl::union_map(isl::manage(m)));
  }
  return out;
}

BlockAccesses blockAccesses(const Scop &s, const isl::schedule &mapped, const KernelConfig &kc) {
  // The statement instances each (block, thread) runs: the domains that reach the leaves, through
  // the mapping's filters on the ids.
  isl::union_set kernelDomain = isl::union_set::empty(islCtx());
  for (const auto &name : kc.statements) kernelDomain = kernelDomain.unite(isl::union_set(isl::set(islCtx(), s.statement(name)->domain)));
  isl::union_set instances = isl::union_set::empty(islCtx());
  mapped.get_root().foreach_descendant_top_down([&](isl::schedule_node n) -> bool {
    if (n.isa<isl::schedule_node_leaf>()) instances = instances.unite(nodeDomain(n).intersect(kernelDomain));
    return true;
  });
  isl::union_set read = isl::union_set::empty(islCtx()), written = isl::union_set::empty(islCtx());
  for (const auto &name : kc.statements) {
    const ScopStatement &st = *s.statement(name);
    auto touched = [&](const std::string &access) { return instances.apply(isl::union_map(isl::map(islCtx(), access))); };
    written = written.unite(touched(st.write));
    for (const auto &r : st.reads) read = read.unite(touched(r));
    if (st.kind == StmtKind::Reduce) read = read.unite(touched(st.write));
  }
  return {byBlock(read, false), byBlock(written, false), byBlock(read, true), byBlock(written, true)};
}

/// True when `m` (block -> block) relates each block (or warp) only to itself.
bool onlyItself(const isl::union_map &m) {
  return m.deltas().subtract(isl::union_set(islCtx(), "{ block[0, 0]; block[0, 0, 0] }")).is_empty();
}

/// Whether `mine` may follow `group` after a barrier of the owners its relations name: it reads
/// only what its own owner wrote, and overwrites only its own owner's reads and writes.
bool ownersOnly(const isl::union_map &mineReads, const isl::union_map &mineWrites, const isl::union_map &groupReads,
                const isl::union_map &groupWrites) {
  return onlyItself(mineReads.apply_range(groupWrites.reverse())) && onlyItself(mineWrites.apply_range(groupReads.reverse())) &&
         onlyItself(mineWrites.apply_range(groupWrites.reverse()));
}

} // namespace

std::vector<std::vector<size_t>> kernelGroups(const Scop &s, const isl::schedule &mapped,
                                              const std::function<bool(const KernelConfig &)> &launched,
                                              const std::function<bool(const KernelConfig &)> &blockComplete,
                                              std::vector<bool> *warpLocal) {
  std::vector<std::vector<size_t>> groups;
  std::vector<bool> warps; // per group: every part after the first touches only its warp's elements
  BlockAccesses group;
  for (size_t k = 0; k < s.kernels.size(); ++k) {
    const KernelConfig &kc = s.kernels[k];
    if (!launched(kc)) continue;
    BlockAccesses mine = blockAccesses(s, mapped, kc);
    bool joins = false;
    if (!groups.empty()) {
      const KernelConfig &prev = s.kernels[groups.back().back()];
      joins = prev.grid == kc.grid && prev.block == kc.block && blockComplete(prev) && blockComplete(kc) &&
              ownersOnly(mine.reads, mine.writes, group.reads, group.writes);
    }
    if (joins) {
      // A warp per row (blocks 32 threads wide): parts whose warps touch only their own warp's
      // elements need only __syncwarp, so a block's warps do not wait for each other.
      warps.back() = warps.back() && kc.block[0] == 32 &&
                     ownersOnly(mine.warpReads, mine.warpWrites, group.warpReads, group.warpWrites);
      groups.back().push_back(k);
      group.reads = group.reads.unite(mine.reads);
      group.writes = group.writes.unite(mine.writes);
      group.warpReads = group.warpReads.unite(mine.warpReads);
      group.warpWrites = group.warpWrites.unite(mine.warpWrites);
    } else {
      groups.push_back({k});
      warps.push_back(true);
      group = mine;
    }
  }
  if (warpLocal) {
    *warpLocal = warps;
    for (size_t g = 0; g < groups.size(); ++g) (*warpLocal)[g] = warps[g] && groups[g].size() > 1;
  }
  return groups;
}

} // namespace polyk::codegen
