// polyk-partition: bound/1 -> partition/1 (Matz et al. §4-5). See libcore/include/polyk/Partition.h.
#include "polyk/Partition.h"
#include "polyk/Tool.h"

int main(int argc, char **argv) {
  bool check = false;
  std::string enumerators;
  return polyk::runTool(argc, argv,
                        {"polyk-partition",
                         "Model a bound program for several GPUs (bound/1 -> partition/1): per kernel and array, the "
                         "elements a block reads and writes (isl maps from the block ids), whether its writes are exact "
                         "and injective over blocks (else it stays on one device, with the reason), and the grid dim "
                         "to split along (the smallest read halo). --check reads a partition/1 file back instead.",
                         [&](CLI::App &app) {
                           app.add_flag("--check", check, "read a partition/1 file, check it, write it back");
                           app.add_option("--enumerators", enumerators,
                                          "also write C enumerators of the runs of elements a range of blocks touches "
                                          "(per split kernel, array and kind) to this file");
                         },
                         [&](const polyk::ToolInput &in, polyk::ExtraOutputs &extra) {
                           if (check) return polyk::writePartition(polyk::readPartition(in.text, in.displayName));
                           polyk::Scop bound = polyk::readBound(in.text, in.displayName);
                           polyk::Partition p = polyk::partition(bound);
                           if (!enumerators.empty()) extra[enumerators] = polyk::emitEnumerators(p, bound);
                           return polyk::writePartition(p);
                         },
                         {"--enumerators"}});
}
