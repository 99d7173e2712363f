// polyk-emit: bound/1 -> CUDA (or sequential C) source, and optionally kernel/1 (Panamera §5).
// See libcore/include/polyk/Emit.h.
#include "polyk/Emit.h"
#include "polyk/Partition.h"
#include "polyk/Tool.h"
#include "polyk/TuneRun.h"

#include <fstream>
#include <iterator>

int main(int argc, char **argv) {
  polyk::EmitOptions opts;
  std::string target = "cuda", kernelInfo, tuning, partitionFile;
  polyk::Partition partition;
  return polyk::runTool(
      argc, argv,
      {"polyk-emit",
       "Print CUDA (or sequential C) for a bound program (bound/1 -> .cu), with an optional test harness.",
       [&](CLI::App &app) {
         app.add_option("--target", target,
                        "cuda, c (sequential C of the same schedule) or c-mapped (the kernels' code run on the "
                        "CPU thread by thread)")
             ->check(CLI::IsMember({"cuda", "c", "c-mapped"}))
             ->capture_default_str();
         app.add_flag("--harness", opts.harness,
                      "add a main() that checks the result against the sequential reference on random data "
                      "(and, for CUDA, times it)");
         app.add_flag("--reference", opts.referenceOnly, "print only the sequential C of the original program");
         app.add_option("--block-reduce", opts.blockReduce, "block reduction: cub (CUB's BlockReduce) or shfl")
             ->check(CLI::IsMember({"cub", "shfl"}))
             ->capture_default_str();
         app.add_option("--determinism", opts.determinism,
                        "not_guaranteed (--combine decides) or run_to_run (identical bits on every run: ordered)")
             ->check(CLI::IsMember({"not_guaranteed", "run_to_run"}))
             ->capture_default_str();
         app.add_option("--combine", opts.combine,
                        "how a reduction's blocks combine into a shared output: auto (ordered; f16 / bf16 atomics "
                        "under --accumulate=input), ordered (the last block combines the partials in block order) "
                        "or atomic (one atomic per block, Panamera)")
             ->check(CLI::IsMember({"auto", "ordered", "atomic"}))
             ->capture_default_str();
         app.add_option("--accumulate", opts.accumulate,
                        "accumulation type of f16 / bf16 reductions: f32, or input (rounded at every step)")
             ->check(CLI::IsMember({"f32", "input"}))
             ->capture_default_str();
         app.add_option("--unroll", opts.unroll,
                        "unroll factor of per-thread loops: 1 = leave it to nvcc, 0 = 16 bytes of the narrowest element "
                        "read (at least 4), N = #pragma unroll N; affine kernels: N > 1 = #pragma unroll N on each innermost loop "
                        "not already unrolled whole (a reduced tile's loop), else nvcc's choice")
             ->check(CLI::Range(0, 64))
             ->capture_default_str();
         app.add_option("--stream-loads", opts.streamLoads,
                        "streaming vector loads (no L1 allocation, evict-first in L2): auto (inputs read once, "
                        "where they measured faster), all, or off")
             ->check(CLI::IsMember({"auto", "all", "off"}))
             ->capture_default_str();
         app.add_option("--prefetch", opts.prefetch,
                        "staged tiles of the affine path: auto (each thread loads its share of the next reduced "
                        "tile's copy into registers during this one's compute, where it takes at most 16 registers; "
                        "else two copies of the tiles in shared memory, the next one filled by asynchronous copies "
                        "(cp.async) during the compute, where they fit in 48 KB), async (the two copies wherever "
                        "they fit), or off")
             ->check(CLI::IsMember({"auto", "async", "off"}))
             ->capture_default_str();
         app.add_option("--mma", opts.mma,
                        "register-tiled f32 sums of products on the tensor cores (mma.sync m16n8k8 in 3xTF32, f32 "
                        "accuracy, sm_80 and later): auto (the kernels whose sizes say mma[1], as polyk-schedule's "
                        "defaults do for large GEMM-like tiles), tf32x3 (each kernel that takes it: blocks of [by, 4] "
                        "threads, by a multiple of 8, an even number of points a thread along both members, a "
                        "constant reduced tile that 8 divides) or off")
             ->check(CLI::IsMember({"auto", "off", "tf32x3"}))
             ->capture_default_str();
         app.add_option("--blocks-per-sm", opts.blocksPerSm,
                        "register-tiled affine kernels: the blocks an SM their registers are budgeted for (__launch_bounds__'s "
                        "second argument; 65536 registers / (threads x N) a thread): 0 = polyk-emit's rule (2; 1 for 64 points "
                        "a thread or the tensor cores; 4 for asynchronous copies of at most 16 points), N = N for every such kernel")
             ->check(CLI::Range(0, 32))
             ->capture_default_str();
         app.add_option("--tuning", tuning, "the prefetch, mma, combine, unroll and blocks an SM polyk-tune found (its best.yaml, tuning/1; its mma where it is tf32x3, else --mma's; its combine where --combine is not given and --determinism is not run_to_run; its unroll where --unroll is 1; its blocks an SM where --blocks-per-sm is 0)")
             ->check(CLI::ExistingFile)
             ->excludes("--prefetch");
         app.add_option("--repetitions", opts.repetitions, "timed runs of the CUDA harness")->capture_default_str();
         app.add_option("--kernel-info", kernelInfo, "also write the kernel/1 description to this file");
         app.add_option("--partition", partitionFile,
                        "polyk-partition's model of this program (partition/1): split kernels take a block offset, and "
                        "the output gains the enumerators and polyk_NAME_multi, the launcher over several devices "
                        "(C++: with --target=c-mapped, over the CPU backend); --harness then runs it on 1, 2, 3, 4 and 8 "
                        "devices against one")
             ->check(CLI::ExistingFile);
       },
       [&](const polyk::ToolInput &in, polyk::ExtraOutputs &extra) {
         opts.target = target == "c"          ? polyk::EmitOptions::Target::C
                       : target == "c-mapped" ? polyk::EmitOptions::Target::MappedC
                                              : polyk::EmitOptions::Target::Cuda;
         polyk::Scop bound = polyk::readBound(in.text, in.displayName);
         if (!tuning.empty()) {
           polyk::Tuning t = polyk::readTuningFor(tuning, bound.name);
           opts.prefetch = t.prefetch;
           if (t.mma != "off") opts.mma = t.mma;             // (else --mma's, where given)
           // (Its combine where --combine is not given and the run need not be reproducible: atomics
           // cannot give --determinism=run_to_run.)
           if (t.combine != "auto" && opts.combine == "auto" && opts.determinism != "run_to_run") opts.combine = t.combine;
           if (t.unroll != "1" && opts.unroll == 1) opts.unroll = std::stoi(t.unroll); // (else --unroll's, where given)
           if (t.blocks != "0" && opts.blocksPerSm == 0) opts.blocksPerSm = std::stoi(t.blocks);
         }
         if (!partitionFile.empty()) {
           std::ifstream f(partitionFile, std::ios::binary);
           partition = polyk::readPartition(std::string(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()), partitionFile);
           opts.partition = &partition;
         }
         polyk::EmitResult r = polyk::emit(bound, opts);
         if (!kernelInfo.empty()) extra[kernelInfo] = polyk::writeKernel(r.kernelInfo);
         return r.code;
       },
       {"--kernel-info", "--tuning", "--partition"}});
}
