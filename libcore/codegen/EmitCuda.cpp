// CUDA kernels and their host launcher (Panamera §5.1, Fig. 7). Each kernel is the isl AST of
// one `kernel_k` subtree of the mapped schedule; a reduction statement updates a per-thread
// partial (Part 1); after the loops the block reduces the partials along the reduction's thread
// axis (Part 2) and one thread per output element combines the block's result atomically into
// global memory (Part 3).
#include "EmitParts.h"

#include "polyk/Bind.h"
#include "polyk/Emit.h"
#include "polyk/Schedule.h"

#include <isl/ast.h>
#include <map>

namespace polyk::codegen {

namespace {

std::string outputOf(const Scop &s, const ScopStatement &st) {
  return isl::map(islCtx(), st.write).range_tuple_id().name();
}

/// `shared`: tensors that threads of a fused kernel write and then read after a barrier. Those
/// lose `__restrict__`, which would let nvcc move their loads above the barrier (seen: softmax's
/// max read before __syncthreads).
std::string kernelParams(const Scop &s, const std::set<std::string> &shared = {}) {
  std::string p;
  for (const auto &[name, value] : s.params) p += std::string(p.empty() ? "" : ", ") + "const polyk_idx " + name;
  for (const auto &t : s.tensors) {
    p += std::string(p.empty() ? "" : ", ") + (t.role == Role::Input ? "const " : "") + cudaStorageType(t.type) +
         (shared.count(t.name) ? " *" : " *__restrict__ ") + t.name;
  }
  return p;
}

/// In the aligned instance of a kernel: every written tensor starts on a 16-byte boundary (the
/// launcher checked the user's pointers; polyk::tempMalloc, a stream-ordered pool, aligns temporaries to 256 bytes), which
/// lets nvcc merge a thread's consecutive stores into one. Inputs are read with explicit vector
/// loads (VectorReads): the assumption would cost them `__restrict__`, and with it nvcc's reuse of
/// their loads across a fused kernel's barriers.
std::string alignmentAssumptions(const Scop &s, const std::set<std::string> &promoted) {
  std::string o = "  if constexpr (POLYK_ALIGNED) {\n";
  for (const auto &t : s.tensors) {
    if (promoted.count(t.name) || t.role == Role::Input) continue;
    o += "    " + t.name + " = (" + cudaStorageType(t.type) + " *)__builtin_assume_aligned(" + t.name + ", 16);\n";
  }
  return o + "  }\n";
}

/// The tensors some part of a fused group writes and a later part reads.
std::set<std::string> sharedAcrossParts(const Scop &s, const std::vector<size_t> &group) {
  std::set<std::string> written, shared;
  auto tensorOf = [](const std::string &access) { return isl::map(islCtx(), access).range_tuple_id().name(); };
  for (size_t k : group) {
    for (const auto &name : s.kernels[k].statements)
      for (const auto &r : s.statement(name)->reads)
        if (written.count(tensorOf(r))) shared.insert(tensorOf(r));
    for (const auto &name : s.kernels[k].statements) written.insert(tensorOf(s.statement(name)->write));
  }
  return shared;
}

/// The tensors a fused kernel declares without __restrict__: those shared across its parts, and
/// every tensor of a group of one-thread kernels, whose later part reads the outputs an earlier
/// one wrote without listing them as reads (`out[0] = max(out[0], x[i])`): given x's
/// __restrict__, nvcc (13.0) turned the bool `x[i] > out[0] ? x[i] : out[0]` into a select of the
/// two addresses and one non-coherent load (ld.global.nc), which missed the init's store (H100,
/// bench/results/2026-11-25-h100-random-reductions-run2-check.txt, m_all_max_bool_1).
std::set<std::string> unrestricted(const Scop &s, const std::vector<size_t> &group) {
  std::set<std::string> names = sharedAcrossParts(s, group);
  if (group.size() > 1 && singleThread(s.kernels[group[0]]))
    for (const auto &t : s.tensors) names.insert(t.name);
  return names;
}

std::string kernelArgs(const Scop &s) {
  std::string a;
  for (const auto &[name, value] : s.params) a += std::string(a.empty() ? "" : ", ") + name;
  for (const auto &t : s.tensors) a += std::string(a.empty() ? "" : ", ") + t.name;
  return a;
}

/// How a block's partial reaches the output (Panamera Part 3 and its deterministic variant).
enum class Return {
  Direct,  // one block per output element: the leader stores it (no atomic, no initialisation needed)
  Atomic,  // Panamera: one atomic per block
  Ordered, // per-block partials in the accumulation type, combined in block order by the last block
};

std::string blocksPerOutput(const KernelConfig &kc) {
  return kc.reduceBlockAxis == "x" ? kc.grid[0] : kc.reduceBlockAxis == "y" ? kc.grid[1] : "1";
}

Return returnMode(const Scop &s, const KernelConfig &kc, const ScopStatement &st, const EmitOptions &opt) {
  if (blocksPerOutput(kc) == "1") return Return::Direct;
  DType out = s.tensor(outputOf(s, st))->type;
  // f16 / bf16 results accumulate in f32 across blocks too, rounded once at the end (unless the
  // input type is asked for: then Panamera's f16 / bf16 atomics).
  bool lowPrecision = isHalf(out) && opt.accumulate == "f32";
  if (opt.determinism == "run_to_run" || lowPrecision) return Return::Ordered;
  if (opt.combine != "auto") return opt.combine == "atomic" ? Return::Atomic : Return::Ordered;
  // auto: ordered, one kernel instead of an initialisation and the atomics, and deterministic. With
  // its count as one acq_rel atomic and the blocks that combine nothing leaving early, it measured
  // as fast as the atomics or faster on every case of the H100 benchmark: [1024, 1024] over dim 0
  // sum f32 9.76 -> 8.67 us, and bool 8.42 -> 7.07, sg10 14.82 -> 12.13, [131072, 1024] over dim 0
  // within 1% (bench/results/2026-11-23-h100-rows.txt, D; an all-reduce was ordered already: sg5
  // 6.5 -> 5.8 us). --accumulate=input keeps the f16 / bf16 atomics it asks for (a kernel in that
  // type alone), except for a single output.
  bool singleOutput = s.tensor(outputOf(s, st))->elements() == 1;
  return isHalf(out) && opt.accumulate == "input" && !singleOutput ? Return::Atomic : Return::Ordered;
}

/// A fused kernel's reduction results that its later parts take from the block that computed them
/// instead of from memory: the leader of a row (or column) of threads stores the row's result,
/// block_broadcast gives it to every thread of the row, and a later part whose every row reads
/// only its own row's result (readsRowResult) uses that. H100, f32 [8192, 768]: softmax 24.3 ->
/// 22.7 us, layer norm 22.5 -> 22.0 us, a load after each barrier gone
/// (bench/results/2026-11-23-h100-rows.txt).
struct KeptResults {
  std::set<std::string> broadcast; // reductions of this part whose result to broadcast
  std::set<std::string> fromRow;   // tensors this part reads from an earlier part's broadcast
  ReadOverride read;               // reads of those
};

/// Per part of `group`: its reductions along x or y stored directly into a tensor that nothing
/// else writes, which a later part reads as readsRowResult allows.
std::vector<KeptResults> keptResults(const Scop &s, const isl::schedule &mapped, const std::vector<size_t> &group,
                                     const EmitOptions &opt) {
  std::vector<KeptResults> parts(group.size());
  for (size_t j = 0; j < group.size(); ++j) {
    const KernelConfig &kc = s.kernels[group[j]];
    if (kc.reduceAxis != "x" && kc.reduceAxis != "y") continue;
    for (const auto &name : kc.statements) {
      const ScopStatement *st = s.statement(name);
      if (st->kind != StmtKind::Reduce || singleThread(kc) || returnMode(s, kc, *st, opt) != Return::Direct) continue;
      std::string out = outputOf(s, *st);
      bool writtenElsewhere = false;
      for (const auto &o : s.statements) writtenElsewhere |= o.name != name && o.kind != StmtKind::Init && outputOf(s, o) == out;
      if (writtenElsewhere) continue;
      for (size_t l = j + 1; l < group.size(); ++l) {
        if (!readsRowResult(s, mapped, kc, name, s.kernels[group[l]], kc.reduceAxis)) continue;
        parts[l].fromRow.insert(out);
        parts[j].broadcast.insert(name);
      }
    }
  }
  for (auto &p : parts) {
    if (p.fromRow.empty()) continue;
    p.read = [from = p.fromRow](const ScopStatement &st, size_t k, const std::string &lv) {
      std::string t = isl::map(islCtx(), st.reads[k]).range_tuple_id().name();
      return from.count(t) ? "kept_" + t : lv;
    };
  }
  return parts;
}

/// Scratch of an ordered return: partials[outputs * blocks] and counters[outputs].
std::string orderedParams(const Scop &s, const KernelConfig &kc, const EmitOptions &opt) {
  std::string p;
  for (const auto &name : kc.statements) {
    const ScopStatement *st = s.statement(name);
    if (st->kind != StmtKind::Reduce || singleThread(kc) || returnMode(s, kc, *st, opt) != Return::Ordered) continue;
    DType acc = accumulatorType(*st->op, s.tensor(outputOf(s, *st))->type);
    p += std::string(", ") + computeCType(acc) + " *__restrict__ partials_" + name + ", unsigned int *__restrict__ counter_" + name;
  }
  return p;
}

/// Unroll factor of a kernel's per-thread loops (EmitOptions::unroll; the default 1 leaves them to
/// nvcc, which measured as fast or faster on the H100). 0 asks for 16 bytes' worth of the narrowest
/// element the statements read, at least 4 independent loads in flight per thread.
int unrollFactor(const Scop &s, const KernelConfig &kc, const EmitOptions &opt) {
  if (opt.unroll > 0) return opt.unroll;
  int narrowest = 8;
  for (const auto &name : kc.statements)
    for (const auto &r : s.statement(name)->reads)
      if (const TensorDecl *t = s.tensor(isl::map(islCtx(), r).range_tuple_id().name())) narrowest = std::min(narrowest, dtypeBytes(t->type));
  return std::max(4, 16 / narrowest);
}

std::set<std::string> promotedTensors(const Scop &s) {
  std::set<std::string> promoted;
  for (const auto &k : s.kernels) promoted.insert(k.promoted.begin(), k.promoted.end());
  return promoted;
}

std::string kernelMacros(const Scop &s, const KernelConfig &kc, Dialect d, const std::set<std::string> &promoted,
                         const EmitOptions &opt, const ReadOverride &read = nullptr, const std::string &only = "",
                         const std::string &lane = "");

/// True when `e` casts to f16 / bf16 somewhere.
bool castsToHalf(const ExprPtr &e) {
  if (e->kind == Expr::Kind::Call) {
    auto t = parseDType(e->text);
    if (t && isHalf(*t)) return true;
  }
  for (const auto &a : e->args)
    if (castsToHalf(a)) return true;
  return false;
}

/// True when a statement of the kernel rounds to f16 / bf16 at every element: a cast in its
/// body, an element-wise write of an f16 / bf16 tensor, or accumulation in the input type.
bool roundsToHalfPerElement(const Scop &s, const KernelConfig &kc, const EmitOptions &opt) {
  for (const auto &name : kc.statements) {
    const ScopStatement *st = s.statement(name);
    if (st->kind == StmtKind::Init) continue;
    DType out = s.tensor(outputOf(s, *st))->type;
    if (isHalf(out) && (st->kind == StmtKind::Assign || opt.accumulate == "input")) return true;
    if (castsToHalf(parseExpr(st->body))) return true;
  }
  return false;
}

/// The inputs whose vector loads in kernel `kc` are streaming (polyk::load_vec<V, true>: no L1
/// allocation, evict-first in L2). `auto` (EmitOptions::streamLoads) takes an input when
///  - the program reads each element once: one statement reads it, at one index, or several
///    statements of this kernel (not a fused one) over the same domain read it at the same index,
///    so one vector load serves them (sg9: x and x * x); softmax and layer norm read x in three
///    parts, which then reread it from a cache: 24 -> 38 us streamed;
///  - the program's inputs total at most kStreamMaxBytes: on the H100 the hint made reads of
///    32 MB to 128 MB 7-28% faster (the lines of the previous kernels stay in L2), those of
///    256 MiB -1% to +4%, and those of 512 MiB and more 2-4% slower
///    (bench/results/2026-11-22-h100-load-hints.txt);
///  - no statement of the kernel rounds to f16 / bf16 per element: ptxas then issued the hinted
///    loads one at a time instead of together (sg2, SASS: 50 -> 76 us).
/// `all` takes every input, `off` none.
std::set<std::string> streamedTensors(const Scop &s, const KernelConfig &kc, const EmitOptions &opt, bool fused) {
  constexpr long long kStreamMaxBytes = 256ll << 20;
  std::set<std::string> out;
  if (opt.streamLoads == "off") return out;
  // Per tensor, its distinct accesses: `x(i, j) * x(i, j)` reads each element once. Outside a
  // fused kernel, the statements of this kernel over one domain count as one (their names reset).
  std::set<std::string> mine(kc.statements.begin(), kc.statements.end());
  std::map<std::string, std::vector<isl::map>> reads;
  for (const auto &st : s.statements)
    for (const auto &r : st.reads) {
      isl::map m(islCtx(), r);
      if (!fused && mine.count(st.name))
        m = isl::manage(isl_map_reset_tuple_id(m.intersect_domain(isl::set(islCtx(), st.domain)).release(), isl_dim_in));
      auto &seen = reads[m.range_tuple_id().name()];
      if (std::none_of(seen.begin(), seen.end(), [&](const isl::map &o) { return o.is_equal(m); })) seen.push_back(m);
    }
  long long inputBytes = 0;
  for (const auto &t : s.tensors)
    if (t.role == Role::Input) inputBytes += t.elements() * dtypeBytes(t.type);
  bool all = opt.streamLoads == "all";
  if (!all && (inputBytes > kStreamMaxBytes || roundsToHalfPerElement(s, kc, opt))) return out;
  for (const auto &t : s.tensors)
    if (t.role == Role::Input && (all || reads[t.name].size() == 1)) out.insert(t.name);
  return out;
}

/// Declarations, AST body and reduction epilogue of one kernel, in `d`. For CUDA the epilogue is
/// Parts 2 and 3 (block reduction, one atomic per block); for the C emulation, where each thread
/// runs alone, every live thread combines its partial into the output itself.
/// `vectors`: the kernel comes in aligned and unaligned instances (POLYK_ALIGNED), and its vector
/// loops read with vector loads in the aligned one (VectorReads); a reduction whose thread owns a
/// vector of outputs (a y-reduce's columns) keeps an accumulator per lane, in both dialects.
/// `fused`: the kernel is a part of a fused kernel, whose per-thread loops of constant trip count
/// are unrolled, so nvcc sees that the parts read the same input elements and keeps them in
/// registers across the barriers (softmax: x read once instead of three times).
/// `kept`: in a fused kernel, the reductions of this part whose results later parts read (their
/// row's or column's result goes to every thread of it), and the reads of earlier parts' results.
/// The params a kernel's vector instance assumes multiples of its V: the symbolic innermost
/// extents of the inputs its statements read, where it reads vectors (an x-reduce along a
/// symbolic extent: Schedule.cpp, vectorWidth). Empty for constant extents.
std::map<std::string, int> divisibleParams(const Scop &s, size_t k) {
  std::map<std::string, int> out;
  auto sizes = parseSizes(s.sizes);
  if (!sizes.count((int)k) || sizes[(int)k].vector <= 1) return out;
  for (const auto &name : s.kernels[k].statements) {
    const ScopStatement &st = *s.statement(name);
    for (const auto &a : st.reads) {
      const TensorDecl *t = s.tensor(isl::map(islCtx(), a).range_tuple_id().name());
      if (!t || t->role != Role::Input || t->shape.empty() || t->shape.back().param.empty()) continue;
      int &v = out[t->shape.back().param];
      v = std::max(v, (int)sizes[(int)k].vector);
    }
  }
  return out;
}

/// `K % 4 == 0 && ...`; "" where there is none.
std::string divisibleTest(const std::map<std::string, int> &params) {
  std::string o;
  for (const auto &[p, v] : params) o += (o.empty() ? "" : " && ") + p + " % " + std::to_string(v) + " == 0";
  return o;
}

/// A thread's loops of a few iterations (at most kUnrollShortTrip over every thread, block and
/// parameter value; several such loops at most that many in all) unrolled by isl: each iteration's
/// statement under its own guard, so nvcc issues all of a thread's loads at once instead of one
/// loop iteration's. The loops' bounds vary with the thread (the last ones get one iteration
/// fewer), which keeps nvcc's own unrolling from doing this. Kernels of a few elements a thread are
/// latency-bound: H200, prod i32 [4743] 5.1 -> 4.1 us, sum i32 [52, 380] over dim 0 5.3 -> 4.1
/// (bench/results/2026-11-29-h200-short-loops.txt).
constexpr long long kUnrollShortTrip = 16;

/// With `vectors`, the innermost loop (a vector's lanes, which VectorReads reads as one load)
/// stays a loop.
isl::schedule unrollShortLoops(const isl::schedule &sched, bool vectors) {
  long long budget = kUnrollShortTrip; // (the product of the unrolled loops' trips)
  isl::schedule_node root = sched.get_root();
  isl::schedule_node out = root.map_descendant_bottom_up([&](isl::schedule_node node) -> isl::schedule_node {
    if (!node.isa<isl::schedule_node_band>()) return node;
    isl::schedule_node_band band = node.as<isl::schedule_node_band>();
    bool innermost = vectors; // (only asked with vectors)
    if (vectors)
      node.foreach_descendant_top_down([&](const isl::schedule_node &d) {
        if (!d.is_equal(node) && d.isa<isl::schedule_node_band>()) innermost = false;
        return innermost;
      });
    // (isl's prefix map is defined on the filters' constraints only: the instances that reach the
    // band bound it.)
    isl::union_map prefix = node.get_prefix_schedule_union_map().intersect_domain(nodeDomain(node));
    isl::multi_union_pw_aff partial = band.get_partial_schedule();
    for (int i = 0; i < (int)band.n_member(); ++i) {
      if (vectors && innermost && i + 1 == (int)band.n_member()) continue;
      // prefix values -> this member's values, over the band's instances: the member's span for
      // fixed outer loops and ids, at its widest.
      isl::union_map member = isl::union_map::from(isl::multi_union_pw_aff(partial.at(i)));
      isl::union_map span = prefix.reverse().apply_range(member);
      if (span.is_empty()) continue;
      isl::map one = isl::manage(isl_map_from_union_map(span.release()));
      // { v1 - v0 : v0, v1 values at the same outer point }
      isl::set deltas = one.reverse().apply_range(one).deltas();
      isl::val widest = deltas.dim_max_val(0);
      if (!widest.is_int()) continue;
      long long trip = widest.get_num_si() + 1;
      if (trip <= 1 || trip > budget) continue;
      budget /= trip;
      band = band.member_set_ast_loop_unroll(i).as<isl::schedule_node_band>();
    }
    return band;
  });
  return out.get_schedule();
}

std::string kernelCode(const Scop &s, const isl::schedule &mapped, const KernelConfig &kc, Dialect d,
                       const EmitOptions &opt, bool vectors = false, bool fused = false, const KeptResults &kept = {},
                       const std::map<std::string, int> &divisible = {}) {
  AstPrinter printer;
  printer.user = [](const std::string &stmt, const std::vector<std::string> &args) {
    std::string c = stmt + "(";
    for (size_t i = 0; i < args.size(); ++i) c += (i ? ", " : "") + args[i];
    return c + ");\n";
  };
  if (d == Dialect::Cuda) {
    int u = unrollFactor(s, kc, opt);
    if (u > 1) printer.loopPrefix = "#pragma unroll " + std::to_string(u);
  }
  int bx = kc.block[0], by = kc.block[1];
  // Each kernel is the AST of the mapped tree restricted to the kernel's statements, built in
  // the context of its own block and thread ids: isl hoists guards on the ids (and may split on
  // them into if / else) above the kernel mark, so the whole AST of the restriction is the body.
  isl::union_set dom = isl::union_set::empty(islCtx());
  for (const auto &name : kc.statements) dom = dom.unite(isl::union_set(isl::set(islCtx(), s.statement(name)->domain)));
  isl::schedule restricted = isl::manage(isl_schedule_intersect_domain(mapped.copy(), dom.release()));
  isl::set context = mappingContext({kc});
  for (const auto &[p, v] : divisible)
    context = context.intersect_params(isl::set(islCtx(), "[" + p + "] -> { : " + p + " mod " + std::to_string(v) + " = 0 }"));
  isl::ast_build build = isl::ast_build::from_context(context);
  std::set<std::string> promoted = promotedTensors(s);
  VectorReads vr(s, promoted);
  if (!divisible.empty()) vr.assume(context.params());
  // (A kernel of one thread updates its outputs directly: no accumulators, no vector loops.)
  vectors = vectors && !singleThread(kc);
  long long vectorOfKernel = 1;
  if (vectors) {
    build = vr.attach(build);
    // A partial last vector (an all-reduce of an odd extent): the whole ones get loops of their own.
    auto sizes = parseSizes(s.sizes);
    auto k = (int)(&kc - s.kernels.data());
    if (sizes.count(k)) {
      restricted = VectorReads::isolateWholeVectors(restricted, sizes[k].vector);
      vectorOfKernel = sizes[k].vector;
    }
  }
  bool cudaVectors = d == Dialect::Cuda && vectors;
  // Vector loads exist only there (the C emulation reads element by element).
  std::set<std::string> streamed = cudaVectors ? streamedTensors(s, kc, opt, fused) : std::set<std::string>{};
  // Around each vector loop: the loads, then its statements redefined to read the vectors' lanes
  // (in the aligned instance) and to accumulate per lane, and their own definitions back after it.
  printer.around = [&](const isl::ast_node &loop, int indent) -> std::pair<std::string, std::string> {
    VectorReads::Loop vl = vectors ? vr.loop(loop) : VectorReads::Loop{};
    if (!cudaVectors) vl.reads.clear();
    constexpr int kUnrollFused = 16; // the largest trip count unrolled in a fused kernel
    int trip = VectorReads::constantTrip(loop);
    bool unrolled = d == Dialect::Cuda && printer.loopPrefix.empty() && trip > 1 &&
                    ((fused && trip <= kUnrollFused) || !vl.laneReductions.empty());
    std::string pad(2 * indent, ' ');
    std::string unroll = unrolled ? pad + "#pragma unroll\n" : "";
    if (vl.reads.empty() && vl.laneReductions.empty()) return {unroll, ""};
    std::string it = islExprToC(isl::manage(isl_ast_node_for_get_iterator(loop.get())).get());
    std::string pro, epi;
    std::map<std::pair<std::string, size_t>, std::string> lane;
    std::set<std::string> stmts(vl.laneReductions.begin(), vl.laneReductions.end());
    std::map<std::pair<std::string, std::string>, std::string> loaded; // (tensor, base) -> its vector
    for (const auto &r : vl.reads) {
      stmts.insert(r.stmt);
      // A statement reading the same elements twice (sg7: (x + 1) * x) takes one load.
      auto [same, fresh] = loaded.try_emplace({r.tensor, r.base}, "v_" + r.stmt + "_" + std::to_string(r.access));
      const std::string &v = same->second;
      lane[{r.stmt, r.access}] = v + "[" + it + "]";
      if (!fresh) continue;
      std::string T = cudaStorageType(s.tensor(r.tensor)->type);
      std::string vec = "polyk::Vec<" + T + ", " + std::to_string(vl.lanes) + ">";
      pro += pad + "const " + vec + " " + v + " = POLYK_ALIGNED ? polyk::load_vec<" + std::to_string(vl.lanes) +
             (streamed.count(r.tensor) ? ", true" : "") + ">(" + r.tensor +
             " + (" + r.base + ")) : " + vec + "{};\n";
    }
    for (const auto &name : stmts) {
      bool perLane = std::count(vl.laneReductions.begin(), vl.laneReductions.end(), name) > 0;
      pro += "#undef " + name + "\n";
      pro += kernelMacros(s, kc, d, promoted, opt, [&](const ScopStatement &st, size_t k, const std::string &lv) {
        auto l = lane.find({st.name, k});
        if (l == lane.end()) return kept.read ? kept.read(st, k, lv) : lv;
        return "(POLYK_ALIGNED ? " + l->second + " : " + lv + ")";
      }, name, perLane ? it : "");
      epi += "#undef " + name + "\n" + kernelMacros(s, kc, d, promoted, opt, kept.read, name);
    }
    return {pro + unroll, epi};
  };
  // (Only where each block's threads cover their outputs' whole rows: with the rows split over
  // blocks, whose partials combine, the unrolled loops were slower: max i32 [8068, 241] over dim 0
  // 12.0 -> 14.1 us, prod i32 [469, 442] 6.8 -> 8.2.)
  bool direct = true;
  for (const auto &name : kc.statements)
    if (const ScopStatement *st = s.statement(name); st->kind == StmtKind::Reduce) direct &= returnMode(s, kc, *st, opt) == Return::Direct;
  // Vector loops too, outside their lanes, but not a y-reduce's: there the lanes' loop was
  // unrolled as well (it is not the innermost band's last member), VectorReads then saw no lanes,
  // and one scalar accumulator summed a thread's V columns (17 of 61 bench cases wrong, sum f32
  // [768, 21128] over dim 0 among them; checkLanes did not object). x-reduces and all-reduces with vectors: H200, 44 changed cases old / new 1.027x, none
  // below 0.99; max f32 [6, 274473, 188] over dim 2 351.8 -> 290.5 us (0.82x -> 1.00x
  // torch.compile), prod bf16 [14806] 6.6 -> 5.0 (bench/results/2026-11-29-h200-vector-short-loops.txt).
  if (d == Dialect::Cuda && direct && !(vectors && kc.reduceAxis == "y") && !fused && printer.loopPrefix.empty() &&
      !singleThread(kc))
    restricted = unrollShortLoops(restricted, vectors);
  std::string body = printer.print(build.node_from(restricted), 1);
  vr.checkLanes(s.at.sizes);

  std::string o;
  for (const auto &t : kc.promoted) o += "  " + std::string(computeCType(s.tensor(t)->type)) + " " + t + "_r;\n";
  std::vector<const ScopStatement *> reductions;
  for (const auto &name : kc.statements) {
    const ScopStatement *st = s.statement(name);
    if (st->kind != StmtKind::Reduce || singleThread(kc)) continue;
    reductions.push_back(st);
    DType acc = accumulatorType(*st->op, s.tensor(outputOf(s, *st))->type);
    int lanes = vr.lanesOf(name);
    // A y-reduce thread's V columns are V outputs: without its lanes' loop (unrolled away) one
    // accumulator would sum them all. Refuse rather than print that.
    if (vectors && kc.reduceAxis == "y" && lanes == 1 && vectorOfKernel > 1)
      throw std::runtime_error("polyk-emit: internal: the y-reduce " + name + " has vector[" +
                               std::to_string(vectorOfKernel) + "] columns but no lane loop");
    std::string id = reduceIdentity(*st->op, acc);
    if (lanes == 1) {
      o += "  " + std::string(computeCType(acc)) + " acc_" + name + " = " + id + ";\n";
      o += "  bool live_" + name + " = false;\n  polyk_idx oidx_" + name + " = 0;\n";
    } else {
      // One output per lane: the thread's V consecutive outputs.
      std::string ids = id;
      for (int l = 1; l < lanes; ++l) ids += ", " + id;
      o += "  " + std::string(computeCType(acc)) + " acc_" + name + "[" + std::to_string(lanes) + "] = {" + ids + "};\n";
      o += "  bool live_" + name + " = false;\n  polyk_idx oidx_" + name + "[" + std::to_string(lanes) + "] = {0};\n";
    }
  }
  o += body;
  for (const ScopStatement *st : reductions) {
    const TensorDecl &out = *s.tensor(outputOf(s, *st));
    DType acc = accumulatorType(*st->op, out.type);
    std::string T = computeCType(acc), op = reduceOpTag(*st->op), n = st->name;
    int lanes = vr.lanesOf(n);
    std::string pad = "  ", l;
    // A y-reduce's lanes reduce over the block together (one shared-memory pass), and an ordered
    // return combines them together (one fence and one count per block): per lane, these cost
    // more than the vectors save (bench/results/2026-11-22-h100-epilogue.txt).
    bool laneBlock = d == Dialect::Cuda && lanes > 1 && kc.reduceAxis == "y";
    std::string dims = T + ", " + std::to_string(bx) + ", " + std::to_string(by);
    if (laneBlock) {
      o += "  polyk::block_reduce_y_lanes<" + op + ", " + dims + ", " + std::to_string(lanes) + ">(acc_" + n + ");\n";
      if (returnMode(s, kc, *st, opt) == Return::Ordered) {
        o += "  polyk::ordered_combine_block_lanes<" + op + ", " + dims + ", " + std::to_string(lanes) + ">(partials_" + n +
             ", counter_" + n + ", (int)(" + blocksPerOutput(kc) + "), " + elementsExpr(out) + ", (int)b_" +
             kc.reduceBlockAxis + ", t_y == 0 && live_" + n +
             ", oidx_" + n + ", acc_" + n + ", " + out.name + ");\n";
        continue;
      }
    }
    if (lanes > 1) {
      // The rest once per lane: the C emulation's combine, or the lane's block reduction (unless
      // laneBlock did it) and its store or atomic.
      o += std::string(d == Dialect::Cuda ? "#pragma unroll\n" : "") + "  for (int l_" + n + " = 0; l_" + n + " < " +
           std::to_string(lanes) + "; ++l_" + n + ") {\n";
      pad = "    ";
      l = "[l_" + n + "]";
    }
    std::string accL = "acc_" + n + l, oidxL = "oidx_" + n + l;
    if (d == Dialect::C) {
      // Each thread alone: its partial joins the kernel's accumulator (compute type), stored at
      // the end of the kernel as the last block's combine would.
      std::string slot = "pacc_" + n + "[" + oidxL + "]";
      o += pad + "if (live_" + n + ") {\n" + pad + "  " + slot + " = " + reduceApply(*st->op, out.type, slot, accL, false) + ";\n";
      // A direct return is complete when its block is: store it now, as the block's leader
      // does, for the later parts of a fused kernel.
      if (returnMode(s, kc, *st, opt) == Return::Direct)
        o += pad + "  " + out.name + "[" + oidxL + "] = " + storeValue(Dialect::C, out.type, slot) + ";\n";
      o += pad + "}\n";
    } else {
      std::string value = accL, leader = "live_" + n;
      if (laneBlock) {
        leader = "t_y == 0 && " + leader;
      } else if (kc.reduceAxis == "x" || kc.reduceAxis == "y") {
        o += pad + "const " + T + " block_" + n + " = polyk::block_reduce_" + kc.reduceAxis + "<" + op + ", " + dims + ">(" + accL + ");\n";
        value = "block_" + n;
        leader = "t_" + kc.reduceAxis + " == 0 && " + leader;
      }
      std::string target = out.name + "[" + oidxL + "]";
      std::string stored = out.type == DType::Bool || acc == out.type ? "(" + std::string(cudaStorageType(out.type)) + ")" + value
                                                                     : storeValue(Dialect::Cuda, out.type, value);
      switch (returnMode(s, kc, *st, opt)) {
      case Return::Direct:
        o += pad + "if (" + leader + ") " + target + " = " + stored + ";\n";
        if (kept.broadcast.count(n)) {
          // (readsRowResult proved one result per row: a thread of V outputs never gets here.)
          if (lanes != 1) throw std::logic_error("polyk-emit: a broadcast result of " + n + " with " + std::to_string(lanes) + " lanes");
          o += pad + "kept_" + out.name + " = polyk::block_broadcast<" + (kc.reduceAxis == "x" ? "0" : "1") + ", " +
               cudaStorageType(out.type) + ", " + std::to_string(bx) + ", " + std::to_string(by) + ">(" + stored + ");\n";
        }
        break;
      case Return::Atomic: o += pad + "if (" + leader + ") polyk::atomic_combine<" + op + ">(&" + target + ", " + stored + ");\n"; break;
      case Return::Ordered: {
        // Every thread takes part: the last block combines the partials with the whole line.
        std::string axis = kc.reduceAxis == "y" ? "1" : "0";
        o += pad + "polyk::ordered_combine_block<" + op + ", " + dims + ", " + axis + ">(partials_" + n + ", counter_" + n + ", (int)(" +
             blocksPerOutput(kc) + "), " + elementsExpr(out) + ", (int)b_" + kc.reduceBlockAxis + ", " + leader + ", " + oidxL +
             ", " + value + ", " + out.name + ");\n";
        break;
      }
      }
    }
    if (lanes > 1) o += "  }\n";
  }
  return o;
}

/// `lane`: the vector loop's iterator where the thread keeps one accumulator per lane.
std::string reduceMacro(const Scop &s, const ScopStatement &st, const std::string &v, Dialect d, const EmitOptions &opt,
                        const std::string &lane = "") {
  const TensorDecl &out = *s.tensor(outputOf(s, st));
  std::string l = lane.empty() ? "" : "[" + lane + "]";
  std::string a = "acc_" + st.name + l;
  std::string next = reduceApply(*st.op, out.type, a, v, d == Dialect::Cuda);
  // --accumulate=input: the partial is rounded to the f16 / bf16 input type at every step.
  if (opt.accumulate == "input") next = roundToStorage(d, out.type, next);
  return a + " = " + next + "; live_" + st.name + " = true; oidx_" + st.name + l + " = " + linearIndex(st.write, out) + ";";
}

std::string initMacro(const Scop &s, const ScopStatement &st, Dialect d) {
  const TensorDecl &out = *s.tensor(outputOf(s, st));
  return out.name + "[" + linearIndex(st.write, out) + "] = " + storeValue(d, out.type, reduceIdentity(*st.op, out.type)) + ";";
}

std::string kernelMacros(const Scop &s, const KernelConfig &kc, Dialect d, const std::set<std::string> &promoted,
                         const EmitOptions &opt, const ReadOverride &read, const std::string &only, const std::string &lane) {
  return statementMacros(
      s, d, promoted,
      [&](const ScopStatement &st, const std::string &v) {
        if (!singleThread(kc)) return reduceMacro(s, st, v, d, opt, lane);
        const TensorDecl &out = *s.tensor(outputOf(s, st));
        std::string e = out.name + "[" + linearIndex(st.write, out) + "]";
        return e + " = " + storeValue(d, out.type, reduceApply(*st.op, out.type, loadElement(d, out.type, e), v, d == Dialect::Cuda)) + ";";
      },
      [&](const ScopStatement &st) { return initMacro(s, st, d); }, read, only);
}

/// An initialisation is needed only where blocks combine into the output atomically; where one
/// block per output stores it directly, or the last block stores the ordered combination, the
/// kernel of its initialisation is not launched.
bool initNotNeeded(const Scop &s, const KernelConfig &init, const EmitOptions &opt) {
  for (const auto &name : init.statements) {
    const ScopStatement *st = s.statement(name);
    if (st->kind != StmtKind::Init) return false;
    bool direct = false;
    for (const auto &kc : s.kernels)
      for (const auto &n : kc.statements)
        if (n == st->reduction) direct = !singleThread(kc) && returnMode(s, kc, *s.statement(n), opt) != Return::Atomic;
    if (!direct) return false;
  }
  return !init.statements.empty();
}

/// The kernels that run as one (kernelGroups): a kernel is complete within its blocks when each
/// of its reductions is stored directly by one block.
std::vector<std::vector<size_t>> groupsOf(const Scop &s, const isl::schedule &mapped, const EmitOptions &opt) {
  return kernelGroups(
      s, mapped, [&](const KernelConfig &kc) { return !initNotNeeded(s, kc, opt); },
      [&](const KernelConfig &kc) {
        if (singleThread(kc)) return false;
        for (const auto &n : kc.statements) {
          const ScopStatement *st = s.statement(n);
          if (st->kind == StmtKind::Init) return false;
          if (st->kind == StmtKind::Reduce && returnMode(s, kc, *st, opt) != Return::Direct) return false;
        }
        return true;
      });
}

} // namespace

std::string emitMappedC(const Scop &s, const EmitOptions &opt) {
  std::set<std::string> promoted = promotedTensors(s);
  std::string o = "/* The CUDA kernels' code run on the CPU: block after block, thread after thread. */\n";
  o += "void " + hostSignature(s, "polyk_" + s.name + "_mapped", false) + ") {\n";
  for (const auto &t : s.tensors)
    if (t.role == Role::Temporary && !promoted.count(t.name))
      o += "  " + std::string(cStorageType(t.type)) + " *" + t.name + " = (" + cStorageType(t.type) + " *)malloc(sizeof(" +
           cStorageType(t.type) + ") * " + elementsExpr(t) + ");\n";
  isl::schedule mapped = applyMapping(readIslSchedule(s.schedule), s.kernels);
  bool vectors = false; // a thread may own a vector of outputs (VectorReads)
  for (const auto &[k, sz] : parseSizes(s.sizes)) vectors |= sz.vector > 1;
  // As the launcher does: fused kernels run part after part within each block.
  for (const auto &group : groupsOf(s, mapped, opt)) {
    std::vector<const ScopStatement *> reductions;
    const KernelConfig &first = s.kernels[group[0]];
    for (size_t k : group) {
      const KernelConfig &kc = s.kernels[k];
      o += "  /* " + kc.name + " */\n";
      for (const auto &name : kc.statements) {
        const ScopStatement *st = s.statement(name);
        if (st->kind != StmtKind::Reduce || singleThread(kc)) continue;
        reductions.push_back(st);
        const TensorDecl &out = *s.tensor(outputOf(s, *st));
        std::string T = computeCType(accumulatorType(*st->op, out.type));
        o += "  " + T + " *pacc_" + st->name + " = (" + T + " *)malloc(sizeof(" + T + ") * " + elementsExpr(out) + ");\n";
        // A direct store and the ordered return overwrite the output; atomics combine into its
        // current (initialised) value.
        std::string start = returnMode(s, kc, *st, opt) != Return::Atomic ? reduceIdentity(*st->op, out.type)
                                                                          : loadElement(Dialect::C, out.type, out.name + "[e]");
        o += "  for (polyk_idx e = 0; e < " + elementsExpr(out) + "; ++e) pacc_" + st->name + "[e] = " + start + ";\n";
      }
    }
    o += "  for (polyk_idx b_y = 0; b_y < " + first.grid[1] + "; ++b_y)\n  for (polyk_idx b_x = 0; b_x < " + first.grid[0] +
         "; ++b_x) {\n";
    for (size_t k : group) {
      const KernelConfig &kc = s.kernels[k];
      o += kernelMacros(s, kc, Dialect::C, promoted, opt);
      o += "  for (polyk_idx t_y = 0; t_y < " + std::to_string(kc.block[1]) + "; ++t_y)\n  for (polyk_idx t_x = 0; t_x < " +
           std::to_string(kc.block[0]) + "; ++t_x) {\n";
      std::map<std::string, int> divisible = divisibleParams(s, k);
      if (divisible.empty())
        o += kernelCode(s, mapped, kc, Dialect::C, opt, vectors);
      else
        o += "  if (" + divisibleTest(divisible) + ") {\n" + kernelCode(s, mapped, kc, Dialect::C, opt, vectors, false, {}, divisible) +
             "  } else {\n" + kernelCode(s, mapped, kc, Dialect::C, opt, vectors) + "  }\n";
      o += "  }\n" + undefMacros(s);
    }
    o += "  }\n";
    for (const ScopStatement *st : reductions) {
      const TensorDecl &out = *s.tensor(outputOf(s, *st));
      o += "  for (polyk_idx e = 0; e < " + elementsExpr(out) + "; ++e) " + out.name + "[e] = " +
           storeValue(Dialect::C, out.type, "pacc_" + st->name + "[e]") + ";\n  free(pacc_" + st->name + ");\n";
    }
  }
  for (const auto &t : s.tensors)
    if (t.role == Role::Temporary && !promoted.count(t.name)) o += "  free(" + t.name + ");\n";
  return o + "}\n";
}

std::string emitCudaKernels(const Scop &s, const EmitOptions &opt, bool prologue) {
  std::set<std::string> promoted = promotedTensors(s);

  std::string o;
  if (prologue) {
    o += "#include <cuda_runtime.h>\n#include <cuda_fp16.h>\n#include <cuda_bf16.h>\n#include <stdint.h>\n";
    if (opt.blockReduce == "cub") o += "#define POLYK_BLOCK_REDUCE_CUB 1\n";
    o += "#include \"polyk/runtime.cuh\"\n\n";
    o += indexHelpers(Dialect::Cuda, needsWideIndices(s)) + "\n";
  }

  isl::schedule mapped = applyMapping(readIslSchedule(s.schedule), s.kernels);
  std::vector<std::vector<size_t>> groups = groupsOf(s, mapped, opt);
  // Threads taking vectors of consecutive elements (polyk-bind) read them with one wide access
  // where the tensors are 16-byte aligned: each kernel comes in two instances, the launcher picks.
  bool vectors = false;
  for (const auto &[k, sz] : parseSizes(s.sizes)) vectors |= sz.vector > 1;
  std::map<size_t, std::string> runsInside; // kernel -> the fused kernel that runs it
  for (const auto &group : groups) {
    const KernelConfig &first = s.kernels[group[0]];
    o += "/* The statements over their domain iterators, as " + first.name + " runs them. */\n";
    o += kernelMacros(s, first, Dialect::Cuda, promoted, opt);
    o += std::string(vectors ? "template <bool POLYK_ALIGNED>\n" : "") + "__global__ void __launch_bounds__(" +
         std::to_string(first.block[0] * first.block[1] * first.block[2]) + ") " + first.name + "(" +
         kernelParams(s, unrestricted(s, group)) + orderedParams(s, first, opt) + ") {\n";
    o += "  const polyk_idx b_x = blockIdx.x, b_y = blockIdx.y, t_x = threadIdx.x, t_y = threadIdx.y;\n";
    o += "  (void)b_x; (void)b_y; (void)t_x; (void)t_y;\n";
    if (vectors) o += alignmentAssumptions(s, promoted);
    std::vector<KeptResults> kept = keptResults(s, mapped, group, opt);
    for (const auto &part : kept)
      for (const auto &n : part.broadcast) {
        const TensorDecl &out = *s.tensor(outputOf(s, *s.statement(n)));
        std::string T = cudaStorageType(out.type);
        o += "  " + T + " kept_" + out.name + " = " + T + "();\n";
      }
    // A kernel whose vectors run along a symbolic extent: its aligned instance is built knowing
    // the extent a multiple of V (the launcher checks it), the other without.
    std::map<std::string, int> divisible;
    for (size_t k : group)
      for (const auto &[p, v] : divisibleParams(s, k)) divisible[p] = std::max(divisible[p], v);
    auto body = [&](const std::map<std::string, int> &div) {
      std::string b;
      if (group.size() == 1) b += kernelCode(s, mapped, first, Dialect::Cuda, opt, vectors, false, {}, div);
      for (size_t j = 0; group.size() > 1 && j < group.size(); ++j) {
        const KernelConfig &kc = s.kernels[group[j]];
        if (j > 0) {
          // Each block reads only what it wrote itself (KernelFusion.cpp): a barrier suffices.
          b += "  __syncthreads(); /* " + kc.name + ", fused: on this block's own results */\n";
          b += undefMacros(s) + kernelMacros(s, kc, Dialect::Cuda, promoted, opt, kept[j].read);
          runsInside[group[j]] = first.name;
        }
        b += "  {\n" + kernelCode(s, mapped, kc, Dialect::Cuda, opt, vectors, true, kept[j], div) + "  }\n";
      }
      return b;
    };
    if (divisible.empty()) {
      o += body({});
    } else {
      std::string aligned = body(divisible);
      if (group.size() > 1) aligned += undefMacros(s) + kernelMacros(s, first, Dialect::Cuda, promoted, opt);
      o += "  if constexpr (POLYK_ALIGNED) {\n" + aligned + "  } else {\n" + body({}) + "  }\n";
    }
    o += "}\n" + undefMacros(s) + "\n";
  }

  // The launcher: temporaries not kept in registers live in global memory for its duration.
  std::string sig = hostSignature(s, "polyk_" + s.name, true);
  o += "/* Runs the program on `stream`; returns the first CUDA error. */\n";
  o += "extern \"C\" cudaError_t " + sig + (sig.back() == '(' ? "" : ", ") + "cudaStream_t stream) {\n";
  o += "  cudaError_t err = cudaSuccess;\n";
  if (vectors) {
    o += "  const bool aligned = true";
    for (const auto &t : s.tensors)
      if (t.role != Role::Temporary) o += " && (uintptr_t)" + t.name + " % 16 == 0";
    std::map<std::string, int> divisible;
    for (size_t k = 0; k < s.kernels.size(); ++k)
      for (const auto &[p, v] : divisibleParams(s, k)) divisible[p] = std::max(divisible[p], v);
    if (!divisible.empty()) o += " && " + divisibleTest(divisible);
    o += ";\n";
  }
  for (const auto &t : s.tensors) {
    if (t.role != Role::Temporary) continue;
    std::string ty = cudaStorageType(t.type);
    if (promoted.count(t.name)) {
      o += "  " + ty + " *" + t.name + " = nullptr; /* kept in registers */\n";
      continue;
    }
    o += "  " + ty + " *" + t.name + " = nullptr;\n";
    o += "  if ((err = polyk::tempMalloc((void **)&" + t.name + ", sizeof(" + ty + ") * " + elementsExpr(t) +
         ", stream)) != cudaSuccess) return err;\n";
  }
  for (const auto &kc : s.kernels) {
    if (initNotNeeded(s, kc, opt)) {
      o += "  /* " + kc.name + " initialises outputs that one block per element stores directly: not launched */\n";
      continue;
    }
    if (auto in = runsInside.find(&kc - s.kernels.data()); in != runsInside.end()) {
      o += "  /* " + kc.name + " runs inside " + in->second + " */\n";
      continue;
    }
    std::string extra;
    for (const auto &name : kc.statements) {
      const ScopStatement *st = s.statement(name);
      if (st->kind != StmtKind::Reduce || singleThread(kc) || returnMode(s, kc, *st, opt) != Return::Ordered) continue;
      // Scratch per device and stream, kept across launches (polyk::OrderedScratch).
      const TensorDecl &out = *s.tensor(outputOf(s, *st));
      std::string T = computeCType(accumulatorType(*st->op, out.type)), n = "(long long)" + elementsExpr(out);
      std::string p = "partials_" + name, c = "counter_" + name;
      o += "  static polyk::OrderedScratch<" + T + "> scratch_" + name + ";\n";
      o += "  " + T + " *" + p + " = nullptr;\n  unsigned int *" + c + " = nullptr;\n";
      o += "  if ((err = scratch_" + name + ".get(stream, " + n + " * (" + blocksPerOutput(kc) + "), " + n + ", &" + p +
           ", &" + c + ")) != cudaSuccess)\n    return err;\n";
      extra += ", partials_" + name + ", counter_" + name;
    }
    std::string launch = "<<<dim3(" + kc.grid[0] + ", " + kc.grid[1] + ", " + kc.grid[2] + "), dim3(" +
                         std::to_string(kc.block[0]) + ", " + std::to_string(kc.block[1]) + ", " +
                         std::to_string(kc.block[2]) + "), 0, stream>>>(" + kernelArgs(s) + extra + ");\n";
    if (vectors)
      o += "  if (aligned) " + kc.name + "<true>" + launch + "  else " + kc.name + "<false>" + launch;
    else
      o += "  " + kc.name + launch;
    o += "  if ((err = cudaGetLastError()) != cudaSuccess) return err;\n";
  }
  for (const auto &t : s.tensors)
    if (t.role == Role::Temporary && !promoted.count(t.name))
      o += "  if ((err = cudaFreeAsync(" + t.name + ", stream)) != cudaSuccess) return err;\n";
  o += "  return cudaSuccess;\n}\n";
  return o;
}

} // namespace polyk::codegen
