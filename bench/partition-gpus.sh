#!/usr/bin/env bash
# polyk-partition on the GPUs of one machine (issues 25 and 26), one command per part:
#   here (nvcc, mpicxx):  bench/partition-gpus.sh prepare
#       bench/partition.sh prepare, then every harness built for sm_90 (plain, and with
#       -DPOLYK_MULTI_MPI for the MPI runs), and bench/peer_bw.cu. Carry build/partition.
#       The GPU machine has no MPI: `prepare` also downloads OpenMPI's Debian packages to .mpi/
#       (carry .mpi too); `run` unpacks them without overwriting a file that is there.
#   on the GPU machine:   bench/partition-gpus.sh run PART...   (raw lines to $OUT/partition-PART.txt)
#       virtual  every workload on 1, 2, 4 (8) virtual devices of GPU 0: alpha / beta / gamma
#                (bench/partition.sh run)
#       gpus     Hotspot 16384^2 x 1500, N-body 131072 x 96, Matmul 16384^2 (and the small
#                checks) on 1..G real GPUs, G = the GPUs there, one process
#       mpi      the same through MPI: 2 ranks x 1 virtual device of GPU 0 against 1 process
#                with 2 virtual devices; 1 rank per GPU where there are several
#       peers    torch.compile / cuBLAS single-GPU times (bench/partition_peers.py)
#       compare  the big workloads against NAME.oldrt (prepare with RT_BASE=REV: REV's CUDA backend)
#       bw       copy bandwidths: within GPU 0, and GPU 0 <-> 1 (bench/peer_bw.cu)
#   then here:            python3 bench/partition_table.py FILES... > bench/results/<date>-<device>-partition.csv
set -uo pipefail
cd "$(dirname "$0")/.."
mode=${1:-run}
shift || true
dir=build/partition
nvcc=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
# The workloads the real-GPU and MPI parts run (names as in bench/partition.sh).
big="hotspot16384 nbody131072 nbody131072s matmul16384"
args_hotspot16384="N=16384 S=1500 check=0"
args_nbody131072="N=131072 check=0"
args_nbody131072s="N=131072 check=0"
args_matmul16384="M=16384 N=16384 K=16384 check=0"
args_hotspot_small="N=300 S=20"
args_sg7_b2048="B=2048"

if [ "$mode" = prepare ]; then
  bash bench/partition.sh prepare || exit 1
  jobs=$(nproc)
  export nvcc dir
  # shellcheck disable=SC2016
  ls "$dir"/*.cu | xargs -P "$jobs" -I{} sh -c '"$nvcc" -std=c++17 -O3 -arch=sm_90 -I"$dir/runtime" -I"$dir/boost" {} -o "${0%.cu}" 2> {}.log || { cat {}.log; exit 255; }' {} || exit 1
  if command -v mpicxx > /dev/null; then
    # shellcheck disable=SC2016
    for n in $big hotspot_small sg7_b2048; do echo "$n"; done | xargs -P "$jobs" -I{} sh -c \
      '"$nvcc" -ccbin mpicxx -std=c++17 -O3 -arch=sm_90 -DPOLYK_MULTI_MPI -I"$dir/runtime" -I"$dir/boost" "$dir/{}.cu" -o "$dir/{}.mpi" || exit 255' || exit 1
    mkdir -p .mpi && (cd .mpi && apt-get download openmpi-bin openmpi-common libopenmpi3 libpmix2 libhwloc15 \
      libevent-core-2.1-7 libevent-pthreads-2.1-7 libevent-2.1-7 libudev1 zlib1g libltdl7 libnuma1 libucx0 \
      libfabric1 libibverbs1 librdmacm1 ibverbs-providers libnl-3-200 libnl-route-3-200 libpsm2-2 \
      libpsm-infinipath1 libmunge2 libuuid1 libatomic1 > /dev/null) || echo "no OpenMPI packages: the mpi part will skip"
  fi
  "$nvcc" -O2 -arch=sm_90 bench/peer_bw.cu -o "$dir/peer_bw" || exit 1
  # RT_BASE=REV: the big workloads also built against REV's CUDA backend (NAME.oldrt), for the
  # `compare` part (the same generated code, the runtime's copies ordered the old way).
  if [ -n "${RT_BASE:-}" ]; then
    rm -rf "$dir/runtime_old" && cp -r "$dir/runtime" "$dir/runtime_old" &&
      git show "$RT_BASE:libcore/runtime/polyk/multi_cuda.cuh" > "$dir/runtime_old/polyk/multi_cuda.cuh" || exit 1
    # shellcheck disable=SC2016
    for n in $big; do echo "$n"; done | xargs -P "$jobs" -I{} sh -c \
      '"$nvcc" -std=c++17 -O3 -arch=sm_90 -I"$dir/runtime_old" -I"$dir/boost" "$dir/{}.cu" -o "$dir/{}.oldrt" || exit 255' || exit 1
  fi
  du -sh "$dir" .mpi 2> /dev/null
  exit 0
fi

out=${OUT:-.}
gpus=$(nvidia-smi -L | grep -c '^GPU')
run_case() {  # name args...: one harness run, its lines to stdout
  local name=$1
  shift
  echo "== $name $*"
  timeout 240 "$dir/$name" "$@" 2>&1
  echo "rc=$?"
}
mpi_ready() {
  # The harnesses link Debian 12's OpenMPI (libmpi.so.40). The image's mpirun serves where it is
  # an Open MPI that resolves that library; else Debian's packages (.mpi) are unpacked under
  # /tmp/mpiroot and used from there (OPAL_PREFIX), touching nothing of the image.
  if command -v mpirun > /dev/null && mpirun --version 2>&1 | grep -q "Open MPI" && ! ldd "$dir/hotspot_small.mpi" | grep -q "not found"; then
    return 0
  fi
  [ -d .mpi ] || return 1
  rm -rf /tmp/mpiroot && mkdir -p /tmp/mpiroot
  for deb in .mpi/*.deb; do dpkg-deb -x "$deb" /tmp/mpiroot; done
  local lib=/tmp/mpiroot/usr/lib/x86_64-linux-gnu
  export PATH=/tmp/mpiroot/usr/bin:$PATH OPAL_PREFIX=/tmp/mpiroot/usr
  export LD_LIBRARY_PATH=$lib:$lib/openmpi/lib:$lib/pmix2/lib:/tmp/mpiroot/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  export PMIX_MCA_mca_base_component_path=$lib/pmix2/lib/pmix PMIX_PREFIX=$lib/pmix2
  command -v mpirun > /dev/null
}
mpirun_() {
  OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 timeout 300 mpirun --oversubscribe \
    --mca btl self,vader --mca pml ob1 --mca btl_vader_single_copy_mechanism none \
    --mca mca_base_component_show_load_errors 0 "$@" 2>&1
  echo "rc=$?"
}

for part in "$@"; do
  log=$out/partition-$part.txt
  {
    echo "# $part on $(nvidia-smi --query-gpu=name --format=csv,noheader | head -1) x $gpus, $(date -u +%F)"
    case $part in
      virtual)
        OUT=$out bash bench/partition.sh run > /dev/null
        cat "$out/partition.txt"
        ;;
      gpus)
        counts=1
        for c in 2 4 8; do [ "$c" -le "$gpus" ] && counts="$counts,$c"; done
        run_case hotspot_small $args_hotspot_small backend=gpu devices=$counts
        run_case sg7_b2048 $args_sg7_b2048 backend=gpu devices=$counts time=10
        run_case hotspot16384 $args_hotspot16384 backend=gpu devices=$counts time=2
        run_case nbody131072 $args_nbody131072 backend=gpu devices=$counts time=1
        run_case nbody131072s $args_nbody131072s backend=gpu devices=$counts time=1
        run_case matmul16384 $args_matmul16384 backend=gpu devices=$counts time=1
        ;;
      compare)
        # The runtime's copy ordering: RT_BASE's backend (NAME.oldrt) against this one, same
        # generated code, one after the other on the same GPUs.
        counts=1
        for c in 2 4 8; do [ "$c" -le "$gpus" ] && counts="$counts,$c"; done
        for n in $big; do
          [ -x "$dir/$n.oldrt" ] || { echo "SKIP $n: no $n.oldrt (prepare with RT_BASE=REV)"; continue; }
          eval "a=\$args_$n"
          # shellcheck disable=SC2086
          { echo "== $n.oldrt $a backend=gpu devices=$counts time=1"; timeout 240 "$dir/$n.oldrt" $a backend=gpu devices=$counts time=1 2>&1; echo "rc=$?"; }
          # shellcheck disable=SC2086
          run_case "$n" $a backend=gpu devices=$counts time=1
        done
        ;;
      mpi)
        if ! mpi_ready; then echo "SKIP mpi: no mpirun"; continue; fi
        command -v mpirun; mpirun --version 2>&1 | head -1; ldd "$dir/hotspot_small.mpi" | grep -i "mpi\|not found"
        for n in hotspot_small sg7_b2048 $big; do
          eval "a=\$args_$n"
          reps=1
          [ "$n" = sg7_b2048 ] && reps=10
          [ "$n" = hotspot_small ] && reps=0
          # shellcheck disable=SC2154,SC2086
          { echo "== $n 1 process, 2 virtual devices"; timeout 240 "$dir/$n" $a devices=2 time=$reps 2>&1; echo "rc=$?"; }
          echo "== $n 2 ranks x 1 virtual device"
          # shellcheck disable=SC2086
          mpirun_ -np 2 "$dir/$n.mpi" $a time=$reps
          if [ "$gpus" -ge 2 ]; then
            echo "== $n $gpus ranks x 1 GPU"
            # shellcheck disable=SC2086
            mpirun_ -np "$gpus" "$dir/$n.mpi" $a backend=gpu time=$reps
          fi
        done
        ;;
      peers)
        timeout 400 python3 bench/partition_peers.py 2>&1
        ;;
      bw)
        "$dir/peer_bw" 2>&1
        nvidia-smi topo -m 2>&1 | head -12
        ;;
      *) echo "unknown part $part" ;;
    esac
  } 2>&1 | tee "$log"
done
