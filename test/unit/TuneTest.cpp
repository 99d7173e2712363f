// polyk-tune's space (Tune.h): constraint expressions, ATF's generation against brute force on
// random spaces, and the space of a program holding its defaults.
#include "polyk/Flatten.h"
#include "polyk/Program.h"
#include "polyk/Tune.h"
#include "polyk/TuneRun.h"

#include <gtest/gtest.h>

#include <fstream>
#include <random>
#include <sstream>
#include <vector>

using namespace polyk;

namespace {

long long eval(const std::string &text, const std::vector<std::string> &names, const std::vector<long long> &values, bool *ok = nullptr) {
  TuneExpr e(text, names, SourceLoc{"t", 1, 1});
  bool good = true;
  long long v = e.eval(values, good);
  if (ok) *ok = good;
  return v;
}

} // namespace

TEST(Tune, ExpressionsFollowCPrecedence) {
  std::vector<std::string> n{"a", "k0.tile.0"};
  EXPECT_EQ(eval("1 + 2 * 3", n, {0, 0}), 7);
  EXPECT_EQ(eval("(1 + 2) * 3", n, {0, 0}), 9);
  EXPECT_EQ(eval("a % 4 == 0 && k0.tile.0 <= 64", n, {8, 64}), 1);
  EXPECT_EQ(eval("a % 4 == 0 && k0.tile.0 <= 64", n, {8, 65}), 0);
  EXPECT_EQ(eval("-a + 10 / 3", n, {2, 0}), 1);
  EXPECT_EQ(eval("!(a > 1) || a == 7", n, {7, 0}), 1);
  EXPECT_EQ(eval("a != 3", n, {3, 0}), 0);
  bool ok = true;
  eval("10 / a", n, {0, 0}, &ok);
  EXPECT_FALSE(ok); // division by zero violates the constraint
  eval("a * a", n, {4000000000LL, 0}, &ok);
  EXPECT_FALSE(ok); // so does an overflow
  eval("-a - 2", n, {9223372036854775807LL, 0}, &ok);
  EXPECT_FALSE(ok);
  EXPECT_THROW(TuneExpr("a +", n, {}), InputError);
  EXPECT_THROW(TuneExpr("b", n, {}), InputError);
  EXPECT_THROW(TuneExpr("a a", n, {}), InputError);
}

TEST(Tune, GenerationCountsWhatBruteForceCounts) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 40; ++trial) {
    Space s;
    s.name = "r";
    int np = 2 + (int)(rng() % 4);
    for (int i = 0; i < np; ++i) {
      SpaceParam p;
      p.name = "p" + std::to_string(i);
      for (int v = 0, n = 1 + (int)(rng() % 5); v < n; ++v) p.values.push_back((long long)(rng() % 9));
      s.params.push_back(p);
    }
    const char *ops[] = {"<=", "%", "!="};
    for (int c = 0, nc = (int)(rng() % 4); c < nc; ++c) {
      int a = (int)(rng() % np), b = (int)(rng() % np);
      std::string op = ops[rng() % 3];
      s.constraints.push_back(op == "%" ? "p" + std::to_string(a) + " % (p" + std::to_string(b) + " + 1) == 0"
                                        : "p" + std::to_string(a) + " " + op + " p" + std::to_string(b));
    }
    s.constraintsAt.assign(s.constraints.size(), SourceLoc{});
    // Brute force over the product of the value lists.
    std::vector<std::string> names;
    for (const auto &p : s.params) names.push_back(p.name);
    std::vector<TuneExpr> cons;
    for (const auto &c : s.constraints) cons.emplace_back(c, names, SourceLoc{});
    long long expected = 0;
    std::vector<size_t> at(s.params.size(), 0);
    while (true) {
      std::vector<long long> v;
      for (size_t i = 0; i < at.size(); ++i) v.push_back(s.params[i].values[at[i]]);
      bool all = true;
      for (const auto &c : cons) {
        bool ok = true;
        all = all && c.eval(v, ok) != 0 && ok;
      }
      expected += all;
      size_t i = at.size();
      while (i-- > 0 && ++at[i] == s.params[i].values.size()) at[i] = 0;
      if (i == (size_t)-1) break;
    }
    Generated g = generateSpace(s, 1000000);
    EXPECT_EQ(g.count, expected) << "trial " << trial;
    EXPECT_EQ((long long)g.first.size(), expected) << "trial " << trial;
    for (const auto &c : g.first)
      for (const auto &e : cons) {
        bool ok = true;
        EXPECT_NE(e.eval(c, ok), 0);
      }
  }
}

TEST(Tune, ProgramSpacesHoldTheirDefaults) {
  std::vector<const char *> examples{"blas/gemm.yaml", "panamera/sg4.yaml", "softmax.yaml"};
#ifndef POLYK_SANITIZED
  // The contractions' trees take 14 and 12 million leaves to count: 8 s here, about 170 s in the
  // sanitizer build (POLYK_SANITIZE), where the three small spaces check the same code.
  examples.insert(examples.end(), {"contraction/abcd_aebf_dfce.yaml", "contraction/abcdef_gdab_efgc.yaml"});
#endif
  for (const char *example : examples) {
    std::ifstream in(std::string("examples/") + example); // (ctest runs in the source tree)
    std::stringstream text;
    text << in.rdbuf();
    Space s = deriveSpace(flatten(readProgram(text.str(), example)));
    Space back = readSpace(writeSpace(s), "space.yaml");
    ASSERT_EQ(back.params.size(), s.params.size()) << example;
    Generated g = generateSpace(back, 1);
    EXPECT_GT(g.count, 1) << example;
    EXPECT_EQ(g.defaultViolates, "") << example;
  }
}

TEST(Tune, SpaceModelCompletesChecksAndKeysConfigurations) {
  Space s = readSpace("polyk: space/1\nname: t\nparameters:\n"
                      "  - {name: a, values: [1, 2, 4], default: 2}\n"
                      "  - {name: b, values: [1, 2], default: 1}\n"
                      "  - {name: c, expr: \"a * b\"}\n"
                      "constraints:\n  - \"c <= 4\"\n",
                      "t.yaml");
  SpaceModel m(s);
  std::vector<long long> d = m.defaults();
  EXPECT_EQ(d, (std::vector<long long>{2, 1, 2}));
  EXPECT_EQ(m.key(d), "a=2 b=1 c=2");
  std::vector<long long> v{4, 2, 0};
  EXPECT_EQ(m.complete(v), "c <= 4"); // c = 8
  EXPECT_EQ(v[2], 8);
  v = {3, 1, 0};
  EXPECT_EQ(m.complete(v), "a takes one of its values");
  // The key round-trips; the expression parameter may be left out; errors name what is wrong.
  EXPECT_EQ(m.parseKey("a=4 b=1 c=4", {}), (std::vector<long long>{4, 1, 4}));
  EXPECT_EQ(m.parseKey("b=2 a=1", {})[1], 2);
  EXPECT_THROW(m.parseKey("a=4", {}), InputError);      // b missing
  EXPECT_THROW(m.parseKey("a=4 z=1", {}), InputError);  // no such parameter
  EXPECT_THROW(m.parseKey("a=4x b=1", {}), InputError); // not an integer
}
