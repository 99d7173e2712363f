// The tuning log (append-only JSON lines) and tuning/1 (best.yaml). See polyk/TuneRun.h.
#include "polyk/TuneRun.h"
#include "polyk/YamlIO.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <fstream>
#include <set>
#include <sstream>
#include <unistd.h>

namespace polyk {

const char *statusName(TrialStatus s) {
  switch (s) {
  case TrialStatus::Ok: return "ok";
  case TrialStatus::CompileError: return "compile_error";
  case TrialStatus::RuntimeError: return "runtime_error";
  case TrialStatus::Wrong: return "wrong";
  case TrialStatus::Violated: return "violated";
  case TrialStatus::Timeout: return "timeout";
  case TrialStatus::Slow: return "slow";
  }
  return "?";
}

namespace {


std::string number(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%.6g", v);
  return b;
}

TrialStatus statusOf(const std::string &n, const SourceLoc &at) {
  for (TrialStatus s : {TrialStatus::Ok, TrialStatus::CompileError, TrialStatus::RuntimeError, TrialStatus::Wrong,
                        TrialStatus::Violated, TrialStatus::Timeout, TrialStatus::Slow})
    if (n == statusName(s)) return s;
  fail(at, "unknown trial status '" + n + "'");
}

/// The records of a log's text (whole lines): its header into `header` (checked against
/// `expected` where given), its trials.
std::vector<Trial> parseLog(const std::string &text, const std::string &path, TuneLogHeader *header,
                            const TuneLogHeader *expected) {
  std::vector<Trial> trials;
  std::set<std::string> keys;
  std::istringstream lines(text);
  std::string line;
  int no = 0;
  while (std::getline(lines, line)) {
    ++no;
    SourceLoc at{path, no, 1};
    YAML::Node n;
    try {
      n = YAML::Load(line);
    } catch (const YAML::Exception &e) {
      fail(at, "not a JSON record: " + e.msg);
    }
    if (!n.IsMap()) fail(at, "not a JSON record");
    auto get = [&](const char *k) -> std::string {
      try {
        return n[k] ? n[k].as<std::string>() : std::string();
      } catch (const YAML::Exception &) {
        fail(at, std::string("field '") + k + "' is not a scalar");
      }
    };
    if (no == 1) {
      if (get("polyk") != "tunelog/1") fail(at, "not a polyk tuning log (its first record has no 'polyk: tunelog/1')");
      *header = {get("program"), get("program_hash"), get("params"), get("runner"), get("device"), get("arch")};
      if (!expected) continue;
      std::vector<std::pair<std::string, std::string>> mine = {
          {"program", expected->program}, {"program_hash", expected->programHash}, {"params", expected->params},
          {"runner", expected->runner},   {"device", expected->device},            {"arch", expected->arch}};
      for (const auto &[k, v] : mine)
        if (get(k.c_str()) != v)
          fail(at, "this log was recorded with " + k + " '" + get(k.c_str()) + "', not '" + v +
                       "': refusing to resume it (give another --log)");
      continue;
    }
    if (!n["trial"]) continue; // a session's start, or a record of a later version
    Trial t;
    try {
      t.index = n["trial"].as<int>();
      t.key = get("config");
      t.status = statusOf(get("status"), at);
      t.us = n["us"] ? n["us"].as<double>() : 0;
      t.elapsedS = n["elapsed_s"] ? n["elapsed_s"].as<double>() : 0;
      t.detail = get("detail");
      t.registers = n["registers"] ? n["registers"].as<int>() : -1;
      t.spillBytes = n["spill_bytes"] ? n["spill_bytes"].as<long long>() : -1;
    } catch (const YAML::Exception &) {
      fail(at, "a trial record's fields have the wrong types");
    }
    if (keys.count(t.key)) fail(at, "configuration '" + t.key + "' is logged twice");
    keys.insert(t.key);
    trials.push_back(t);
  }
  return trials;
}

} // namespace

TuneLog::TuneLog(const std::string &path, const TuneLogHeader &h) : path_(path) {
  std::string text;
  {
    std::ifstream in(path, std::ios::binary);
    if (in) text.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  // A last record without its newline was cut while being written: drop it, here and in the file.
  size_t end = text.rfind('\n');
  size_t keep = end == std::string::npos ? 0 : end + 1;
  if (keep < text.size()) {
    dropped_ = true;
    text.resize(keep);
    if (::truncate(path.c_str(), (off_t)keep) != 0)
      throw UsageError("cannot cut the truncated last record of " + path + ": " + std::strerror(errno));
  }
  std::vector<std::pair<std::string, std::string>> mine = {{"program", h.program}, {"program_hash", h.programHash},
                                                           {"params", h.params},   {"runner", h.runner},
                                                           {"device", h.device},   {"arch", h.arch}};
  if (text.empty()) {
    std::string line = "{\"polyk\": \"tunelog/1\"";
    for (const auto &[k, v] : mine) line += ", " + jsonQuoted(k) + ": " + jsonQuoted(v);
    write(line + "}\n");
    return;
  }
  TuneLogHeader found;
  trials_ = parseLog(text, path, &found, &h);
  for (const Trial &t : trials_) keys_.insert(t.key);
}

void TuneLog::write(const std::string &line) {
  int fd = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  if (fd < 0) throw UsageError("cannot open the tuning log " + path_ + ": " + std::strerror(errno));
  // One write() for the whole record: a kill leaves it whole or without its newline.
  ssize_t n = ::write(fd, line.data(), line.size());
  bool ok = n == (ssize_t)line.size() && ::fsync(fd) == 0;
  ::close(fd);
  if (!ok) throw UsageError("cannot write the tuning log " + path_ + ": " + std::strerror(errno));
}

void TuneLog::append(const Trial &t) {
  std::string line = "{\"trial\": " + std::to_string(t.index) + ", \"config\": " + jsonQuoted(t.key) + ", \"status\": " +
                     jsonQuoted(statusName(t.status)) + ", \"us\": " + number(t.us) + ", \"elapsed_s\": " + number(t.elapsedS);
  if (t.registers >= 0) line += ", \"registers\": " + std::to_string(t.registers);
  if (t.spillBytes >= 0) line += ", \"spill_bytes\": " + std::to_string(t.spillBytes);
  if (!t.detail.empty()) line += ", \"detail\": " + jsonQuoted(t.detail);
  write(line + "}\n");
  keys_.insert(t.key);
  trials_.push_back(t);
}

void TuneLog::note(const std::map<std::string, std::string> &fields) {
  std::string line = "{\"event\": \"start\"";
  for (const auto &[k, v] : fields) line += ", " + jsonQuoted(k) + ": " + jsonQuoted(v);
  write(line + "}\n");
}

// ---------------------------------------------------------------------------------------------
// tuning/1

std::string writeTuning(const Tuning &t) {
  YAML::Emitter out;
  out << YAML::BeginMap;
  out << YAML::Key << "polyk" << YAML::Value << "tuning/1";
  out << YAML::Key << "program" << YAML::Value << t.program;
  out << YAML::Key << "params" << YAML::Value;
  emitQuoted(out, t.params);
  out << YAML::Key << "runner" << YAML::Value << t.runner;
  out << YAML::Key << "device" << YAML::Value;
  emitQuoted(out, t.device);
  out << YAML::Key << "arch" << YAML::Value << t.arch;
  out << YAML::Key << "config" << YAML::Value;
  emitQuoted(out, t.config);
  out << YAML::Key << "sizes" << YAML::Value;
  emitQuoted(out, t.sizes);
  out << YAML::Key << "points" << YAML::Value << t.points;
  out << YAML::Key << "prefetch" << YAML::Value << t.prefetch;
  if (t.mma != "off") out << YAML::Key << "mma" << YAML::Value << t.mma;
  if (t.shared != "auto") out << YAML::Key << "shared" << YAML::Value << t.shared;
  if (t.combine != "auto") out << YAML::Key << "combine" << YAML::Value << t.combine;
  if (t.unroll != "1") out << YAML::Key << "unroll" << YAML::Value << t.unroll;
  if (t.blocks != "0") out << YAML::Key << "blocks_per_sm" << YAML::Value << t.blocks;
  if (!t.cover.empty()) {
    out << YAML::Key << "cover" << YAML::Value;
    emitQuoted(out, t.cover);
  }
  out << YAML::Key << "median_us" << YAML::Value << number(t.us);
  out << YAML::Key << "default_us" << YAML::Value << number(t.defaultUs);
  out << YAML::Key << "speedup" << YAML::Value << number(t.us > 0 ? t.defaultUs / t.us : 0);
  out << YAML::Key << "trials" << YAML::Value << t.trials;
  out << YAML::Key << "trials_to_best" << YAML::Value << t.trialsToBest;
  out << YAML::Key << "seconds_to_best" << YAML::Value << number(t.secondsToBest);
  out << YAML::Key << "space_configurations" << YAML::Value << t.spaceCount;
  out << YAML::Key << "generation_s" << YAML::Value << number(t.generationS);
  out << YAML::EndMap;
  return finish(out);
}

Tuning readTuning(const std::string &text, const std::string &file) {
  YamlDoc doc = parseYaml(text, file);
  expectKind(doc, "tuning", 1);
  Tuning t;
  t.program = doc.str(doc.field(doc.root, "program"));
  t.programAt = doc.valueLoc(doc.root["program"]);
  t.sizes = doc.str(doc.field(doc.root, "sizes"));
  for (auto [key, field] : {std::pair<const char *, std::string *>{"params", &t.params}, {"runner", &t.runner},
                            {"device", &t.device}, {"arch", &t.arch}, {"config", &t.config}, {"cover", &t.cover}})
    if (doc.root[key]) *field = doc.str(doc.root[key]);
  auto option = [&](const char *key, std::string &field, std::initializer_list<const char *> allowed) {
    if (!doc.root[key]) return;
    field = doc.str(doc.root[key]);
    std::string list;
    for (const char *a : allowed) {
      if (field == a) return;
      list += std::string(list.empty() ? "" : ", ") + a;
    }
    fail(doc.valueLoc(doc.root[key]), std::string(key) + " must be one of " + list + ", not '" + field + "'");
  };
  option("points", t.points, {"auto", "cyclic", "blocked"});
  option("prefetch", t.prefetch, {"auto", "async", "off"});
  option("mma", t.mma, {"off", "tf32x3"});
  option("shared", t.shared, {"auto", "off"});
  option("combine", t.combine, {"auto", "ordered", "atomic"});
  option("unroll", t.unroll, {"0", "1", "2", "3", "4", "5", "6", "7", "8"});
  option("blocks_per_sm", t.blocks, {"0", "1", "2"});
  return t;
}

Tuning readTuningFor(const std::string &path, const std::string &program) {
  std::ifstream f(path, std::ios::binary);
  Tuning t = readTuning(std::string(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()), path);
  if (t.program != program) throw InputError(t.programAt, "this tuning is of program '" + t.program + "', not '" + program + "'");
  return t;
}

std::vector<Trial> readTuneLog(const std::string &path, TuneLogHeader &header) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw UsageError("cannot read the tuning log " + path);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  size_t end = text.rfind('\n');
  text.resize(end == std::string::npos ? 0 : end + 1); // (a cut last record is left out)
  if (text.empty()) fail({path, 1, 1}, "an empty tuning log");
  return parseLog(text, path, &header, nullptr);
}

} // namespace polyk
