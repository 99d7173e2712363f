// Dimension flattening (Panamera §3): the canonical forms, their extents, Formula 1's recovery,
// and reduction propagation into elementwise producers.
#include "polyk/Flatten.h"
#include "polyk/Isl.h"

#include <gtest/gtest.h>

using namespace polyk;

namespace {
Scop flattenText(const std::string &tensors, const std::string &statements) {
  return flatten(readProgram("polyk: program/1\nname: p\ntensors:\n" + tensors + "statements:\n" + statements, "p.yaml"));
}

const ScopStatement &stmt(const Scop &s, const std::string &name) {
  const ScopStatement *st = s.statement(name);
  if (!st) throw std::runtime_error("no statement " + name);
  return *st;
}

bool sameSet(const std::string &a, const std::string &b) { return isl::set(islCtx(), a).is_equal(isl::set(islCtx(), b)); }
bool sameMap(const std::string &a, const std::string &b) { return isl::map(islCtx(), a).is_equal(isl::map(islCtx(), b)); }
} // namespace

TEST(Flatten, AllReduceCoalescesEveryDim) {
  Scop s = flattenText("  x: {type: f32, shape: [40, 20, 10, 5], role: input}\n  y: {type: f32, shape: [], role: output}\n",
                       "  - y() +=! x(a, b, c, d)\n");
  const auto &r = stmt(s, "S0");
  EXPECT_EQ(r.form, Form::AllReduce);
  EXPECT_TRUE(sameSet(r.domain, "{ S0[i] : 0 <= i < 40000 }"));
  EXPECT_TRUE(sameMap(r.reads[0], "{ S0[i] -> x[floor(i/1000), floor(i/50) mod 20, floor(i/5) mod 10, i mod 5] }"));
  EXPECT_TRUE(sameSet(stmt(s, "S0_init").domain, "{ S0_init[] }"));
}

TEST(Flatten, XReduceKeepsParallelOuterAndReducedInner) {
  Scop s = flattenText("  x: {type: f32, shape: [6, 7, 8], role: input}\n  y: {type: f32, shape: [6], role: output}\n",
                       "  - y(a) +=! x(a, b, c)\n");
  const auto &r = stmt(s, "S0");
  EXPECT_EQ(r.form, Form::XReduce);
  EXPECT_EQ(r.dims, (std::vector<std::string>{"parallel", "reduced"}));
  EXPECT_TRUE(sameSet(r.domain, "{ S0[i, j] : 0 <= i < 6 and 0 <= j < 56 }"));
  EXPECT_TRUE(sameMap(r.reads[0], "{ S0[i, j] -> x[i, floor(j/8), j mod 8] }"));
  EXPECT_TRUE(sameMap(r.write, "{ S0[i, j] -> y[i] }"));
}

TEST(Flatten, YReduceKeepsReducedOuter) {
  Scop s = flattenText("  x: {type: f32, shape: [64, 128, 768], role: input}\n  y: {type: f32, shape: [768], role: output}\n",
                       "  - y(h) +=! x(b, s, h)\n");
  const auto &r = stmt(s, "S0");
  EXPECT_EQ(r.form, Form::YReduce);
  EXPECT_TRUE(sameSet(r.domain, "{ S0[i, j] : 0 <= i < 8192 and 0 <= j < 768 }"));
  EXPECT_TRUE(isl::multi_aff(islCtx(), r.recovery).plain_is_equal(isl::multi_aff(islCtx(), "{ S0[i, j] -> [floor(i/128), i mod 128, j] }")));
  EXPECT_TRUE(sameSet(stmt(s, "S0_init").domain, "{ S0_init[j] : 0 <= j < 768 }"));
}

TEST(Flatten, InterleavedDimsAreReLaidOut) {
  // Panamera Fig. 4: h, x, y reduced around the parallel w. The input is transposed into w-major
  // order by a statement of its own, which the reduction then reads contiguously.
  Scop s = flattenText("  e: {type: f32, shape: [400, 20, 100, 10], role: input}\n  r: {type: f32, shape: [20], role: output}\n",
                       "  - r(w) +=! e(h, w, x, y)\n");
  ASSERT_EQ(s.relayouts.size(), 1u);
  EXPECT_EQ(s.relayouts[0].tensor, "e");
  EXPECT_EQ(s.relayouts[0].order, (std::vector<int>{1, 0, 2, 3}));
  const std::string t = s.relayouts[0].as;
  EXPECT_EQ(stmt(s, "S0").form, Form::Elementwise);
  EXPECT_TRUE(sameMap(stmt(s, "S0").write, "{ S0[i] -> " + t + "[floor(i/400000), floor(i/1000) mod 400, floor(i/10) mod 100, i mod 10] }"));
  const auto &r = stmt(s, "S1");
  EXPECT_EQ(r.form, Form::XReduce);
  EXPECT_TRUE(sameSet(r.domain, "{ S1[i, j] : 0 <= i <= 19 and 0 <= j <= 399999 }"));
  EXPECT_TRUE(sameMap(r.reads[0], "{ S1[i, j] -> " + t + "[i, floor(j/1000), floor(j/10) mod 100, j mod 10] }"));
}

TEST(Flatten, SmallInterleavedReductionsReadInPlace) {
  // Below 2^22 elements the strided reads cost less than a transposition kernel.
  Scop s = flattenText("  e: {type: f32, shape: [40, 20, 10, 5], role: input}\n  r: {type: f32, shape: [20], role: output}\n",
                       "  - r(w) +=! e(h, w, x, y)\n");
  EXPECT_TRUE(s.relayouts.empty());
  const auto &r = stmt(s, "S0");
  EXPECT_EQ(r.form, Form::XReduce);
  EXPECT_TRUE(sameMap(r.reads[0], "{ S0[i, j] -> e[floor(j/50), i, floor(j/5) mod 10, j mod 5] }"));
}

TEST(Flatten, ParallelReducedParallelReadsColumnsAsTheyLie) {
  // x[A, B, C] over b: a batched y-reduce, rows b and columns (a, c), with no transposition.
  Scop s = flattenText("  x: {type: i32, shape: [2, 1248718, 52], role: input}\n  r: {type: i32, shape: [2, 52], role: output}\n",
                       "  - r(a, c) *=! x(a, b, c)\n");
  EXPECT_TRUE(s.relayouts.empty());
  const auto &r = stmt(s, "S0");
  EXPECT_EQ(r.form, Form::YReduce);
  EXPECT_EQ(r.dims, (std::vector<std::string>{"reduced", "parallel"}));
  EXPECT_TRUE(sameSet(r.domain, "{ S0[i, j] : 0 <= i <= 1248717 and 0 <= j <= 103 }"));
  EXPECT_TRUE(sameMap(r.reads[0], "{ S0[i, j] -> x[floor(j/52), i, j mod 52] }"));
  // From 2^22 elements, runs shorter than a sector too where the rows a are few: [2, 2097153, 2].
  Scop shortRuns = flattenText("  x: {type: f32, shape: [2, 2097153, 2], role: input}\n  r: {type: f32, shape: [2, 2], role: output}\n",
                               "  - r(a, c) +=! x(a, b, c)\n");
  EXPECT_TRUE(shortRuns.relayouts.empty());
  EXPECT_EQ(stmt(shortRuns, "S0").form, Form::YReduce);
  // Runs of 2-3 elements with >= 1024 rows a and >= 512 reduced b: the interleaved x-reduce in
  // place (stridedRows), [8000, 4000, 2] f32.
  Scop strided = flattenText("  x: {type: f32, shape: [8000, 4000, 2], role: input}\n  r: {type: f32, shape: [8000, 2], role: output}\n",
                             "  - r(a, c) +=! x(a, b, c)\n");
  EXPECT_TRUE(strided.relayouts.empty());
  EXPECT_EQ(stmt(strided, "S0").form, Form::XReduce);
  // Smaller ones take columns where a run fills a 32-byte sector (8 f32), and otherwise keep the
  // interleaved x-reduce that reads x in place.
  Scop small = flattenText("  x: {type: f32, shape: [8, 1000, 8], role: input}\n  r: {type: f32, shape: [8, 8], role: output}\n",
                           "  - r(a, c) +=! x(a, b, c)\n");
  EXPECT_EQ(stmt(small, "S0").form, Form::YReduce);
  Scop narrow = flattenText("  x: {type: f32, shape: [8, 1000, 7], role: input}\n  r: {type: f32, shape: [8, 7], role: output}\n",
                            "  - r(a, c) +=! x(a, b, c)\n");
  EXPECT_EQ(stmt(narrow, "S0").form, Form::XReduce);
  EXPECT_TRUE(sameMap(stmt(narrow, "S0").reads[0], "{ S0[i, j] -> x[floor(i/7), j, i mod 7] }"));
  // An elementwise producer takes the columns too.
  Scop chain = flattenText("  x: {type: f16, shape: [8, 1000, 12], role: input}\n  t: {type: f32, shape: [8, 1000, 12], role: temporary}\n"
                           "  r: {type: f32, shape: [8, 12], role: output}\n",
                           "  - t(a, b, c) = x(a, b, c) * 2.0\n  - r(a, c) +=! t(a, b, c)\n");
  EXPECT_EQ(stmt(chain, "S1").form, Form::YReduce);
  EXPECT_EQ(stmt(chain, "S0").form, Form::YReduce);
}

TEST(Flatten, ProducersTakeTheReductionsCoalescing) {
  Scop s = flattenText("  x: {type: f32, shape: [64, 128, 768], role: input}\n"
                       "  t: {type: f32, shape: [64, 128, 768], role: temporary}\n"
                       "  u: {type: f32, shape: [64, 128, 768], role: temporary}\n"
                       "  y: {type: f32, shape: [768], role: output}\n",
                       "  - t(b, s, h) = x(b, s, h) + 1.0\n  - u(p, q, r) = t(p, q, r) * 2.0\n  - y(h) +=! u(b, s, h)\n");
  for (const char *n : {"S0", "S1"}) {
    EXPECT_EQ(stmt(s, n).form, Form::YReduce) << n;
    EXPECT_EQ(stmt(s, n).dims, (std::vector<std::string>{"reduced", "parallel"})) << n;
  }
  EXPECT_TRUE(sameMap(stmt(s, "S1").write, "{ S1[i, j] -> u[floor(i/128), i mod 128, j] }"));
}

TEST(Flatten, BroadcastProducerIsNotPropagated) {
  Scop s = flattenText("  x: {type: f32, shape: [768], role: input}\n"
                       "  t: {type: f32, shape: [768], role: temporary}\n"
                       "  z: {type: f32, shape: [64, 768], role: input}\n"
                       "  y: {type: f32, shape: [768], role: output}\n",
                       "  - t(h) = x(h) * 2.0\n  - y(h) +=! z(b, h) * t(h)\n");
  EXPECT_EQ(stmt(s, "S0").form, Form::Elementwise);
  EXPECT_TRUE(sameSet(stmt(s, "S0").domain, "{ S0[i] : 0 <= i < 768 }"));
}
