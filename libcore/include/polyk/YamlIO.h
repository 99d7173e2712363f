// YAML helpers shared by the readers and writers of every file kind: parsing with positions for
// diagnostics, the `polyk: kind/version` header check, typed field access that reports where a
// value is wrong, and the provenance list every stage appends to.
#pragma once

#include "polyk/Diagnostics.h"

#include <string>
#include <vector>
#include <yaml-cpp/yaml.h>

namespace polyk {

/// A YAML document with the name of the file it came from, for diagnostics.
struct YamlDoc {
  std::string file;
  YAML::Node root;

  SourceLoc loc(const YAML::Node &n) const;
  /// Position of the first character of a scalar's value (inside its quotes, if any).
  SourceLoc valueLoc(const YAML::Node &n) const;
  const YAML::Node field(const YAML::Node &map, const std::string &key) const; // required
  std::string str(const YAML::Node &n) const;
  long long integer(const YAML::Node &n) const;
};

YamlDoc parseYaml(const std::string &text, const std::string &file);

/// Checks `polyk: <kind>/<version>`; a mismatch is an InputError at the value.
void expectKind(const YamlDoc &doc, const std::string &kind, int version);

struct ProvenanceEntry {
  std::string stage, version, options;
};
using Provenance = std::vector<ProvenanceEntry>;

Provenance readProvenance(const YamlDoc &doc);
void writeProvenance(YAML::Emitter &out, const Provenance &p);
/// The entry for the running tool (its name, polyk's version, its options).
ProvenanceEntry currentStage(const std::string &stage);

/// Emits a string as a double-quoted scalar (isl text, expressions).
void emitQuoted(YAML::Emitter &out, const std::string &s);
/// Emits a multi-line string as a literal block scalar (isl schedule trees).
void emitLiteral(YAML::Emitter &out, const std::string &s);
std::string finish(YAML::Emitter &out);

/// `s` as a JSON string literal (quotes and escapes): the tuning log's and Kernel Tuner's files.
std::string jsonQuoted(const std::string &s);

} // namespace polyk
