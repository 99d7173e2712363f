// The statement language of program/1 (DESIGN.md, "The input language"), in the style of Tensor
// Comprehensions: `out(h) +=! t(b, s, h)`, `t(i, j) = (x(i, j) + 1.0) * x(i, j)`. A statement is
// an access on the left, an assignment operator, and an expression; indices are plain names whose
// ranges come from the shapes of the tensors they index.
#pragma once

#include "polyk/Types.h"

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace polyk {

struct Expr;
using ExprPtr = std::shared_ptr<Expr>;

struct Access {
  std::string tensor;
  std::vector<std::string> indices;
  int offset = 0;                   // of the tensor name in the statement text
  std::vector<int> indexOffsets;
};

struct Expr {
  enum class Kind { Number, Access, Unary, Binary, Call, Select };
  Kind kind;
  int offset = 0;       // position in the statement text, for diagnostics
  std::string text;     // Number: literal; Unary / Binary: operator; Call: function or cast name
  bool isFloatLiteral = false;
  Access access;        // Kind::Access
  std::vector<ExprPtr> args;
};

struct Statement {
  Access lhs;
  std::string assignOp;           // "=", "+=", "*=", "max=", "min=", "&&=", "||="
  bool freshlyInitialised = false; // the `!` of `+=!`
  ExprPtr rhs;
  std::optional<ReduceOp> reduceOp() const { return parseReduceOp(assignOp); }
};

/// A syntax error at `offset` in the parsed text.
struct ParseError {
  int offset;
  std::string message;
};

/// Parses a statement; throws ParseError.
Statement parseStatement(const std::string &text);
/// Parses an expression (the right-hand side alone); throws ParseError.
ExprPtr parseExpr(const std::string &text);

/// Every access in `e`, in order of appearance (left to right).
void collectAccesses(const ExprPtr &e, std::vector<const Access *> &out);

/// Prints `e` back in the input syntax (round trip: parse(print(e)) == e).
std::string printExpr(const ExprPtr &e);
std::string printStatement(const Statement &s);

/// Functions the language knows: name, arity.
bool isKnownFunction(const std::string &name, size_t arity);

} // namespace polyk
