// The statement language: precedence, round trip through the printer, error positions.
#include "polyk/Expr.h"

#include <gtest/gtest.h>

using namespace polyk;

TEST(Expr, PrecedenceMulBindsTighterThanAdd) {
  EXPECT_EQ(printExpr(parseExpr("a(i) + b(i) * 2.0")), "(a(i) + (b(i) * 2.0))");
  EXPECT_EQ(printExpr(parseExpr("(a(i) + b(i)) * 2")), "((a(i) + b(i)) * 2)");
  EXPECT_EQ(printExpr(parseExpr("a(i) < 1 && b(i) > 2 || c(i) == 0")), "(((a(i) < 1) && (b(i) > 2)) || (c(i) == 0))");
}

TEST(Expr, StatementKindsAndReductions) {
  Statement s = parseStatement("out(h) +=! t(b, s, h)");
  EXPECT_EQ(s.lhs.tensor, "out");
  EXPECT_EQ(s.assignOp, "+=");
  EXPECT_TRUE(s.freshlyInitialised);
  EXPECT_EQ(s.reduceOp(), ReduceOp::Sum);
  EXPECT_EQ(parseStatement("m(i) max=! x(i, j)").reduceOp(), ReduceOp::Max);
  EXPECT_EQ(parseStatement("m(i) min=! x(i, j)").reduceOp(), ReduceOp::Min);
  EXPECT_EQ(parseStatement("m(i) &&=! x(i, j)").reduceOp(), ReduceOp::And);
  EXPECT_EQ(parseStatement("m(i) ||=! x(i, j)").reduceOp(), ReduceOp::Or);
  EXPECT_EQ(parseStatement("m(i) *=! x(i, j)").reduceOp(), ReduceOp::Prod);
  EXPECT_FALSE(parseStatement("y(i) = x(i)").reduceOp().has_value());
  EXPECT_EQ(parseStatement("s() +=! x(i)").lhs.indices.size(), 0u);
}

TEST(Expr, RoundTripIsStable) {
  for (const char *text : {"y(i, j) = f16(x(i, j) * 2.5e-3) + max(a(i), -b(j))",
                           "y(i) = select(x(i) > 0, exp(x(i)), sqrt(abs(x(i))))",
                           "y(i) = !(x(i) && z(i)) || 3 % 2 == 1"}) {
    std::string once = printStatement(parseStatement(text));
    EXPECT_EQ(printStatement(parseStatement(once)), once) << text;
  }
}

TEST(Expr, CollectsAccessesInOrder) {
  ExprPtr e = parseExpr("(x(b, s, h) + 1.0) * y(h)");
  std::vector<const Access *> acc;
  collectAccesses(e, acc);
  ASSERT_EQ(acc.size(), 2u);
  EXPECT_EQ(acc[0]->tensor, "x");
  EXPECT_EQ(acc[1]->tensor, "y");
  EXPECT_EQ(acc[0]->indices, (std::vector<std::string>{"b", "s", "h"}));
}

TEST(Expr, ErrorsPointAtTheOffendingCharacter) {
  try {
    parseStatement("y(i) = x(i) $ 2");
    FAIL() << "no error";
  } catch (const ParseError &e) {
    EXPECT_EQ(e.offset, 12);
  }
  try {
    parseStatement("y(i) = x(i * j)");
    FAIL() << "no error";
  } catch (const ParseError &e) {
    EXPECT_EQ(e.offset, 13);
    EXPECT_NE(e.message.find("non-affine subscript: 'i * j' multiplies two names"), std::string::npos);
  }
  EXPECT_THROW(parseStatement("y(i) = exp(x(i), 2)"), ParseError);
  EXPECT_THROW(parseStatement("y(i) x(i)"), ParseError);
}

TEST(Expr, AffineSubscriptsParseAndPrintBack) {
  Statement s = parseStatement("O(k, y, x) +=! W(k, c, fy, fx) * I(c, 2*y + fy, x*2 + fx - 1)");
  std::vector<const Access *> acc;
  collectAccesses(s.rhs, acc);
  ASSERT_EQ(acc.size(), 2u);
  EXPECT_TRUE(acc[0]->plain());
  EXPECT_FALSE(acc[1]->plain());
  EXPECT_EQ(acc[1]->indices, (std::vector<std::string>{"c", "2*y + fy", "2*x + fx - 1"}));
  EXPECT_EQ(acc[1]->subscripts[2].constant, -1);
  Statement back = parseStatement(printStatement(s));
  EXPECT_EQ(printStatement(back), printStatement(s));
  Statement r = parseStatement("y(i) = x(N - 1 - i) + x(i - i + 3) + x(-i + 2)");
  acc.clear();
  collectAccesses(r.rhs, acc);
  EXPECT_EQ(acc[0]->indices[0], "N - i - 1");
  EXPECT_EQ(acc[1]->indices[0], "3"); // i - i cancels
  EXPECT_EQ(acc[2]->indices[0], "-i + 2");
}

TEST(Expr, NonAffineSubscriptsAreErrors) {
  for (const char *text : {"y(i) = x(i / 2)", "y(i) = x(i % 2)", "y(i) = x(i * j)", "y(i) = x(exp(i))",
                           "y(i) = x((i))", "y(i) = x(1.5)", "y(i) = x(i * 2 * 3)"}) {
    try {
      parseStatement(text);
      ADD_FAILURE() << "accepted " << text;
    } catch (const ParseError &e) {
      EXPECT_NE(e.message.find("subscript"), std::string::npos) << text << ": " << e.message;
    }
  }
}

TEST(Expr, WhereClausesAreComparisonChains) {
  Statement s = parseStatement("B(i, j) = A(i + 1, j) + A(i - 1, j) where 1 <= i < N - 1, j >= 1, j <= M - 2");
  ASSERT_EQ(s.where.size(), 4u);
  EXPECT_EQ(s.where[0].op, "<=");
  EXPECT_EQ(s.where[1].lhs.str(), "i");
  EXPECT_EQ(s.where[1].rhs.str(), "N - 1");
  EXPECT_EQ(s.whereText, "1 <= i < N - 1, j >= 1, j <= M - 2");
  EXPECT_EQ(printStatement(parseStatement(printStatement(s))), printStatement(s));
  EXPECT_THROW(parseStatement("B(i) = A(i) where i"), ParseError);
  EXPECT_THROW(parseStatement("B(i) = A(i) where i < j * k"), ParseError);
}
