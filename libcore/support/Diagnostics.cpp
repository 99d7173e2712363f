// Formatting of diagnostics (see Diagnostics.h).
#include "polyk/Diagnostics.h"

namespace polyk {

void fail(const SourceLoc &loc, const std::string &message) { throw InputError(loc, message); }

std::string formatDiagnostic(const SourceLoc &loc, const std::string &message) {
  std::string out;
  if (!loc.file.empty()) {
    out += loc.file;
    if (loc.line > 0) {
      out += ":" + std::to_string(loc.line);
      if (loc.col > 0) out += ":" + std::to_string(loc.col);
    }
    out += ": ";
  }
  return out + "error: " + message;
}

} // namespace polyk
