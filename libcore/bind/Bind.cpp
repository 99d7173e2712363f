// Hardware binding and register promotion (Panamera §4.2, §5.1). See Bind.h.
#include "polyk/Bind.h"

#include "polyk/Isl.h"
#include "polyk/Schedule.h"

#include <set>
#include <sstream>

namespace polyk {

namespace {

std::vector<std::string> splitAxes(const std::string &s) {
  std::vector<std::string> v;
  std::stringstream ss(s);
  std::string a;
  while (std::getline(ss, a, '_')) v.push_back(a);
  return v;
}

std::string joinAxes(const std::vector<std::string> &v) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) s += (i ? "_" : "") + v[i];
  return s;
}

/// Finds the node of the mark named `name`.
} // namespace

isl::schedule_node findMark(const isl::schedule &s, const std::string &name) {
  isl::schedule_node found;
  s.get_root().foreach_descendant_top_down([&](isl::schedule_node n) -> bool {
    if (!found.is_null()) return false;
    if (n.isa<isl::schedule_node_mark>() && markName(n) == name) {
      found = n;
      return false;
    }
    return true;
  });
  return found;
}

std::vector<std::string> statementsIn(const Scop &scop, const isl::union_set &dom) {
  std::vector<std::string> v;
  for (const auto &st : scop.statements)
    if (!dom.intersect(isl::union_set(isl::set(islCtx(), st.domain))).is_empty()) v.push_back(st.name);
  return v;
}

void sizeError(const Scop &in, const BindOptions &options, const std::string &message) {
  if (options.sizes.empty()) fail(in.at.sizes, message);
  throw UsageError(message);
}

namespace {

/// A temporary stays in a register when each reader reads, at its own iteration, exactly the
/// element its writer wrote at the same iteration of the same kernel (a fused producer).
bool promotable(const Scop &scop, const TensorDecl &t, const std::vector<std::string> &kernelStmts,
                const isl::union_map &kernelSchedule) {
  if (t.role != Role::Temporary) return false;
  isl::ctx ctx = islCtx();
  auto inKernel = [&](const std::string &n) {
    return std::find(kernelStmts.begin(), kernelStmts.end(), n) != kernelStmts.end();
  };
  isl::union_map writes = isl::union_map::empty(ctx), reads = isl::union_map::empty(ctx);
  bool any = false;
  for (const auto &st : scop.statements) {
    isl::map w(ctx, st.write);
    if (w.range_tuple_id().name() == t.name) {
      if (!inKernel(st.name)) return false;
      writes = writes.unite(isl::union_map(w));
    }
    for (const auto &r : st.reads) {
      isl::map rm(ctx, r);
      if (rm.range_tuple_id().name() != t.name) continue;
      if (!inKernel(st.name)) return false;
      reads = reads.unite(isl::union_map(rm));
      any = true;
    }
  }
  if (!any) return false;
  // reader instance -> writer instance; must be one writer each, at the same schedule point.
  isl::union_map readerToWriter = reads.apply_range(writes.reverse());
  if (!readerToWriter.is_single_valued()) return false;
  if (!reads.domain().is_subset(readerToWriter.domain())) return false;
  isl::union_map samePoint = readerToWriter.apply_domain(kernelSchedule).apply_range(kernelSchedule);
  isl::union_set pts = samePoint.domain().unite(samePoint.range());
  return samePoint.is_subset(isl::union_map(isl::union_set(pts).identity()));
}

} // namespace

namespace {

Scop bindChecked(const Scop &in, const BindOptions &options) {
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
      out.kernels.push_back(kc); // a single instance: one thread
      continue;
    }
    isl::schedule_node_band tileBand = node.as<isl::schedule_node_band>();
    unsigned n = tileBand.n_member();
    if (!tileBand.child(0).isa<isl::schedule_node_band>() ||
        tileBand.child(0).as<isl::schedule_node_band>().n_member() != n)
      fail(in.at.schedule, "kernel_" + std::to_string(k) + ": the tile band needs a point band of as many members below it");
    if (n > 2) sizeError("kernel " + std::to_string(k) + " has a band of " + std::to_string(n) + " members; at most 2 are supported");
    const KernelSizes &sz = sizes[k];
    if (sz.block.size() != n || sz.tile.size() != n)
      sizeError("kernel " + std::to_string(k) + ": sizes do not match its band of " + std::to_string(n) + " members");
    BandShape shape = analyseBand(in, tileBand);

    // Thread x: the member whose unit step reads consecutive addresses (memory coalescing); for
    // all-reduce and x-reduce that is the reduced dim (Panamera's rule), for a y-reduce the
    // parallel one. Block x: the reduced dim, so one reduction spans several blocks.
    std::vector<std::string> threadAxis(n, "x"), blockAxis(n, "x");
    int red = -1;
    for (unsigned m = 0; m < n; ++m)
      if (shape.reduced[m]) red = (int)m;
    if (n == 2) {
      int cont = shape.contiguous >= 0 ? shape.contiguous : 1;
      threadAxis[cont] = "x";
      threadAxis[1 - cont] = "y";
      int bx = red >= 0 ? red : 1;
      blockAxis[bx] = "x";
      blockAxis[1 - bx] = "y";
    }
    // Tiles per member: the launch grid.
    isl::union_map tileMap = isl::union_map::from(tileBand.get_partial_schedule());
    isl::set tiles = tileMap.intersect_domain(nodeDomain(tileBand)).range().as_set();
    isl::set tilesAtDefaults = tiles.intersect_params(isl::set(ctx, paramDefaults(in)));
    std::vector<long long> count(n);     // at the parameters' values, for the checks
    std::vector<std::string> countC(n);  // as C, symbolic where the extent is
    for (unsigned m = 0; m < n; ++m) {
      count[m] = tilesAtDefaults.dim_max_val(m).get_num_si() + 1;
      isl::pw_aff last = isl::manage(isl_set_dim_max(tiles.copy(), (int)m));
      bool constant = isl_pw_aff_is_cst(last.get()) == isl_bool_true;
      isl::pw_aff one = isl::manage(isl_pw_aff_val_on_domain(isl_pw_aff_domain(last.copy()), isl_val_one(ctx.get())));
      countC[m] = constant ? std::to_string(count[m]) : cExpression(last.add(one));
    }
    if (n == 2 && count[blockAxis[0] == "y" ? 0 : 1] > 65535) {
      std::swap(blockAxis[0], blockAxis[1]); // blockIdx.y is limited to 65535
      if (count[blockAxis[0] == "y" ? 0 : 1] > 65535)
        sizeError("kernel " + std::to_string(k) + " needs more than 65535 blocks on both grid axes; use larger tiles");
    }
    // Along the contiguous member each thread takes `vector` consecutive elements at a time (an
    // innermost loop of that many), where whole vectors tile the tile. In a y-reduce (the member
    // parallel) a thread so owns `vector` consecutive outputs.
    int c = shape.contiguous, vector = std::max(1, (int)sz.vector);
    if (c < 0 || sz.tile[c] % (sz.block[c] * vector) != 0) vector = 1;
    bool columns = vector > 1 && !shape.reduced[c] && shape.form != Form::Elementwise;
    // (Whether the tiles divide the extent, polyk-emit checks: a partial vector of outputs is
    // an error there.)
    for (unsigned m = 0; m < n; ++m) {
      int a = threadAxis[m] == "x" ? 0 : 1;
      kc.block[a] = (int)sz.block[m];
      kc.grid[blockAxis[m] == "x" ? 0 : 1] = countC[m];
      // One output element (or one vector of them) per thread: parallel point loops are mapped to
      // threads entirely.
      long long perThread = columns && (int)m == c ? vector : 1;
      if (!shape.reduced[m] && shape.form != Form::Elementwise && sz.tile[m] != sz.block[m] * perThread)
        sizeError("kernel " + std::to_string(k) + ": the tile size of a parallel dim (" + std::to_string(sz.tile[m]) +
                         ") must equal its block size (" + std::to_string(sz.block[m]) + ")" +
                         (perThread > 1 ? " times its vector (" + std::to_string(perThread) + ")" : ""));
      if (sz.block[m] > sz.tile[m])
        sizeError("kernel " + std::to_string(k) + ": block size " + std::to_string(sz.block[m]) +
                         " exceeds tile size " + std::to_string(sz.tile[m]));
    }
    if (kc.block[0] * kc.block[1] > 1024) sizeError("kernel " + std::to_string(k) + ": more than 1024 threads per block");
    if (red >= 0) kc.reduceAxis = threadAxis[red], kc.reduceBlockAxis = blockAxis[red];

    // Registers for fused temporaries, decided on the untiled band's schedule.
    isl::union_map kernelSchedule = isl::union_map::from(tileBand.get_partial_schedule())
                                        .range_product(isl::union_map::from(tileBand.child(0).as<isl::schedule_node_band>().get_partial_schedule()));
    for (const auto &t : in.tensors)
      if (promotable(in, t, kc.statements, kernelSchedule)) kc.promoted.push_back(t.name);

    // Point loops: strip-mined by the block sizes into per-thread loops and thread loops, and
    // the vector loop innermost (polyk-emit reads it with one wide access).
    isl::schedule_node point = tileBand.child(0);
    isl::multi_val bs = isl::multi_val::zero(bandSpace(point)), vs = bs;
    for (unsigned m = 0; m < n; ++m) {
      bs = bs.set_at(m, isl::val(ctx, sz.block[m] * ((int)m == c ? vector : 1)));
      vs = vs.set_at(m, isl::val(ctx, (int)m == c ? vector : 1));
    }
    point = point.as<isl::schedule_node_band>().tile(bs).child(0);
    if (vector > 1) point = point.as<isl::schedule_node_band>().tile(vs);
    point = point.insert_mark(isl::id(ctx, "threads_" + joinAxes(threadAxis)));
    node = point.parent().parent(); // the tile band
    node = node.insert_mark(isl::id(ctx, "blocks_" + joinAxes(blockAxis)));
    sched = node.schedule();
    out.kernels.push_back(kc);
  }
  out.schedule = printScheduleBlock(sched);
  out.sizes = printSizes(sizes); // with the overrides, as used
  out.provenance.push_back(currentStage("polyk-bind"));
  return out;
}

} // namespace

Scop bind(const Scop &in, const BindOptions &options) {
  bool affine = !in.statements.empty() && in.statements.front().form == Form::Affine;
  return reportedAt(in.at.schedule, "polyk-bind", [&] { return affine ? bindAffine(in, options) : bindChecked(in, options); });
}

std::map<int, KernelSizes> boundSizes(const Scop &in, const BindOptions &options) {
  std::map<int, KernelSizes> sizes = parseSizes(in.sizes, &in.at.sizes);
  for (const auto &[k, s] : parseSizes(options.sizes)) {
    if (!s.tile.empty() || !s.reduce.empty())
      throw UsageError("--sizes: tile and reduce sizes are chosen by polyk-schedule; give only block[...] here");
    if (!sizes.count(k)) throw UsageError("--sizes: there is no kernel[" + std::to_string(k) + "] with sizes");
    sizes[k].block = s.block;
  }
  return sizes;
}

isl::set mappingContext(const std::vector<KernelConfig> &kernels) {
  long long gx = 1, gy = 1, tx = 1, ty = 1;
  auto numeric = [](const std::string &g) { return g.find_first_not_of("0123456789") == std::string::npos; };
  for (const auto &kc : kernels) {
    // A symbolic grid leaves the id unbounded above; isl keeps the domain's own guard then.
    gx = std::max(gx, numeric(kc.grid[0]) ? std::stoll(kc.grid[0]) : (1LL << 40));
    gy = std::max(gy, numeric(kc.grid[1]) ? std::stoll(kc.grid[1]) : (1LL << 40));
    tx = std::max<long long>(tx, kc.block[0]);
    ty = std::max<long long>(ty, kc.block[1]);
  }
  std::ostringstream os;
  os << "[b_x, b_y, t_x, t_y] -> { : 0 <= b_x < " << gx << " and 0 <= b_y < " << gy << " and 0 <= t_x < " << tx
     << " and 0 <= t_y < " << ty << " }";
  return isl::set(islCtx(), os.str());
}

isl::schedule applyMapping(const isl::schedule &bound, const std::vector<KernelConfig> &kernels) {
  isl::ctx ctx = islCtx();
  isl::schedule s = bound;
  while (true) {
    // The first mapping mark left, and the kernel it belongs to (marks come in kernel order).
    isl::schedule_node mark;
    int kernel = -1;
    s.get_root().foreach_descendant_top_down([&](isl::schedule_node n) -> bool {
      if (!mark.is_null()) return false;
      if (!n.isa<isl::schedule_node_mark>()) return true;
      std::string name = markName(n);
      if (name.rfind("kernel_", 0) == 0) kernel = std::stoi(name.substr(7));
      if (name.rfind("blocks_", 0) == 0 || name.rfind("threads_", 0) == 0) mark = n;
      return mark.is_null();
    });
    if (mark.is_null()) break;
    if (kernel < 0 || kernel >= (int)kernels.size()) throw std::runtime_error("mapping mark outside a kernel");
    const KernelConfig &kc = kernels[kernel];
    std::string name = markName(mark);
    bool blocks = name[0] == 'b';
    std::vector<std::string> axes = splitAxes(name.substr(blocks ? 7 : 8));
    char p = blocks ? 'b' : 't';
    isl::schedule_node band = mark.child(0);
    isl::union_map m = isl::union_map::from(band.as<isl::schedule_node_band>().get_partial_schedule());
    // { [m0, m1] : m0 = b_y and m1 = b_x and 0 <= b_y < grid.y ... }: the members fixed to the ids,
    // with the ids' ranges in this kernel so isl needs no guard the launch already ensures.
    std::ostringstream os;
    os << "[b_x, b_y, t_x, t_y] -> { [";
    for (size_t i = 0; i < axes.size(); ++i) os << (i ? ", " : "") << "m" << i;
    os << "] : ";
    for (size_t i = 0; i < axes.size(); ++i) {
      int a = axes[i] == "x" ? 0 : 1;
      std::string id = std::string(1, p) + "_" + axes[i];
      std::string limit = blocks ? kc.grid[a] : std::to_string(kc.block[a]);
      os << (i ? " and " : "") << "m" << i << " = " << id << " and 0 <= " << id;
      if (limit.find_first_not_of("0123456789") == std::string::npos) os << " < " << limit;
    }
    os << " }";
    isl::union_set bandDomain = nodeDomain(band);
    isl::union_set filter = m.intersect_range(isl::union_set(isl::set(ctx, os.str()))).domain();
    isl::schedule_node n = deleteNode(mark); // its decision is applied: the band is fixed
    // The filter goes to the top of the kernel, above each thread's own loops, so isl folds the
    // ids into those loops' bounds instead of guarding every iteration (statements of the
    // kernel outside this band pass unfiltered).
    while (!(n.isa<isl::schedule_node_mark>() && markName(n).rfind("kernel_", 0) == 0)) n = n.parent();
    n = n.child(0);
    filter = filter.unite(nodeDomain(n).subtract(bandDomain));
    s = n.insert_filter(filter).schedule();
  }
  return s;
}

} // namespace polyk
