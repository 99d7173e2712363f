// Map fusion's candidates (Fousek et al. §4): connected sets of functions that no path leaves and
// re-enters.
#include "polyk/MapFusion.h"

#include <gtest/gtest.h>

using namespace polyk;

namespace {

MapDag dagOf(size_t n, const std::vector<std::pair<size_t, size_t>> &edges) {
  MapDag d;
  for (size_t i = 0; i < n; ++i) d.functions.push_back(MapFunction{"f" + std::to_string(i), "", {}, "t" + std::to_string(i), {}, {1}, {}});
  for (auto [a, b] : edges) d.edges.push_back({a, b, "t" + std::to_string(a)});
  return d;
}

bool has(const std::vector<std::vector<size_t>> &c, const std::vector<size_t> &set) {
  return std::find(c.begin(), c.end(), set) != c.end();
}

} // namespace

TEST(MapFusion, ChainGivesEveryRunOfConsecutiveFunctions) {
  // f0 -> f1 -> f2 -> f3: 4 + 3 + 2 + 1 runs.
  auto c = fusionCandidates(dagOf(4, {{0, 1}, {1, 2}, {2, 3}}), 4);
  EXPECT_EQ(c.size(), 10u);
  EXPECT_TRUE(has(c, {1, 2, 3}));
  EXPECT_FALSE(has(c, {0, 2})); // not connected
  // Smallest first.
  for (size_t i = 1; i < c.size(); ++i) EXPECT_LE(c[i - 1].size(), c[i].size());
}

TEST(MapFusion, NoPathLeavesAndReentersACandidate) {
  // f0 -> f1 -> f2 and f0 -> f2: {f0, f2} is connected, but the path through f1 leaves it and
  // comes back, so it could not run as one kernel.
  auto c = fusionCandidates(dagOf(3, {{0, 1}, {1, 2}, {0, 2}}), 3);
  EXPECT_FALSE(has(c, {0, 2}));
  EXPECT_TRUE(has(c, {0, 1}));
  EXPECT_TRUE(has(c, {1, 2}));
  EXPECT_TRUE(has(c, {0, 1, 2}));
  EXPECT_EQ(c.size(), 6u);
}

TEST(MapFusion, SizeLimitAndSeparateBranches) {
  // Two producers feeding one consumer (F's shape: the norm and C D both reach the scaling).
  auto d = dagOf(5, {{0, 1}, {1, 4}, {2, 3}, {3, 4}});
  auto c2 = fusionCandidates(d, 2);
  for (const auto &set : c2) EXPECT_LE(set.size(), 2u);
  EXPECT_EQ(c2.size(), 5u + 4u);
  auto all = fusionCandidates(d, 5);
  EXPECT_TRUE(has(all, {0, 1, 2, 3, 4}));
  EXPECT_TRUE(has(all, {1, 3, 4}));  // siblings through their consumer
  EXPECT_FALSE(has(all, {0, 4}));    // not connected
  EXPECT_FALSE(has(all, {0, 1, 2})); // f2 is not adjacent to f0 or f1
}
