// program/1: a tensor program as the user writes it (DESIGN.md, "The input language"). The reader
// checks it completely (names, shapes, index extents, reductions) so later stages can rely on it.
#pragma once

#include "polyk/Expr.h"
#include "polyk/Types.h"
#include "polyk/YamlIO.h"

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace polyk {

enum class Role { Input, Output, Temporary };

/// Limits every reader enforces, so that sizes, element counts and the index arithmetic of
/// generated code (64-bit) cannot overflow.
constexpr long long kMaxExtent = 1LL << 40;
constexpr long long kMaxElements = 1LL << 48;
constexpr size_t kMaxRank = 16;

/// A C identifier: tensor, parameter, statement and kernel names are printed into C.
bool isIdentifier(const std::string &s);
const char *roleName(Role r);

/// One extent of a shape: a number, or a parameter name with the value `params` gives it.
struct Extent {
  std::string param; // empty for a literal
  long long value = 0;
  std::string str() const { return param.empty() ? std::to_string(value) : param; }
};

struct TensorDecl {
  std::string name;
  DType type = DType::F32;
  std::vector<Extent> shape;
  Role role = Role::Input;
  /// `padding: 0`: a read outside the tensor yields this value (a number literal) instead of
  /// being an error (CNNOpt's zero padding without a padded copy). Inputs and temporaries only.
  std::optional<std::string> padding;
  SourceLoc loc;

  long long elements() const {
    long long n = 1;
    for (const auto &e : shape) n *= e.value;
    return n;
  }
};

struct ProgramStatement {
  std::string text;
  SourceLoc loc;              // of the statement's first character
  Statement stmt;
  /// Loop order: the indices of the right-hand access with most indices, then the others.
  std::vector<std::string> iterators;
  std::vector<Extent> extents; // per iterator
  std::vector<bool> reduced;   // per iterator: not on the left of a reduction
};

/// `iterate: {steps: 1500, swap: {Tn: T}}`: the statements run `steps` times; each step reads, as
/// each swapped input, what the previous step wrote into its output (Hotspot's buffers swapped).
/// Before the first step each swapped output holds a copy of its input, so elements a step does
/// not write (a `where` clause's boundary) keep the input's values.
struct Iterate {
  Extent steps;                                            // a number or a parameter
  std::vector<std::pair<std::string, std::string>> swaps; // output -> the input it feeds
  SourceLoc loc;
  bool active() const { return !swaps.empty(); }
};
/// Reads and checks an `iterate:` section (absent: inactive).
Iterate readIterate(const YamlDoc &doc, const std::vector<std::pair<std::string, long long>> &params,
                    const std::vector<TensorDecl> &tensors);
void writeIterate(YAML::Emitter &out, const Iterate &it);

struct Program {
  std::string name;
  std::vector<std::pair<std::string, long long>> params;
  std::vector<TensorDecl> tensors;
  std::vector<ProgramStatement> statements;
  Iterate iterate;
  Provenance provenance;

  const TensorDecl *tensor(const std::string &n) const;
};

/// Checks one statement against `p`'s tensors and derives its loop nest (iterators, extents,
/// reduced dims); throws InputError at `ps.loc`.
void analyseStatement(ProgramStatement &ps, const Program &p);
/// A fresh reduction over dims of one element only (x[618, 1, 42630, 1] over dim 3): each output
/// combines one element with the identity, op(identity, x) = x, so polyk-flatten makes it a copy,
/// an assign statement whose source stays the reduction. Not for `&&` and `||` into numbers (0 or
/// 1, not x) nor for float max and min (they skip NaN). A sum's -0.0 comes out -0.0, not +0.0.
bool unitDimReduction(const ProgramStatement &ps, const Program &p);

Program readProgram(const std::string &text, const std::string &file);
std::string writeProgram(const Program &p);

/// Reads a `tensors:` mapping (shared by program/1 and the later kinds that copy it).
std::vector<TensorDecl> readTensors(const YamlDoc &doc, const YAML::Node &node,
                                    const std::vector<std::pair<std::string, long long>> &params);
void writeTensors(YAML::Emitter &out, const std::vector<TensorDecl> &tensors);
std::vector<std::pair<std::string, long long>> readParams(const YamlDoc &doc);
void writeParams(YAML::Emitter &out, const std::vector<std::pair<std::string, long long>> &params);

} // namespace polyk
