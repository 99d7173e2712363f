// CUDA kernels of the affine path (AffineBind.cpp's mapping) and the same code run on the CPU
// (`--target=c-mapped`). Each kernel is the isl AST of its part of the mapped tree, built in the
// context of its block and thread ids; statements are macros over their domain iterators. An
// accumulator that polyk-bind promoted is a register of the thread (`C_acc_r`): the reduction's
// init, update loop and store of one output point run in that thread, in order.
#include "EmitParts.h"

#include "polyk/Bind.h"

namespace polyk::codegen {

namespace {

std::string outputOf(const ScopStatement &st) { return isl::map(islCtx(), st.write).range_tuple_id().name(); }

std::string params(const Scop &s, bool cuda) {
  std::string p;
  for (const auto &[name, value] : s.params) p += std::string(p.empty() ? "" : ", ") + "const polyk_idx " + name;
  for (const auto &t : s.tensors)
    p += std::string(p.empty() ? "" : ", ") + (t.role == Role::Input ? "const " : "") +
         (cuda ? cudaStorageType(t.type) : cStorageType(t.type)) + (cuda ? " *__restrict__ " : " *") + t.name;
  return p;
}

std::string args(const Scop &s) {
  std::string a;
  for (const auto &[name, value] : s.params) a += std::string(a.empty() ? "" : ", ") + name;
  for (const auto &t : s.tensors) a += std::string(a.empty() ? "" : ", ") + t.name;
  return a;
}

std::set<std::string> promotedIn(const KernelConfig &kc) { return {kc.promoted.begin(), kc.promoted.end()}; }

std::string macros(const Scop &s, const KernelConfig &kc, Dialect d) {
  std::set<std::string> promoted = promotedIn(kc);
  std::string o;
  for (const auto &name : kc.statements)
    o += statementMacros(
        s, d, promoted, [](const ScopStatement &st, const std::string &) -> std::string {
          throw std::logic_error("affine statement " + st.name + " of kind reduce");
        },
        [&](const ScopStatement &st) {
          const TensorDecl &acc = *s.tensor(outputOf(st));
          std::string id = reduceIdentity(*st.op, acc.type);
          if (promoted.count(acc.name)) return acc.name + "_r = " + id + ";";
          return acc.name + "[" + linearIndex(st.write, acc) + "] = " + storeValue(d, acc.type, id) + ";";
        },
        nullptr, name);
  return o;
}

/// The body of one kernel (one thread's code): its registers, then the AST.
std::string kernelBody(const Scop &s, const AffineMapping &mapping, const KernelConfig &kc, int k) {
  const isl::schedule &mapped = mapping.schedule;
  AffineKernelIds ids;
  if (auto it = mapping.kernels.find(k); it != mapping.kernels.end()) ids = it->second;
  isl::union_set dom = isl::union_set::empty(islCtx());
  for (const auto &name : kc.statements) dom = dom.unite(isl::union_set(isl::set(islCtx(), s.statement(name)->domain)));
  isl::schedule restricted = isl::manage(isl_schedule_intersect_domain(mapped.copy(), dom.release()));
  isl::ast_build build = isl::ast_build::from_context(affineMappingContext(kc, ids));
  AstPrinter printer;
  printer.user = [](const std::string &stmt, const std::vector<std::string> &a) {
    std::string c = stmt + "(";
    for (size_t i = 0; i < a.size(); ++i) c += (i ? ", " : "") + a[i];
    return c + ");\n";
  };
  std::string o = ids.prologue();
  for (const auto &t : kc.promoted) o += "  " + std::string(computeCType(s.tensor(t)->type)) + " " + t + "_r;\n";
  return o + printer.print(build.node_from(restricted), 1);
}

std::string launchDims(const KernelConfig &kc) {
  return "dim3(" + kc.grid[0] + ", " + kc.grid[1] + ", " + kc.grid[2] + "), dim3(" + std::to_string(kc.block[0]) + ", " +
         std::to_string(kc.block[1]) + ", " + std::to_string(kc.block[2]) + ")";
}

bool promotedAnywhere(const Scop &s, const std::string &t) {
  for (const auto &kc : s.kernels)
    if (std::count(kc.promoted.begin(), kc.promoted.end(), t)) return true;
  return false;
}

} // namespace

std::string emitAffineCudaKernels(const Scop &s, const EmitOptions &) {
  std::string o;
  o += "#include <cuda_runtime.h>\n#include <cuda_fp16.h>\n#include <cuda_bf16.h>\n#include <stdint.h>\n";
  o += "#include \"polyk/runtime.cuh\"\n\n";
  o += indexHelpers(Dialect::Cuda, needsWideIndices(s)) + "\n";
  AffineMapping mapped = applyAffineMapping(readIslSchedule(s.schedule), s);
  for (const auto &kc : s.kernels) {
    int k = (int)(&kc - s.kernels.data());
    o += "/* The statements over their domain iterators, as " + kc.name + " runs them. */\n";
    o += macros(s, kc, Dialect::Cuda);
    o += "__global__ void __launch_bounds__(" + std::to_string(kc.block[0] * kc.block[1] * kc.block[2]) + ") " + kc.name + "(" +
         params(s, true) + ") {\n";
    o += kernelBody(s, mapped, kc, k) + "}\n" + undefMacros(s) + "\n";
  }
  std::string sig = hostSignature(s, "polyk_" + s.name, true);
  o += "/* Runs the program on `stream`; returns the first CUDA error. */\n";
  o += "extern \"C\" cudaError_t " + sig + (sig.back() == '(' ? "" : ", ") + "cudaStream_t stream) {\n";
  o += "  cudaError_t err = cudaSuccess;\n";
  for (const auto &t : s.tensors) {
    if (t.role != Role::Temporary) continue;
    std::string ty = cudaStorageType(t.type);
    o += "  " + ty + " *" + t.name + " = nullptr;";
    if (promotedAnywhere(s, t.name)) {
      o += " /* kept in registers */\n";
      continue;
    }
    o += "\n  if ((err = cudaMallocAsync((void **)&" + t.name + ", sizeof(" + ty + ") * " + elementsExpr(t) +
         ", stream)) != cudaSuccess) return err;\n";
  }
  for (const auto &kc : s.kernels) {
    o += "  " + kc.name + "<<<" + launchDims(kc) + ", 0, stream>>>(" + args(s) + ");\n";
    o += "  if ((err = cudaGetLastError()) != cudaSuccess) return err;\n";
  }
  for (const auto &t : s.tensors)
    if (t.role == Role::Temporary && !promotedAnywhere(s, t.name))
      o += "  if ((err = cudaFreeAsync(" + t.name + ", stream)) != cudaSuccess) return err;\n";
  return o + "  return cudaSuccess;\n}\n";
}

std::string emitAffineMappedC(const Scop &s, const EmitOptions &) {
  std::string o = "/* The CUDA kernels' code run on the CPU: block after block, thread after thread. */\n";
  o += "void " + hostSignature(s, "polyk_" + s.name + "_mapped", false) + ") {\n";
  for (const auto &t : s.tensors)
    if (t.role == Role::Temporary && !promotedAnywhere(s, t.name))
      o += "  " + std::string(cStorageType(t.type)) + " *" + t.name + " = (" + cStorageType(t.type) + " *)malloc(sizeof(" +
           cStorageType(t.type) + ") * " + elementsExpr(t) + ");\n";
  AffineMapping mapped = applyAffineMapping(readIslSchedule(s.schedule), s);
  for (const auto &kc : s.kernels) {
    int k = (int)(&kc - s.kernels.data());
    o += "  /* " + kc.name + " */\n" + macros(s, kc, Dialect::C);
    // blockIdx / threadIdx as the kernel's prologue reads them.
    o += "  for (polyk_idx bz = 0; bz < " + kc.grid[2] + "; ++bz)\n";
    o += "  for (polyk_idx by = 0; by < " + kc.grid[1] + "; ++by)\n";
    o += "  for (polyk_idx bx = 0; bx < " + kc.grid[0] + "; ++bx)\n";
    o += "  for (polyk_idx tz = 0; tz < " + std::to_string(kc.block[2]) + "; ++tz)\n";
    o += "  for (polyk_idx ty = 0; ty < " + std::to_string(kc.block[1]) + "; ++ty)\n";
    o += "  for (polyk_idx tx = 0; tx < " + std::to_string(kc.block[0]) + "; ++tx) {\n";
    o += "  const struct { polyk_idx x, y, z; } blockIdx = {bx, by, bz}, threadIdx = {tx, ty, tz};\n";
    o += kernelBody(s, mapped, kc, k) + "  }\n" + undefMacros(s);
  }
  for (const auto &t : s.tensors)
    if (t.role == Role::Temporary && !promotedAnywhere(s, t.name)) o += "  free(" + t.name + ");\n";
  return o + "}\n";
}

} // namespace polyk::codegen
