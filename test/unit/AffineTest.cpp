// The affine path (docs/affine.md): which programs take it, the statements flatten makes of them,
// the kernels schedule and bind give them, and literals printed in their context's type.
#include "polyk/Bind.h"
#include "polyk/Flatten.h"
#include "polyk/Isl.h"
#include "polyk/Schedule.h"

#include "../../libcore/codegen/CodegenInternal.h"

#include <gtest/gtest.h>

using namespace polyk;

namespace {
Program program(const std::string &tensors, const std::string &statements, const std::string &params = "") {
  return readProgram("polyk: program/1\nname: p\n" + params + "tensors:\n" + tensors + "statements:\n" + statements, "p.yaml");
}

const std::string kGemm = "  A: {type: f16, shape: [M, K], role: input}\n  B: {type: f16, shape: [K, N], role: input}\n"
                          "  C: {type: f16, shape: [M, N], role: output}\n";
} // namespace

TEST(Affine, PathChosenByAccessesNotByName) {
  EXPECT_TRUE(needsAffinePath(program(kGemm, "  - C(i, j) +=! A(i, k) * B(k, j)\n", "params: {M: 8, N: 9, K: 10}\n")));
  // GEMV reads A once per output: a row reduction, the Panamera path.
  EXPECT_FALSE(needsAffinePath(program("  A: {type: f32, shape: [8, 9], role: input}\n  x: {type: f32, shape: [9], role: input}\n"
                                       "  y: {type: f32, shape: [8], role: output}\n",
                                       "  - y(i) +=! A(i, k) * x(k)\n")));
  EXPECT_TRUE(needsAffinePath(program("  A: {type: f32, shape: [8], role: input}\n  B: {type: f32, shape: [8], role: output}\n",
                                      "  - B(i) = A(7 - i)\n")));
  EXPECT_TRUE(needsAffinePath(program("  A: {type: f32, shape: [8], role: input, padding: 0}\n  B: {type: f32, shape: [8], role: output}\n",
                                      "  - B(i) = A(i)\n")));
}

TEST(Affine, ReductionBecomesInitUpdateStoreThroughAnAccumulator) {
  Scop s = flatten(program(kGemm, "  - C(i, j) +=! A(i, k) * B(k, j)\n", "params: {M: 8, N: 9, K: 10}\n"));
  ASSERT_EQ(s.statements.size(), 3u);
  EXPECT_EQ(s.statements[0].kind, StmtKind::Init);
  EXPECT_EQ(s.statements[1].dims, (std::vector<std::string>{"parallel", "parallel", "reduced"}));
  EXPECT_EQ(s.statements[1].body, "(C_acc(i, j) + (A(i, k) * B(k, j)))");
  EXPECT_EQ(s.statements[2].body, "f16(C_acc(i, j))");
  const TensorDecl *acc = s.tensor("C_acc");
  ASSERT_TRUE(acc);
  EXPECT_EQ(acc->type, DType::F32); // f16 accumulates in f32
  EXPECT_EQ(acc->role, Role::Temporary);
}

TEST(Affine, WhereRestrictsTheUpdateNotTheInitOrStore) {
  // y(0) has no term: `+=!` still initialises it (to 0), as the reference does.
  Scop s = flatten(program("  x: {type: f32, shape: [N, N], role: input}\n  y: {type: f32, shape: [N], role: output}\n",
                           "  - y(i) +=! x(i, k) where k < i\n", "params: {N: 16}\n"));
  EXPECT_TRUE(isl::set(islCtx(), s.statements[1].domain)
                  .is_equal(isl::set(islCtx(), "[N] -> { S0[i, k] : 0 <= k < i < N }")));
  EXPECT_TRUE(isl::set(islCtx(), s.statements[2].domain).is_equal(isl::set(islCtx(), "[N] -> { S0_store[i] : 0 <= i < N }")));
}

TEST(Affine, OuterDimsFoldIntoZAndAccumulatorsGoToRegisters) {
  Scop s = flatten(program("  A: {type: f32, shape: [4, 5, 6, 7], role: input}\n  B: {type: f32, shape: [7, 3], role: input}\n"
                           "  C: {type: f32, shape: [4, 5, 6, 3], role: output}\n",
                           "  - C(a, b, c, d) +=! A(a, b, c, e) * B(e, d)\n"));
  ScheduleOptions o;
  o.sizes = "{ kernel[0] -> tile[1, 1, 8, 4]; kernel[0] -> block[1, 1, 8, 4] }";
  Scop b = bind(schedule(s, o), {});
  ASSERT_EQ(b.kernels.size(), 1u);
  EXPECT_EQ(b.kernels[0].grid[2], "20"); // a and b, 4 * 5 tiles of one
  EXPECT_EQ(b.kernels[0].promoted, (std::vector<std::string>{"C_acc"}));
  EXPECT_NE(b.schedule.find("blocks_z_z_y_x"), std::string::npos);
}

TEST(Affine, NegatedLiteralsTakeTheirContextsType) {
  using namespace codegen;
  std::map<std::string, DType> types{{"x", DType::F32}, {"d", DType::F64}};
  auto print = [&](const std::string &e) {
    return printValue(parseExpr(e), Dialect::C, [](const Access &a, size_t) { return a.tensor; }, types).text;
  };
  EXPECT_EQ(print("x(i) * -1.5"), "(x * (-1.5f))");
  EXPECT_EQ(print("d(i) * -1.5"), "(d * (-1.5))");
  EXPECT_EQ(print("pow(x(i), -2.5)"), "powf(x, (-2.5f))");
  // (Exponents with a cheaper form print as it: polyk/math.h.)
  EXPECT_EQ(print("pow(x(i), -1.5)"), "polyk_powm1_5f(x)");
  EXPECT_EQ(print("pow(d(i), -0.5)"), "polyk_powm0_5(d)");
  EXPECT_EQ(print("pow(x(i), 2)"), "polyk_pow2f(x)");
  EXPECT_EQ(print("pow(x(i), 3)"), "powf(x, 3.0f)");
}
