// polyk-schedule: scop/1 -> schedule/1 (Panamera §4.1-4.2). See libcore/include/polyk/Schedule.h.
#include "polyk/MapFusion.h"
#include "polyk/MapSearch.h"
#include "polyk/Schedule.h"
#include "polyk/Tool.h"
#include "polyk/TuneRun.h"

#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>

int main(int argc, char **argv) {
  polyk::ScheduleOptions opts;
  bool dumpSizes = false;
  std::string tuning, candidates, timeTile = "auto", psiFile, routines;
  size_t maxFusion = 4, rank = 0, covers = 8;
  return polyk::runTool(
      argc, argv,
      {"polyk-schedule",
       "Compute dependences, fuse producers into reductions with the isl scheduler, tile each kernel "
       "(scop/1 -> schedule/1).",
       [&](CLI::App &app) {
         auto *sizes = app.add_option("--sizes", opts.sizes,
                                      "tile and block sizes as an isl map, e.g. '{ kernel[0] -> tile[32,256]; kernel[0] -> block[32,8] }'");
         app.add_option("--tuning", tuning, "the sizes polyk-tune found (its best.yaml, tuning/1)")
             ->check(CLI::ExistingFile)
             ->excludes(sizes);
         app.add_flag("--dump-sizes", dumpSizes, "print the sizes used for every kernel on stderr");
         app.add_option("--fusion", opts.fusion,
                        "affine programs: auto (a kernel per statement), all (a map over independent instances: one "
                        "kernel over the statements' common first dim, each thread running every statement for its instances), "
                        "shared (one kernel too, each block taking a tile of instances, each function on its own threads per "
                        "instance, kernel[0] -> threads[..], its intermediates in shared memory; --fusion-cover: several), or "
                        "search (Fousek's search: the candidates' implementations, their time predicted from --psi, the "
                        "covers by an ILP; runs cover --fusion-rank as shared does)")
             ->check(CLI::IsMember({"auto", "all", "shared", "search"}))
             ->capture_default_str();
         app.add_option("--fusion-cover", opts.cover,
                        "with --fusion=shared: the fused kernels, as sets of the map's functions (f0, f1, ... as "
                        "--fusion-candidates names them), e.g. f0+f1+f2,f3; each set convex, every function once; a set runs in the order given where every edge inside it goes forward, else in program order");
         app.add_option("--time-tile", timeTile,
                        "an iterated stencil (one statement, `iterate:`): run this many steps a launch, each block keeping "
                        "its tile, widened by the stencil's reach, in shared memory (the sizes' kernel[0] -> time[T]); auto: 8 "
                        "where the program takes it and the sizes give no tile; 0: one step a launch")
             ->check(CLI::IsMember({"auto"}) | CLI::Range(0, 64))
             ->capture_default_str();
         app.add_option("--stream", opts.stream,
                        "a 2-d or 3-d stencil of one statement: each block walks this many planes along the outermost dim, one "
                        "point of each a thread, the planes its reads reach kept in shared memory (the sizes' kernel[0] -> stream[C])")
             ->check(CLI::Range(1, 4096));
         app.add_option("--shared-limit", opts.sharedLimit,
                        "the shared memory a block may take on the target GPU, in bytes (its opt-in limit): the most the "
                        "default sizes let staged copies take (kernel[k] -> shared[B]); 232448 is sm_90's, 166912 an A100's")
             ->check(CLI::Range(polyk::kStaticShared, polyk::kMaxShared))
             ->capture_default_str();
         app.add_option("--devices", opts.devices,
                        "the GPUs polyk-partition will share each kernel's blocks over: affine kernels' default sizes (tiles, "
                        "split-K) fill that many cards, each running a 1/N share of the grid")
             ->check(CLI::Range(1, 64))
             ->capture_default_str();
         app.add_option("--fusion-candidates", candidates,
                        "a map (Fousek et al.): also write the DAG of its functions, their threads per instance and the "
                        "fusible candidates (connected, convex, at most --fusion-max functions) to this file (fusion/1)");
         app.add_option("--fusion-max", maxFusion, "the largest candidate, in functions")
             ->check(CLI::Range(1, 16))
             ->capture_default_str();
         app.add_option("--psi", psiFile, "--fusion=search: the routines' timings on the target (psi/1, bench/map/psi.sh); "
                                          "without it, a bandwidth and FMA model")
             ->check(CLI::ExistingFile);
         app.add_option("--fusion-covers", covers, "--fusion=search: the covers to find (the best and its alternatives)")
             ->check(CLI::Range(1, 1000))
             ->capture_default_str();
         app.add_option("--fusion-rank", rank, "--fusion=search: run this cover (0: the best predicted)")->capture_default_str();
         app.add_option("--fusion-routines", routines,
                        "a map: write its routines' programs (each function alone at each of its threads per instance, and "
                        "row copies) and list.txt to this directory, for bench/map/psi.sh");
       },
       [&](const polyk::ToolInput &in, polyk::ExtraOutputs &extra) {
         polyk::Scop scop = polyk::readScop(in.text, in.displayName);
         opts.timeTile = timeTile == "auto" ? -1 : std::stoll(timeTile);
         if (!routines.empty()) {
           std::filesystem::create_directories(routines);
           std::string list;
           for (const auto &[name, program] : polyk::routinePrograms(scop)) {
             extra[routines + "/" + name + ".yaml"] = program.first;
             list += name + " " + program.second + "\n";
           }
           extra[routines + "/list.txt"] = list;
         }
         if (opts.fusion == "search") {
           if (!opts.sizes.empty() || !opts.cover.empty()) throw polyk::UsageError("--fusion=search chooses the cover and its sizes; give neither --sizes nor --fusion-cover");
           std::optional<polyk::MapPsi> psi;
           if (!psiFile.empty()) psi = polyk::readPsi(psiFile);
           polyk::MapSearchResult found = polyk::searchFusions(scop, maxFusion, covers, psi ? &*psi : nullptr);
           if (!candidates.empty()) {
             // (Written even where the rank is refused below, to see what the search found.)
             std::ofstream(candidates) << polyk::writeFusionSearch(found, maxFusion);
           }
           if (rank >= found.covers.size())
             throw polyk::UsageError("--fusion-rank " + std::to_string(rank) + ": the search found " + std::to_string(found.covers.size()) + " covers");
           opts.fusion = "shared";
           opts.cover = polyk::coverText(found, rank);
           opts.sizes = polyk::coverSizes(found, rank);
         } else if (!candidates.empty()) {
           polyk::MapDag dag = polyk::mapDag(scop);
           extra[candidates] = polyk::writeFusionCandidates(dag, polyk::fusionCandidates(dag, maxFusion), maxFusion);
         }
         if (!tuning.empty()) {
           polyk::Tuning t = polyk::readTuningFor(tuning, scop.name);
           opts.sizes = t.sizes;
           // (A map's tuned cover: its fused kernels, as --fusion=shared --fusion-cover builds them.)
           if (!t.cover.empty()) opts.fusion = "shared", opts.cover = t.cover;
         }
         std::map<int, polyk::KernelSizes> used;
         std::string out = polyk::writeSchedule(polyk::schedule(scop, opts, &used));
         if (dumpSizes) std::cerr << polyk::printSizes(used) << "\n";
         return out;
       },
       {"--tuning", "--fusion-candidates"}});
}
