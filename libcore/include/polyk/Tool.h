// The command-line contract shared by every polyk tool (STYLE.md): input positional or `-`,
// `-o` written only on success (temporary file + rename), --help / --version on stdout, logs on
// stderr (-v / -q), errors as `tool: file:line:col: error: message`, exit 0 / 1 bad input /
// 2 bad usage. A tool's main() declares its options and hands one function to runTool.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <map>
#include <string>

namespace polyk {

struct ToolInput {
  std::string name; // as given on the command line
  std::string displayName; // "<stdin>" for "-"
  std::string text;
};

/// Files a tool produces besides its main output; written, like it, only on success.
using ExtraOutputs = std::map<std::string, std::string>;

struct ToolSpec {
  std::string name;
  std::string description;
  std::function<void(CLI::App &)> addOptions;
  /// Returns the main output's text. Throws InputError (exit 1) or UsageError (exit 2).
  std::function<std::string(const ToolInput &, ExtraOutputs &)> run;
  /// Options whose value names a file: left out of provenance, like -o and the input.
  std::vector<std::string> fileOptions = {};
  /// The default of --time-limit (0: none, for a tool that runs as long as it is asked to).
  double defaultTimeLimit = 300;
};


int runTool(int argc, char **argv, const ToolSpec &spec);

/// Writes `text` to `path` ("-" = stdout) through a temporary file renamed on success.
void writeFileAtomically(const std::string &path, const std::string &text);

/// The options as given, for the `provenance:` entry ("-o" and the input left out).
const std::string &commandLineOptions();

} // namespace polyk
