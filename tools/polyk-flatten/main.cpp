// polyk-flatten: program/1 -> scop/1 (Panamera §3). See libcore/include/polyk/Flatten.h.
#include "polyk/Flatten.h"
#include "polyk/Tool.h"

int main(int argc, char **argv) {
  return polyk::runTool(argc, argv,
                        {"polyk-flatten",
                         "Classify, interchange and coalesce loop dims into the canonical reduction forms "
                         "(program/1 -> scop/1).",
                         nullptr, [](const polyk::ToolInput &in, polyk::ExtraOutputs &) {
                           return polyk::writeScop(polyk::flatten(polyk::readProgram(in.text, in.displayName)));
                         }});
}
