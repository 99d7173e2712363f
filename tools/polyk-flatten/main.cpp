// polyk-flatten: program/1 -> scop/1 (Panamera §3). See libcore/include/polyk/Flatten.h.
#include "polyk/Flatten.h"
#include "polyk/Tool.h"

int main(int argc, char **argv) {
  polyk::FlattenOptions opt;
  return polyk::runTool(argc, argv,
                        {"polyk-flatten",
                         "Classify, interchange and coalesce loop dims into the canonical reduction forms "
                         "(program/1 -> scop/1).",
                         [&](CLI::App &app) {
                           app.add_flag("--split-runs", opt.splitRuns,
                                        "a reduction over interleaved dims (x[A, B, C, D] over b and d) that ends in a short "
                                        "reduced run (D of 2-8) splits in two (over b into a temporary T[A, C, D], then over d) "
                                        "instead of transposing its input (from 4M elements)");
                         },
                         [&](const polyk::ToolInput &in, polyk::ExtraOutputs &) {
                           return polyk::writeScop(polyk::flatten(polyk::readProgram(in.text, in.displayName), opt));
                         }});
}
