// YAML helpers (see YamlIO.h). yaml-cpp marks are 0-based; diagnostics are 1-based.
#include "polyk/YamlIO.h"

#include "polyk/Tool.h"

#include <cstdio>

namespace polyk {

SourceLoc YamlDoc::loc(const YAML::Node &n) const {
  auto m = n.Mark();
  if (m.line < 0) return {file};
  return {file, m.line + 1, m.column + 1};
}

SourceLoc YamlDoc::valueLoc(const YAML::Node &n) const {
  SourceLoc l = loc(n);
  // yaml-cpp tags quoted scalars "!" and plain ones "?": the text starts after the quote.
  if (n.IsScalar() && n.Tag() == "!") l = l.shifted(1);
  return l;
}

const YAML::Node YamlDoc::field(const YAML::Node &map, const std::string &key) const {
  if (!map.IsMap()) fail(loc(map), "expected a mapping with key '" + key + "'");
  YAML::Node v = map[key];
  if (!v) fail(loc(map), "missing key '" + key + "'");
  return v;
}

std::string YamlDoc::str(const YAML::Node &n) const {
  if (!n.IsScalar()) fail(loc(n), "expected a scalar");
  return n.Scalar();
}

long long YamlDoc::integer(const YAML::Node &n) const {
  std::string s = str(n);
  try {
    size_t pos = 0;
    long long v = std::stoll(s, &pos);
    if (pos == s.size()) return v;
  } catch (...) {
  }
  fail(valueLoc(n), "expected an integer, found '" + s + "'");
}

YamlDoc parseYaml(const std::string &text, const std::string &file) {
  YamlDoc doc{file, {}};
  try {
    doc.root = YAML::Load(text);
  } catch (const YAML::ParserException &e) {
    fail({file, e.mark.line + 1, e.mark.column + 1}, "malformed YAML: " + e.msg);
  }
  if (!doc.root || doc.root.IsNull()) fail({file, 1, 1}, "empty document");
  if (!doc.root.IsMap()) fail(doc.loc(doc.root), "expected a mapping at the top level");
  return doc;
}

void expectKind(const YamlDoc &doc, const std::string &kind, int version) {
  YAML::Node k = doc.root["polyk"];
  if (!k) fail(doc.loc(doc.root), "missing 'polyk: " + kind + "/" + std::to_string(version) + "' header");
  std::string want = kind + "/" + std::to_string(version);
  std::string got = doc.str(k);
  if (got == want) return;
  auto slash = got.find('/');
  if (slash != std::string::npos && got.substr(0, slash) == kind)
    fail(doc.valueLoc(k), "unsupported version '" + got + "' (this tool reads " + want + ")");
  fail(doc.valueLoc(k), "expected a '" + want + "' file, found '" + got + "'");
}

Provenance readProvenance(const YamlDoc &doc) {
  Provenance p;
  YAML::Node list = doc.root["provenance"];
  if (!list) return p;
  if (!list.IsSequence()) fail(doc.loc(list), "'provenance' must be a list");
  for (const auto &e : list) {
    ProvenanceEntry entry;
    entry.stage = doc.str(doc.field(e, "stage"));
    entry.version = e["version"] ? doc.str(e["version"]) : "";
    entry.options = e["options"] ? doc.str(e["options"]) : "";
    p.push_back(entry);
  }
  return p;
}

void writeProvenance(YAML::Emitter &out, const Provenance &p) {
  out << YAML::Key << "provenance" << YAML::Value << YAML::BeginSeq;
  for (const auto &e : p) {
    out << YAML::Flow << YAML::BeginMap;
    out << YAML::Key << "stage" << YAML::Value << e.stage;
    out << YAML::Key << "version" << YAML::Value << e.version;
    out << YAML::Key << "options" << YAML::Value;
    emitQuoted(out, e.options);
    out << YAML::EndMap;
  }
  out << YAML::EndSeq;
}

ProvenanceEntry currentStage(const std::string &stage) {
  return {stage, POLYK_VERSION, commandLineOptions()};
}

void emitQuoted(YAML::Emitter &out, const std::string &s) { out << YAML::DoubleQuoted << s; }

void emitLiteral(YAML::Emitter &out, const std::string &s) {
  if (s.find('\n') == std::string::npos) out << YAML::DoubleQuoted << s;
  else out << YAML::Literal << s;
}

std::string finish(YAML::Emitter &out) {
  if (!out.good()) throw std::runtime_error("internal error writing YAML: " + out.GetLastError());
  return std::string(out.c_str()) + "\n";
}

std::string jsonQuoted(const std::string &s) {
  std::string o = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') o += '\\', o += (char)c;
    else if (c == '\n') o += "\\n";
    else if (c == '\t') o += "\\t";
    else if (c < 0x20) {
      char b[8];
      std::snprintf(b, sizeof b, "\\u%04x", c);
      o += b;
    } else o += (char)c;
  }
  return o + "\"";
}

} // namespace polyk
