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
#include <algorithm>

namespace polyk::codegen {

namespace {

struct BlockAccesses {
  isl::union_map reads, writes; // block[b_x, b_y] -> element, over the whole grid
};

const std::vector<const char *> kBlockIds = {"b_x", "b_y"};

/// `elements` (a set with the parameters b_x, b_y, t_x, t_y and the program's) as a map from the
/// ids named in `ids`, in that order (ids[b_x, b_y] for blocks), to the elements, the other ids
/// projected out.
isl::union_map byIds(const isl::union_set &elements, const std::vector<const char *> &ids) {
  isl::union_map out = isl::union_map::empty(islCtx());
  isl::set context = mappingContext({});
  isl::set_list sets = elements.get_set_list();
  for (int i = 0; i < (int)sets.size(); ++i) {
    isl_set *set = isl_set_align_params(sets.at(i).release(), isl_set_get_space(context.get()));
    isl_map *m = isl_map_from_range(set);
    for (const char *id : {"t_y", "t_x", "b_y", "b_x"}) {
      if (std::find_if(ids.begin(), ids.end(), [&](const char *k) { return std::string(k) == id; }) != ids.end()) continue;
      int pos = isl_map_find_dim_by_name(m, isl_dim_param, id);
      m = isl_map_project_out(m, isl_dim_param, pos, 1);
    }
    for (auto id = ids.rbegin(); id != ids.rend(); ++id) {
      int pos = isl_map_find_dim_by_name(m, isl_dim_param, *id);
      m = isl_map_move_dims(m, isl_dim_in, 0, isl_dim_param, pos, 1);
    }
    m = isl_map_set_tuple_name(m, isl_dim_in, "ids");
    out = out.unite(isl::union_map(isl::manage(m)));
  }
  return out;
}

/// The statement instances each (block, thread) of kernel `kc` runs: the domains that reach the
/// leaves of the mapped schedule, through the mapping's filters on the ids.
isl::union_set kernelInstances(const Scop &s, const isl::schedule &mapped, const KernelConfig &kc) {
  isl::union_set kernelDomain = isl::union_set::empty(islCtx());
  for (const auto &name : kc.statements) kernelDomain = kernelDomain.unite(isl::union_set(isl::set(islCtx(), s.statement(name)->domain)));
  isl::union_set instances = isl::union_set::empty(islCtx());
  mapped.get_root().foreach_descendant_top_down([&](isl::schedule_node n) -> bool {
    if (n.isa<isl::schedule_node_leaf>()) instances = instances.unite(nodeDomain(n).intersect(kernelDomain));
    return true;
  });
  return instances;
}

isl::union_set touched(const isl::union_set &instances, const std::string &access) {
  return instances.apply(isl::union_map(isl::map(islCtx(), access)));
}

BlockAccesses blockAccesses(const Scop &s, const isl::schedule &mapped, const KernelConfig &kc) {
  isl::union_set instances = kernelInstances(s, mapped, kc);
  isl::union_set read = isl::union_set::empty(islCtx()), written = isl::union_set::empty(islCtx());
  for (const auto &name : kc.statements) {
    const ScopStatement &st = *s.statement(name);
    written = written.unite(touched(instances, st.write));
    for (const auto &r : st.reads) read = read.unite(touched(instances, r));
    if (st.kind == StmtKind::Reduce) read = read.unite(touched(instances, st.write));
  }
  return {byIds(read, kBlockIds), byIds(written, kBlockIds)};
}

/// True when `m` (block -> block) relates each block only to itself.
bool onlyItself(const isl::union_map &m) {
  return m.deltas().subtract(isl::union_set(isl::set(islCtx(), "{ ids[0, 0] }"))).is_empty();
}

} // namespace

bool readsRowResult(const Scop &s, const isl::schedule &mapped, const KernelConfig &writer, const std::string &stmt,
                    const KernelConfig &reader, const std::string &axis) {
  const ScopStatement &w = *s.statement(stmt);
  std::string tensor = isl::map(islCtx(), w.write).range_tuple_id().name();
  std::vector<const char *> row = {"b_x", "b_y", axis == "x" ? "t_y" : "t_x"};
  isl::union_set read = isl::union_set::empty(islCtx()), instances = kernelInstances(s, mapped, reader);
  for (const auto &name : reader.statements)
    for (const auto &r : s.statement(name)->reads)
      if (isl::map(islCtx(), r).range_tuple_id().name() == tensor) read = read.unite(touched(instances, r));
  isl::union_set written = touched(kernelInstances(s, mapped, writer).intersect(isl::union_set(isl::set(islCtx(), w.domain))), w.write);
  isl::union_map reads = byIds(read, row), writes = byIds(written, row);
  return !reads.is_empty() && writes.is_single_valued() && reads.is_subset(writes);
}

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
      // Kernels of one thread each (a reduction of one element and its initialisation): that
      // thread runs them in order.
      joins = (singleThread(prev) && singleThread(kc)) ||
              (prev.grid == kc.grid && prev.block == kc.block && blockComplete(prev) && blockComplete(kc) &&
              onlyItself(mine.reads.apply_range(group.writes.reverse())) &&  // reads what its own block wrote
              onlyItself(mine.writes.apply_range(group.reads.reverse())) &&  // overwrites only its own block's reads
              onlyItself(mine.writes.apply_range(group.writes.reverse())));  // and writes
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
