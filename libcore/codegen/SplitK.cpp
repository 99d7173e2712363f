// Split-K of a register-tiled sum (SplitK.h). The partials lie thread-major per tile and split,
// point by point: partials[((tile * nsplit + split) * points + point) * threads + thread], so a
// warp writes and reads each point's partials as one stretch. A thread's counter sits at
// tile * threads + thread; the thread that finds S - 1 there before its increment is the last of
// its tile's blocks to publish, adds the partials of splits 0 .. S - 1 in that order (whichever
// block came last) and stores, then resets the counter for the next launch.
#include "SplitK.h"

#include "EmitParts.h"

#include "polyk/Isl.h"
#include "polyk/Sizes.h"

#include <isl/ast_build.h>
#include <isl/schedule.h>

namespace polyk::codegen {

namespace {


bool readsTensor(const ScopStatement &st, const std::string &t) {
  for (const auto &r : st.reads)
    if (isl::map(islCtx(), r).range_tuple_id().name() == t) return true;
  return false;
}

/// The least (`max` false) or greatest value of `dom`'s dim `pos`, as C over the params.
std::string bound(const isl::set &dom, unsigned pos, bool max) {
  isl_pw_aff *v = max ? isl_set_dim_max(dom.copy(), (int)pos) : isl_set_dim_min(dom.copy(), (int)pos);
  isl_ast_build *b = isl_ast_build_from_context(dom.params().release());
  isl_ast_expr *e = isl_ast_build_expr_from_pw_aff(b, v);
  std::string c = islExprToC(e);
  isl_ast_expr_free(e);
  isl_ast_build_free(b);
  return "(" + c + ")";
}

std::string threadsOf(const KernelConfig &kc) { return std::to_string((long long)kc.block[0] * kc.block[1] * kc.block[2]); }

} // namespace

SplitK splitK(const Scop &s, int k, const KernelConfig &kc, const std::string &extents, long long points, const EmitOptions &opt) {
  SplitK sk;
  auto sizes = parseSizes(s.sizes, &s.at.sizes);
  auto it = sizes.find(k);
  if (it == sizes.end() || it->second.split <= 1) return sk;
  // Under --partition a kernel runs unsplit where a member is folded into blockIdx.z, which split-K
  // shares with its splits (polyk-partition may split that member).
  if (opt.partition && kc.grid[2] != "1") return sk;
  const KernelSizes &sz = it->second;
  std::string where = kc.name + ": kernel[" + std::to_string(k) + "] -> split[" + std::to_string(sz.split) + "]: ";
  if (sz.reduce.empty()) fail(s.at.sizes, where + "the kernel has no reduce sizes (a tiled reduced band)");
  if (sz.time > 0 || sz.stream > 0) fail(s.at.sizes, where + "a time-tiled or streamed kernel is not split");
  // A thread's points after one another (tile not a multiple of the block, no register tile) would
  // share one partial: each point needs its own register.
  for (size_t m = 0; m < sz.tile.size() && m < sz.block.size() && extents.empty(); ++m)
    if (sz.tile[m] != sz.block[m])
      fail(s.at.sizes, where + "a thread's points must be a register tile (tile a multiple of block, or tile = block)");
  for (const auto &name : kc.statements) {
    const ScopStatement &st = *s.statement(name);
    unsigned par = (unsigned)std::count(st.dims.begin(), st.dims.end(), "parallel");
    if (st.dims.size() > par) {
      if (!sk.update.empty()) fail(s.at.sizes, where + "the kernel updates more than one reduction");
      if (!st.op || *st.op != ReduceOp::Sum) fail(s.at.sizes, where + "only sums are split");
      sk.update = name, sk.member = par, sk.accumulator = writtenTensor(st);
    }
  }
  if (sk.update.empty()) fail(s.at.sizes, where + "the kernel has no reduction");
  if (std::find(kc.promoted.begin(), kc.promoted.end(), sk.accumulator) == kc.promoted.end())
    fail(s.at.sizes, where + "its accumulator " + sk.accumulator + " is not kept in registers (polyk-bind)");
  for (const auto &name : kc.statements) {
    const ScopStatement &st = *s.statement(name);
    if (name != sk.update && readsTensor(st, sk.accumulator) && writtenTensor(st) != sk.accumulator) sk.stores.insert(name);
  }
  if (sk.stores.empty()) fail(s.at.sizes, where + "no statement stores the accumulator");
  isl::set dom(islCtx(), s.statement(sk.update)->domain);
  sk.on = true;
  sk.splits = sz.split;
  sk.reduceTile = sz.reduce.front();
  sk.lo = bound(dom, sk.member, false);
  sk.hi = bound(dom, sk.member, true);
  sk.type = computeCType(s.tensor(sk.accumulator)->type);
  sk.extents = extents;
  sk.points = points;
  sk.threads = (long long)kc.block[0] * kc.block[1] * kc.block[2];
  return sk;
}

isl::schedule restrictSplits(const isl::schedule &bound, const Scop &s, const std::map<int, SplitK> &splits) {
  isl::union_set dom = bound.get_domain();
  for (const auto &[k, sk] : splits) {
    if (!sk.on) continue;
    isl::set update(islCtx(), s.statement(sk.update)->domain);
    std::string vars, R = std::to_string(sk.reduceTile), d = "d" + std::to_string(sk.member);
    for (unsigned i = 0; i < update.tuple_dim(); ++i) vars += (i ? ", " : "") + std::string("d") + std::to_string(i);
    isl::set share(islCtx(), "[polyk_k0, polyk_k1] -> { " + sk.update + "[" + vars + "] : " + R + "polyk_k0 <= " + d + " < " + R +
                                 "polyk_k1 }");
    isl::union_set mine = isl::union_set(update);
    dom = dom.subtract(mine).unite(isl::union_set(update.intersect(share)));
  }
  return isl::manage(isl_schedule_intersect_domain(bound.copy(), dom.release()));
}

std::string splitParams(const SplitK &sk, Dialect d) {
  std::string restrict_ = d == Dialect::Cuda ? " *__restrict__ " : " *";
  return "const polyk_idx polyk_t0, const polyk_idx polyk_chunk, const polyk_idx polyk_nsplit, " + sk.type + restrict_ +
         "polyk_partials, unsigned int" + restrict_ + "polyk_counters, ";
}

std::string splitMacros(const SplitK &sk, const std::string &store, const std::string &head, bool registers, Dialect d) {
  std::string reg = registers ? " polyk_reg" : "", params = head.substr(head.find('(') + 1);
  params = params.substr(0, params.rfind(')'));
  auto load = [&](const std::string &lvalue) { return d == Dialect::Cuda ? "__ldcg(&" + lvalue + ")" : lvalue; };
  std::string acc = sk.accumulator + "_r" + reg;
  std::string o = "#define " + store + "_put(" + params + ") do { polyk_part[polyk_split]" + reg + "[0] = " + acc + "; } while (0)\n";
  o += "#define " + store + "_sum(" + params + ") do { " + sk.type + " polyk_v = " + load("polyk_part[0]" + reg + "[0]") +
       "; for (polyk_idx polyk_s = 1; polyk_s < polyk_nsplit; ++polyk_s) polyk_v += " + load("polyk_part[polyk_s]" + reg + "[0]") +
       "; " + acc + " = polyk_v; } while (0)\n";
  return o;
}

std::string splitPrologue(const std::string &body, const std::string &prologue, const SplitK &sk, const KernelConfig &kc) {
  if (body.compare(0, prologue.size(), prologue) != 0) throw std::logic_error("a kernel body without its ids' prologue");
  std::string z = "(blockIdx.z % (" + kc.grid[2] + "))", patched = prologue;
  if (size_t at = patched.find("blockIdx.z"); at != std::string::npos) patched.replace(at, 10, z);
  std::string T = threadsOf(kc), points = std::to_string(sk.points);
  patched += "  /* split-K: this block's share of the reduced tiles, and where its partial sums go */\n";
  patched += "  const polyk_idx polyk_split = blockIdx.z / (" + kc.grid[2] + ");\n";
  patched += "  const polyk_idx polyk_k0 = polyk_t0 + polyk_split * polyk_chunk, polyk_k1 = polyk_k0 + polyk_chunk;\n";
  patched += "  (void)polyk_k0; (void)polyk_k1;\n";
  patched += "  const polyk_idx polyk_slot = ((" + z + " * (" + kc.grid[1] + ") + blockIdx.y) * (" + kc.grid[0] + ") + blockIdx.x) * " + T +
             " + (threadIdx.z * " + std::to_string(kc.block[1]) + " + threadIdx.y) * " + std::to_string(kc.block[0]) + " + threadIdx.x;\n";
  patched += "  " + sk.type + " (*const polyk_part)" + sk.extents + "[" + T + "] = (" + sk.type + " (*)" + sk.extents + "[" + T +
             "])(polyk_partials + (long long)(polyk_slot / " + T + ") * polyk_nsplit * " + points + " * " + T + " + polyk_slot % " + T + ");\n";
  return patched + body.substr(prologue.size());
}

std::string splitCombine(const std::string &final, Dialect d) {
  std::string o = "  /* split-K: the last of the tile's blocks adds their partial sums in order, and stores */\n";
  if (d == Dialect::Cuda) {
    o += "  __threadfence(); /* the partials published before they are counted */\n";
    o += "  if (atomicAdd(&polyk_counters[polyk_slot], 1u) == (unsigned int)(polyk_nsplit - 1)) {\n";
    o += "    __threadfence();\n";
  } else {
    o += "  if (++polyk_counters[polyk_slot] == (unsigned int)polyk_nsplit) {\n";
  }
  o += "    polyk_counters[polyk_slot] = 0u;\n";
  return o + final + "  }\n";
}

std::string splitLaunch(const SplitK &sk, const KernelConfig &kc, Dialect d, const std::string &stream, bool throws) {
  std::string R = std::to_string(sk.reduceTile), T = threadsOf(kc), points = std::to_string(sk.points);
  std::string o = "  { /* " + kc.name + ", split-K: at most " + std::to_string(sk.splits) + " blocks a tile, each whole reduced tiles */\n";
  o += "  const polyk_idx polyk_t0 = polyk_floord(" + sk.lo + ", " + R + ");\n";
  o += "  const polyk_idx polyk_nt = " + sk.hi + " >= " + sk.lo + " ? polyk_floord(" + sk.hi + ", " + R + ") - polyk_t0 + 1 : 1;\n";
  o += "  const polyk_idx polyk_zb = polyk_max(1, " + kc.grid[2] + ");\n";
  // (blockIdx.z stays under 65536.)
  o += "  polyk_idx polyk_nsplit = polyk_min(" + std::to_string(sk.splits) + ", polyk_max(1, 65535 / polyk_zb));\n";
  o += "  const polyk_idx polyk_chunk = (polyk_nt + polyk_nsplit - 1) / polyk_nsplit;\n";
  o += "  polyk_nsplit = (polyk_nt + polyk_chunk - 1) / polyk_chunk;\n";
  o += "  const long long polyk_tiles = (long long)(" + kc.grid[0] + ") * (" + kc.grid[1] + ") * polyk_zb;\n";
  if (d == Dialect::Cuda) {
    o += "  static polyk::OrderedScratch<" + sk.type + "> polyk_scratch;\n";
    o += "  " + sk.type + " *polyk_partials = nullptr;\n  unsigned int *polyk_counters = nullptr;\n";
    std::string get = "polyk_scratch.get(" + stream + ", polyk_tiles * polyk_nsplit * " + points + " * " + T + ", polyk_tiles * " + T +
                      ", &polyk_partials, &polyk_counters)";
    o += throws ? "  if (cudaError_t polyk_e = " + get + "; polyk_e != cudaSuccess)\n    throw std::runtime_error(std::string(\"" + kc.name +
                      ": \") + cudaGetErrorString(polyk_e));\n"
                : "  if ((err = " + get + ") != cudaSuccess)\n    return err;\n";
  } else {
    o += "  " + sk.type + " *polyk_partials = (" + sk.type + " *)malloc(sizeof(" + sk.type + ") * polyk_tiles * polyk_nsplit * " + points +
         " * " + T + ");\n";
    o += "  unsigned int *polyk_counters = (unsigned int *)calloc(polyk_tiles * " + T + ", sizeof(unsigned int));\n";
  }
  return o;
}

std::string splitFree() { return "  free(polyk_partials);\n  free(polyk_counters);\n"; }

std::string splitArgs() { return "polyk_t0, polyk_chunk, polyk_nsplit, polyk_partials, polyk_counters, "; }

std::string splitGridZ(const KernelConfig &kc) { return "(" + kc.grid[2] + ") * polyk_nsplit"; }

} // namespace polyk::codegen
