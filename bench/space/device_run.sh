#!/bin/bash
# device_run.sh - SPACE on the GPU machine in one call: (re)build if the
# carried binaries do not run there, unit tests, compute-sanitizer memcheck
# over small unit tests, then the benchmark.  Logs and tables under $OUT.
# Usage (repo root): bash bench/space/device_run.sh
# (carry bench/space/obj, bench/space/test_space, bench/space/space_bench to
# skip the build; otherwise it builds for sm_90 here).
cd "$(dirname "$0")" || exit 1
OUT=${OUT:-/tmp/space-out}
mkdir -p "$OUT"
step() { echo "=== $* ($(date -u +%T))"; }
{
	step gpu
	nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm,clocks.max.mem --format=csv
	date -u '+%Y-%m-%d %H:%M UTC'
	step build
	if ./space_bench --help >/dev/null 2>&1; [ $? -eq 2 ] && [ -x test_space ]; then
		echo "carried binaries run here"
	else
		make -j16 ARCHS='-gencode arch=compute_90,code=sm_90' >"$OUT/build.log" 2>&1 ||
			make -j16 SPACE_ONLY=1 ARCHS='-gencode arch=compute_90,code=sm_90' >>"$OUT/build.log" 2>&1
		echo "build rc=$?"; tail -3 "$OUT/build.log"
	fi
	step unit tests
	timeout 150 ./test_space >"$OUT/test_space.log" 2>&1
	echo "test_space rc=$?"; head -1 "$OUT/test_space.log"; grep -m 20 FAIL "$OUT/test_space.log"; tail -2 "$OUT/test_space.log"
	step compute-sanitizer memcheck
	for range in "0 4097" "262145 262145 1"; do
		set -- $range
		GI_UNIT_QUICK=$3 GI_UNIT_MIN=$1 GI_UNIT_MAX=$2 timeout 100 compute-sanitizer --tool memcheck \
			--leak-check full --error-exitcode 9 ./test_space >>"$OUT/sanitizer.log" 2>&1
		echo "memcheck sizes $1..$2 rc=$?"; tail -1 "$OUT/sanitizer.log"
	done
	grep -m 10 -E "FAIL|Invalid|leak|ERROR SUMMARY" "$OUT/sanitizer.log"
	step bench
} 2>&1 | tee "$OUT/check.log"
timeout 200 ./space_bench --reps 9 --csv "$OUT/space_all.csv" >"$OUT/bench.md" 2>"$OUT/bench_progress.log"
echo "bench rc=$?" | tee -a "$OUT/check.log"
grep MISMATCH "$OUT/bench_progress.log" | head -5
cat "$OUT/bench.md"
