// Kernels that run as one (see EmitParts.h): consecutive kernels of the same launch shape fuse
// when no block reads, or overwrites, what another block of the group writes or reads. That is
// decided on per-block access relations, block[b_x, b_y] -> tensor element, built with isl from the
// mapped schedule, the thread-block ranges of Matz et al. (§4): a group whose relations map every
// block only to itself needs no grid-wide synchronisation, only a barrier between its parts.
// Softmax and layer norm, whose rows fit one block, become one kernel this way.
#include "EmitParts.h"

#include "polyk/Bind.h"

#include <isl/map.h>
#include <isl/set.h>
#include <isl/union_map.h>

namespace polyk::codegen {

namespace {

struct BlockAccesses {
  isl::union_map reads, writes; // block[b_x, b_y] -> element, over the whole grid
};

/// `elements` (a set with the parameters b_x, b_y, t_x, t_y and the program's) as a map from the
/// block ids to the elements, the thread ids projected out.
isl::union_map byBlock(const isl::union_set &elements) {
  isl::union_map out = isl::union_map::empty(islCtx());
  isl::set context = mappingContext({});
  isl::set_list sets = elements.get_set_list();
  for (int i = 0; i < (int)sets.size(); ++i) {
    isl_set *set = isl_set_align_params(sets.at(i).release(), isl_set_get_space(context.get()));
    isl_map *m = isl_map_from_range(set);
    for (const char *id : {"t_y", "t_x"}) {
      int pos = isl_map_find_dim_by_name(m, isl_dim_param, id);
      m = isl_map_project_out(m, isl_dim_param, pos, 1);
    }
    for (const char *id : {"b_y", "b_x"}) { // block[b_x, b_y]
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
  return {byBlock(read), byBlock(written)};
}

/// True when `m` (block -> block) relates each block only to itself.
bool onlyItself(const isl::union_map &m) {
  return m.deltas().subtract(isl::union_set(isl::set(islCtx(), "{ block[0, 0] }"))).is_empty();
}

} // namespace

std::vector<std::vector<size_t>> kernelGroups(const Scop &s, const isl::schedule &mapped,
                                              const std::function<bool(const KernelConfig &)> &launched,
                                              const std::function<bool(const KernelConfig &)> &blockComplete) {
  std::vector<std::vector<size_t>> groups;
  BlockAccesses group;
  for (size_t k = 0; k < s.kernels.size(); ++k) {
    const KernelConfig &kc = s.kernels[k];
    if (!launched(kc)) continue;
    BlockAccesses mine = blockAccesses(s, mapped, kc);
    bool joins = false;
    if (!groups.empty()) {
      const KernelConfig &prev = s.kernels[groups.back().back()];
      joins = prev.grid == kc.grid && prev.block == kc.block && blockComplete(prev) && blockComplete(kc) &&
              onlyItself(mine.reads.apply_range(group.writes.reverse())) &&  // reads what its own block wrote
              onlyItself(mine.writes.apply_range(group.reads.reverse())) &&  // overwrites only its own block's reads
              onlyItself(mine.writes.apply_range(group.writes.reverse()));   // and writes
    }
    if (joins) {
      groups.back().push_back(k);
      group.reads = group.reads.unite(mine.reads);
      group.writes = group.writes.unite(mine.writes);
    } else {
      groups.push_back({k});
      group = mine;
    }
  }
  return groups;
}

} // namespace polyk::codegen
