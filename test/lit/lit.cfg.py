# lit configuration of polyk's stage tests: one behaviour per file, first line says what it checks.
import os
import lit.formats

config.name = "polyk"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".test", ".yaml"]
config.excludes = ["Inputs", "lit.cfg.py", "lit.site.cfg.py"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.polyk_build_dir, "test", "lit")

for tool in ["polyk-flatten", "polyk-schedule", "polyk-bind", "polyk-emit", "polyk-tune", "polyk-partition"]:
    config.substitutions.append(("%" + tool, os.path.join(config.polyk_bin_dir, tool)))
config.substitutions.append(("%bin", config.polyk_bin_dir))
config.substitutions.append(("%examples", os.path.join(config.polyk_source_dir, "examples")))
config.substitutions.append(("%psi", os.path.join(config.polyk_source_dir, "bench", "map", "psi-h100.yaml")))
config.substitutions.append(("%runtime", os.path.join(config.polyk_source_dir, "libcore", "runtime")))
config.environment["PATH"] = os.path.dirname(config.filecheck) + os.pathsep + config.environment.get("PATH", os.environ["PATH"])

# MPI (Debian's OpenMPI): the multi-device runtime past one process. mpirun refuses root unless
# told, and a 2-core CI machine needs --oversubscribe for 3 processes.
import shutil
if shutil.which("mpicxx") and shutil.which("mpirun"):
    config.available_features.add("mpi")
    config.environment["OMPI_ALLOW_RUN_AS_ROOT"] = "1"
    config.environment["OMPI_ALLOW_RUN_AS_ROOT_CONFIRM"] = "1"
    config.substitutions.append(("%mpirun", "mpirun --oversubscribe"))

# The sanitizer build (scripts/test.sh) skips the tests marked `UNSUPPORTED: sanitized`: stage
# pipelines on valid programs whose time goes to compiling and running the generated code. The
# release build runs them as the ctest entry lit/unsanitized (test/CMakeLists.txt).
if config.polyk_sanitized.upper() in ("ON", "1", "TRUE", "YES"):
    config.available_features.add("sanitized")

# NVRTC (the CUDA toolkit's; polyk-tune --resources=nvrtc opens it at run time, as Nvrtc.cpp looks
# for it): CI installs the toolkit at /usr/local/cuda.
import glob
_homes = [os.environ.get("CUDA_HOME", ""), os.environ.get("CUDA_PATH", ""), "/usr/local/cuda"]
if any(h and glob.glob(os.path.join(h, "lib64", "libnvrtc.so*")) for h in _homes):
    config.available_features.add("nvrtc")
