// What every polyk fuzz target shares: libFuzzer's bytes become a file's text, a stage runs on it
// in-process as its tool would, and only a reader's own verdict on bad input counts as an answer.
// InputError and UsageError are that verdict (the tool exits 1 or 2 with a message); any other
// exception escaping a stage, isl::exception included, is a bug the reader let through, so it
// aborts and libFuzzer saves the input. Crashes, sanitizer reports, leaks and timeouts are
// libFuzzer's own findings.
#pragma once

#include "polyk/Diagnostics.h"

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cxxabi.h>
#include <iostream>
#include <memory>
#include <spdlog/sinks/null_sink.h>
#include <spdlog/spdlog.h>
#include <string>
#include <typeinfo>

namespace polyk::fuzz {

/// The tools log warnings to stderr; a null sink at the same level keeps the fuzzer's output
/// readable while the log calls still format their messages as in a real run.
inline void silenceLogs() {
  static const bool done = [] {
    spdlog::set_default_logger(std::make_shared<spdlog::logger>("fuzz", std::make_shared<spdlog::sinks::null_sink_mt>()));
    spdlog::set_level(spdlog::level::warn);
    return true;
  }();
  (void)done;
}

inline std::string typeName(const std::type_info &t) {
  int status = 0;
  std::unique_ptr<char, void (*)(void *)> name(abi::__cxa_demangle(t.name(), nullptr, nullptr, &status), std::free);
  return status == 0 ? name.get() : t.name();
}

template <class Stage> int runStage(const uint8_t *data, size_t size, Stage stage) {
  silenceLogs();
  std::string text(reinterpret_cast<const char *>(data), size);
  try {
    stage(text);
  } catch (const InputError &) {
  } catch (const UsageError &) {
  } catch (const std::exception &e) {
    std::cerr << "polyk fuzz: uncaught " << typeName(typeid(e)) << ": " << e.what() << "\n";
    std::abort();
  } catch (...) {
    std::cerr << "polyk fuzz: uncaught exception of a type not derived from std::exception\n";
    std::abort();
  }
  return 0;
}

} // namespace polyk::fuzz
