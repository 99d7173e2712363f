// Multi-device code from polyk-partition's model (Matz et al. §6-7, issue 25): the partitioned
// kernel clone's block offset, and polyk_NAME_multi, which shares each split kernel's blocks out
// over the runtime's devices (libcore/runtime/polyk/multi.hpp) and, around each launch, has the
// runtime fetch the runs of elements a device reads but does not hold and record the runs it
// writes, both listed by the generated enumerators (libcore/partition/Enumerators.cpp).
#include "EmitParts.h"
#include "SplitK.h"

#include "polyk/Partition.h"
#include "polyk/Tool.h"

#include <array>
#include <set>

#include <isl/aff.h>
#include <isl/map.h>
#include <isl/set.h>

namespace polyk::codegen {

namespace {

const KernelPartition *modelOf(const EmitOptions &opt, const std::string &kernel) {
  if (!opt.partition) return nullptr;
  for (const auto &kp : opt.partition->kernels)
    if (kp.name == kernel) return &kp;
  return nullptr;
}

/// The tensors a kernel reads (kind "read") or writes, in the model's order, once each.
std::vector<std::string> accessed(const KernelPartition &kp, const std::string &kind) {
  std::vector<std::string> out;
  for (const auto &a : kp.accesses)
    if ((kind.empty() || a.kind == kind) && std::find(out.begin(), out.end(), a.tensor) == out.end()) out.push_back(a.tensor);
  return out;
}


std::string storage(const TensorDecl &t, bool cuda) { return cuda ? cudaStorageType(t.type) : cStorageType(t.type); }

/// The kernel's arguments on device `dev`: the params, then each tensor's allocation there, for
/// the tensors the kernel touches (`touched`; the others are not allocated there for it).
std::string deviceArgs(const Scop &s, bool cuda, const std::string &dev, const std::vector<std::string> &touched) {
  std::string a;
  for (const auto &[name, value] : s.params) a += std::string(a.empty() ? "" : ", ") + name;
  for (const auto &t : s.tensors) {
    bool buffer = (t.role != Role::Temporary || temporaryInMemory(s, t)) && std::count(touched.begin(), touched.end(), t.name);
    a += std::string(a.empty() ? "" : ", ") + (buffer ? t.name + "->on<" + storage(t, cuda) + ">(" + dev + ")" : "nullptr");
  }
  return a;
}

std::string enumeratorArgs(const Partition &p) {
  std::string a;
  for (const auto &[name, value] : p.params) a += name + ", ";
  return a;
}

} // namespace

SplitPlan splitPlan(const Scop &s, int k, const AffineKernelIds &ids, const EmitOptions &opt) {
  const KernelConfig &kc = s.kernels.at(k);
  const KernelPartition *kp = modelOf(opt, kc.name);
  SplitPlan plan;
  if (!kp || kp->split < 0 || kp->split >= (int)kp->axes.size()) return plan;
  const std::string &axis = kp->axes[kp->split];
  plan.split = true;
  plan.axis = axis[0];
  if (axis == "x") plan.count = kc.grid[0];
  else if (axis == "y") plan.count = kc.grid[1];
  else {
    // The first member folded into z (polyk-partition splits no other): blockIdx.z runs over it
    // outermost, the later members' blocks inside each of its blocks.
    if (ids.blocksZ.empty()) throw std::logic_error(kc.name + ": split along z, but the kernel folds no member into z");
    plan.count = "(" + ids.blocksZ[0] + ")";
    for (size_t i = 1; i < ids.blocksZ.size(); ++i) plan.inner += " * (" + ids.blocksZ[i] + ")";
    if (plan.inner != "1") plan.inner = "(" + plan.inner.substr(4) + ")";
  }
  return plan;
}

std::string offsetBlocks(const std::string &body, const AffineKernelIds &ids, char axis) {
  std::string prologue = ids.prologue(), from = std::string("blockIdx.") + axis;
  if (body.compare(0, prologue.size(), prologue) != 0) throw std::logic_error("a kernel body without its ids' prologue");
  std::string patched = prologue;
  size_t at = patched.find(from);
  if (at == std::string::npos) throw std::logic_error("the prologue does not read " + from);
  patched.replace(at, from.size(), "(" + from + " + polyk_boff)");
  return patched + body.substr(prologue.size());
}

std::string emitMultiLauncher(const Scop &s, const AffineMapping &mapped, const EmitOptions &opt, bool cuda,
                              const std::vector<long long> &dynamicShared, const std::map<int, SplitK> &splits) {
  const Partition &p = *opt.partition;
  std::string o = "\n/* Several devices (polyk-partition's model of '" + p.name + "'). */\n#include \"polyk/multi.hpp\"\n";
  if (cuda) o += "#include <stdexcept>\n#include <string>\n";
  o += emitEnumerators(p, s);
  std::string sig;
  for (const auto &[name, value] : s.params) sig += ", const polyk_idx " + name;
  for (const auto &t : s.tensors)
    if (t.role != Role::Temporary) sig += ", polyk::multi::Buffer &polyk_" + t.name;
  o += "\n/* Runs the program over rt's devices. Each split kernel's blocks along its split member are shared\n"
       "   out evenly (a device may get none); before the launches the runtime copies to each device the\n"
       "   runs it reads and does not hold, after them it records the runs each device wrote. Kernels that\n"
       "   are not split run on device 0. The caller uploads the inputs (and the outputs' initial values)\n"
       "   and downloads the outputs. */\n";
  o += "static inline void polyk_" + s.name + "_multi(polyk::multi::Runtime &rt" + sig + ") {\n";
  o += "  const int polyk_devs = rt.devices();\n  (void)polyk_devs;\n";
  const std::string plansAt = "/*polyk-plans*/";
  o += plansAt;
  std::string plans;
  for (const auto &t : s.tensors) {
    if (t.role != Role::Temporary) {
      o += "  polyk::multi::Buffer *" + t.name + " = &polyk_" + t.name + ";\n";
    } else if (temporaryInMemory(s, t)) {
      o += "  polyk::multi::Buffer polyk_tmp_" + t.name + "(rt, \"" + t.name + "\", sizeof(" + storage(t, cuda) + "), " + elementsExpr(t) +
           ");\n  polyk::multi::Buffer *" + t.name + " = &polyk_tmp_" + t.name + ";\n";
    }
  }
  // Iterated programs: the single launcher's swap (EmitC.cpp, iterateCode) over buffers.
  std::string end;
  if (s.iterate.active()) {
    std::string steps = s.iterate.steps.str();
    o += "  { /* iterate: " + steps + " steps */\n";
    std::string after;
    for (const auto &[out, in] : s.iterate.swaps) {
      const TensorDecl &t = *s.tensor(out);
      o += "  polyk::multi::Buffer polyk_scratch_" + out + "(rt, \"" + out + " (scratch)\", sizeof(" + storage(t, cuda) + "), " + elementsExpr(t) + ");\n";
      o += "  rt.copyBuffer(*" + out + ", *" + in + ");\n  rt.copyBuffer(polyk_scratch_" + out + ", *" + in + ");\n";
      o += "  polyk::multi::Buffer *polyk_in_" + in + " = " + in + ", *const polyk_final_" + out + " = " + out + ";\n";
    }
    o += "  for (polyk_idx polyk_step = 0; polyk_step < " + steps + "; ++polyk_step) {\n";
    for (const auto &[out, in] : s.iterate.swaps) {
      o += "  polyk::multi::Buffer *const polyk_out_" + out + " = (" + steps + " - 1 - polyk_step) % 2 == 0 ? polyk_final_" + out +
           " : &polyk_scratch_" + out + ";\n";
      o += "  polyk::multi::Buffer *const " + in + " = polyk_in_" + in + ";\n  polyk::multi::Buffer *const " + out + " = polyk_out_" + out + ";\n";
      after += "  polyk_in_" + in + " = polyk_out_" + out + ";\n";
    }
    end = after + "  }\n  }\n";
  }
  std::string params = enumeratorArgs(p);
  for (const auto &kc : s.kernels) {
    int k = (int)(&kc - s.kernels.data());
    const KernelPartition *kp = modelOf(opt, kc.name);
    if (!kp) throw UsageError("--partition: the model has no kernel '" + kc.name + "' (it was made from another bound program)");
    SplitPlan plan = splitPlan(s, k, mapped.kernels.count(k) ? mapped.kernels.at(k) : AffineKernelIds{}, opt);
    std::string block = "dim3(" + std::to_string(kc.block[0]) + ", " + std::to_string(kc.block[1]) + ", " + std::to_string(kc.block[2]) + ")";
    const SplitK &sk = splits.at(k); // (kernelSplits: one a kernel, `on` where it splits)
    // grid: the launch's blocks along x, y and z (before split-K's).
    auto launch = [&](std::array<std::string, 3> grid, const std::string &dev, const std::string &first) {
      if (!cuda) return "    " + kc.name + "_blocks(" + (plan.split ? "polyk_lo, polyk_hi" : "0, 0") + ", " + deviceArgs(s, false, dev, accessed(*kp, "")) + ");\n";
      // (The dynamic shared memory's limit is the current device's: raised on each.)
      const long long smem = k < (int)dynamicShared.size() ? dynamicShared[k] : 0;
      std::string raise = smem ? "    if (cudaError_t polyk_e = cudaFuncSetAttribute(" + kc.name + ", cudaFuncAttributeMaxDynamicSharedMemorySize, " +
                                     std::to_string(smem) + "); polyk_e != cudaSuccess) throw std::runtime_error(std::string(\"" + kc.name +
                                     ": \") + cudaGetErrorString(polyk_e));\n"
                               : "";
      // Split-K: the device's scratch on its own stream (polyk::OrderedScratch keeps one a stream),
      // the same splits on every device count, so the sums' order, and their bits, stay.
      const std::string stream = "(cudaStream_t)rt.backend().stream(" + dev + ")";
      std::string split = sk.on ? splitLaunch(sk, kc, Dialect::Cuda, stream, true) : "";
      if (sk.on) grid[2] = "(" + grid[2] + ") * polyk_nsplit";
      return "    rt.backend().activate(" + dev + ");\n" + raise + split + "    " + kc.name + "<<<dim3(" + grid[0] + ", " + grid[1] + ", " + grid[2] + "), " + block + ", " +
             std::to_string(smem) + ", " + stream + ">>>(" + first + (sk.on ? splitArgs() : "") + deviceArgs(s, true, dev, accessed(*kp, "")) + ");\n" +
             "    if (cudaError_t polyk_e = cudaGetLastError(); polyk_e != cudaSuccess) throw std::runtime_error(std::string(\"" + kc.name +
             ": \") + cudaGetErrorString(polyk_e));\n" + (sk.on ? "  }\n" : "");
    };
    if (!plan.split) {
      o += "  { /* " + kc.name + ": on device 0 (" + kp->reason + ") */\n";
      for (const auto &t : accessed(*kp, "")) o += "    rt.acquireAll(0, *" + t + ");\n";
      o += "    if (rt.backend().local(0)) {\n" + launch({kc.grid[0], kc.grid[1], kc.grid[2]}, "0", "") + "    }\n";
      for (const auto &t : accessed(*kp, "write")) o += "    rt.wroteAll(0, *" + t + ");\n";
      o += "  }\n";
      continue;
    }
    std::string share = "    const polyk_idx polyk_lo = polyk_n * polyk_d / polyk_devs, polyk_hi = polyk_n * (polyk_d + 1) / polyk_devs - 1;\n"
                        "    if (polyk_lo > polyk_hi) continue;\n";
    // The runs are listed on the first call (rt.runsFor: one LaunchRuns per kernel and parameter
    // values, looked up before the steps) and reused by every step and later call.
    std::vector<std::string> reads = accessed(*kp, "read"), writes = accessed(*kp, "write");
    std::string runsOf = "polyk_runs_" + kc.name;
    std::string key;
    for (const auto &[name, value] : s.params) key += std::string(key.empty() ? "" : ", ") + "(polyk::multi::idx)" + name;
    plans += "  polyk::multi::LaunchRuns &" + runsOf + " = rt.runsFor(\"" + kc.name + "\", {" + key + "}, " + std::to_string(reads.size()) + ", " +
             std::to_string(writes.size()) + ");\n";
    std::string list;
    for (size_t i = 0; i < reads.size(); ++i)
      list += "    polyk_enum_" + kc.name + "_" + reads[i] + "_read(" + params + "polyk_lo, polyk_hi, polyk::multi::Runs::add, &" + runsOf + ".read(polyk_d, " + std::to_string(i) + "));\n";
    for (size_t i = 0; i < writes.size(); ++i)
      list += "    polyk_enum_" + kc.name + "_" + writes[i] + "_write(" + params + "polyk_lo, polyk_hi, polyk::multi::Runs::add, &" + runsOf + ".write(polyk_d, " + std::to_string(i) + "));\n";
    std::string before, after;
    for (size_t i = 0; i < reads.size(); ++i) before += "    rt.acquire(polyk_d, *" + reads[i] + ", " + runsOf + ".read(polyk_d, " + std::to_string(i) + "));\n";
    for (size_t i = 0; i < writes.size(); ++i) {
      before += "    " + runsOf + ".prepareWrite(rt, polyk_d, *" + writes[i] + ", " + std::to_string(i) + ");\n";
      after += "    rt.wrote(polyk_d, *" + writes[i] + ", " + runsOf + ".write(polyk_d, " + std::to_string(i) + "));\n";
    }
    std::string dims[3] = {kc.grid[0], kc.grid[1], kc.grid[2]};
    dims[plan.axis - 'x'] = "(polyk_hi - polyk_lo + 1) * " + plan.inner;
    o += "  { /* " + kc.name + ": its blocks along " + plan.axis + " shared out (" + kp->reason + ") */\n";
    o += "  const polyk_idx polyk_n = " + plan.count + ";\n";
    o += "  if (rt.track && !" + runsOf + ".listed()) {\n  for (int polyk_d = 0; polyk_d < polyk_devs; ++polyk_d) {\n" + share + list + "  }\n  " + runsOf + ".finish();\n  }\n";
    o += "  if (rt.track)\n  for (int polyk_d = 0; polyk_d < polyk_devs; ++polyk_d) {\n" + share + before + "  }\n";
    o += "  for (int polyk_d = 0; polyk_d < polyk_devs; ++polyk_d) {\n" + share + "    if (!rt.backend().local(polyk_d)) continue; /* another process's */\n" +
         launch({dims[0], dims[1], dims[2]}, "polyk_d", "polyk_lo * " + plan.inner + ", ") + "  }\n";
    o += "  if (rt.track)\n  for (int polyk_d = 0; polyk_d < polyk_devs; ++polyk_d) {\n" + share + after + "  }\n";
    o += "  }\n";
  }
  o.replace(o.find(plansAt), plansAt.size(), plans);
  return o + end + "}\n";
}

BatchSplit batchSplit(const Scop &s) {
  BatchSplit b;
  auto refuse = [&](const std::string &why) {
    b.why = why;
    return b;
  };
  // Every output written by reductions only, which nothing reads back: the program ends in its
  // reductions, so per-device partials combine into the outputs.
  std::set<std::string> reduced;
  for (const auto &st : s.statements) {
    std::string out = writtenTensor(st);
    const TensorDecl *t = s.tensor(out);
    if (st.kind == StmtKind::Reduce) reduced.insert(out);
    else if (t && t->role == Role::Output && st.kind != StmtKind::Init) return refuse("output " + out + " is not written by a reduction alone");
  }
  for (const auto &st : s.statements)
    for (const auto &r : st.reads) {
      std::string t = isl::map(islCtx(), r).range_tuple_id().name();
      if (reduced.count(t)) return refuse("statement " + st.name + " reads " + t + ", which a reduction writes");
    }
  // The batch: every input's first dim, one parameter.
  for (const auto &t : s.tensors) {
    if (t.role != Role::Input) continue;
    std::string p = t.shape.empty() ? "" : t.shape[0].str();
    bool param = std::any_of(s.params.begin(), s.params.end(), [&](const auto &kv) { return kv.first == p; });
    if (!param) return refuse("input " + t.name + "'s first dim is not a parameter");
    if (!b.param.empty() && b.param != p) return refuse("the inputs' first dims differ (" + b.param + ", " + p + ")");
    b.param = p;
  }
  if (b.param.empty()) return refuse("no input");
  // Every statement but the initialisations runs over the batch as its first iterator, 0 to P - 1,
  // reads each input at that batch element, and reduces over it (it is not an output index).
  for (const auto &st : s.statements) {
    if (st.kind == StmtKind::Init) continue;
    isl::set dom(islCtx(), st.domain);
    isl_pw_multi_aff *rec = isl_pw_multi_aff_from_multi_aff(isl_multi_aff_read_from_str(islCtx().get(), st.recovery.c_str()));
    isl::pw_aff batch = isl::manage(isl_pw_multi_aff_get_pw_aff(rec, 0)).intersect_domain(dom);
    isl_pw_multi_aff_free(rec);
    isl::set values = isl::manage(isl_map_range(isl_map_from_pw_aff(batch.copy())));
    isl::set full(islCtx(), "[" + b.param + "] -> { [v] : 0 <= v < " + b.param + " }");
    full = full.intersect_params(dom.params());
    if (!values.is_equal(isl::manage(isl_set_reset_tuple_id(full.copy()))) && !values.is_equal(full))
      return refuse("statement " + st.name + "'s first iterator does not run over 0.." + b.param + " - 1");
    for (const auto &r : st.reads) {
      isl::map read(islCtx(), r);
      const TensorDecl *t = s.tensor(read.range_tuple_id().name());
      if (!t || t->role != Role::Input) continue;
      isl_pw_multi_aff *at = isl_pw_multi_aff_from_map(read.copy());
      isl::pw_aff first = isl::manage(isl_pw_multi_aff_get_pw_aff(at, 0)).intersect_domain(dom);
      isl_pw_multi_aff_free(at);
      if (!isl::manage(isl_pw_aff_eq_set(first.copy(), batch.copy())).is_equal(dom))
        return refuse("statement " + st.name + " reads " + t->name + " at another batch element than its own");
    }
    if (st.kind == StmtKind::Reduce) {
      // The batch index a function of the reduced dims only (of the expression itself: a piece's
      // domain names every dim).
      isl_multi_aff *ma = isl_multi_aff_read_from_str(islCtx().get(), st.recovery.c_str());
      isl_aff *first = isl_multi_aff_get_aff(ma, 0);
      bool dependsOnBatch = false;
      for (size_t d = 0; d < st.dims.size(); ++d)
        if (st.dims[d] == "parallel" && isl_aff_involves_dims(first, isl_dim_in, (unsigned)d, 1)) dependsOnBatch = true;
      isl_aff_free(first);
      isl_multi_aff_free(ma);
      if (dependsOnBatch) return refuse("statement " + st.name + " does not reduce over the batch");
    }
  }
  b.ok = true;
  return b;
}

namespace {

/// C of `op` combining two values of storage type t (host code: the CPU backend's combine).
std::string hostCombine(ReduceOp op, DType t, const std::string &a, const std::string &x) {
  if (t == DType::Bool) return (op == ReduceOp::Sum || op == ReduceOp::Max || op == ReduceOp::Or) ? a + " || " + x : a + " && " + x;
  if (op == ReduceOp::And || op == ReduceOp::Or)
    return std::string("(") + a + " != 0 " + (op == ReduceOp::And ? "&&" : "||") + " " + x + " != 0) ? 1 : 0";
  std::string T = cStorageType(t);
  if (isInteger(t)) {
    if (op == ReduceOp::Sum) return "(" + T + ")((uint64_t)" + a + " + (uint64_t)" + x + ")";
    if (op == ReduceOp::Prod) return "(" + T + ")((uint64_t)" + a + " * (uint64_t)" + x + ")";
    return op == ReduceOp::Max ? a + " > " + x + " ? " + a + " : " + x : a + " < " + x + " ? " + a + " : " + x;
  }
  std::string f = t == DType::F64 ? "" : "f";
  if (op == ReduceOp::Sum) return a + " + " + x;
  if (op == ReduceOp::Prod) return a + " * " + x;
  return std::string(op == ReduceOp::Max ? "polyk_fmax" : "polyk_fmin") + f + "(" + a + ", " + x + ")";
}

/// An output stored as f16 or bf16: over several devices its partials stay f32, the type its
/// reduction accumulates in, and are rounded once, after the combine (rounding each device's
/// partial would add a rounding per device).
bool narrowFloat(DType t) { return t == DType::F16 || t == DType::BF16; }

/// The program with its f16 / bf16 outputs made f32: what each device runs when some output is
/// narrow (its kernels and launcher renamed, `_partial`, beside the program's own).
Scop partialsProgram(const Scop &s) {
  Scop p = s;
  p.name = s.name + "_partial";
  for (auto &t : p.tensors)
    if (t.role == Role::Output && narrowFloat(t.type)) t.type = DType::F32;
  for (auto &k : p.kernels) k.name += "_partial";
  return p;
}

} // namespace

std::string emitBatchLauncher(const Scop &s, const EmitOptions &opt, bool cuda) {
  BatchSplit split = batchSplit(s);
  const std::string &P = split.param;
  std::map<std::string, ReduceOp> ops; // output -> its reduction
  for (const auto &st : s.statements)
    if (st.kind == StmtKind::Reduce && st.op) ops[writtenTensor(st)] = *st.op;
  std::string o = "\n/* Several devices: a reduction over the batch " + P + " (polyk-emit --partition). Each device runs\n"
                  "   the program on its share of the batch into its own partial outputs; device 0 combines them in\n"
                  "   device order. */\n#include \"polyk/multi.hpp\"\n";
  if (cuda) o += "#include <stdexcept>\n#include <string>\n";
  // f16 / bf16 outputs: every device (0 too) runs the program with those outputs f32, into kept
  // f32 partials; device 0 combines them in f32 and rounds once into the output (polyk_NAME_finish_OUT).
  bool narrow = false;
  for (const auto &[out, op] : ops) narrow |= narrowFloat(s.tensor(out)->type);
  std::string program = s.name;
  if (narrow) {
    Scop part = partialsProgram(s);
    program = part.name;
    o += "\n/* " + s.name + " with its f16 / bf16 outputs f32: each device's partials. */\n";
    o += cuda ? emitCudaKernels(part, opt, false) : emitMappedC(part, opt);
  }
  auto partType = [&](const TensorDecl &t) { return narrowFloat(t.type) ? DType::F32 : t.type; };
  for (const auto &[out, op] : ops) {
    const TensorDecl &t = *s.tensor(out);
    DType pt = partType(t);
    std::string T = cuda ? cudaStorageType(pt) : cStorageType(pt), N = cuda ? cudaStorageType(t.type) : cStorageType(t.type);
    const std::string d = cuda ? "__global__ void " : "static inline void ";
    const std::string loop = cuda ? "  polyk_idx i = (polyk_idx)blockIdx.x * blockDim.x + threadIdx.x;\n  if (i < n) " : "  for (polyk_idx i = 0; i < n; ++i) ";
    o += d + "polyk_" + s.name + "_combine_" + out + "(polyk_idx n, " + T + " *out, const " + T + " *part) {\n" + loop + "out[i] = " +
         (cuda ? std::string(reduceOpTag(op)) + "::apply(out[i], part[i])" : hostCombine(op, pt, "out[i]", "part[i]")) + ";\n}\n";
    if (narrowFloat(t.type))
      o += d + "polyk_" + s.name + "_finish_" + out + "(polyk_idx n, " + N + " *out, const " + T + " *part) {\n" + loop + "out[i] = " +
           storeValue(cuda ? Dialect::Cuda : Dialect::C, t.type, "part[i]") + ";\n}\n";
  }
  std::string sig;
  for (const auto &[name, value] : s.params) sig += ", const polyk_idx " + name;
  for (const auto &t : s.tensors)
    if (t.role != Role::Temporary) sig += ", polyk::multi::Buffer &" + t.name;
  o += "static inline void polyk_" + s.name + "_multi(polyk::multi::Runtime &rt" + sig + ") {\n";
  o += "  const int polyk_devs = rt.devices();\n";
  // Device d's share of the batch; outputs of devices after 0 go to partial buffers.
  o += "  std::vector<polyk::multi::Buffer *> polyk_parts;\n";
  for (const auto &[out, op] : ops) {
    const TensorDecl &t = *s.tensor(out);
    // (Kept by the runtime across calls: rt.kept.)
    o += "  std::vector<polyk::multi::Buffer *> polyk_part_" + out + "(polyk_devs);\n";
    DType pt = partType(t);
    o += "  for (int polyk_d = " + std::string(narrowFloat(t.type) ? "0" : "1") + "; polyk_d < polyk_devs; ++polyk_d) polyk_part_" + out +
         "[polyk_d] = &rt.kept(\"" + s.name + " " + out + " (partial) \" + std::to_string(polyk_d), sizeof(" +
         (cuda ? cudaStorageType(pt) : cStorageType(pt)) + "), " + elementsExpr(t) + ");\n";
  }
  o += "  for (int polyk_d = 0; polyk_d < polyk_devs; ++polyk_d) {\n";
  // (Shares rounded up: device 0's is never empty unless the batch is, and it always runs, so the
  // outputs hold at least its partial, the reductions' identities for an empty batch.)
  o += "    const polyk_idx polyk_lo = (" + P + " * polyk_d + polyk_devs - 1) / polyk_devs, polyk_hi = (" + P + " * (polyk_d + 1) + polyk_devs - 1) / polyk_devs - 1;\n";
  o += "    if (polyk_d > 0 && polyk_lo > polyk_hi) continue;\n    polyk::multi::Runs polyk_runs;\n";
  std::string call, args;
  for (const auto &[name, value] : s.params) args += std::string(args.empty() ? "" : ", ") + (name == P ? "polyk_hi - polyk_lo + 1" : name);
  for (const auto &t : s.tensors) {
    if (t.role == Role::Temporary) continue;
    std::string T = cuda ? cudaStorageType(t.type) : cStorageType(t.type);
    if (t.role == Role::Input) {
      // The share's elements: a slab of the input along its first dim.
      std::string slab = "(1LL";
      for (size_t d = 1; d < t.shape.size(); ++d) slab += " * (" + t.shape[d].str() + ")";
      slab += ")";
      o += "    polyk_runs.clear();\n    polyk::multi::Runs::add(polyk_lo * " + slab + ", (polyk_hi + 1) * " + slab + " - 1, &polyk_runs);\n";
      o += "    if (" + slab + " > 0 && polyk_lo <= polyk_hi) rt.acquire(polyk_d, " + t.name + ", polyk_runs);\n";
      args += ", " + t.name + ".on<" + T + ">(polyk_d) + polyk_lo * " + slab;
    } else {
      std::string buf = narrowFloat(t.type) ? "polyk_part_" + t.name + "[polyk_d]" : "(polyk_d == 0 ? &" + t.name + " : polyk_part_" + t.name + "[polyk_d])";
      if (narrowFloat(t.type)) T = cuda ? cudaStorageType(DType::F32) : cStorageType(DType::F32);
      o += "    polyk::multi::Buffer &polyk_o_" + t.name + " = *" + buf + ";\n    rt.reserve(polyk_d, polyk_o_" + t.name +
           ", [&] { polyk::multi::Runs r; if (polyk_o_" + t.name + ".elements() > 0) polyk::multi::Runs::add(0, polyk_o_" + t.name +
           ".elements() - 1, &r); return r; }());\n";
      args += ", polyk_o_" + t.name + ".on<" + T + ">(polyk_d)";
    }
  }
  // (Every process tracks every device; each launches on its own.)
  if (cuda) {
    o += "    if (rt.backend().local(polyk_d)) {\n      rt.backend().activate(polyk_d);\n";
    o += "      if (cudaError_t polyk_e = polyk_" + program + "(" + args + ", (cudaStream_t)rt.backend().stream(polyk_d)); polyk_e != cudaSuccess)\n";
    o += "        throw std::runtime_error(std::string(\"polyk_" + program + ": \") + cudaGetErrorString(polyk_e));\n    }\n";
  } else {
    o += "    if (rt.backend().local(polyk_d)) polyk_" + program + "_mapped(" + args + ");\n";
  }
  for (const auto &[out, op] : ops) o += "    rt.wroteAll(polyk_d, polyk_o_" + out + ");\n";
  o += "  }\n";
  // The combine, in device order, on device 0 (into device 0's partial where the output is narrow,
  // which is then rounded into the output).
  auto onDevice0 = [&](const std::string &kernel, const std::string &n, const std::string &args) {
    std::string call = "      rt.backend().activate(0);\n      if (" + n + " > 0) " + kernel + "<<<(unsigned)((" + n + " + 255) / 256), 256, 0, (cudaStream_t)rt.backend().stream(0)>>>(" +
                       n + ", " + args + ");\n      if (cudaError_t polyk_e = cudaGetLastError(); polyk_e != cudaSuccess) throw std::runtime_error(std::string(\"" +
                       kernel + ": \") + cudaGetErrorString(polyk_e));\n";
    return "    if (rt.backend().local(0)) {\n" + (cuda ? call : "      " + kernel + "(" + n + ", " + args + ");\n") + "    }\n";
  };
  o += "  for (int polyk_d = 1; polyk_d < polyk_devs; ++polyk_d) {\n";
  o += "    if ((" + P + " * polyk_d + polyk_devs - 1) / polyk_devs > (" + P + " * (polyk_d + 1) + polyk_devs - 1) / polyk_devs - 1) continue;\n";
  for (const auto &[out, op] : ops) {
    const TensorDecl &t = *s.tensor(out);
    DType pt = partType(t);
    std::string T = cuda ? cudaStorageType(pt) : cStorageType(pt), n = elementsExpr(t);
    std::string into = narrowFloat(t.type) ? "(*polyk_part_" + out + "[0])" : out;
    o += "    rt.acquireAll(0, " + into + ");\n    rt.acquireAll(0, *polyk_part_" + out + "[polyk_d]);\n";
    o += onDevice0("polyk_" + s.name + "_combine_" + out, n, into + ".on<" + T + ">(0), polyk_part_" + out + "[polyk_d]->on<" + T + ">(0)");
    o += "    rt.wroteAll(0, " + into + ");\n";
  }
  o += "  }\n";
  for (const auto &[out, op] : ops) {
    const TensorDecl &t = *s.tensor(out);
    if (!narrowFloat(t.type)) continue;
    std::string T = cuda ? cudaStorageType(DType::F32) : cStorageType(DType::F32), N = cuda ? cudaStorageType(t.type) : cStorageType(t.type);
    std::string n = elementsExpr(t);
    o += "  rt.acquireAll(0, *polyk_part_" + out + "[0]);\n  rt.reserve(0, " + out + ", [&] { polyk::multi::Runs r; if (" + out +
         ".elements() > 0) polyk::multi::Runs::add(0, " + out + ".elements() - 1, &r); return r; }());\n";
    o += onDevice0("polyk_" + s.name + "_finish_" + out, n, out + ".on<" + N + ">(0), polyk_part_" + out + "[0]->on<" + T + ">(0)");
    o += "  rt.wroteAll(0, " + out + ");\n";
  }
  o += "}\n";
  (void)opt;
  return o;
}

} // namespace polyk::codegen
