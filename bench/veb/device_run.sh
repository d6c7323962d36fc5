#!/bin/bash
# device_run.sh - one call on the GPU machine for the GPU vEB: build the unit
# test and bench/veb/gpu_veb_bench directly with nvcc/gcc (sm_90, no PGXS),
# run test_engine (GI_UNIT_MAX=10^6) beside compute-sanitizer memcheck over
# it (GI_UNIT_MAX=5000), then the benchmark.  Logs go to $OUT.
# Usage (repo root): bash bench/veb/device_run.sh [bench sizes, default 1e6,1e7,1e8]
# (SKIP_TESTS=1: benchmark only; BENCH_TIMEOUT, BENCH_DEADLINE in seconds)
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
NV=/usr/local/cuda/bin/nvcc
ARCH='-gencode arch=compute_90,code=sm_90'
B=/tmp/vebbuild; mkdir -p $B
ENGINE_C="$(ls engine/*.c | grep -v gpu_stub) test/common/veb_classic.c"
CUDA_LIBS="-L/usr/local/cuda/lib64 -lcudart_static -lrt -ldl -lpthread -lstdc++ -lm"
step() { echo "=== $* ($(date +%T))"; }
{
step gpu; nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv
step build
for f in cuda/*.cu; do
	$NV -O3 -std=c++17 $ARCH -Xcompiler -fPIC -Xcompiler -fvisibility=hidden --expt-relaxed-constexpr -Iengine -c $f -o $B/$(basename $f .cu).o &
done
$NV -O3 -std=c++17 $ARCH --expt-relaxed-constexpr -Iengine -Icuda -Ibench/common -Itest/common -c bench/veb/gpu_veb_bench.cu -o $B/bench.o &
wait
gcc -O2 -g -std=gnu11 -Wall -Wextra -Iengine -Itest/common -o $B/test_engine test/unit/*.c $ENGINE_C $B/gpu_*.o $CUDA_LIBS || echo "unit link failed"
gcc -O2 -g -Iengine -Itest/common -o $B/gpu_veb_bench $B/bench.o $ENGINE_C $B/gpu_*.o $CUDA_LIBS || echo "bench link failed"
ls -la $B
if [ -z "$SKIP_TESTS" ]; then
step unittest + memcheck
( GI_UNIT_MAX=5000 timeout ${SAN_TIMEOUT:-170} /usr/local/cuda/bin/compute-sanitizer --tool memcheck --leak-check full --error-exitcode 9 $B/test_engine > "$OUT/sanitizer.log" 2>&1; echo "memcheck rc=$?" >> "$OUT/sanitizer.log" ) &
GI_UNIT_MAX=1000000 timeout 170 $B/test_engine > "$OUT/unittest.log" 2>&1; echo "unittest rc=$?" >> "$OUT/unittest.log"
grep -m 30 "FAIL" "$OUT/unittest.log"; tail -n 6 "$OUT/unittest.log"
wait
grep -m 20 "FAIL\|ERROR SUMMARY\|Invalid\|leak" "$OUT/sanitizer.log"; tail -n 5 "$OUT/sanitizer.log"
fi
step bench
timeout ${BENCH_TIMEOUT:-120} $B/gpu_veb_bench --sizes ${1:-1e6,1e7,1e8} --queries 1e7 --cpu-max 1e7 --deadline ${BENCH_DEADLINE:-100} > "$OUT/bench.md" 2> "$OUT/bench_err.log"; echo "bench rc=$?"
cat "$OUT/bench.md" "$OUT/bench_err.log"
step done
} 2>&1 | tee "$OUT/run.log"
