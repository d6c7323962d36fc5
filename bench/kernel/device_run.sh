#!/bin/bash
# device_run.sh - one call on the GPU machine: build the module's unit test and
# bench/kernel, run the GPU differential check, the unit tests, the kernel
# benchmark and compute-sanitizer (memcheck) over small runs.  Logs go to $OUT.
# Usage (repo root): bash bench/kernel/device_run.sh [bench args...]
# STEPS (default "check unit bench sanitizer") picks the steps after the
# build, so that the whole run (about 12 minutes on an H100: gpu_check of
# 10^6 keys alone takes 4-5) can be split over calls of limited length.
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
SM90='-gencode arch=compute_90,code=sm_90'
step() { echo "=== $* ($(date +%T))"; }
# Prebuilt objects may come carried too (cuda/*.o newer than their sources are kept).
# UNIT_TREE: a consistent snapshot of the repo to build the unit test in (the
# shared working tree may hold others' half-written files); default: here.
UT=${UNIT_TREE:-.}
STEPS=" ${STEPS:-check unit bench sanitizer} "
want() { [[ "$STEPS" == *" $1 "* ]]; }
{
step gpu; nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm --format=csv
step unpack; tar -xJf .gpu/pg.tar.xz -C /opt && source /opt/pgbundle/env.sh
step build
JOBS=$(nproc 2>/dev/null || echo 8)
( make -C "$UT" -j"$JOBS" PG_CONFIG=$PG_CONFIG CUDA_ARCHS="$SM90" test/unit/test_engine > "$OUT/build_unit.log" 2>&1; echo "unit build rc=$?" ) &
# bench binaries may come prebuilt (carried); build them here otherwise
if [ ! -x bench/kernel/kernel_bench ] || [ ! -x bench/kernel/gpu_check ]; then
( make -C bench/kernel -j"$JOBS" ARCHS="$SM90" > "$OUT/build_bench.log" 2>&1; echo "bench build rc=$?" ) &
else echo "bench binaries carried" > "$OUT/build_bench.log"; fi
wait
tail -n 3 "$OUT/build_unit.log" "$OUT/build_bench.log"
want check && { step gpu_check; timeout ${CHECK_TIMEOUT:-600} bench/kernel/gpu_check ${CHECK_N:-1000000} 2>&1 | tail -25; echo "gpu_check rc=${PIPESTATUS[0]}"; }
want unit && { step unittest; timeout ${UNIT_TIMEOUT:-150} $UT/test/unit/test_engine 2>&1 | tail -8; echo "unittest rc=${PIPESTATUS[0]}"; }
} 2>&1 | tee "$OUT/check.log"
want bench && { step bench; timeout ${BENCH_TIMEOUT:-300} bench/kernel/kernel_bench "$@" > "$OUT/bench.md" 2> "$OUT/bench_progress.log"; echo "bench rc=$?"; }
[ -n "$SKIP_SANITIZER" ] || ! want sanitizer || {
step sanitizer
GI_UNIT_MAX=20000 timeout ${SANITIZER_UNIT_TIMEOUT:-100} compute-sanitizer --tool memcheck --leak-check full --error-exitcode 9 $UT/test/unit/test_engine 2>&1 | tail -6; echo "memcheck unittest rc=${PIPESTATUS[0]}"
# (trees of up to 16 keys, every probe order, operation, policy and
# scratch: 83 s on an H100 on 2026-11-27; 33 keys took over 170 s since
# every order and operation also runs through a small scratch of its own)
timeout ${SANITIZER_CHECK_TIMEOUT:-240} compute-sanitizer --tool memcheck --leak-check full --error-exitcode 9 bench/kernel/gpu_check ${SANITIZER_CHECK_N:-16} 88172645463325252 quick 2>&1 | tail -4; echo "memcheck gpu_check rc=${PIPESTATUS[0]}"
# the 2^22-probe batches (stretches of several tiles a warp, one pass over
# a scratch of a third), which gpu_check 16 does not reach: 20 s (H100,
# 2026-11-28)
timeout ${SANITIZER_STRETCH_TIMEOUT:-120} compute-sanitizer --tool memcheck --leak-check full --error-exitcode 9 bench/kernel/gpu_check 0 7 stretches 2>&1 | tail -4; echo "memcheck gpu_check stretches rc=${PIPESTATUS[0]}"
timeout 60 compute-sanitizer --tool memcheck --error-exitcode 9 bench/kernel/kernel_bench --small 2>&1 | tail -4; echo "memcheck bench rc=${PIPESTATUS[0]}"
step done
} 2>&1 | tee "$OUT/sanitizer.log"
[ -f "$OUT/bench.md" ] && cat "$OUT/bench.md"
