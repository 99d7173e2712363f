// polyk-bind: schedule/1 -> bound/1 (Panamera §4.2). See libcore/include/polyk/Bind.h.
#include "polyk/Bind.h"
#include "polyk/Tool.h"
#include "polyk/TuneRun.h"

int main(int argc, char **argv) {
  polyk::BindOptions opts;
  std::string tuning;
  return polyk::runTool(argc, argv,
                        {"polyk-bind",
                         "Map tile loops to blocks and point loops to threads, keep fused temporaries in "
                         "registers, compute launch sizes (schedule/1 -> bound/1).",
                         [&](CLI::App &app) {
                           app.add_option("--sizes", opts.sizes,
                                          "block sizes overriding the schedule file's, e.g. '{ kernel[1] -> block[32,8] }'");
                           app.add_option("--shared", opts.shared,
                                          "stage reused operands of tiled reductions in shared memory (affine path): "
                                          "auto (where they fit) or off")
                               ->check(CLI::IsMember({"auto", "off"}));
                           app.add_option("--points", opts.points,
                                          "which points of a register tile each thread owns (affine path): cyclic "
                                          "(t, t + block, ...), blocked (consecutive), or auto (blocked for window "
                                          "reductions such as a weighted stencil, for sums over padded "
                                          "reads such as a convolution, and for stencils)")
                               ->check(CLI::IsMember({"auto", "cyclic", "blocked"}));
                           app.add_option("--tuning", tuning, "the points and staging polyk-tune found (its best.yaml, tuning/1)")
                               ->check(CLI::ExistingFile)
                               ->excludes("--points")
                               ->excludes("--shared");
                         },
                         [&](const polyk::ToolInput &in, polyk::ExtraOutputs &) {
                           polyk::Scop scheduled = polyk::readSchedule(in.text, in.displayName);
                           if (!tuning.empty()) {
                             polyk::Tuning t = polyk::readTuningFor(tuning, scheduled.name);
                             opts.points = t.points;
                             opts.shared = t.shared;
                           }
                           return polyk::writeBound(polyk::bind(scheduled, opts));
                         },
                         {"--tuning"}});
}
