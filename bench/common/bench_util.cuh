/*
 * bench_util.cuh - small helpers the device benchmarks share: exit-on-error
 * checks, formatting, Markdown tables, medians, a counter-based random
 * generator, a wall clock around synchronous device work, and an answer
 * comparison kernel.
 * Include after engine_impl.h (gi_now_ms).
 */
#ifndef GPUIDX_BENCH_UTIL_CUH
#define GPUIDX_BENCH_UTIL_CUH

#include "engine_impl.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

/* Exit with the CUDA error if a call failed. */
#define CUDA_OK(call) \
	do { cudaError_t e_ = (call); if (e_ != cudaSuccess) { \
		fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e_)); \
		exit(2); } } while (0)

/* Exit with the engine's message (the call reports into er_) if it failed. */
#define GI_OK_OR_DIE(call) \
	do { GiError er_; GiStatus s_ = (call); if (s_ != GI_OK) { \
		fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, er_.message); exit(2); } } while (0)

/* printf into a std::string. */
static inline std::string
fmt(const char *f, ...)
{
	char		buf[640];
	va_list		ap;

	va_start(ap, f);
	vsnprintf(buf, sizeof(buf), f, ap);
	va_end(ap);
	return buf;
}

/* Median of a few timings (0 for none). */
static inline double
median(std::vector<double> v)
{
	if (v.empty())
		return 0;
	std::sort(v.begin(), v.end());
	return v[v.size() / 2];
}

/* Print a Markdown table: its header line, the rule under it, its rows. */
static inline void
print_table(const char *header, const std::vector<std::string> &rows)
{
	int			columns = 0;

	for (const char *c = header; *c; c++)
		columns += *c == '|';
	printf("%s\n|", header);
	for (int i = 1; i < columns; i++)
		printf(" --- |");
	printf("\n");
	for (const std::string &row : rows)
		printf("%s\n", row.c_str());
}

/* splitmix64: a counter-based generator usable on the device. */
__host__ __device__ static inline uint64_t
mix64(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

/* Host wall clock around a synchronous device region, in ms. */
template <class F>
static double
timed(F f)
{
	CUDA_OK(cudaDeviceSynchronize());
	double		t0 = gi_now_ms();

	f();
	CUDA_OK(cudaDeviceSynchronize());
	return gi_now_ms() - t0;
}

/*
 * Host wall clock around a call that is synchronous itself (the engine's
 * queries return with their answers on the device complete): the device is
 * idle before, and no synchronisation is added after, where timed() would
 * add an empty one (1-2 us) that only an asynchronous launch needs.
 */
template <class F>
static double
timed_call(F f)
{
	CUDA_OK(cudaDeviceSynchronize());
	double		t0 = gi_now_ms();

	f();
	return gi_now_ms() - t0;
}

/* Count probes whose two answers differ (empty answers compare equal). */
__global__ void
mismatch_kernel(const uint64_t *f1, const uint64_t *l1, const uint64_t *f2,
				const uint64_t *l2, uint64_t q, unsigned long long *bad)
{
	for (uint64_t i = (uint64_t) blockIdx.x * blockDim.x + threadIdx.x; i < q;
		 i += (uint64_t) gridDim.x * blockDim.x)
	{
		bool		e1 = f1[i] == l1[i],
					e2 = f2[i] == l2[i];

		if (e1 != e2 || (!e1 && (f1[i] != f2[i] || l1[i] != l2[i])))
			atomicAdd(bad, 1ull);
	}
}

#endif							/* GPUIDX_BENCH_UTIL_CUH */
