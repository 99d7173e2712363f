// Pieces shared by the C and CUDA printers: expression printing in a dialect, isl AST printing,
// linearised tensor indices, and the statement bodies as macros over the domain iterators.
// Private to libcore/codegen.
#pragma once

#include "polyk/Expr.h"
#include "polyk/Isl.h"
#include "polyk/Scop.h"

#include <functional>
#include <map>
#include <optional>
#include <set>
#include <stdexcept>
#include <vector>
#include <string>

namespace polyk::codegen {

enum class Dialect { C, Cuda };

/// A value in compute type `type` (weak: a literal whose type follows its context).
struct Value {
  std::string text;
  DType type;
  bool weak = false;
};

/// Loads an element of a tensor access (the k-th access of the statement), as compute type.
using AccessPrinter = std::function<std::string(const Access &, size_t k)>;

Value printValue(const ExprPtr &e, Dialect d, const AccessPrinter &access,
                 const std::map<std::string, DType> &tensorTypes);
/// `v` converted to compute type `t` (literals are spelled in `t`).
std::string convert(const Value &v, DType t);

std::string loadElement(Dialect d, DType t, const std::string &lvalue);
std::string storeValue(Dialect d, DType t, const std::string &computeValue);
/// Rounds a compute value to the precision of storage type `t` (f16 / bf16), else unchanged.
std::string roundToStorage(Dialect d, DType t, const std::string &computeValue);

/// The linearised index of an access map's target element, as a C expression of the domain
/// iterators (each spelled `(name)`, for use inside a macro).
std::string linearIndex(const std::string &accessMap, const TensorDecl &tensor);
/// The `d`-th subscript of an access map as a C expression of the domain iterators (each
/// spelled `(name)`).
std::string subscriptC(const std::string &accessMap, size_t d);

/// Values of AST iterators, put into expressions where a printer unrolls their loops.
using IteratorValues = std::map<std::string, long long>;
/// The value of an isl AST expression with `values` put in, where it is a constant.
std::optional<long long> exprValue(isl_ast_expr *e, const IteratorValues &values);
/// The C text of an isl AST expression with `values` put in and the constant parts folded;
/// islExprToC's text where `values` is empty.
std::string exprWithValues(isl_ast_expr *e, const IteratorValues &values);

/// The values an id of the generated code can take (inclusive): a block id from 0, a thread id
/// below its block's extent. The printer drops the guards of unrolled iterations they decide.
using IdRanges = std::map<std::string, std::pair<long long, long long>>;

/// Prints an isl AST. `user` prints a statement call; `mark` may print around a mark's child
/// (default: the child alone).
struct AstPrinter {
  std::function<std::string(const std::string &stmt, const std::vector<std::string> &args)> user;
  std::function<std::string(const std::string &mark, const std::string &body, int indent)> mark;
  /// With `annotations`, a node's annotation (set by a build callback) is a call's last argument
  /// and a mark's name (the affine path's register indices and staging points; the reduction
  /// path's VectorReads keeps its own annotations).
  bool annotations = false;
  /// Printed on its own line before each (non-degenerate) loop, e.g. an unroll pragma.
  std::string loopPrefix;
  /// Text printed before and after a (non-degenerate) loop, inside a block of its own (none when
  /// both are empty).
  std::function<std::pair<std::string, std::string>(const isl::ast_node &loop, int indent)> around;
  /// Where it returns text, that text is printed instead of the (non-degenerate) loop.
  std::function<std::optional<std::string>(const isl::ast_node &loop, int indent)> replace;
  /// Loops over these iterators (isl's c<depth>: the members of a register tile's band) inside a
  /// mark named `unrollMark` are unrolled by the printer: each iteration's body printed with the iterator's value put in and
  /// the expressions folded, under a guard where a bound is not constant. isl's own unrolling
  /// builds each iteration's AST anew: 2.3 s of GEMM 4096^3's emit, against 0.05 s this way.
  /// Where a loop's bounds have no constant cap, print throws UnrollRefused.
  std::set<std::string> unrolled;
  std::string unrollMark = "registers";
  /// Resolves an annotation starting with `notePrefix` (the register index of a call in the
  /// affine path: expressions of the unrolled iterators) for the iterators' current values.
  std::string notePrefix;
  IdRanges ranges;
  std::function<std::string(const std::string &note, const IteratorValues &values)> note;
  std::string print(const isl::ast_node &node, int indent) const;
  /// A call with its arguments and annotation as print would show them.
  struct Call {
    std::string stmt;
    std::vector<std::string> args;
    std::string note;
  };
  /// The calls `node` makes, in order, through blocks, marks other than `shared` and the loops
  /// in `unrolled` (constant bounds only); nullopt where it holds anything else.
  std::optional<std::vector<Call>> calls(const isl::ast_node &node) const;

private:
  std::string print(const isl::ast_node &node, int indent, const IteratorValues &values, bool under) const;
  std::string unrollLoop(const isl::ast_node &node, int indent, const IteratorValues &values) const;
  bool calls(const isl::ast_node &node, const IteratorValues &values, bool under, std::vector<Call> &out) const;
  std::string noteText(isl_ast_node *node, const IteratorValues &values) const;
};

/// AstPrinter::print's refusal to unroll a loop (its bounds have no constant cap).
struct UnrollRefused : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// The common prologue of generated files: index type, floord, min / max helpers.
std::string indexHelpers(Dialect d, bool wideIndices);

/// True when some tensor of `s` has 2^31 elements or more.
bool needsWideIndices(const Scop &s);

/// An affine subscript as C (each name parenthesised where `parenthesize`, for macros).
std::string affineC(const Affine &f, bool parenthesize);
/// `load`, or where `t` is padded and `a` may fall outside it, `(in bounds ? load : padding)`.
std::string paddedLoad(const TensorDecl &t, const Access &a, const std::string &load, bool parenthesize);
/// The `where` clause of `st` as a C condition (empty where there is none).
std::string whereCondition(const Statement &st, bool parenthesize);

/// The step loop of an iterated program (Program.h, Iterate), around host code that uses the
/// tensors by name: `begin` opens it (a scratch buffer per swapped output, each output and its
/// scratch a copy of the input, then per step the output or the scratch, alternating so the last
/// step writes the output, and the input or the previous step's result, shadowing the names),
/// `end` closes it. Both empty for a program that does not iterate.
struct IterateCode {
  std::string begin, end;
};
/// With `perLaunch` > 0 (time tiling), the loop is over launches of that many steps each, the last
/// running the steps left (`polyk_steps_now`).
IterateCode iterateCode(const Scop &s, bool cuda, long long perLaunch = 0);

/// The C condition on `dom`'s iterators (each spelled `(name)`) that a point of `ext` is in `dom`
/// (empty where every point of `ext` is; WholeTiles.cpp).
std::string domainGuard(const isl::set &dom, const isl::set &ext);

/// Functions of the harness: which program statements make the reference.
std::vector<ProgramStatement> originalStatements(const Scop &s, Program &p);

} // namespace polyk::codegen
