// Shared driver of the polyk tools (see Tool.h).
#include "polyk/Tool.h"

#include "polyk/Diagnostics.h"

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <thread>
#include <fstream>
#include <iostream>
#include <iterator>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>
#include <sstream>
#include <sys/stat.h>
#include <unistd.h>

namespace polyk {

namespace {
std::string gOptions;

/// Ends the process with an error if the work it guards has not finished in time. isl's
/// scheduler can run for hours on a file edited into odd quasi-affine accesses, and has no
/// deadline of its own (isl's operation budget does not reach its ILP). Nothing has been written
/// while it runs: outputs are written after the work, so no half file is left.
class Watchdog {
public:
  Watchdog(double seconds, std::string message) {
    if (seconds <= 0) return;
    thread_ = std::thread([this, seconds, message = std::move(message)] {
      std::unique_lock<std::mutex> lock(mutex_);
      if (!cv_.wait_for(lock, std::chrono::duration<double>(seconds), [this] { return done_; })) {
        std::cerr << message << std::endl;
        std::_Exit(1);
      }
    });
  }
  ~Watchdog() {
    if (!thread_.joinable()) return;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      done_ = true;
    }
    cv_.notify_one();
    thread_.join();
  }

private:
  std::thread thread_;
  std::mutex mutex_;
  std::condition_variable cv_;
  bool done_ = false;
};

std::string readAll(std::istream &in) {
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}
} // namespace

const std::string &commandLineOptions() { return gOptions; }

void writeFileAtomically(const std::string &path, const std::string &text) {
  if (path == "-") {
    std::cout << text << std::flush;
    return;
  }
  // A path that exists and is not a regular file (/dev/stdout, a pipe) is written in place:
  // renaming a temporary over it would replace the device or pipe with a file.
  struct stat st;
  if (::stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) {
    std::ofstream out(path, std::ios::binary);
    out << text;
    out.close();
    if (!out) throw UsageError("cannot write '" + path + "'");
    return;
  }
  std::string tmp = path + ".tmp." + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::binary);
    out << text;
    out.close();
    if (!out) {
      std::remove(tmp.c_str());
      throw UsageError("cannot write '" + path + "'");
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    throw UsageError("cannot write '" + path + "'");
  }
}

int runTool(int argc, char **argv, const ToolSpec &spec) {
  // stdout carries data only: every log line goes to stderr.
  auto logger = spdlog::stderr_color_mt(spec.name);
  logger->set_pattern("%n: %l: %v");
  spdlog::set_default_logger(logger);
  spdlog::set_level(spdlog::level::warn);

  CLI::App app(spec.description, spec.name);
  std::string input = "-", output = "-";
  int verbose = 0;
  bool quiet = false;
  double timeLimit = spec.defaultTimeLimit;
  app.add_option("input", input, "input file, or - for standard input")->capture_default_str();
  app.add_option("-o,--output", output, "output file, or - for standard output (written only on success)")
      ->capture_default_str();
  app.add_flag("-v,--verbose", verbose, "more log output on stderr (repeatable)");
  app.add_flag("-q,--quiet", quiet, "only errors on stderr");
  app.add_option("--time-limit", timeLimit,
                 "give up with an error (exit 1, no output) after this many seconds; 0: no limit")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app.set_version_flag("--version", spec.name + " (polyk) " POLYK_VERSION);
  if (spec.addOptions) spec.addOptions(app);

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp &e) {
    std::cout << app.help();
    return 0;
  } catch (const CLI::CallForVersion &e) {
    std::cout << e.what() << "\n";
    return 0;
  } catch (const CLI::ParseError &e) {
    std::cerr << spec.name << ": error: " << e.what() << "\n"
              << "run '" << spec.name << " --help' for usage\n";
    return 2;
  }
  if (quiet) spdlog::set_level(spdlog::level::err);
  else if (verbose == 1) spdlog::set_level(spdlog::level::info);
  else if (verbose >= 2) spdlog::set_level(spdlog::level::debug);

  // Provenance records the options that shape the output, not file names.
  std::vector<std::string> fileOptions = spec.fileOptions;
  fileOptions.push_back("--output");
  fileOptions.push_back("--time-limit"); // does not shape the output
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "-o") { ++i; continue; }
    if (a.rfind("-o", 0) == 0 && a.rfind("--", 0) != 0) continue; // -oFILE
    bool file = false;
    for (const auto &f : fileOptions) {
      if (a == f) ++i, file = true;
      else if (a.rfind(f + "=", 0) == 0) file = true;
    }
    if (file || a == input || a.find_first_not_of("-vq") == std::string::npos) continue;
    if (!gOptions.empty()) gOptions += " ";
    gOptions += a;
  }

  ToolInput in;
  in.name = input;
  in.displayName = input == "-" ? "<stdin>" : input;
  try {
    if (input == "-") {
      in.text = readAll(std::cin);
    } else {
      std::ifstream f(input, std::ios::binary);
      if (!f) {
        std::cerr << spec.name << ": error: cannot open '" << input << "'\n";
        return 1;
      }
      in.text = readAll(f);
    }
    ExtraOutputs extra;
    std::string text;
    {
      std::ostringstream limit;
      limit << timeLimit;
      Watchdog watchdog(timeLimit, spec.name + ": " + formatDiagnostic({in.displayName}, "gave up after " + limit.str() +
                                                                        " s (--time-limit)"));
      text = spec.run(in, extra);
    }
    for (const auto &[path, content] : extra) writeFileAtomically(path, content);
    writeFileAtomically(output, text);
  } catch (const InputError &e) {
    std::cerr << spec.name << ": " << formatDiagnostic(e.loc(), e.what()) << "\n";
    return 1;
  } catch (const UsageError &e) {
    std::cerr << spec.name << ": error: " << e.what() << "\n";
    return 2;
  } catch (const std::exception &e) {
    // Not a checked error: an isl error or a gap in the checks. Still an error, never an abort.
    std::cerr << spec.name << ": " << formatDiagnostic({in.displayName}, std::string("internal error: ") + e.what()) << "\n";
    return 1;
  } catch (...) {
    std::cerr << spec.name << ": " << formatDiagnostic({in.displayName}, "internal error") << "\n";
    return 1;
  }
  return 0;
}

} // namespace polyk
