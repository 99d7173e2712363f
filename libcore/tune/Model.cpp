// The cost model's regressor (TuneModel.h): XGBoost's gradient-boosted trees (Debian's
// libxgboost-dev, C API) on log(time), as CNNOpt §4.2 trains one per device. The file is a JSON
// line naming polyk's format, the device and the features, then XGBoost's own JSON model.
#include "polyk/TuneModel.h"

#include "polyk/Diagnostics.h"
#include "polyk/YamlIO.h"

#include <xgboost/c_api.h>
#include <yaml-cpp/yaml.h>
#include <cmath>
#include <fstream>
#include <sstream>

namespace polyk {

namespace {

void check(int rc, const std::string &what) {
  if (rc != 0) throw std::runtime_error("xgboost: " + what + ": " + XGBGetLastError());
}

/// Rows of features as one dense matrix.
DMatrixHandle matrix(const std::vector<std::vector<double>> &x) {
  size_t cols = featureNames().size();
  std::vector<float> flat;
  flat.reserve(x.size() * cols);
  for (const auto &row : x) {
    if (row.size() != cols) throw std::logic_error("a row of " + std::to_string(row.size()) + " features");
    for (double v : row) flat.push_back((float)v);
  }
  DMatrixHandle m = nullptr;
  check(XGDMatrixCreateFromMat(flat.data(), (bst_ulong)x.size(), (bst_ulong)cols, NAN, &m), "matrix");
  return m;
}


} // namespace

CostModel::CostModel() { check(XGBoosterCreate(nullptr, 0, &booster_), "create"); }

CostModel::~CostModel() {
  if (booster_) XGBoosterFree(booster_);
}

/// Frees a matrix when it goes out of scope, an exception included.
struct MatrixOwner {
  DMatrixHandle m;
  ~MatrixOwner() { XGDMatrixFree(m); }
};

void CostModel::train(const std::vector<std::vector<double>> &x, const std::vector<double> &us, int rounds, unsigned seed) {
  if (x.empty()) throw std::logic_error("no rows to train on");
  DMatrixHandle m = matrix(x);
  MatrixOwner owner{m};
  std::vector<float> label;
  for (double t : us) label.push_back((float)std::log(std::max(t, 1e-3)));
  check(XGDMatrixSetFloatInfo(m, "label", label.data(), (bst_ulong)label.size()), "labels");
  XGBoosterFree(booster_);
  booster_ = nullptr;
  check(XGBoosterCreate(&m, 1, &booster_), "create");
  for (auto [k, v] : std::vector<std::pair<const char *, std::string>>{{"objective", "reg:squarederror"},
                                                                        {"max_depth", "6"},
                                                                        {"eta", "0.1"},
                                                                        {"subsample", "1"},
                                                                        {"min_child_weight", "1"},
                                                                        {"nthread", "1"},
                                                                        {"seed", std::to_string(seed)},
                                                                        {"verbosity", "0"}})
    check(XGBoosterSetParam(booster_, k, v.c_str()), std::string("parameter ") + k);
  for (int i = 0; i < rounds; ++i) check(XGBoosterUpdateOneIter(booster_, i, m), "training");
}

std::vector<double> CostModel::predict(const std::vector<std::vector<double>> &x) const {
  if (x.empty()) return {};
  DMatrixHandle m = matrix(x);
  MatrixOwner owner{m};
  bst_ulong len = 0;
  const float *out = nullptr;
  check(XGBoosterPredict(booster_, m, 0, 0, 0, &len, &out), "prediction");
  std::vector<double> us;
  for (bst_ulong i = 0; i < len; ++i) us.push_back(std::exp((double)out[i]));
  return us;
}

std::string CostModel::text(const std::string &device) const {
  bst_ulong len = 0;
  const char *buf = nullptr;
  check(XGBoosterSaveModelToBuffer(booster_, "{\"format\": \"json\"}", &len, &buf), "saving");
  std::string head = "{\"polyk\": \"model/1\", \"device\": " + jsonQuoted(device) + ", \"features\": [";
  for (size_t i = 0; i < featureNames().size(); ++i) head += (i ? ", " : "") + jsonQuoted(featureNames()[i]);
  head += "]}\n";
  return head + std::string(buf, len) + "\n";
}

std::unique_ptr<CostModel> CostModel::load(const std::string &path, std::string *device) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw UsageError("cannot read the model " + path);
  std::string head;
  std::getline(f, head);
  std::string rest((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  if (rest.empty()) fail({path, 1, 1}, "not a polyk cost model (no model after its first line)");
  SourceLoc at{path, 1, 1};
  YAML::Node h;
  try {
    h = YAML::Load(head);
  } catch (const YAML::Exception &) {
    fail(at, "not a polyk cost model (its first line is not polyk's JSON header)");
  }
  if (!h.IsMap() || !h["polyk"] || h["polyk"].as<std::string>("") != "model/1")
    fail(at, "not a polyk cost model (expected a first line {\"polyk\": \"model/1\", ...})");
  std::vector<std::string> names;
  if (h["features"] && h["features"].IsSequence())
    for (const auto &n : h["features"]) names.push_back(n.as<std::string>(""));
  if (names != featureNames()) fail(at, "the model was trained on other features than this polyk-tune computes: train it again");
  if (device) *device = h["device"] ? h["device"].as<std::string>("") : "";
  auto m = std::make_unique<CostModel>();
  if (XGBoosterLoadModelFromBuffer(m->booster_, rest.data(), (bst_ulong)rest.size()) != 0)
    fail({path, 2, 1}, std::string("XGBoost cannot read the model: ") + XGBGetLastError());
  return m;
}

} // namespace polyk
