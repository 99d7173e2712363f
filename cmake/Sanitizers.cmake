# The sanitizer and fuzzing builds (scripts/test.sh's build-san, scripts/fuzz.sh): every file a
# stage reads is checked, not trusted, so CI runs the stages under ASan + UBSan and fuzzes each
# reader with libFuzzer. Both are off by default and then leave the normal build as it is.
#   POLYK_SANITIZE=ON  ASan + UBSan on every target, compile and link (clang or gcc)
#   POLYK_FUZZ=ON      clang only, implies POLYK_SANITIZE: libcore also carries libFuzzer's
#                      coverage instrumentation, and test/fuzz/ builds one fuzzer per reader
# isl, yaml-cpp and spdlog are Debian's uninstrumented libraries: ASan still sees their heap
# through its malloc, and libFuzzer's coverage stops at their boundary.
option(POLYK_SANITIZE "build everything with AddressSanitizer and UndefinedBehaviorSanitizer" OFF)
option(POLYK_FUZZ "build the libFuzzer targets of test/fuzz/ (clang; implies POLYK_SANITIZE)" OFF)

if(POLYK_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    message(FATAL_ERROR "POLYK_FUZZ needs clang for libFuzzer: configure with CC=clang CXX=clang++")
  endif()
  set(POLYK_SANITIZE ON)
endif()

if(POLYK_SANITIZE)
  # No recovery: the first report ends the process, so a test cannot pass over one.
  add_compile_options(-fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer -g)
  add_link_options(-fsanitize=address,undefined)
  # The options of the tests' runs (test/CMakeLists.txt); reports name source lines only with a
  # symbolizer, which Debian ships only under a versioned name or in llvm-14's own bin/.
  find_program(POLYK_SYMBOLIZER NAMES llvm-symbolizer llvm-symbolizer-14 PATHS /usr/lib/llvm-14/bin)
endif()

# libcore's part of the fuzz build; called once polykcore exists.
function(polyk_instrument_for_fuzzing target)
  if(POLYK_FUZZ)
    target_compile_options(${target} PRIVATE -fsanitize=fuzzer-no-link)
  endif()
endfunction()
