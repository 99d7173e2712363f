// Fuzz target of the T1 reader (polyk-tune run --t1, space --t1): the bytes as a T1 problem over
// GEMM's derived space, its space then generated as polyk-tune generate does (a small node budget,
// so a huge space is a verdict, not a timeout) and written back as T1.
#include "FuzzTarget.h"
#include "polyk/Flatten.h"
#include "polyk/KernelTuner.h"
#include "polyk/Program.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static const polyk::Space gemm = polyk::deriveSpace(polyk::flatten(polyk::readProgram(
      "polyk: program/1\nname: gemm\nparams: {M: 64, N: 64, K: 64}\ntensors:\n  A: {type: f32, shape: [M, K], role: input}\n"
      "  B: {type: f32, shape: [K, N], role: input}\n  C: {type: f32, shape: [M, N], role: output}\n"
      "statements:\n  - C(i, j) +=! A(i, k) * B(k, j)\n",
      "gemm.yaml")));
  return polyk::fuzz::runStage(data, size, [](const std::string &text) {
    polyk::T1Problem t = polyk::readT1(text, "fuzz", gemm);
    polyk::Generated g = polyk::generateSpace(t.space, 4, false, 7, 1 << 20);
    for (const auto &c : g.first) (void)polyk::sizesOf(t.space, c);
    (void)polyk::writeT1(t.space, "gemm.yaml");
  });
}
