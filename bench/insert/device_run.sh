#!/bin/bash
# device_run.sh - one call on the GPU machine for batch insertion: the engine
# unit tests (test/unit/test_engine: the GPU engine included), the insertion
# benchmark's quick run, then the full benchmark.  Logs go to $OUT.
# Binaries may come prebuilt (carried: bench/insert/insert_bench,
# test/unit/test_engine); otherwise they are built here for sm_90.
# SANITIZE=1 adds compute-sanitizer memcheck over the quick run.
# Usage (repo root): bash bench/insert/device_run.sh [insert_bench args...]
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
SM90='-gencode arch=compute_90,code=sm_90'
step() { echo "=== $* ($(date +%T))"; }
{
step gpu; nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm --format=csv
if [ ! -x bench/insert/insert_bench ]; then
	step build; make -C bench/insert -j16 ARCHS="$SM90" > "$OUT/build.log" 2>&1; echo "bench build rc=$?"
fi
if [ ! -x test/unit/test_engine ]; then
	O=bench/insert/obj
	gcc -O2 -g -std=gnu11 -Wall -Wextra -Iengine -Itest/common -o test/unit/test_engine \
		test/unit/*.c test/common/*.c $(ls engine/*.c | grep -v gpu_stub) $O/gpu_*.o \
		-L/usr/local/cuda/lib64 -lcudart_static -lrt -ldl -lpthread \
		-lstdc++ -lm >> "$OUT/build.log" 2>&1; echo "unit build rc=$?"
fi
step unittest; timeout ${UNIT_TIMEOUT:-90} test/unit/test_engine > "$OUT/unit.log" 2>&1; echo "unittest rc=$?"
grep -E "FAIL|fail|test_insert|passed" "$OUT/unit.log" | grep -v " 0 failed" | tail -12; tail -2 "$OUT/unit.log"
step small; timeout 60 bench/insert/insert_bench --small > "$OUT/small.md" 2> "$OUT/small.log"; echo "small rc=$?"
grep -E "check|OK|FAIL" "$OUT/small.md" | tail -14
[ -z "$SANITIZE" ] || { step sanitizer; timeout 120 compute-sanitizer --tool memcheck --leak-check full \
	--error-exitcode 9 bench/insert/insert_bench --small --no-cpu 2>&1 | tail -6; echo "memcheck rc=${PIPESTATUS[0]}"; }
} 2>&1 | tee "$OUT/check.log"
step bench; timeout ${BENCH_TIMEOUT:-150} bench/insert/insert_bench "$@" > "$OUT/bench.md" 2> "$OUT/bench_progress.log"; echo "bench rc=$?"
cat "$OUT/bench.md"; tail -5 "$OUT/bench_progress.log"
