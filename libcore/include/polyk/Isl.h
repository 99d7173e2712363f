// Small helpers around isl's C++ bindings: the one context polyk uses, checked parsing of isl
// text with a position in the YAML file for errors (isl's own messages carry none), block-style
// printing of schedule trees, and C text of isl expressions.
#pragma once

#include "polyk/Diagnostics.h"

#include <isl/cpp.h>
#include <sstream>
#include <functional>
#include <string>

namespace polyk {

/// isl's text of any isl object.
template <class T> std::string islStr(const T &obj) {
  std::ostringstream os;
  os << obj;
  return os.str();
}

enum class IslKind { Set, UnionSet, Map, UnionMap, MultiAff, Schedule };

/// isl's work on one file is bounded (isl_ctx_set_max_operations): a file edited into
/// quasi-affine accesses can make the scheduler's ILP run for hours. Past the budget isl fails
/// with a quota error, which a stage reports as bad input. Each reader and stage starts afresh.
/// POLYK_ISL_OPERATIONS=N sets another budget (0: none).
constexpr unsigned long kIslOperationBudget = 20'000'000;
void resetIslBudget();

/// Runs a stage over a file its reader checked. What the checks cannot rule out in a tree edited by
/// hand (a band without the point band below it, say) surfaces as an isl error or a broken
/// expectation of the stage: reported at `at` as bad input, never as a crash.
template <class F> auto reportedAt(const SourceLoc &at, const std::string &stage, F &&run) -> decltype(run()) {
  resetIslBudget();
  try {
    return run();
  } catch (const InputError &) {
    throw;
  } catch (const UsageError &) {
    throw;
  } catch (const isl::exception &e) {
    fail(at, stage + " cannot process this file: isl: " + e.what());
  } catch (const std::runtime_error &e) {
    fail(at, stage + " cannot process this file: " + e.what());
  }
}

/// The process-wide isl context (errors become isl::exception, nothing printed by isl), or the
/// calling thread's own while an IslThreadContext lives in it.
isl::ctx islCtx();

/// A context of its own for the thread that holds this (isl objects cannot be shared across
/// threads): polyk-tune's workers each build their variants through the stages with one. No isl
/// object made under it may outlive it.
class IslThreadContext {
public:
  IslThreadContext();
  ~IslThreadContext();
  IslThreadContext(const IslThreadContext &) = delete;
  IslThreadContext &operator=(const IslThreadContext &) = delete;

private:
  isl_ctx *ctx_;
};

/// Throws InputError at `loc` when `text` does not parse as `kind`.
void checkIslText(const std::string &text, IslKind kind, const SourceLoc &loc);

/// Parse and print back: isl's normal form, used for deterministic output.
std::string normalizeSet(const std::string &text);
std::string normalizeMap(const std::string &text);

isl::schedule readIslSchedule(const std::string &text);
/// A schedule tree in isl's block YAML style.
std::string printScheduleBlock(const isl::schedule &s);

struct TensorDecl;
/// An access map's element as a row-major linear index, an affine function of the domain
/// iterators; null for scalars and symbolic extents (a symbolic extent times an iterator is not
/// affine).
isl::pw_aff linearIndexAff(const std::string &accessMap, const TensorDecl &tensor);

/// Gaps of the C++ bindings of isl 0.25, filled from the C API.
isl::union_set nodeDomain(const isl::schedule_node &node);
isl::space bandSpace(const isl::schedule_node &band);
long long pointCoordinate(const isl::point &pt, int pos);
bool mapInvolvesInputDim(const isl::map &m, unsigned dim);
/// The subscripts of an access as a function (its output dims), and whether subscript `sub`
/// moves with input dim `dim`.
unsigned subscriptCount(const isl::pw_multi_aff &access);
bool subscriptMoves(const isl::pw_multi_aff &access, unsigned sub, size_t dim);
std::string markName(const isl::schedule_node &mark);
isl::schedule_node deleteNode(const isl::schedule_node &node);

/// C text of a piecewise affine expression of the parameters (via isl's AST builder).
std::string cExpression(const isl::pw_aff &pa);

/// C text of an isl AST expression: polyk_floord / polyk_min / polyk_max for isl's operations
/// C lacks (generated files define them).
std::string islExprToC(isl_ast_expr *e);
/// The C text of isl AST operation `e` with its arguments' texts from `arg` (islExprToC's format).
std::string islOpToC(isl_ast_expr *e, const std::function<std::string(int)> &arg);


} // namespace polyk
