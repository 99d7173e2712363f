// polyk-tune's cost model (TuneModel.h): the analytical features of known kernels and sizes,
// the regressor's fit and its file, and the ranking measures (trials to 95%, LoP) on known orders.
#include "polyk/Flatten.h"
#include "polyk/Program.h"
#include "polyk/TuneModel.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <random>

using namespace polyk;

namespace {

const char *kGemm = "polyk: program/1\nname: g\nparams: {M: 1024, N: 512, K: 256}\ntensors:\n"
                    "  A: {type: f32, shape: [M, K], role: input}\n  B: {type: f32, shape: [K, N], role: input}\n"
                    "  C: {type: f32, shape: [M, N], role: output}\nstatements:\n  - C(i, j) +=! A(i, k) * B(k, j)\n";

double feature(const std::vector<double> &f, const std::string &name) {
  const auto &n = featureNames();
  return f.at((size_t)(std::find(n.begin(), n.end(), name) - n.begin()));
}

} // namespace

TEST(TuneModel, GemmKernelShapeNamesTheMembersEachReadInvolves) {
  std::vector<KernelShape> shapes = kernelShapes(flatten(readProgram(kGemm, "g.yaml")));
  ASSERT_EQ(shapes.size(), 1u);
  const KernelShape &s = shapes[0];
  EXPECT_EQ(s.extent, (std::vector<long long>{1024, 512}));
  EXPECT_DOUBLE_EQ(s.reducedIterations, 256);
  // The update reads A(i, k) (member 0, the reduced dim) and B(k, j) (member 1, the reduced dim);
  // its accumulator (kept in registers) and the init's and store's accesses are left out.
  EXPECT_EQ(s.reads.size(), 2u);
  int a = 0, b = 0;
  for (const auto &r : s.reads) {
    bool reduced = !r.reduced.empty() && r.reduced[0];
    if (r.members == std::vector<bool>{true, false} && reduced) ++a;
    if (r.members == std::vector<bool>{false, true} && reduced) ++b;
  }
  EXPECT_EQ(a, 1);
  EXPECT_EQ(b, 1);
}

TEST(TuneModel, FeaturesFollowTheSizes) {
  Scop flat = flatten(readProgram(kGemm, "g.yaml"));
  std::vector<KernelShape> shapes = kernelShapes(flat);
  Space sp = deriveSpace(flat);
  auto config = [&](long long t0, long long b0, long long t1, long long b1, long long r) {
    std::vector<long long> v;
    for (const auto &p : sp.params) {
      long long x = p.fallback;
      if (p.name == "k0.tile.0") x = t0;
      if (p.name == "k0.block.0") x = b0;
      if (p.name == "k0.tile.1") x = t1;
      if (p.name == "k0.block.1") x = b1;
      if (p.name == "k0.reduce.0") x = r;
      if (p.name == "k0.vector") x = 1;
      v.push_back(x);
    }
    return features(shapes, sp, v);
  };
  std::vector<double> f = config(64, 16, 64, 16, 16);
  EXPECT_DOUBLE_EQ(feature(f, "log2_threads"), 8);           // 16 x 16
  EXPECT_DOUBLE_EQ(feature(f, "log2_points_per_thread"), 4); // 4 x 4
  EXPECT_DOUBLE_EQ(feature(f, "log2_blocks"), 7);            // 16 x 8 tiles
  EXPECT_DOUBLE_EQ(feature(f, "log2_reduce_tile"), 4);
  // A thread's 4 x 4 points: each A value serves 4 of them, each B value 4.
  EXPECT_DOUBLE_EQ(feature(f, "loads_per_fma"), 0.25 + 0.25);
  // A block's reduced tile reads 64 x 16 of A and 16 x 64 of B.
  EXPECT_DOUBLE_EQ(feature(f, "log2_tile_bytes"), std::log2((64.0 * 16 + 16 * 64) * 4));
  EXPECT_DOUBLE_EQ(feature(f, "log2_work"), std::log2(1024.0 * 512 * 256));
  std::vector<double> g = config(16, 16, 16, 16, 16); // one point a thread: no reuse in registers
  EXPECT_DOUBLE_EQ(feature(g, "loads_per_fma"), 2);
  EXPECT_GT(feature(g, "log2_blocks"), feature(f, "log2_blocks"));
  EXPECT_LT(feature(g, "log2_intensity"), feature(f, "log2_intensity"));
}

TEST(TuneModel, RegressorFitsAndRoundTripsThroughItsFile) {
  // Time = a smooth function of two features; the model fits it closely and reads back the same.
  std::mt19937 rng(5);
  std::uniform_real_distribution<double> u(0, 8);
  std::vector<std::vector<double>> x;
  std::vector<double> us;
  for (int i = 0; i < 400; ++i) {
    std::vector<double> row(featureNames().size(), 0.0);
    row[0] = u(rng), row[2] = u(rng);
    x.push_back(row);
    us.push_back(10 * std::exp(0.3 * row[0]) + 5 * row[2] * row[2]);
  }
  CostModel m;
  m.train(x, us, 200);
  std::vector<double> p = m.predict(x);
  double worst = 0;
  for (size_t i = 0; i < us.size(); ++i) worst = std::max(worst, std::fabs(std::log(p[i] / us[i])));
  EXPECT_LT(worst, 0.15);
  std::string path = ::testing::TempDir() + "polyk-model-test.json";
  {
    std::ofstream f(path);
    f << m.text("test device");
  }
  std::string device;
  std::unique_ptr<CostModel> back = CostModel::load(path, &device);
  EXPECT_EQ(device, "test device");
  std::vector<double> q = back->predict(x);
  for (size_t i = 0; i < p.size(); ++i) EXPECT_NEAR(q[i], p[i], 1e-6 * p[i]);
  // A file of another kind is refused at its first line.
  {
    std::ofstream f(path);
    f << "{\"polyk\": \"tunelog/1\"}\n{}\n";
  }
  try {
    CostModel::load(path);
    ADD_FAILURE() << "a tuning log read as a model";
  } catch (const InputError &e) {
    EXPECT_NE(std::string(e.what()).find("not a polyk cost model"), std::string::npos) << e.what();
  }
  std::remove(path.c_str());
}

TEST(TuneModel, JudgeCountsTrialsToTheBestInTheModelsOrder) {
  ModelData d;
  d.program = "p";
  for (int i = 0; i < 40; ++i) {
    d.us.push_back(100 + i); // trial i takes 100 + i us: the best is trial 0
    d.keys.push_back("k=" + std::to_string(i));
    d.index.push_back(i);
  }
  std::vector<double> perfect(d.us.begin(), d.us.end());
  ModelReport r = judge(d, perfect);
  EXPECT_EQ(r.to95, 1);
  EXPECT_EQ(r.to100, 1);
  EXPECT_DOUBLE_EQ(r.lop10, 0);
  EXPECT_NEAR(r.spearman, 1, 1e-12);
  std::vector<double> reversed(perfect.rbegin(), perfect.rend());
  r = judge(d, reversed);
  EXPECT_EQ(r.to100, 40);
  EXPECT_EQ(r.to95, 35); // within 95%: 105.26 us or less; the 35th in reversed order takes 105
  EXPECT_NEAR(r.lop10, 1 - 100.0 / 130, 1e-12); // its top-10 are 139 .. 130
  EXPECT_NEAR(r.lop30, 1 - 100.0 / 110, 1e-12);
  EXPECT_NEAR(r.spearman, -1, 1e-12);
}

TEST(TuneModel, JudgeCountsFailedTrialsAndTheSearchsOwnOrder) {
  ModelData d;
  d.program = "p";
  for (int i = 0; i < 10; ++i) {
    d.us.push_back(i == 0 ? 150 : 100 + i); // the defaults (trial 0) at 150 us; the best is trial 1
    d.keys.push_back("k=" + std::to_string(i));
    d.index.push_back(i);
  }
  d.failedX.assign(3, {});
  d.failedIndex = {10, 11, 12};
  std::vector<double> perfect(d.us.begin(), d.us.end());
  // The model ranks the 3 failed trials first: they cost 3 trials before the best.
  ModelReport r = judge(d, perfect, {1, 2, 3});
  EXPECT_EQ(r.trials, 10);
  EXPECT_EQ(r.failed, 3);
  EXPECT_EQ(r.to100, 4);
  EXPECT_EQ(r.to95, 4);
  EXPECT_EQ(r.searchTo95, 5); // the defaults, the 3 failed, then trial 1
  EXPECT_NEAR(r.lop10, 0, 1e-12);
  // Ranked last, they cost nothing; the defaults within 95% would end the search at trial 1.
  r = judge(d, perfect, {1000, 1000, 1000});
  EXPECT_EQ(r.to95, 1);
  EXPECT_EQ(r.searchTo95, 2);
  d.us[0] = 104;
  r = judge(d, perfect, {1000, 1000, 1000});
  EXPECT_EQ(r.searchTo95, 1);
  // The defaults failed (trial 0 among the others): the search spends trial 1 on them, then
  // follows the model's order.
  d.index[0] = 20;
  d.failedIndex = {0, 11, 12};
  r = judge(d, perfect, {1000, 1000, 1000});
  EXPECT_EQ(r.searchTo95, 2); // the failed defaults, then trial 1 (101 us)
  // No trial 0 in the log: no search count. No correct trial: the others still counted.
  d.failedIndex = {10, 11, 12};
  EXPECT_EQ(judge(d, perfect, {1, 2, 3}).searchTo95, 0);
  ModelData none;
  none.failedX.assign(2, {});
  none.failedIndex = {0, 1};
  ModelReport empty = judge(none, {}, {1, 2});
  EXPECT_EQ(empty.trials, 0);
  EXPECT_EQ(empty.failed, 2);
  EXPECT_EQ(empty.searchTo95, 0);
}

TEST(TuneModel, BoxesHoldHalosStridesAndSeveralReads) {
  // A window (Gaussian2D's form): the input's box over a tile and the whole window is
  // (T0 + R0 - 1) x (T1 + R1 - 1); a stride of 2 and a second read at another offset widen it.
  const char *text = "polyk: program/1\nname: w\nparams: {N: 64}\ntensors:\n"
                     "  A: {type: f32, shape: [N, N], role: input, padding: 0}\n  G: {type: f32, shape: [5, 5], role: input}\n"
                     "  B: {type: f32, shape: [N, N], role: output}\n"
                     "statements:\n  - B(i, j) +=! A(i + u - 2, j + v - 2) * G(u, v)\n";
  std::vector<KernelShape> w = kernelShapes(flatten(readProgram(text, "w.yaml")));
  ASSERT_EQ(w.size(), 1u);
  const KernelShape::Box *a = nullptr;
  for (const auto &b : w[0].boxes)
    if (b.tensor == "A") a = &b;
  ASSERT_NE(a, nullptr);
  EXPECT_DOUBLE_EQ(a->elements({8, 32, 5, 5}), 12.0 * 36);
  EXPECT_EQ(a->expression({"t0", "t1", "r0", "r1"}), "(1 + (t0 - 1) + (r0 - 1)) * (1 + (t1 - 1) + (r1 - 1)) * 4");
  const char *strided = "polyk: program/1\nname: s\ntensors:\n"
                        "  A: {type: f32, shape: [130], role: input}\n  B: {type: f32, shape: [64], role: output}\n"
                        "statements:\n  - B(i) = A(2*i) + A(2*i + 2)\n";
  std::vector<KernelShape> s = kernelShapes(flatten(readProgram(strided, "s.yaml")));
  ASSERT_EQ(s.size(), 1u);
  ASSERT_EQ(s[0].boxes.size(), 1u);
  EXPECT_DOUBLE_EQ(s[0].boxes[0].elements({32}), 2 + 1 + 2 * 31); // offsets 0 and 2, stride 2
}
