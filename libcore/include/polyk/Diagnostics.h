// Diagnostics: positions in input files and the error type every stage throws for bad input.
// Tools print them as `tool: file:line:col: error: message` (GNU / LLVM style, 1-based).
#pragma once

#include <stdexcept>
#include <string>

namespace polyk {

struct SourceLoc {
  std::string file; // "<stdin>" for standard input
  int line = 0;     // 1-based; 0 when unknown
  int col = 0;      // 1-based; 0 when unknown

  SourceLoc shifted(int columns) const {
    SourceLoc l = *this;
    if (l.col > 0) l.col += columns;
    return l;
  }
};

/// Bad input: the tool reports it and exits 1, writing no output.
class InputError : public std::runtime_error {
public:
  InputError(SourceLoc loc, const std::string &message)
      : std::runtime_error(message), loc_(std::move(loc)) {}
  const SourceLoc &loc() const { return loc_; }

private:
  SourceLoc loc_;
};

/// Bad usage (options): the tool reports it and exits 2.
class UsageError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

[[noreturn]] void fail(const SourceLoc &loc, const std::string &message);

/// `file:line:col: error: message`, leaving out the parts that are unknown.
std::string formatDiagnostic(const SourceLoc &loc, const std::string &message);

} // namespace polyk
