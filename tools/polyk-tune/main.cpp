// polyk-tune: the fifth stage (MDH + ATF, CNNOpt §3-4). See libcore/include/polyk/Tune.h.
//   polyk-tune space PROGRAM.yaml [-o space.yaml]   the space of a program (space/1)
//   polyk-tune generate space.yaml [--list N]       ATF's generation: its size, time, and the first
//                                                   N configurations as sizes maps
#include "polyk/Flatten.h"
#include "polyk/Program.h"
#include "polyk/Tool.h"
#include "polyk/Tune.h"

#include <cstdio>
#include <cstring>
#include <sstream>

namespace {

int usage() {
  std::fprintf(stderr, "usage: polyk-tune space PROGRAM.yaml [-o space.yaml]\n"
                       "       polyk-tune generate SPACE.yaml [--list N] [-o OUT]\n"
                       "run 'polyk-tune space --help' or 'polyk-tune generate --help' for the options\n");
  return 2;
}

} // namespace

int main(int argc, char **argv) {
  if (argc >= 2 && (std::strcmp(argv[1], "--help") == 0 || std::strcmp(argv[1], "-h") == 0)) {
    std::printf("polyk-tune: the search space of a program's sizes (MDH + ATF).\n"
                "  polyk-tune space PROGRAM.yaml [-o space.yaml]   derive the space (space/1), which a user may edit\n"
                "  polyk-tune generate SPACE.yaml [--list N]       count its valid configurations (ATF's chain of\n"
                "                                                  trees), report the generation time, list the first N\n");
    return 0;
  }
  if (argc >= 2 && std::strcmp(argv[1], "--version") == 0) {
    std::printf("polyk-tune %s\n", POLYK_VERSION);
    return 0;
  }
  if (argc < 2) return usage();
  std::string sub = argv[1];
  if (sub == "space") {
    return polyk::runTool(argc - 1, argv + 1,
                          {"polyk-tune space",
                           "Derive the search space of a program (program/1 -> space/1): tile and block sizes per band "
                           "member, reduced tiles, vector widths, with the constraints linking them.",
                           nullptr, [](const polyk::ToolInput &in, polyk::ExtraOutputs &) {
                             return polyk::writeSpace(polyk::deriveSpace(polyk::flatten(polyk::readProgram(in.text, in.displayName))));
                           }});
  }
  if (sub == "generate") {
    long long list = 0;
    bool random = false;
    unsigned seed = 1;
    return polyk::runTool(argc - 1, argv + 1,
                          {"polyk-tune generate",
                           "Generate a space's valid configurations as ATF does (one tree per group of linked "
                           "parameters, each constraint checked as soon as its parameters are bound): prints the "
                           "space's size and generation time, and the first --list configurations as sizes maps.",
                           [&](CLI::App &app) {
                             app.add_option("--list", list, "print the first N configurations as --sizes maps")
                                 ->check(CLI::Range(0LL, 1000000LL));
                             app.add_flag("--random", random, "draw the --list configurations uniformly at random instead");
                             app.add_option("--seed", seed, "the seed of --random")->capture_default_str();
                           },
                           [&](const polyk::ToolInput &in, polyk::ExtraOutputs &) {
                             polyk::Space s = polyk::readSpace(in.text, in.displayName);
                             polyk::Generated g = polyk::generateSpace(s, list, random, seed);
                             std::ostringstream o;
                             o << "space " << s.name << ": " << g.count << " configurations, " << g.groupCounts.size()
                               << " trees (";
                             for (size_t i = 0; i < g.groupCounts.size(); ++i) o << (i ? " x " : "") << g.groupCounts[i];
                             char t[32];
                             std::snprintf(t, sizeof t, "%.3f", g.seconds);
                             o << "), generated in " << t << " s; the defaults "
                               << (g.defaultViolates.empty() ? "are one of them" : "violate " + g.defaultViolates) << "\n";
                             for (const auto &c : g.first) {
                               std::string sizes = polyk::sizesOf(s, c);
                               if (sizes == "{  }") { // no kernel's sizes among them: name=value
                                 sizes.clear();
                                 for (size_t i = 0; i < c.size(); ++i)
                                   sizes += (i ? " " : "") + s.params[i].name + "=" + std::to_string(c[i]);
                               }
                               o << sizes << "\n";
                             }
                             return o.str();
                           }});
  }
  std::fprintf(stderr, "polyk-tune: error: unknown command '%s'\n", sub.c_str());
  return usage();
}
