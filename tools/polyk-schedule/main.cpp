// polyk-schedule: scop/1 -> schedule/1 (Panamera §4.1-4.2). See libcore/include/polyk/Schedule.h.
#include "polyk/Schedule.h"
#include "polyk/Tool.h"

#include <iostream>

int main(int argc, char **argv) {
  polyk::ScheduleOptions opts;
  bool dumpSizes = false;
  return polyk::runTool(
      argc, argv,
      {"polyk-schedule",
       "Compute dependences, fuse producers into reductions with the isl scheduler, tile each kernel "
       "(scop/1 -> schedule/1).",
       [&](CLI::App &app) {
         app.add_option("--sizes", opts.sizes,
                        "tile and block sizes as an isl map, e.g. '{ kernel[0] -> tile[32,256]; kernel[0] -> block[32,8] }'");
         app.add_flag("--dump-sizes", dumpSizes, "print the sizes used for every kernel on stderr");
       },
       [&](const polyk::ToolInput &in, polyk::ExtraOutputs &) {
         std::map<int, polyk::KernelSizes> used;
         std::string out = polyk::writeSchedule(polyk::schedule(polyk::readScop(in.text, in.displayName), opts, &used));
         if (dumpSizes) std::cerr << polyk::printSizes(used) << "\n";
         return out;
       }});
}
