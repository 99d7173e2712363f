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

/// An affine subscript or bound: integer coefficients times names (indices or parameters) plus a
/// constant, e.g. `2*y + fy - 1`, `N - 1 - i`.
struct Affine {
  std::vector<std::pair<std::string, long long>> terms; // first appearance order; no zero coefficients
  long long constant = 0;
  /// A plain index name (`i`): the subscripts whose tensor extent gives the index its range.
  bool isName() const { return terms.size() == 1 && terms[0].second == 1 && constant == 0; }
  /// `2*y + fy - 1`: parses back to the same value; a plain name prints as itself.
  std::string str() const;
};

struct Access {
  std::string tensor;
  std::vector<std::string> indices; // per dim: the subscript's text (Affine::str), a name if plain
  std::vector<Affine> subscripts;   // per dim
  int offset = 0;                   // of the tensor name in the statement text
  std::vector<int> indexOffsets;
  /// Sets plain index names as the subscripts (the flatten passes rename and permute them).
  void setPlain(const std::vector<std::string> &names);
  bool plain() const {
    for (const auto &s : subscripts)
      if (!s.isName()) return false;
    return true;
  }
};

/// One constraint of a `where` clause: lhs op rhs with op one of < <= > >= ==.
struct Constraint {
  Affine lhs, rhs;
  std::string op;
  int offset = 0;
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
  /// `where 1 <= i < N - 1, ...`: restricts the statement's instances (a chain is two constraints).
  std::vector<Constraint> where;
  std::string whereText;          // the clause as written after `where`, for printing
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
