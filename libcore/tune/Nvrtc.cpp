// NVRTC for polyk-tune: a generated .cu's device part, compiled in process with ptxas's resource
// report. See Nvrtc.h.
#include "polyk/Nvrtc.h"

#include <chrono>
#include <cstdlib>
#include <cxxabi.h>
#include <dlfcn.h>
#include <cctype>
#include <memory>
#include <mutex>
#include <regex>
#include <sstream>

namespace polyk {

namespace {

bool startsWithWord(const std::string &s, const std::string &w) {
  return s.compare(0, w.size(), w) == 0 && (s.size() == w.size() || !(std::isalnum((unsigned char)s[w.size()]) || s[w.size()] == '_'));
}

bool hasWord(const std::string &s, const std::string &w) {
  for (size_t at = s.find(w); at != std::string::npos; at = s.find(w, at + 1)) {
    bool before = at == 0 || !(std::isalnum((unsigned char)s[at - 1]) || s[at - 1] == '_');
    size_t e = at + w.size();
    bool after = e == s.size() || !(std::isalnum((unsigned char)s[e]) || s[e] == '_');
    if (before && after) return true;
  }
  return false;
}

std::string trimmed(const std::string &s) {
  size_t b = s.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(" \t\r\n") - b + 1);
}

/// The includes the device part keeps: polyk's runtime and CUDA's device headers. The host ones
/// (cuda_runtime.h, stdio.h, the harness) go with the host code.
bool deviceInclude(const std::string &line) {
  static const char *kept[] = {"polyk/runtime.cuh", "cuda_fp16.h", "cuda_bf16.h", "polyk/math.h"};
  for (const char *k : kept)
    if (line.find(k) != std::string::npos) return true;
  return false;
}

/// One top-level item's text from `i`: through the `;` or the `}` that ends it at depth 0.
/// Comments, literals and preprocessor lines inside are copied, their braces not counted.
size_t itemEnd(const std::string &s, size_t i) {
  size_t n = s.size();
  int depth = 0;
  bool lineStart = false;
  for (; i < n; ++i) {
    char c = s[i];
    if (c == '\n') {
      lineStart = true;
      continue;
    }
    if (lineStart && (c == ' ' || c == '\t')) continue;
    if (lineStart && c == '#') { // a directive: to its line's end (with continuations)
      for (; i < n && !(s[i] == '\n' && s[i - 1] != '\\'); ++i) {}
      --i;
      continue;
    }
    lineStart = false;
    if (c == '/' && i + 1 < n && s[i + 1] == '/') {
      i = s.find('\n', i);
      if (i == std::string::npos) return n;
      --i;
    } else if (c == '/' && i + 1 < n && s[i + 1] == '*') {
      size_t e = s.find("*/", i + 2);
      if (e == std::string::npos) return n;
      i = e + 1;
    } else if (c == '"' || c == '\'') {
      for (++i; i < n && s[i] != c; ++i)
        if (s[i] == '\\') ++i;
    } else if (c == '{') {
      ++depth;
    } else if (c == '}') {
      if (--depth == 0) return i + 1; // (a type's or an initialiser's `;` follows: deviceSource)
    } else if (c == ';' && depth == 0) {
      return i + 1;
    }
  }
  return n;
}

bool deviceItem(const std::string &text) {
  // The header: the text before the body (or the whole declaration).
  std::string h = text.substr(0, text.find('{'));
  for (const char *w : {"__global__", "__device__", "__constant__", "__host__"})
    if (hasWord(h, w)) return true;
  std::string t = trimmed(h);
  for (const char *w : {"typedef", "struct", "union", "enum", "using", "constexpr"})
    if (startsWithWord(t, w)) return true;
  return false;
}

} // namespace

std::string deviceSource(const std::string &cu) {
  std::string out;
  size_t i = 0, n = cu.size();
  while (i < n) {
    char c = cu[i];
    if (c == ' ' || c == '\t' || c == '\r' || c == '\n') {
      ++i;
      continue;
    }
    if (c == '#') { // a directive at top level
      size_t e = i;
      for (; e < n && !(cu[e] == '\n' && cu[e - 1] != '\\'); ++e) {}
      std::string line = cu.substr(i, e - i);
      std::string t = trimmed(line.substr(1));
      if (!startsWithWord(t, "include") || deviceInclude(line)) out += line + "\n";
      i = e;
      continue;
    }
    if (c == '/' && i + 1 < n && cu[i + 1] == '/') {
      size_t e = cu.find('\n', i);
      i = e == std::string::npos ? n : e;
      continue;
    }
    if (c == '/' && i + 1 < n && cu[i + 1] == '*') {
      size_t e = cu.find("*/", i + 2);
      i = e == std::string::npos ? n : e + 2;
      continue;
    }
    size_t e = itemEnd(cu, i);
    // A type's body is followed by its `;` (and a declarator); an initialiser's by `;`.
    std::string item = cu.substr(i, e - i);
    std::string h = trimmed(item.substr(0, item.find('{')));
    bool typeLike = startsWithWord(h, "struct") || startsWithWord(h, "union") || startsWithWord(h, "enum") ||
                    startsWithWord(h, "typedef") || startsWithWord(h, "class") || h.find('=') != std::string::npos;
    if (typeLike && !item.empty() && item.back() == '}') {
      size_t semi = cu.find(';', e);
      e = semi == std::string::npos ? n : semi + 1;
      item = cu.substr(i, e - i);
    }
    if (deviceItem(item)) out += item + "\n";
    i = e;
  }
  return out;
}

std::vector<std::string> kernelInstances(const std::string &code) {
  std::vector<std::string> names;
  static const std::regex tmpl(R"(template\s*<\s*bool\s+\w+\s*>\s*__global__\s+void\s+(?:__launch_bounds__\s*\([^)]*\)\s*)?(\w+)\s*\()");
  for (std::sregex_iterator it(code.begin(), code.end(), tmpl), end; it != end; ++it) {
    names.push_back((*it)[1].str() + "<true>");
    names.push_back((*it)[1].str() + "<false>");
  }
  return names;
}

std::vector<KernelResources> parsePtxasInfo(const std::string &log) {
  std::vector<KernelResources> ks;
  static const std::regex entry(R"(Compiling entry function '([^']+)')");
  static const std::regex frame(R"((\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads)");
  static const std::regex used(R"(Used (\d+) registers)");
  static const std::regex smem(R"((\d+) bytes smem)");
  std::istringstream in(log);
  std::smatch m;
  for (std::string l; std::getline(in, l);) {
    if (std::regex_search(l, m, entry)) {
      KernelResources k;
      int st = 0;
      std::unique_ptr<char, void (*)(void *)> d(abi::__cxa_demangle(m[1].str().c_str(), nullptr, nullptr, &st), std::free);
      k.name = st == 0 && d ? std::string(d.get()) : m[1].str();
      // "void softmax_k2<true>(const float*, ...)" -> "softmax_k2<true>"
      if (k.name.rfind("void ", 0) == 0) k.name = k.name.substr(5);
      size_t paren = k.name.find('(');
      if (paren != std::string::npos) k.name = k.name.substr(0, paren);
      ks.push_back(k);
      continue;
    }
    if (ks.empty()) continue;
    if (std::regex_search(l, m, frame)) {
      ks.back().stackBytes = std::stoll(m[1]);
      ks.back().spillStores = std::stoll(m[2]);
      ks.back().spillLoads = std::stoll(m[3]);
    }
    if (std::regex_search(l, m, used)) ks.back().registers = std::stoi(m[1]);
    if (l.find("Used ") != std::string::npos && std::regex_search(l, m, smem)) ks.back().sharedBytes = std::stoll(m[1]);
  }
  return ks;
}

namespace {

// NVRTC's C API, declared here so that polyk builds without the toolkit (nvrtc.h).
using nvrtcProgram = struct _nvrtcProgram *;
using CreateFn = int (*)(nvrtcProgram *, const char *, const char *, int, const char *const *, const char *const *);
using DestroyFn = int (*)(nvrtcProgram *);
using CompileFn = int (*)(nvrtcProgram, int, const char *const *);
using LogSizeFn = int (*)(nvrtcProgram, size_t *);
using LogFn = int (*)(nvrtcProgram, char *);
using NameFn = int (*)(nvrtcProgram, const char *);
using ErrorFn = const char *(*)(int);

struct Nvrtc {
  void *lib = nullptr;
  std::string why, cudaInclude;
  CreateFn create = nullptr;
  DestroyFn destroy = nullptr;
  CompileFn compile = nullptr;
  LogSizeFn logSize = nullptr;
  LogFn log = nullptr;
  NameFn addName = nullptr;
  ErrorFn error = nullptr;
};

const Nvrtc &nvrtc() {
  static Nvrtc n;
  static std::once_flag once;
  std::call_once(once, [] {
    // Where a driver is installed, NVRTC answers a program it compiled before from the CUDA
    // compute cache (~/.nv/ComputeCache), and its log then has no ptxas report (seen on the H200
    // machine: the second run of a variant logged 0 registers). The report is the point here.
    // (Set once, before polyk-tune starts its threads; the harnesses it runs carry SASS for their
    // architecture, which the cache does not serve.)
    ::setenv("CUDA_CACHE_DISABLE", "1", 1);
    std::vector<std::string> homes;
    if (const char *h = std::getenv("CUDA_HOME")) homes.push_back(h);
    if (const char *h = std::getenv("CUDA_PATH")) homes.push_back(h);
    homes.push_back("/usr/local/cuda");
    std::vector<std::string> tries;
    for (const auto &h : homes) tries.push_back(h + "/lib64/libnvrtc.so");
    tries.push_back("libnvrtc.so");
    tries.push_back("libnvrtc.so.13");
    tries.push_back("libnvrtc.so.12");
    for (const auto &t : tries) {
      n.lib = ::dlopen(t.c_str(), RTLD_NOW | RTLD_LOCAL);
      if (n.lib) break;
    }
    if (!n.lib) {
      n.why = "NVRTC (libnvrtc.so) not found in $CUDA_HOME/lib64, /usr/local/cuda/lib64 or the loader's path";
      return;
    }
    n.create = (CreateFn)::dlsym(n.lib, "nvrtcCreateProgram");
    n.destroy = (DestroyFn)::dlsym(n.lib, "nvrtcDestroyProgram");
    n.compile = (CompileFn)::dlsym(n.lib, "nvrtcCompileProgram");
    n.logSize = (LogSizeFn)::dlsym(n.lib, "nvrtcGetProgramLogSize");
    n.log = (LogFn)::dlsym(n.lib, "nvrtcGetProgramLog");
    n.addName = (NameFn)::dlsym(n.lib, "nvrtcAddNameExpression");
    n.error = (ErrorFn)::dlsym(n.lib, "nvrtcGetErrorString");
    if (!n.create || !n.destroy || !n.compile || !n.logSize || !n.log || !n.addName || !n.error) {
      n.why = "libnvrtc.so lacks the functions polyk calls";
      n.lib = nullptr;
      return;
    }
    // The toolkit's headers (cuda_fp16.h, CUB): beside the library that was opened.
    Dl_info info{};
    std::string dir;
    if (::dladdr((void *)n.create, &info) && info.dli_fname) {
      dir = info.dli_fname;
      dir = dir.substr(0, dir.rfind('/')); // .../lib64 (or targets/.../lib)
      dir = dir.substr(0, dir.rfind('/'));
    }
    n.cudaInclude = dir.empty() ? "/usr/local/cuda/include" : dir + "/include";
  });
  return n;
}

} // namespace

bool nvrtcAvailable(std::string *why) {
  const Nvrtc &n = nvrtc();
  if (why) *why = n.why;
  return n.lib != nullptr;
}

DeviceCompile nvrtcCompile(const std::string &source, const std::string &arch, const std::vector<std::string> &includeDirs,
                           const std::string &name) {
  DeviceCompile r;
  const Nvrtc &n = nvrtc();
  if (!n.lib) {
    r.log = n.why;
    return r;
  }
  auto t0 = std::chrono::steady_clock::now();
  nvrtcProgram prog = nullptr;
  if (int e = n.create(&prog, source.c_str(), name.c_str(), 0, nullptr, nullptr)) {
    r.log = std::string("nvrtcCreateProgram: ") + n.error(e);
    return r;
  }
  for (const auto &k : kernelInstances(source)) n.addName(prog, ("&" + k).c_str());
  std::vector<std::string> opts = {"--gpu-architecture=" + arch, "--std=c++17", "--ptxas-options=-v", "-default-device"};
  for (const auto &d : includeDirs) opts.push_back("-I" + d);
  opts.push_back("-I" + n.cudaInclude);
  opts.push_back("-I" + n.cudaInclude + "/cccl");
  std::vector<const char *> argv;
  for (const auto &o : opts) argv.push_back(o.c_str());
  int rc = n.compile(prog, (int)argv.size(), argv.data());
  size_t size = 0;
  n.logSize(prog, &size);
  std::string log(size, '\0');
  if (size) n.log(prog, log.data());
  while (!log.empty() && log.back() == '\0') log.pop_back();
  n.destroy(&prog);
  r.ok = rc == 0;
  r.log = rc == 0 ? log : std::string(n.error(rc)) + "\n" + log;
  r.kernels = parsePtxasInfo(log);
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return r;
}

} // namespace polyk
