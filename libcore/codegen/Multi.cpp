// Multi-device code from polyk-partition's model (Matz et al. §6-7, issue 25): the partitioned
// kernel clone's block offset, and polyk_NAME_multi, which shares each split kernel's blocks out
// over the runtime's devices (libcore/runtime/polyk/multi.hpp) and, around each launch, has the
// runtime fetch the runs of elements a device reads but does not hold and record the runs it
// writes, both listed by the generated enumerators (libcore/partition/Enumerators.cpp).
#include "EmitParts.h"

#include "polyk/Partition.h"
#include "polyk/Tool.h"

#include <set>

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

/// The kernel's arguments on device `dev`: the params, then every tensor's allocation there.
std::string deviceArgs(const Scop &s, bool cuda, const std::string &dev) {
  std::string a;
  for (const auto &[name, value] : s.params) a += std::string(a.empty() ? "" : ", ") + name;
  for (const auto &t : s.tensors) {
    bool buffer = t.role != Role::Temporary || temporaryInMemory(s, t);
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

std::string emitMultiLauncher(const Scop &s, const AffineMapping &mapped, const EmitOptions &opt, bool cuda) {
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
  o += "  const int polyk_devs = rt.devices();\n  polyk::multi::Runs polyk_runs;\n  (void)polyk_devs; (void)polyk_runs;\n";
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
    auto launch = [&](const std::string &grid, const std::string &dev, const std::string &first) {
      if (!cuda) return "    " + kc.name + "_blocks(" + (plan.split ? "polyk_lo, polyk_hi" : "0, 0") + ", " + deviceArgs(s, false, dev) + ");\n";
      return "    rt.backend().activate(" + dev + ");\n    " + kc.name + "<<<" + grid + ", " + block + ", 0, (cudaStream_t)rt.backend().stream(" + dev +
             ")>>>(" + first + deviceArgs(s, true, dev) + ");\n" +
             "    if (cudaError_t polyk_e = cudaGetLastError(); polyk_e != cudaSuccess) throw std::runtime_error(std::string(\"" + kc.name +
             ": \") + cudaGetErrorString(polyk_e));\n";
    };
    if (!plan.split) {
      o += "  { /* " + kc.name + ": on device 0 (" + kp->reason + ") */\n";
      for (const auto &t : accessed(*kp, "")) o += "    rt.acquireAll(0, *" + t + ");\n";
      o += "    if (rt.backend().local(0)) {\n" + launch(affineLaunchDims(kc).substr(0, affineLaunchDims(kc).find("), dim3(") + 1), "0", "") + "    }\n";
      for (const auto &t : accessed(*kp, "write")) o += "    rt.wroteAll(0, *" + t + ");\n";
      o += "  }\n";
      continue;
    }
    std::string share = "    const polyk_idx polyk_lo = polyk_n * polyk_d / polyk_devs, polyk_hi = polyk_n * (polyk_d + 1) / polyk_devs - 1;\n"
                        "    if (polyk_lo > polyk_hi) continue;\n";
    auto each = [&](const std::string &kind, const std::string &call) {
      std::string b;
      for (const auto &t : accessed(*kp, kind))
        b += "    polyk_runs.clear();\n    polyk_enum_" + kc.name + "_" + t + "_" + kind + "(" + params + "polyk_lo, polyk_hi, polyk::multi::Runs::add, &polyk_runs);\n    rt." +
             call + "(polyk_d, *" + t + ", polyk_runs);\n";
      return b;
    };
    std::string dims[3] = {kc.grid[0], kc.grid[1], kc.grid[2]};
    dims[plan.axis - 'x'] = "(polyk_hi - polyk_lo + 1) * " + plan.inner;
    o += "  { /* " + kc.name + ": its blocks along " + plan.axis + " shared out (" + kp->reason + ") */\n";
    o += "  const polyk_idx polyk_n = " + plan.count + ";\n";
    o += "  if (rt.track)\n  for (int polyk_d = 0; polyk_d < polyk_devs; ++polyk_d) {\n" + share + each("read", "acquire") + each("write", "reserve") + "  }\n";
    o += "  for (int polyk_d = 0; polyk_d < polyk_devs; ++polyk_d) {\n" + share + "    if (!rt.backend().local(polyk_d)) continue; /* another process's */\n" +
         launch("dim3(" + dims[0] + ", " + dims[1] + ", " + dims[2] + ")", "polyk_d", "polyk_lo * " + plan.inner + ", ") + "  }\n";
    o += "  if (rt.track)\n  for (int polyk_d = 0; polyk_d < polyk_devs; ++polyk_d) {\n" + share + each("write", "wrote") + "  }\n";
    o += "  }\n";
  }
  return o + end + "}\n";
}

} // namespace polyk::codegen
