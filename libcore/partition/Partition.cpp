// polyk-partition's model (Partition.h; Matz et al. §4-5). For each kernel: the block band below
// its `blocks_*` mark maps every statement instance to its block; composed with the statements'
// accesses it gives, per array, the elements a block reads and writes (threads and loops projected
// out, exact: polyk's accesses are affine functions on exact domains). Writes must be injective
// over blocks (no element written by two blocks: a multi-block reduction's atomics are not), or the
// kernel stays on one device. The split member is the one whose slab of blocks (one value of the
// member, all of the others) reads the fewest elements it does not write itself (its read halo),
// counted at the parameters' values; ties go to the outermost member, whose slabs are contiguous.
#include "polyk/Partition.h"

#include "polyk/Bind.h"
#include "polyk/Isl.h"
#include "polyk/Sizes.h"
#include "polyk/YamlIO.h"

#include <isl/aff.h>
#include <isl/map.h>
#include <isl/set.h>
#include <isl/union_map.h>
#include <algorithm>
#include <map>
#include <sstream>

namespace polyk {

namespace {

/// The elements of `s` at the parameters' values `params`: the sum over its disjoint pieces of
/// their bounding boxes' volumes (exact for boxes, which affine reads of a slab give).
long long countElements(const isl::set &s, const isl::set &params) {
  isl::set fixed = s.intersect_params(params);
  if (fixed.is_empty()) return 0;
  isl::set disjoint = isl::manage(isl_set_make_disjoint(fixed.copy()));
  long long total = 0;
  bool bounded = true;
  disjoint.foreach_basic_set([&](isl::basic_set piece) {
    isl::set b(piece);
    long long v = 1;
    for (unsigned d = 0; d < b.tuple_dim(); ++d) {
      isl::val lo = b.dim_min_val((int)d), hi = b.dim_max_val((int)d);
      if (!lo.is_int() || !hi.is_int()) bounded = false; // unbounded at these values
      else v *= hi.get_num_si() - lo.get_num_si() + 1;
    }
    total += v;
  });
  return bounded ? total : -1;
}

std::string axisName(const std::vector<std::string> &axes, size_t m) {
  size_t z = 0;
  for (size_t i = 0; i < m; ++i) z += axes[i] == "z";
  return axes[m] == "z" ? "z" + std::to_string(z) : axes[m];
}

} // namespace

Partition partition(const Scop &bound) {
  isl::ctx ctx = islCtx();
  if (auto sizes = parseSizes(bound.sizes, &bound.at.sizes); sizes.count(0) && sizes[0].time > 0)
    fail(bound.at.sizes, "sizes: time[" + std::to_string(sizes[0].time) +
                             "]: a time-tiled program is not partitioned yet; schedule it with --time-tile=0 (one step a launch)");
  isl::schedule sched = readIslSchedule(bound.schedule);
  isl::set params(ctx, paramDefaults(bound));
  Partition out;
  out.name = bound.name;
  out.params = bound.params;
  out.provenance = bound.provenance;
  out.provenance.push_back(currentStage("polyk-partition"));
  // A read array's own elements: those the kernel writes to it, or to the array feeding it at the
  // next step of an iterated program (Hotspot's Tn feeds T).
  std::map<std::string, std::string> feeds;
  for (const auto &[to, from] : bound.iterate.swaps) feeds[from] = to;
  std::map<int, KernelSizes> sizes = parseSizes(bound.sizes, &bound.at.sizes);
  for (size_t k = 0; k < bound.kernels.size(); ++k) {
    const KernelConfig &kc = bound.kernels[k];
    // A fused map kernel (its sizes give threads[..]) keeps its `shared` temporaries' rows in
    // shared memory: they touch no device memory.
    auto sz = sizes.find((int)k);
    bool mapBlock = sz != sizes.end() && !sz->second.threads.empty();
    KernelPartition kp;
    kp.name = kc.name;
    isl::schedule_node mark = findMark(sched, "kernel_" + std::to_string(k)), blocks;
    if (!mark.is_null())
      mark.foreach_descendant_top_down([&](isl::schedule_node n) -> bool {
        if (!blocks.is_null()) return false;
        if (n.isa<isl::schedule_node_mark>() && markName(n).rfind("blocks_", 0) == 0) blocks = n;
        return blocks.is_null();
      });
    if (blocks.is_null() || !blocks.child(0).isa<isl::schedule_node_band>()) {
      kp.reason = "one thread (the kernel has no grid)";
      out.kernels.push_back(kp);
      continue;
    }
    std::stringstream names(markName(blocks).substr(7));
    for (std::string a; std::getline(names, a, '_');) kp.axes.push_back(a);
    isl::schedule_node_band band = blocks.child(0).as<isl::schedule_node_band>();
    unsigned n = band.n_member();
    isl::multi_union_pw_aff ids = band.get_partial_schedule();
    ids = isl::manage(isl_multi_union_pw_aff_set_tuple_name(ids.release(), isl_dim_out, "block"));
    isl::union_set dom = nodeDomain(band);
    isl::union_map toBlock = isl::union_map::from(ids).intersect_domain(dom);
    isl::set grid = isl::manage(isl_set_from_union_set(toBlock.range().release()));
    kp.blocks = islStr(grid.coalesce());
    // Per array: block -> the elements its instances read / write.
    std::map<std::string, isl::union_map> reads, writes;
    std::vector<std::string> order; // arrays, first access first
    auto add = [&](std::map<std::string, isl::union_map> &into, const std::string &text, const isl::set &domain) {
      isl::map a = isl::map(ctx, text).intersect_domain(domain);
      std::string t = a.range_tuple_id().name();
      // A padded tensor's reads outside it yield the padding value and touch no memory: only
      // the elements inside it are read (else the enumerators list negative offsets).
      if (const TensorDecl *decl = bound.tensor(t); decl && decl->padding && &into == &reads)
        a = a.intersect_range(isl::set(ctx, tensorBox(bound, *decl)));
      if (std::count(kc.promoted.begin(), kc.promoted.end(), t)) return; // in registers
      if (const TensorDecl *decl = bound.tensor(t); mapBlock && decl && decl->role == Role::Temporary &&
                                                    std::count(kc.shared.begin(), kc.shared.end(), t))
        return; // a map kernel's rows in shared memory
      isl::union_map touched = toBlock.reverse().apply_range(isl::union_map(a));
      into[t] = into.count(t) ? into[t].unite(touched) : touched;
      if (std::find(order.begin(), order.end(), t) == order.end()) order.push_back(t);
    };
    isl::set_list sets = dom.get_set_list();
    for (int i = 0; i < (int)sets.size(); ++i) {
      const ScopStatement *st = bound.statement(isl_set_get_tuple_name(sets.at(i).get()));
      if (!st) continue;
      for (const auto &r : st->reads) add(reads, r, sets.at(i));
      add(writes, st->write, sets.at(i));
    }
    // Injective writes: each element's writer is one block.
    for (const auto &[t, w] : writes) {
      if (w.reverse().is_single_valued()) continue;
      kp.writesInjective = false;
      // An element two blocks write, at the parameters' values.
      isl::union_map same = isl::union_map(isl::manage(isl_map_identity(isl_space_map_from_set(grid.get_space().release()))));
      isl::union_map shared = w.apply_range(w.reverse()).subtract(same);
      isl::union_map fixed = shared.intersect_params(params);
      std::string example;
      if (!fixed.is_empty()) {
        isl::map one = isl::manage(isl_map_from_union_map(fixed.release()));
        isl::map sample = isl::manage(isl_map_from_basic_map(isl_map_sample(one.release())));
        example = "; for instance " + islStr(sample);
      }
      kp.reason = "its writes of " + t + " are not injective over blocks (several blocks write one element" + example +
                  "), so it stays on one device";
      break;
    }
    // The split: the smallest read halo of a slab.
    long long best = -1;
    for (unsigned m = 0; m < n; ++m) {
      isl::set fixedGrid = grid.intersect_params(params);
      isl::val lo = fixedGrid.dim_min_val((int)m), hi = fixedGrid.dim_max_val((int)m);
      if (!lo.is_int() || !hi.is_int() || hi.get_num_si() <= lo.get_num_si()) {
        kp.halo.push_back(-1);
        continue;
      }
      long long mid = (lo.get_num_si() + hi.get_num_si()) / 2;
      isl::set slab = isl::manage(isl_set_fix_si(grid.copy(), isl_dim_set, (int)m, (int)mid));
      long long halo = 0;
      for (const auto &t : order) {
        if (!reads.count(t)) continue;
        // (Union sets throughout: one that is empty has no set to take out of it.)
        isl::union_set r = reads[t].intersect_domain(isl::union_set(slab)).range();
        isl::union_set own = isl::union_set::empty(ctx);
        if (writes.count(t)) own = own.unite(writes[t].intersect_domain(isl::union_set(slab)).range());
        if (auto f = feeds.find(t); f != feeds.end() && writes.count(f->second)) {
          isl::set_list fed = writes[f->second].intersect_domain(isl::union_set(slab)).range().get_set_list();
          for (int i = 0; i < (int)fed.size(); ++i)
            own = own.unite(isl::union_set(isl::manage(isl_set_set_tuple_name(fed.at(i).release(), t.c_str()))));
        }
        isl::set_list h = r.subtract(own).get_set_list();
        for (int i = 0; i < (int)h.size() && halo >= 0; ++i) {
          long long c = countElements(h.at(i), params);
          halo = c < 0 ? -1 : halo + c;
        }
        if (halo < 0) break;
      }
      kp.halo.push_back(halo);
      // A device's share must be one range of blockIdx: the first member folded into z is the
      // outermost of blockIdx.z, the others interleave with it (AffineKernelIds::prologue).
      bool contiguous = kp.axes[m] != "z" || axisName(kp.axes, m) == "z0";
      if (halo >= 0 && contiguous && (best < 0 || halo < best)) best = halo, kp.split = (int)m;
    }
    if (!kp.writesInjective) {
      kp.split = -1;
    } else if (kp.split < 0) {
      kp.reason = "one block along every grid dim at these sizes";
    } else {
      std::string halos;
      for (unsigned m = 0; m < n; ++m)
        if (kp.halo[m] >= 0) halos += (halos.empty() ? "" : ", ") + axisName(kp.axes, m) + " " + std::to_string(kp.halo[m]);
      kp.reason = "the smallest read halo of a slab of blocks (elements: " + halos + ")";
    }
    for (const auto &t : order) {
      if (reads.count(t)) kp.accesses.push_back({t, "read", true, islStr(reads[t].coalesce())});
      if (writes.count(t)) kp.accesses.push_back({t, "write", true, islStr(writes[t].coalesce())});
    }
    out.kernels.push_back(kp);
  }
  return out;
}

std::string writePartition(const Partition &p) {
  YAML::Emitter out;
  out << YAML::BeginMap << YAML::Key << "polyk" << YAML::Value << "partition/1";
  out << YAML::Key << "name" << YAML::Value << p.name;
  out << YAML::Key << "params" << YAML::Value << YAML::Flow << YAML::BeginMap;
  for (const auto &[k, v] : p.params) out << YAML::Key << k << YAML::Value << v;
  out << YAML::EndMap;
  out << YAML::Key << "kernels" << YAML::Value << YAML::BeginSeq;
  for (const auto &k : p.kernels) {
    out << YAML::BeginMap << YAML::Key << "name" << YAML::Value << k.name;
    out << YAML::Key << "axes" << YAML::Value << YAML::Flow << k.axes;
    if (!k.blocks.empty()) {
      out << YAML::Key << "blocks" << YAML::Value;
      emitQuoted(out, k.blocks);
    }
    out << YAML::Key << "split" << YAML::Value << k.split;
    out << YAML::Key << "reason" << YAML::Value;
    emitQuoted(out, k.reason);
    out << YAML::Key << "halo" << YAML::Value << YAML::Flow << k.halo;
    out << YAML::Key << "writes_exact" << YAML::Value << k.writesExact;
    out << YAML::Key << "writes_injective" << YAML::Value << k.writesInjective;
    out << YAML::Key << "accesses" << YAML::Value << YAML::BeginSeq;
    for (const auto &a : k.accesses) {
      out << YAML::BeginMap << YAML::Key << "tensor" << YAML::Value << a.tensor << YAML::Key << "kind" << YAML::Value << a.kind
          << YAML::Key << "must" << YAML::Value << a.must << YAML::Key << "map" << YAML::Value;
      emitQuoted(out, a.map);
      out << YAML::EndMap;
    }
    out << YAML::EndSeq << YAML::EndMap;
  }
  out << YAML::EndSeq;
  writeProvenance(out, p.provenance);
  out << YAML::EndMap;
  return finish(out);
}

Partition readPartition(const std::string &text, const std::string &file) {
  YamlDoc doc = parseYaml(text, file);
  expectKind(doc, "partition", 1);
  isl::ctx ctx = islCtx();
  Partition p;
  p.name = doc.str(doc.field(doc.root, "name"));
  if (YAML::Node ps = doc.root["params"]) {
    if (!ps.IsMap()) fail(doc.loc(ps), "params must be a map NAME: VALUE");
    for (const auto &kv : ps) p.params.emplace_back(doc.str(kv.first), doc.integer(kv.second));
  }
  YAML::Node ks = doc.field(doc.root, "kernels");
  if (!ks.IsSequence()) fail(doc.loc(ks), "kernels must be a list");
  auto isl = [&](const YAML::Node &n, bool set) {
    std::string s = doc.str(n);
    try {
      if (set) (void)isl::union_set(ctx, s);
      else (void)isl::union_map(ctx, s);
    } catch (const isl::exception &) {
      fail(doc.valueLoc(n), std::string("isl cannot parse this ") + (set ? "set" : "map"));
    }
    return s;
  };
  auto boolean = [&](const YAML::Node &n) {
    try {
      return n.as<bool>();
    } catch (const YAML::Exception &) {
      fail(doc.valueLoc(n), "expected true or false");
    }
  };
  for (const auto &kn : ks) {
    if (!kn.IsMap()) fail(doc.loc(kn), "a kernel is a map {name, axes, split, reason, accesses, ...}");
    KernelPartition k;
    k.at = doc.loc(kn);
    k.name = doc.str(doc.field(kn, "name"));
    if (YAML::Node ax = kn["axes"]) {
      if (!ax.IsSequence()) fail(doc.loc(ax), "axes must be a list of x, y, z");
      for (const auto &a : ax) {
        std::string s = doc.str(a);
        if (s != "x" && s != "y" && s != "z") fail(doc.valueLoc(a), "an axis is x, y or z, not '" + s + "'");
        k.axes.push_back(s);
      }
    }
    if (kn["blocks"]) k.blocks = isl(kn["blocks"], true);
    YAML::Node split = doc.field(kn, "split");
    k.split = (int)doc.integer(split);
    if (k.split < -1 || k.split >= (int)k.axes.size()) fail(doc.valueLoc(split), "split must be -1 or a member of the block ids (0 to " + std::to_string((int)k.axes.size() - 1) + ")");
    if (k.split >= 0 && k.axes[k.split] == "z" && axisName(k.axes, k.split) != "z0")
      fail(doc.valueLoc(split), "member " + std::to_string(k.split) + " (" + axisName(k.axes, k.split) +
                                    ") cannot be split: only x, y and the first member folded into z give each device one range of blocks");
    if (kn["reason"]) k.reason = doc.str(kn["reason"]);
    if (YAML::Node h = kn["halo"]) {
      if (!h.IsSequence()) fail(doc.loc(h), "halo must be a list of numbers");
      for (const auto &v : h) k.halo.push_back(doc.integer(v));
    }
    if (kn["writes_exact"]) k.writesExact = boolean(kn["writes_exact"]);
    if (kn["writes_injective"]) k.writesInjective = boolean(kn["writes_injective"]);
    if (k.split >= 0 && (!k.writesExact || !k.writesInjective))
      fail(doc.valueLoc(split), "a kernel whose writes are not exact and injective over blocks cannot be split");
    YAML::Node as = doc.field(kn, "accesses");
    if (!as.IsSequence()) fail(doc.loc(as), "accesses must be a list");
    for (const auto &an : as) {
      if (!an.IsMap()) fail(doc.loc(an), "an access is a map {tensor, kind, must, map}");
      PartitionAccess a;
      a.tensor = doc.str(doc.field(an, "tensor"));
      a.kind = doc.str(doc.field(an, "kind"));
      if (a.kind != "read" && a.kind != "write") fail(doc.valueLoc(an["kind"]), "kind is read or write, not '" + a.kind + "'");
      if (an["must"]) a.must = boolean(an["must"]);
      a.map = isl(doc.field(an, "map"), false);
      k.accesses.push_back(a);
    }
    p.kernels.push_back(k);
  }
  p.provenance = readProvenance(doc);
  return p;
}

} // namespace polyk
