// The auto-tuning community's file formats, as Kernel Tuner reads and writes them (the Lorentz
// Center workshop's schemas): T1, a tuning problem (its ConfigurationSpace: parameters with
// their values, conditions in Python syntax; a Budget; a Search), and T4, results (one record
// per configuration: its values, times, validity). polyk writes its space as T1 and reads a T1
// file back as a space (a user's edits, or a problem written for another tuner), and writes a
// tuning log as T4. Names: polyk's `k0.tile.0` is `k0_tile_0` there (Python identifiers).
#include "polyk/KernelTuner.h"

#include "polyk/YamlIO.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <sstream>

namespace polyk {

namespace {


std::string identifier(const std::string &name) {
  std::string o = name;
  std::replace(o.begin(), o.end(), '.', '_');
  return o;
}

/// A polyk expression (C operators) in Python's syntax, names as identifiers: && and, || or,
/// / // (integer division), ! not. C's ! binds tighter than comparisons and Python's not looser,
/// so `!x` becomes `(not x)`, x a name, a number or a parenthesised expression.
std::string toPython(const std::string &e) {
  std::string o;
  auto operandEnd = [&](size_t i) { // the end of the operand starting at or after i
    while (i < e.size() && e[i] == ' ') ++i;
    if (i < e.size() && e[i] == '(') {
      for (int depth = 0; i < e.size(); ++i) {
        depth += e[i] == '(' ? 1 : e[i] == ')' ? -1 : 0;
        if (depth == 0) return i + 1;
      }
      return e.size();
    }
    while (i < e.size() && (std::isalnum((unsigned char)e[i]) || e[i] == '_' || e[i] == '.')) ++i;
    return i;
  };
  for (size_t i = 0; i < e.size(); ++i) {
    char c = e[i];
    if (c == '&' && i + 1 < e.size() && e[i + 1] == '&') o += " and ", ++i;
    else if (c == '|' && i + 1 < e.size() && e[i + 1] == '|') o += " or ", ++i;
    else if (c == '!' && !(i + 1 < e.size() && e[i + 1] == '=')) {
      size_t end = operandEnd(i + 1);
      o += "(not " + toPython(e.substr(i + 1, end - i - 1)) + ")";
      i = end - 1;
    } else if (c == '/') o += "//";
    else if (c == '.') o += '_';
    else o += c;
  }
  // Collapse the spaces the words brought.
  std::string t;
  for (char c : o)
    if (!(c == ' ' && (t.empty() || t.back() == ' ' || t.back() == '('))) t += c;
  while (!t.empty() && t.back() == ' ') t.pop_back();
  return t;
}

/// A T1 condition (Python) as a polyk expression over `names` (each known by its identifier);
/// an error at `at` (shifted to the column) for what polyk's expressions lack.
std::string fromPython(const std::string &e, const std::vector<std::string> &names, const SourceLoc &at) {
  std::string o;
  for (size_t i = 0; i < e.size();) {
    char c = e[i];
    if (std::isalpha((unsigned char)c) || c == '_') {
      size_t j = i;
      while (j < e.size() && (std::isalnum((unsigned char)e[j]) || e[j] == '_')) ++j;
      std::string word = e.substr(i, j - i);
      if (word == "and") o += " && ";
      else if (word == "or") o += " || ";
      else if (word == "not") {
        // Python's not binds looser than comparisons, C's ! tighter: only `not (...)` says the same.
        size_t k = j;
        while (k < e.size() && e[k] == ' ') ++k;
        if (k >= e.size() || e[k] != '(')
          fail(at.shifted((int)i), "write 'not (...)': polyk's ! binds tighter than Python's not");
        o += " !";
      }
      else if (word == "True") o += "1";
      else if (word == "False") o += "0";
      else {
        auto it = std::find_if(names.begin(), names.end(), [&](const std::string &n) { return identifier(n) == word; });
        if (it == names.end()) fail(at.shifted((int)i), "unknown parameter '" + word + "' in a condition");
        o += *it;
      }
      i = j;
    } else if (c == '/' && i + 1 < e.size() && e[i + 1] == '/') {
      o += "/";
      i += 2;
    } else if (c == '/') {
      fail(at.shifted((int)i), "'/' is Python's true division; polyk's parameters are integers: write '//'");
    } else if (c == '*' && i + 1 < e.size() && e[i + 1] == '*') {
      fail(at.shifted((int)i), "'**' (a power) is not among polyk's operators (+ - * / % comparisons and or not)");
    } else {
      o += c;
      ++i;
    }
  }
  return o;
}

/// `e` with each whole name `from` replaced by `to`.
std::string substitute(const std::string &e, const std::string &from, const std::string &to) {
  auto part = [](char c) { return std::isalnum((unsigned char)c) || c == '_' || c == '.'; };
  std::string o;
  for (size_t i = 0; i < e.size();) {
    if (part(e[i])) {
      size_t j = i;
      while (j < e.size() && part(e[j])) ++j;
      std::string word = e.substr(i, j - i);
      o += word == from ? to : word;
      i = j;
    } else {
      o += e[i++];
    }
  }
  return o;
}

std::string list(const std::vector<long long> &v) {
  std::string o = "[";
  for (size_t i = 0; i < v.size(); ++i) o += (i ? ", " : "") + std::to_string(v[i]);
  return o + "]";
}

} // namespace

std::string writeT1(const Space &s, const std::string &programFile) {
  std::ostringstream o;
  o << "{\n  \"General\": {\"FormatVersion\": 1, \"TimeUnit\": \"Microseconds\", \"OutputFormat\": \"JSON\"},\n";
  o << "  \"ConfigurationSpace\": {\n    \"TuningParameters\": [\n";
  bool first = true;
  std::vector<std::string> conditions;
  for (const auto &p : s.params) {
    if (!p.expr.empty()) {
      // A parameter polyk derives from others: in T1, a condition on a parameter of its values.
      continue;
    }
    o << (first ? "" : ",\n") << "      {\"Name\": " << jsonQuoted(identifier(p.name)) << ", \"Type\": \"int\", \"Values\": " << jsonQuoted(list(p.values))
      << ", \"Default\": " << p.fallback << "}";
    first = false;
  }
  o << "\n    ],\n    \"Conditions\": [\n";
  first = true;
  for (std::string c : s.constraints) {
    // Derived parameters spelled out (latest first: an expression uses earlier parameters only).
    for (auto p = s.params.rbegin(); p != s.params.rend(); ++p)
      if (!p->expr.empty()) c = substitute(c, p->name, "(" + p->expr + ")");
    std::vector<std::string> used;
    for (const auto &p : s.params)
      if (p.expr.empty() && substitute(c, p.name, "\x01") != c) used.push_back(jsonQuoted(identifier(p.name)));
    std::string params;
    for (size_t i = 0; i < used.size(); ++i) params += (i ? ", " : "") + used[i];
    o << (first ? "" : ",\n") << "      {\"Parameters\": [" << params << "], \"Expression\": " << jsonQuoted(toPython(c)) << "}";
    first = false;
  }
  o << "\n    ]\n  },\n";
  o << "  \"KernelSpecification\": {\"Language\": \"CUDA\", \"KernelName\": " << jsonQuoted(s.name) << ", \"KernelFile\": " << jsonQuoted(programFile)
    << ", \"CompilerOptions\": [\"-arch=sm_90\"], \"GlobalSize\": {\"X\": \"polyk-bind's grid\"}, \"LocalSize\": {\"X\": \"polyk-bind's block\"}}\n}\n";
  return o.str();
}

T1Problem readT1(const std::string &text, const std::string &file, const Space &derived) {
  YamlDoc doc = parseYaml(text, file);
  if (!doc.root.IsMap()) fail(doc.loc(doc.root), "not a T1 tuning problem (a JSON object with ConfigurationSpace)");
  T1Problem t;
  t.space = derived;
  YAML::Node spec = doc.field(doc.root, "KernelSpecification");
  if (spec.IsMap() && spec["KernelName"] && doc.str(spec["KernelName"]) != derived.name)
    fail(doc.valueLoc(spec["KernelName"]), "this problem is of kernel '" + doc.str(spec["KernelName"]) + "', not program '" + derived.name + "'");
  YAML::Node cs = doc.field(doc.root, "ConfigurationSpace");
  YAML::Node tps = doc.field(cs, "TuningParameters");
  if (!tps.IsSequence()) fail(doc.loc(tps), "TuningParameters must be a list");
  std::vector<std::string> names;
  for (const auto &p : derived.params) names.push_back(p.name);
  for (const auto &tp : tps) {
    if (!tp.IsMap()) fail(doc.loc(tp), "a tuning parameter is an object {Name, Type, Values}");
    std::string id = doc.str(doc.field(tp, "Name"));
    auto it = std::find_if(t.space.params.begin(), t.space.params.end(), [&](const SpaceParam &p) { return identifier(p.name) == id; });
    if (it == t.space.params.end()) fail(doc.valueLoc(tp["Name"]), "'" + id + "' is not a parameter of " + derived.name + "'s space");
    if (!it->expr.empty()) fail(doc.valueLoc(tp["Name"]), "'" + id + "' is derived by polyk (" + it->expr + "), not tuned");
    std::string type = doc.str(doc.field(tp, "Type"));
    if (type != "int" && type != "uint") fail(doc.valueLoc(tp["Type"]), "polyk's parameters are integers: Type 'int', not '" + type + "'");
    // Values: a string holding a list (T1's form), or the list itself.
    YAML::Node vs = doc.field(tp, "Values");
    SourceLoc at = doc.valueLoc(vs);
    YAML::Node list = vs;
    if (vs.IsScalar()) {
      try {
        list = YAML::Load(vs.as<std::string>());
      } catch (const YAML::Exception &) {
        fail(at, "Values must be a list of integers, like \"[1, 2, 4]\"");
      }
    }
    if (!list.IsSequence() || list.size() == 0) fail(at, "Values must be a non-empty list of integers, like \"[1, 2, 4]\"");
    std::vector<long long> values;
    for (const auto &v : list) {
      try {
        values.push_back(v.as<long long>());
      } catch (const YAML::Exception &) {
        fail(at, "Values must be integers, not '" + (v.IsScalar() ? v.as<std::string>() : std::string("a list")) + "'");
      }
    }
    it->values = values;
    if (tp["Default"]) {
      it->fallback = doc.integer(tp["Default"]);
      if (std::find(values.begin(), values.end(), it->fallback) == values.end())
        fail(doc.valueLoc(tp["Default"]), "Default " + std::to_string(it->fallback) + " of '" + id + "' is not among its Values");
    } else if (std::find(values.begin(), values.end(), it->fallback) == values.end()) {
      it->fallback = values.front(); // (polyk's default is not among them: the first one)
    }
  }
  // polyk's own constraints stay (bind's invariants and the capacity limits); the problem's
  // conditions add to them (those it repeats, as polyk's T1 files do, count once).
  if (YAML::Node conds = cs["Conditions"]) {
    if (!conds.IsSequence()) fail(doc.loc(conds), "Conditions must be a list");
    for (const auto &c : conds) {
      if (!c.IsMap()) fail(doc.loc(c), "a condition is an object {Parameters, Expression}");
      YAML::Node e = doc.field(c, "Expression");
      SourceLoc at = doc.valueLoc(e);
      std::string expr = fromPython(doc.str(e), names, at);
      TuneExpr(expr, names, at); // checks it
      auto squeeze = [](std::string x) {
        x.erase(std::remove(x.begin(), x.end(), ' '), x.end());
        return x;
      };
      bool known = false;
      for (std::string c : derived.constraints) {
        for (auto q = derived.params.rbegin(); q != derived.params.rend(); ++q) // (as writeT1 spells them)
          if (!q->expr.empty()) c = substitute(c, q->name, "(" + q->expr + ")");
        known = known || squeeze(c) == squeeze(expr);
      }
      if (known) continue;
      t.space.constraints.push_back(expr);
      t.space.constraintsAt.push_back(at);
    }
  }
  if (YAML::Node budget = doc.root["Budget"]) {
    if (!budget.IsSequence()) fail(doc.loc(budget), "Budget must be a list of {Type, BudgetValue}");
    for (const auto &b : budget) {
      std::string type = doc.str(doc.field(b, "Type"));
      YAML::Node v = doc.field(b, "BudgetValue");
      double value = 0;
      try {
        value = v.as<double>();
      } catch (const YAML::Exception &) {
        fail(doc.valueLoc(v), "BudgetValue must be a number");
      }
      if (value < 0) fail(doc.valueLoc(v), "BudgetValue must not be negative");
      if (type == "ConfigurationCount") t.trials = (long long)value;
      else if (type == "TuningDuration") t.seconds = value;
      else if (type == "ConfigurationFraction") t.fraction = value;
      else fail(doc.valueLoc(b["Type"]), "unknown budget '" + type + "' (ConfigurationCount, TuningDuration, ConfigurationFraction)");
    }
  }
  if (YAML::Node search = doc.root["Search"]) {
    YAML::Node n = doc.field(search, "Name");
    std::string name = doc.str(n);
    std::string lower;
    for (char c : name) lower += (char)std::tolower((unsigned char)c);
    if (lower == "random" || lower == "random_sample" || lower == "randomsearch") t.search = "random";
    else if (lower == "exhaustive" || lower == "brute_force" || lower == "bruteforce" || lower == "full") t.search = "exhaustive";
    else if (lower == "simulated_annealing" || lower == "annealing" || lower == "anneal") t.search = "anneal";
    else fail(doc.valueLoc(n), "search '" + name + "' is not one of polyk's (random, exhaustive / brute_force, simulated_annealing)");
  }
  return t;
}

std::string writeT4(const Space &s, const std::vector<Trial> &trials) {
  SpaceModel model(s);
  std::ostringstream o;
  o << "{\n  \"schema_version\": \"1.0.0\",\n  \"results\": [\n";
  bool first = true;
  for (const Trial &t : trials) {
    // name=value; a parameter the log's (edited) space left out keeps its default.
    std::vector<long long> v = model.defaults();
    std::istringstream kv(t.key);
    for (std::string item; kv >> item;) {
      size_t eq = item.find('=');
      for (size_t i = 0; i < s.params.size(); ++i)
        if (eq != std::string::npos && s.params[i].name == item.substr(0, eq)) v[i] = std::stoll(item.substr(eq + 1));
    }
    model.complete(v);
    std::string config;
    for (size_t i = 0; i < v.size(); ++i) config += (i ? ", " : "") + jsonQuoted(identifier(s.params[i].name)) + ": " + std::to_string(v[i]);
    const char *invalidity = "correct";
    switch (t.status) {
    case TrialStatus::Ok: invalidity = "correct"; break;
    case TrialStatus::CompileError: invalidity = "compile"; break;
    case TrialStatus::RuntimeError: invalidity = "runtime"; break;
    case TrialStatus::Wrong: invalidity = "correctness"; break;
    case TrialStatus::Violated: invalidity = "constraints"; break;
    case TrialStatus::Timeout: invalidity = "timeout"; break;
    case TrialStatus::Slow: invalidity = "timeout"; break; // abandoned at 5x the best: its first runs' time
    }
    bool timed = t.status == TrialStatus::Ok || t.status == TrialStatus::Slow;
    char us[32];
    std::snprintf(us, sizeof us, "%.6g", t.us);
    o << (first ? "" : ",\n") << "    {\"configuration\": {" << config << "}, \"objectives\": [\"time\"], \"times\": {"
      << (timed ? std::string("\"runtimes\": [") + us + "]" : std::string("\"runtimes\": []")) << "}, \"invalidity\": \"" << invalidity
      << "\", \"correctness\": " << (t.status == TrialStatus::Ok ? 1 : 0) << ", \"measurements\": ["
      << (timed ? std::string("{\"name\": \"time\", \"value\": ") + us + ", \"unit\": \"us\"}" : "") << "]"
      << ", \"polyk\": {\"trial\": " << t.index << ", \"status\": \"" << statusName(t.status) << "\", \"elapsed_s\": " << t.elapsedS
      << (t.detail.empty() ? "" : ", \"detail\": " + jsonQuoted(t.detail)) << "}}";
    first = false;
  }
  o << "\n  ]\n}\n";
  return o.str();
}

} // namespace polyk
