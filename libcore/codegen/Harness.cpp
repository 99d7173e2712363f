// The harnesses polyk-emit writes with --harness. Both fill the
// inputs from a seeded generator (never zeros), run the sequential reference, and compare: the C
// one with the transformed sequential program, the CUDA one with the kernels on the GPU after
// poisoning the outputs, then time the launcher (CUDA events, L2 flushed, median).
#include "EmitParts.h"

#include "polyk/Emit.h"
#include "polyk/Tool.h"

namespace polyk::codegen {

namespace {

const char *dtypeEnum(DType t) {
  switch (t) {
  case DType::Bool: return "POLYK_BOOL";
  case DType::I32: return "POLYK_I32";
  case DType::I64: return "POLYK_I64";
  case DType::F16: return "POLYK_F16";
  case DType::BF16: return "POLYK_BF16";
  case DType::F32: return "POLYK_F32";
  case DType::F64: return "POLYK_F64";
  }
  return "?";
}

/// Inputs near 1 for products (so they neither vanish nor overflow), small integers otherwise.
std::string fillRange(const Scop &s, DType t) {
  bool product = false, logical = false;
  for (const auto &st : s.statements) {
    if (st.op == ReduceOp::Prod) product = true;
    if (st.op == ReduceOp::And || st.op == ReduceOp::Or) logical = true;
  }
  if (t == DType::Bool) return logical ? "0.9995, 1" : "0.5, 1";
  if (isInteger(t)) return product ? "1, 1" : "-8, 8";
  return product ? "0.999, 1.001" : "-1, 1";
}

/// The parameters, then each input and output tensor under its prefix (the launcher's and the
/// reference's argument order).
std::string args(const Scop &s, const std::string &inPrefix, const std::string &outPrefix) {
  std::string a;
  for (const auto &[name, value] : s.params) a += std::string(a.empty() ? "" : ", ") + name;
  for (const auto &t : s.tensors)
    if (t.role != Role::Temporary) a += std::string(a.empty() ? "" : ", ") + (t.role == Role::Input ? inPrefix : outPrefix) + t.name;
  return a;
}

/// The bytes of tensor t's host (and device) buffer, n_<name> elements.
std::string bytesOf(const TensorDecl &t) { return "sizeof(" + std::string(cStorageType(t.type)) + ") * n_" + t.name; }

/// A call of the launcher on device buffers `prefix`<name> and `stream`.
std::string launch(const Scop &s, const std::string &prefix, const std::string &stream) {
  std::string a = args(s, prefix, prefix);
  return "polyk_" + s.name + "(" + a + (a.empty() ? "" : ", ") + stream + ")";
}

/// Buffers, filled inputs and the reference outputs; shared by both harnesses.
/// Affine programs may leave elements of an output unwritten (a `where` clause): those keep the
/// caller's values, so the reference and the code under test start from the same random outputs.
std::string outputFill(const Scop &s, const TensorDecl &t, const std::string &prefix) {
  int k = 0;
  for (const auto &u : s.tensors) {
    if (&u == &t) break;
    k += u.role == Role::Output;
  }
  return "  polyk_fill(" + prefix + t.name + ", n_" + t.name + ", " + dtypeEnum(t.type) + ", seed + " + std::to_string(1000 + k) +
         ", " + fillRange(s, t.type) + ");\n";
}

std::string setUp(const Scop &s) {
  std::string o;
  o += "  uint64_t seed = argc > 1 ? strtoull(argv[1], 0, 10) : 42;\n";
  // Symbolic extents: NAME=VALUE arguments after the seed (and the repetitions), else the
  // program's values.
  for (const auto &[name, value] : s.params) {
    o += "  polyk_idx " + name + " = " + std::to_string(value) + ";\n";
    o += "  for (int a = 1; a < argc; ++a) if (strncmp(argv[a], \"" + name + "=\", " + std::to_string(name.size() + 1) +
         ") == 0) " + name + " = atoll(argv[a] + " + std::to_string(name.size() + 1) + ");\n";
  }
  int k = 0;
  for (const auto &t : s.tensors) {
    if (t.role == Role::Temporary) continue;
    std::string n = elementsExpr(t);
    o += "  const size_t n_" + t.name + " = " + n + ";\n";
    o += "  " + std::string(cStorageType(t.type)) + " *h_" + t.name + " = (" + cStorageType(t.type) + " *)malloc(sizeof(" +
         cStorageType(t.type) + ") * n_" + t.name + ");\n";
    if (t.role == Role::Input) {
      o += "  polyk_fill(h_" + t.name + ", n_" + t.name + ", " + dtypeEnum(t.type) + ", seed + " + std::to_string(k++) +
           ", " + fillRange(s, t.type) + ");\n";
    } else {
      o += "  " + std::string(cStorageType(t.type)) + " *r_" + t.name + " = (" + cStorageType(t.type) +
           " *)malloc(sizeof(" + cStorageType(t.type) + ") * n_" + t.name + ");\n";
      if (isAffine(s)) o += outputFill(s, t, "r_");
    }
  }
  // `check=0` on the command line: no reference (a size the CPU would take minutes on; the
  // outputs are then not compared, and the result reads UNCHECKED).
  o += "  int check = 1;\n  for (int a = 1; a < argc; ++a) if (strcmp(argv[a], \"check=0\") == 0) check = 0;\n";
  // `ref=PATH`: the reference's outputs cached in PATH.<output> (polyk-tune's variants share it).
  o += "  const char *refPath = 0;\n  for (int a = 1; a < argc; ++a) if (strncmp(argv[a], \"ref=\", 4) == 0) refPath = argv[a] + 4;\n";
  std::string load = "refPath != 0", save;
  for (const auto &t : s.tensors)
    if (t.role == Role::Output) {
      std::string bytes = "sizeof(" + std::string(cStorageType(t.type)) + ") * n_" + t.name;
      load += " && polyk_ref_load(refPath, \"" + t.name + "\", r_" + t.name + ", " + bytes + ")";
      save += "      polyk_ref_save(refPath, \"" + t.name + "\", r_" + t.name + ", " + bytes + ");\n";
    }
  o += "  if (check && !(" + load + ")) {\n    polyk_" + s.name + "_ref(" + args(s, "h_", "r_") + ");\n    if (refPath) {\n" + save +
       "    }\n  }\n";
  return o;
}


/// The longest reduction of the program (number of elements combined into one output).
long long reductionLength(const Scop &s) {
  long long longest = 1;
  for (const auto &st : s.statements) {
    if (st.kind != StmtKind::Reduce && st.form != Form::Affine) continue;
    longest = std::max(longest, reducedIterations(s, st));
  }
  return longest;
}

/// Declares `pass` and `worst` and compares each output gotPrefix<name> with refPrefix<name>.
std::string compareOutputs(const Scop &s, const std::string &gotPrefix, const std::string &refPrefix,
                           const EmitOptions &opt) {
  std::string o = "  int pass = 1;\n  double worst = 0;\n";
  std::string length = std::to_string(reductionLength(s)) + ".0";
  for (const auto &t : s.tensors) {
    if (t.role != Role::Output) continue;
    o += "  if (check) {\n    double err = polyk_compare(" + gotPrefix + t.name + ", " + refPrefix + t.name + ", n_" + t.name + ", " +
         dtypeEnum(t.type) + ");\n";
    o += "    if (!(err <= polyk_tolerance(" + std::string(dtypeEnum(t.type)) + ", " + length + ", " +
         (opt.accumulate == "input" ? "1" : "0") + "))) pass = 0;\n";
    o += "    if (!(err <= worst)) worst = err;\n  }\n";
  }
  return o;
}

/// Launches in flight on two streams at once, each with its own input and outputs, must share no
/// state (the ordered return's scratch is per stream). Both streams wait for one event that a
/// sleeping kernel holds back, so their launches start together; four rounds, each compared with
/// its reference. `streams` is 1 when all agree, 0 when not, -1 when skipped (inputs over 256 MiB).
std::string streamsCheck(const Scop &s, const EmitOptions &opt) {
  std::string inBytes = "0", o;
  for (const auto &t : s.tensors)
    if (t.role == Role::Input) inBytes += " + " + bytesOf(t);
  o += "  int streams = -1;\n  if (check && " + inBytes + " <= ((size_t)256 << 20)) {\n";
  o += "    cudaStream_t sa, sb, sh;\n    cudaEvent_t go;\n";
  o += "    POLYK_CHECK(cudaStreamCreateWithFlags(&sa, cudaStreamNonBlocking));\n";
  o += "    POLYK_CHECK(cudaStreamCreateWithFlags(&sb, cudaStreamNonBlocking));\n";
  o += "    POLYK_CHECK(cudaStreamCreateWithFlags(&sh, cudaStreamNonBlocking));\n";
  o += "    POLYK_CHECK(cudaEventCreateWithFlags(&go, cudaEventDisableTiming));\n";
  int k = 0;
  for (const auto &t : s.tensors) {
    if (t.role == Role::Temporary) continue;
    std::string ty = cStorageType(t.type), dty = cudaStorageType(t.type), bytes = bytesOf(t);
    if (t.role == Role::Input) {
      o += "    " + ty + " *h2_" + t.name + " = (" + ty + " *)malloc(" + bytes + ");\n";
      o += "    polyk_fill(h2_" + t.name + ", n_" + t.name + ", " + dtypeEnum(t.type) + ", seed + " + std::to_string(1000 + k++) +
           ", " + fillRange(s, t.type) + ");\n";
    } else {
      for (const char *pre : {"q_", "a_", "b_"})
        o += "    " + ty + " *" + pre + t.name + " = (" + ty + " *)malloc(" + bytes + ");\n";
      // (An affine output may keep elements its statements do not write: Hotspot's boundary. They
      // start as the first run's did, in the reference too.)
      if (isAffine(s)) o += "  " + outputFill(s, t, "q_");
    }
    o += "    " + dty + " *d2_" + t.name + " = 0;\n    POLYK_CHECK(cudaMalloc((void **)&d2_" + t.name + ", " + bytes + "));\n";
    if (t.role == Role::Input)
      o += "    POLYK_CHECK(cudaMemcpy(d2_" + t.name + ", h2_" + t.name + ", " + bytes + ", cudaMemcpyHostToDevice));\n";
  }
  o += "    polyk_" + s.name + "_ref(" + args(s, "h2_", "q_") + ");\n";
  o += "    streams = 1;\n    for (int round = 0; round < 4; ++round) {\n";
  for (const auto &t : s.tensors)
    if (t.role == Role::Output) {
      std::string bytes = bytesOf(t);
      if (isAffine(s)) {
        for (const auto &[host, dev] : {std::pair{"a_", "d_"}, std::pair{"b_", "d2_"}})
          o += "    " + outputFill(s, t, host) + "      POLYK_CHECK(cudaMemcpy(" + dev + t.name + ", " + host + t.name + ", " + bytes +
               ", cudaMemcpyHostToDevice));\n";
        continue;
      }
      o += "      POLYK_CHECK(cudaMemset(d_" + t.name + ", 0xFF, " + bytes + "));\n";
      o += "      POLYK_CHECK(cudaMemset(d2_" + t.name + ", 0xFF, " + bytes + "));\n";
    }
  o += "      polyk_hold<<<1, 1, 0, sh>>>(2000000);\n      POLYK_CHECK(cudaEventRecord(go, sh));\n";
  o += "      POLYK_CHECK(cudaStreamWaitEvent(sa, go, 0));\n      POLYK_CHECK(cudaStreamWaitEvent(sb, go, 0));\n";
  o += "      POLYK_CHECK(" + launch(s, "d_", "sa") + ");\n      POLYK_CHECK(" + launch(s, "d2_", "sb") + ");\n";
  o += "      POLYK_CHECK(cudaDeviceSynchronize());\n";
  for (const auto &t : s.tensors)
    if (t.role == Role::Output) {
      std::string bytes = bytesOf(t);
      o += "      POLYK_CHECK(cudaMemcpy(a_" + t.name + ", d_" + t.name + ", " + bytes + ", cudaMemcpyDeviceToHost));\n";
      o += "      POLYK_CHECK(cudaMemcpy(b_" + t.name + ", d2_" + t.name + ", " + bytes + ", cudaMemcpyDeviceToHost));\n";
    }
  for (const auto &[got, ref] : {std::pair{"a_", "r_"}, std::pair{"b_", "q_"}}) {
    std::string cmp = compareOutputs(s, got, ref, opt) + "  if (!pass) streams = 0;\n";
    o += "      {\n";
    for (size_t at = 0, nl; (nl = cmp.find('\n', at)) != std::string::npos; at = nl + 1)
      o += "      " + cmp.substr(at, nl + 1 - at);
    o += "      }\n";
  }
  o += "    }\n";
  for (const auto &t : s.tensors) {
    if (t.role == Role::Temporary) continue;
    o += "    POLYK_CHECK(cudaFree(d2_" + t.name + "));\n";
    if (t.role == Role::Input)
      o += "    free(h2_" + t.name + ");\n";
    else
      o += "    free(q_" + t.name + ");\n    free(a_" + t.name + ");\n    free(b_" + t.name + ");\n";
  }
  o += "    POLYK_CHECK(cudaEventDestroy(go));\n";
  o += "    POLYK_CHECK(cudaStreamDestroy(sa));\n    POLYK_CHECK(cudaStreamDestroy(sb));\n    POLYK_CHECK(cudaStreamDestroy(sh));\n";
  o += "  }\n  if (streams == 0) pass = 0;\n";
  return o;
}

} // namespace

std::string emitCHarness(const Scop &s, const std::string &suffix, const EmitOptions &opt) {
  std::string o = "\nint main(int argc, char **argv) {\n" + setUp(s);
  for (const auto &t : s.tensors)
    if (t.role == Role::Output)
      o += "  " + std::string(cStorageType(t.type)) + " *c_" + t.name + " = (" + cStorageType(t.type) + " *)malloc(sizeof(" +
           cStorageType(t.type) + ") * n_" + t.name + ");\n" +
           (isAffine(s) ? outputFill(s, t, "c_")
                        : "  memset(c_" + t.name + ", 0xFF, sizeof(" + cStorageType(t.type) + ") * n_" + t.name + "); /* poison */\n");
  // The processor time of the one call (polyk-tune's CPU stand-in for the GPU runner reads it).
  o += "  clock_t t0 = clock();\n";
  o += "  polyk_" + s.name + "_" + suffix + "(" + args(s, "h_", "c_") + ");\n";
  o += "  double us = (double)(clock() - t0) * 1e6 / CLOCKS_PER_SEC;\n";
  o += compareOutputs(s, "c_", "r_", opt);
  o += "  printf(\"%s " + s.name + " (" + suffix + ") max_err=%.3g time_us=%.1f\\n\", !check ? \"UNCHECKED\" : pass ? \"PASS\" : \"FAIL\", worst, us);\n";
  o += "  return pass ? 0 : 1;\n}\n";
  return o;
}

std::string emitCudaHarness(const Scop &s, const EmitOptions &opt) {
  int reps = opt.repetitions;
  std::string o = "\n#define POLYK_CHECK(call) do { cudaError_t e_ = (call); if (e_ != cudaSuccess) { \\\n"
                  "  fprintf(stderr, \"%s:%d: %s\\n\", __FILE__, __LINE__, cudaGetErrorString(e_)); return 2; } } while (0)\n\n";
  o += "/* Holds its stream for `ns` nanoseconds (the streams check starts two launches together). */\n"
       "__global__ void polyk_hold(long long ns) {\n  for (long long t = 0; t < ns; t += 1000) __nanosleep(1000);\n}\n\n";
  o += "int main(int argc, char **argv) {\n" + setUp(s);
  for (const auto &t : s.tensors) {
    if (t.role == Role::Temporary) continue;
    std::string ty = cudaStorageType(t.type);
    std::string bytes = "sizeof(" + ty + ") * n_" + t.name;
    o += "  " + ty + " *d_" + t.name + " = 0;\n  POLYK_CHECK(cudaMalloc((void **)&d_" + t.name + ", " + bytes + "));\n";
    if (t.role == Role::Input)
      o += "  POLYK_CHECK(cudaMemcpy(d_" + t.name + ", h_" + t.name + ", " + bytes + ", cudaMemcpyHostToDevice));\n";
    else if (!isAffine(s))
      o += "  POLYK_CHECK(cudaMemset(d_" + t.name + ", 0xFF, " + bytes + ")); /* poison */\n";
    else
      o += "  {\n    " + std::string(cStorageType(t.type)) + " *f_" + t.name + " = (" + cStorageType(t.type) + " *)malloc(" + bytes + ");\n  " +
           outputFill(s, t, "f_") + "    POLYK_CHECK(cudaMemcpy(d_" + t.name + ", f_" + t.name + ", " + bytes +
           ", cudaMemcpyHostToDevice));\n    free(f_" + t.name + ");\n  }\n";
  }
  o += "  POLYK_CHECK(" + launch(s, "d_", "0") + ");\n";
  o += "  POLYK_CHECK(cudaDeviceSynchronize());\n";
  for (const auto &t : s.tensors) {
    if (t.role != Role::Output) continue;
    std::string ty = cStorageType(t.type);
    o += "  " + ty + " *g_" + t.name + " = (" + ty + " *)malloc(sizeof(" + ty + ") * n_" + t.name + ");\n";
    o += "  POLYK_CHECK(cudaMemcpy(g_" + t.name + ", d_" + t.name + ", sizeof(" + ty + ") * n_" + t.name +
         ", cudaMemcpyDeviceToHost));\n";
  }
  o += compareOutputs(s, "g_", "r_", opt);
  o += streamsCheck(s, opt);
  // Timing: L2 flushed by a 256 MiB memset before each run, events around the launcher alone.
  o += "  int reps = argc > 2 ? atoi(argv[2]) : " + std::to_string(reps) + ";\n";
  o += "  void *flush = 0;\n  const size_t flushBytes = 256u << 20;\n  POLYK_CHECK(cudaMalloc(&flush, flushBytes));\n";
  o += "  cudaEvent_t start, stop;\n  POLYK_CHECK(cudaEventCreate(&start));\n  POLYK_CHECK(cudaEventCreate(&stop));\n";
  o += "  for (int i = 0; i < 3; ++i) POLYK_CHECK(" + launch(s, "d_", "0") + ");\n";
  o += "  float *times = (float *)malloc(sizeof(float) * (reps > 0 ? reps : 1));\n";
  // `stop_us=X`: polyk-tune abandons a variant whose first 3 timed runs take X or more each.
  o += "  double stopUs = 0;\n  for (int a = 1; a < argc; ++a) if (strncmp(argv[a], \"stop_us=\", 8) == 0) stopUs = atof(argv[a] + 8);\n";
  o += "  for (int r = 0; r < reps; ++r) {\n";
  o += "    if (r == 3 && stopUs > 0 && polyk_median(times, 3) * 1000.0 >= stopUs) { reps = 3; break; }\n";
  o += "    POLYK_CHECK(cudaMemsetAsync(flush, r & 0xFF, flushBytes, 0));\n";
  o += "    POLYK_CHECK(cudaEventRecord(start, 0));\n";
  o += "    POLYK_CHECK(" + launch(s, "d_", "0") + ");\n";
  o += "    POLYK_CHECK(cudaEventRecord(stop, 0));\n    POLYK_CHECK(cudaEventSynchronize(stop));\n";
  o += "    POLYK_CHECK(cudaEventElapsedTime(&times[r], start, stop));\n  }\n";
  o += "  double med = reps > 0 ? polyk_median(times, reps) * 1000.0 : 0.0;\n";
  // (The launcher's temporaries stay in polyk's pool between calls; handed back once timed.)
  o += "  POLYK_CHECK(cudaDeviceSynchronize());\n  POLYK_CHECK(polyk::tempTrim());\n";
  // After all the timed runs, are the outputs the same bits as after the first?
  o += "  int stable = 1;\n";
  for (const auto &t : s.tensors) {
    if (t.role != Role::Output) continue;
    std::string ty = cStorageType(t.type);
    o += "  {\n    " + ty + " *again = (" + ty + " *)malloc(sizeof(" + ty + ") * n_" + t.name + ");\n";
    o += "    POLYK_CHECK(cudaMemcpy(again, d_" + t.name + ", sizeof(" + ty + ") * n_" + t.name + ", cudaMemcpyDeviceToHost));\n";
    o += "    if (memcmp(again, g_" + t.name + ", sizeof(" + ty + ") * n_" + t.name + ") != 0) stable = 0;\n    free(again);\n  }\n";
  }
  o += "  printf(\"%s " + s.name + " max_err=%.3g median_us=%.2f bits_stable=%d streams=%d\\n\", !check ? \"UNCHECKED\" : pass ? \"PASS\" : \"FAIL\", worst, med, stable, streams);\n";
  o += "  return pass ? 0 : 1;\n}\n";
  return o;
}

std::string emitMultiHarness(const Scop &s, const EmitOptions &opt, bool cuda) {
  std::string o = "\n#include <chrono>\n#include <vector>\n#include <algorithm>\n";
  if (cuda)
    o += "#include \"polyk/multi_cuda.cuh\"\n\n#define POLYK_CHECK(call) do { cudaError_t e_ = (call); if (e_ != cudaSuccess) { \\\n"
         "  fprintf(stderr, \"%s:%d: %s\\n\", __FILE__, __LINE__, cudaGetErrorString(e_)); return 2; } } while (0)\n";
  o += "\n/* main(argc, argv): seed, NAME=VALUE params, check=0, devices=1,2,3,4,8 (the counts to run), calls=N (the launcher N\n   times before the check: an idempotent program's kept buffers reused)";
  o += cuda ? ", backend=virtual|gpu,\n   time=R (R timed runs per configuration: wall time, all devices synchronised). */\n" : ". */\n";
  // Compiled with -DPOLYK_MULTI_MPI (mpicxx, and mpirun -np R): each process drives `local=L`
  // devices (1 by default) of R * L, through polyk/multi_mpi.hpp; process 0 prints.
  o += "#ifdef POLYK_MULTI_MPI\n#include \"polyk/multi_mpi.hpp\"\n#endif\n";
  // (Line-buffered: a run stopped by a time limit still shows the lines it printed.)
  o += "int main(int argc, char **argv) {\n  setvbuf(stdout, NULL, _IOLBF, 0);\n";
  o += "#ifdef POLYK_MULTI_MPI\n  MPI_Init(&argc, &argv);\n  int polyk_rank = 0, polyk_ranks = 1, polyk_local = 1;\n";
  o += "  MPI_Comm_rank(MPI_COMM_WORLD, &polyk_rank);\n  MPI_Comm_size(MPI_COMM_WORLD, &polyk_ranks);\n";
  o += "  int polyk_node_rank = 0;\n  {\n    MPI_Comm node;\n    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, polyk_rank, MPI_INFO_NULL, &node);\n";
  o += "    MPI_Comm_rank(node, &polyk_node_rank);\n    MPI_Comm_free(&node);\n  }\n  (void)polyk_node_rank;\n";
  o += "  for (int a = 1; a < argc; ++a) if (strncmp(argv[a], \"local=\", 6) == 0) polyk_local = atoi(argv[a] + 6);\n";
  o += "  if (polyk_rank != 0 && !freopen(\"/dev/null\", \"w\", stdout)) return 2;\n#endif\n";
  o += setUp(s);
  for (const auto &t : s.tensors)
    if (t.role == Role::Output) o += "  (void)h_" + t.name + ";\n";
  o += "  std::vector<int> counts = {1, 2, 3, 4, 8};\n";
  o += "  for (int a = 1; a < argc; ++a) if (strncmp(argv[a], \"devices=\", 8) == 0) {\n";
  o += "    counts.clear();\n    for (const char *c = argv[a] + 8; *c; ) { counts.push_back(atoi(c)); while (*c && *c != ',') ++c; if (*c) ++c; }\n  }\n";
  o += "#ifdef POLYK_MULTI_MPI\n  counts = {polyk_ranks * polyk_local}; /* (devices= does not apply) */\n#endif\n";
  o += "  for (int devices : counts) if (devices < 1) { fprintf(stderr, \"devices=: counts are at least 1\\n\"); return 2; }\n";
  // calls=N: the launcher called N times on the same runtime before the outputs are compared (its
  // kept buffers, rt.kept, reused); for programs whose call is idempotent (a reduction's).
  o += "  int calls = 1;\n  for (int a = 1; a < argc; ++a) if (strncmp(argv[a], \"calls=\", 6) == 0) calls = atoi(argv[a] + 6);\n";
  o += "  if (calls < 1) { fprintf(stderr, \"calls=: at least 1\\n\"); return 2; }\n";
  if (cuda) {
    o += "  polyk::multi::CudaBackend::Mode mode = polyk::multi::CudaBackend::Mode::Virtual;\n  int timeReps = 0;\n";
    o += "  for (int a = 1; a < argc; ++a) {\n    if (strcmp(argv[a], \"backend=gpu\") == 0) mode = polyk::multi::CudaBackend::Mode::Gpu;\n";
    o += "    if (strncmp(argv[a], \"time=\", 5) == 0) timeReps = atoi(argv[a] + 5);\n  }\n";
  }
  // The one-device run the multi-device runs must reproduce bit for bit.
  for (const auto &t : s.tensors) {
    if (t.role != Role::Output) continue;
    std::string ty = cStorageType(t.type);
    o += "  " + ty + " *c_" + t.name + " = (" + ty + " *)malloc(sizeof(" + ty + ") * n_" + t.name + ");\n" + outputFill(s, t, "c_");
  }
  if (!cuda) {
    o += "  polyk_" + s.name + "_mapped(" + args(s, "h_", "c_") + ");\n";
  } else {
    o += "  int polyk_home = 0;\n  POLYK_CHECK(cudaGetDevice(&polyk_home));\n";
    for (const auto &t : s.tensors) {
      if (t.role == Role::Temporary) continue;
      std::string ty = cudaStorageType(t.type), bytes = "sizeof(" + ty + ") * n_" + t.name;
      o += "  " + ty + " *d_" + t.name + " = 0;\n  POLYK_CHECK(cudaMalloc((void **)&d_" + t.name + ", " + bytes + "));\n";
      o += "  POLYK_CHECK(cudaMemcpy(d_" + t.name + ", " + (t.role == Role::Input ? "h_" : "c_") + t.name + ", " + bytes + ", cudaMemcpyHostToDevice));\n";
    }
    o += "  POLYK_CHECK(" + launch(s, "d_", "0") + ");\n  POLYK_CHECK(cudaDeviceSynchronize());\n";
    for (const auto &t : s.tensors)
      if (t.role == Role::Output)
        o += "  POLYK_CHECK(cudaMemcpy(c_" + t.name + ", d_" + t.name + ", " + bytesOf(t) + ", cudaMemcpyDeviceToHost));\n";
  }
  o += compareOutputs(s, "c_", "r_", opt);
  o += "  printf(\"%s " + s.name + " (one device) max_err=%.3g\\n\", !check ? \"UNCHECKED\" : pass ? \"PASS\" : \"FAIL\", worst);\n";
  // Each device count: fresh buffers, the inputs and the outputs' initial values uploaded, the
  // launcher, the outputs gathered and compared with the one-device run's bits.
  std::string buffers, uploads, call = "polyk_" + s.name + "_multi(rt";
  for (const auto &[name, value] : s.params) call += ", " + name;
  for (const auto &t : s.tensors) {
    if (t.role == Role::Temporary) continue;
    std::string ty = cStorageType(t.type);
    buffers += "    polyk::multi::Buffer b_" + t.name + "(rt, \"" + t.name + "\", sizeof(" + ty + "), (polyk::multi::idx)n_" + t.name + ");\n";
    if (t.role == Role::Output) buffers += "    " + ty + " *m_" + t.name + " = (" + ty + " *)malloc(" + bytesOf(t) + ");\n" + outputFill(s, t, "m_");
    uploads += "    rt.upload(b_" + t.name + ", " + (t.role == Role::Input ? "h_" : "m_") + t.name + ");\n";
    call += ", b_" + t.name;
  }
  call += ")";
  o += "  for (int devices : counts) {\n";
  std::string local = cuda ? "polyk::multi::CudaBackend" : "polyk::multi::CpuBackend";
  std::string localArgs = cuda ? ", mode)" : ")";
  // Real GPUs under MPI: a process drives its node's GPUs from (its rank on the node) x L on.
  std::string mpiLocalArgs = cuda ? ", mode, polyk_node_rank * (devices / polyk_ranks))" : ")";
  o += "#ifdef POLYK_MULTI_MPI\n    " + local + " polyk_mine(devices / polyk_ranks" + mpiLocalArgs + ";\n";
  o += "    polyk::multi::MpiBackend backend(polyk_mine, MPI_COMM_WORLD);\n#else\n";
  o += "    " + local + " backend(devices" + localArgs + ";\n#endif\n";
  o += "    polyk::multi::Runtime rt(backend);\n";
  // (outputFill's lines are indented for main's scope)
  for (size_t at = 0, nl; (nl = buffers.find('\n', at)) != std::string::npos; at = nl + 1)
    o += (buffers.compare(at, 4, "    ") == 0 ? "" : "  ") + buffers.substr(at, nl + 1 - at);
  o += uploads + "    for (int c = 0; c < calls; ++c) " + call + ";\n    backend.synchronize();\n    polyk::multi::Runtime::Stats run = rt.stats;\n";
  o += "    int same = 1;\n";
  for (const auto &t : s.tensors)
    if (t.role == Role::Output)
      o += "    rt.download(b_" + t.name + ", m_" + t.name + ");\n    if (memcmp(m_" + t.name + ", c_" + t.name + ", " + bytesOf(t) + ") != 0) same = 0;\n";
  // A split kernel computes each element as one device would; a batch split combines partials in
  // another order than one device, so its outputs are checked against the reference instead.
  if (isAffine(s)) {
    o += "    if (!same) pass = 0;\n";
  } else {
    std::string cmp = compareOutputs(s, "m_", "r_", opt);
    o += "    int polyk_ok = 1;\n    double polyk_err = 0;\n    {\n";
    for (size_t at = 0, nl; (nl = cmp.find('\n', at)) != std::string::npos; at = nl + 1) o += "    " + cmp.substr(at, nl + 1 - at);
    o += "      polyk_ok = pass;\n      polyk_err = worst;\n    }\n    if (!polyk_ok) pass = 0;\n";
  }
  // The most memory any device held at once (its windows of the buffers: memory scales with the
  // devices where each reads a slice).
  o += "    size_t mostBytes = 0;\n    for (int d = 0; d < devices; ++d) mostBytes = std::max(mostBytes, rt.peakBytes(d));\n";
  o += "    printf(\"%s " + s.name + " (%s, %d devices) bitwise=%d peer_bytes=%lld h2d_bytes=%lld d2h_bytes=%lld poisoned_bytes=%lld device_peak_bytes=%zu" + (isAffine(s) ? "" : " max_err=%.3g") + "\\n\", " + std::string(isAffine(s) ? "same" : "polyk_ok") + " ? \"PASS\" : \"FAIL\", backend.name(), devices, same, run.peerBytes, run.h2dBytes, run.d2hBytes, run.poisonedBytes, mostBytes" + (isAffine(s) ? "" : ", polyk_err") + ");\n";
  if (cuda) {
    // Matz §9.2: alpha (the full run), beta (transfers off, tracking on), gamma (tracking off);
    // repeated runs find the inputs in place, so a run's copies are those between devices. No
    // poisoning while timed.
    o += "    if (timeReps > 0) {\n      rt.poison = false;\n      double t[3];\n";
    o += "      polyk::multi::idx peer = 0;\n";
    o += "      for (int m = 0; m < 3; ++m) {\n        rt.transfer = m == 0;\n        rt.track = m < 2;\n";
    o += "        std::vector<double> us;\n        for (int r = 0; r <= timeReps; ++r) {\n";
    o += "          backend.synchronize();\n          rt.resetStats();\n          auto t0 = std::chrono::steady_clock::now();\n";
    o += "          " + call + ";\n          backend.synchronize();\n";
    o += "          if (r > 0) us.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());\n";
    o += "          if (m == 0) peer = rt.stats.peerBytes;\n        }\n";
    o += "        std::sort(us.begin(), us.end());\n        t[m] = us[us.size() / 2];\n      }\n";
    o += "      printf(\"TIME " + s.name + " %s devices=%d alpha_us=%.1f beta_us=%.1f gamma_us=%.1f peer_bytes_per_run=%lld\\n\", backend.name(), devices, t[0], t[1], t[2], peer);\n";
    o += "      rt.transfer = true;\n      rt.track = true;\n    }\n";
  }
  for (const auto &t : s.tensors)
    if (t.role == Role::Output) o += "    free(m_" + t.name + ");\n";
  o += "  }\n";
  if (cuda) {
    // The unpartitioned launcher, timed the same way (wall time, synchronised).
    // (on the GPU of the one-device run: a backend of real GPUs leaves another one current)
    o += "  if (timeReps > 0) {\n    POLYK_CHECK(cudaSetDevice(polyk_home));\n    std::vector<double> us;\n    for (int r = 0; r <= timeReps; ++r) {\n";
    o += "      POLYK_CHECK(cudaDeviceSynchronize());\n      auto t0 = std::chrono::steady_clock::now();\n";
    o += "      POLYK_CHECK(" + launch(s, "d_", "0") + ");\n      POLYK_CHECK(cudaDeviceSynchronize());\n";
    o += "      if (r > 0) us.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());\n    }\n";
    o += "    std::sort(us.begin(), us.end());\n    printf(\"TIME " + s.name + " single us=%.1f\\n\", us[us.size() / 2]);\n  }\n";
  }
  o += "#ifdef POLYK_MULTI_MPI\n  MPI_Finalize();\n#endif\n";
  o += "  return pass ? 0 : 1;\n}\n";
  return o;
}

} // namespace polyk::codegen
