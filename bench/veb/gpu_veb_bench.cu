/*
 * gpu_veb_bench.cu - the GPU van Emde Boas tree at kernel level (no
 * PostgreSQL): build time including the CUB sort against the CPU insertion
 * build (Algorithm 2, test/common/veb_classic.h), predecessor queries/s against a GPU
 * binary search over the de-duplicated keys and against the GPU B+ tree, and
 * the space overhead over the de-duplicated raw keys.  int32 keys; the
 * paper's distributions: linear, uniform, normal, lognormal, two shifted
 * normals; queries drawn from the same distribution with another seed
 * (linear: sequential queries).  Every vEB answer is checked against the
 * binary search's.
 *
 *   gpu_veb_bench [--sizes 1e6,1e7,1e8] [--queries 1e7] [--cpu-max 1e7]
 *                 [--deadline seconds]
 */
#include "gpu_engine.cuh"
#include "bench_util.cuh"
#include "veb_classic.h"

#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_run_length_encode.cuh>
#include <cub/device/device_scan.cuh>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#define NDIST 5
static const char *const dist_names[NDIST] =
{"linear", "uniform", "normal", "lognormal", "two-normals"};

/* A standard normal variate from two uniforms (Box-Muller). */
__device__ static inline double
normal01(uint64_t r)
{
	double		u1 = ((r >> 11) + 1) * (1.0 / 9007199254740993.0);
	double		u2 = (mix64(r) >> 11) * (1.0 / 9007199254740992.0);

	return sqrt(-2.0 * log(u1)) * cospi(2.0 * u2);
}

/* Clamp a double to the int32 range. */
__device__ static inline int64_t
clamp32(double v)
{
	if (v < -2147483648.0)
		return INT32_MIN;
	if (v > 2147483647.0)
		return INT32_MAX;
	return (int64_t) llrint(v);
}

/* Value i of distribution dist (seed selects keys or queries). */
__device__ static inline int64_t
draw(int dist, uint64_t i, uint64_t n, uint64_t seed)
{
	uint64_t	r = mix64(seed ^ (i * 0xD1B54A32D192ED03ULL));

	switch (dist)
	{
		case 0:				/* linear: 0, 1, 2, ... (queries sequential) */
			return (int64_t) (i % n) - 1000000;
		case 1:				/* uniform over int32 */
			return (int32_t) (uint32_t) r;
		case 2:				/* normal, sd 2^28 */
			return clamp32(normal01(r) * 268435456.0);
		case 3:				/* lognormal, median 2^26, from INT32_MIN */
			return clamp32(exp(normal01(r)) * 67108864.0 - 2147483648.0);
		default:			/* two normals at -+2^29, sd 2^26 */
			return clamp32(normal01(r) * 67108864.0 + ((r & 1) ? 536870912.0 : -536870912.0));
	}
}

/* Keys as int32. */
__global__ void
gen_keys_kernel(int32_t *out, uint64_t n, int dist, uint64_t seed)
{
	for (uint64_t i = (uint64_t) blockIdx.x * blockDim.x + threadIdx.x; i < n;
		 i += (uint64_t) gridDim.x * blockDim.x)
		out[i] = (int32_t) draw(dist, i, n, seed);
}

/* Probes as int64. */
__global__ void
gen_probes_kernel(int64_t *out, uint64_t q, uint64_t n, int dist, uint64_t seed)
{
	for (uint64_t i = (uint64_t) blockIdx.x * blockDim.x + threadIdx.x; i < q;
		 i += (uint64_t) gridDim.x * blockDim.x)
		out[i] = draw(dist, i, dist == 0 ? n : q, seed);
}

/* Predecessor by binary search over the distinct keys, as the run [f, l). */
__global__ void
bsearch_pred_kernel(const int32_t *dk, const uint64_t *rs, uint64_t nd,
					const int64_t *probes, uint64_t q, uint64_t *first,
					uint64_t *last)
{
	for (uint64_t i = (uint64_t) blockIdx.x * blockDim.x + threadIdx.x; i < q;
		 i += (uint64_t) gridDim.x * blockDim.x)
	{
		int64_t		p = probes[i];
		uint64_t	lo = 0,
					hi = nd;

		while (lo < hi)			/* first distinct key > p */
		{
			uint64_t	mid = (lo + hi) >> 1;

			if ((int64_t) dk[mid] <= p)
				lo = mid + 1;
			else
				hi = mid;
		}
		if (lo == 0)
			first[i] = last[i] = 0;
		else
		{
			first[i] = rs[lo - 1];
			last[i] = rs[lo];
		}
	}
}

/* Append run_start[nd] = n. */
__global__ void
sentinel_kernel(uint64_t *rs, uint64_t nd, uint64_t n)
{
	rs[nd] = n;
}

/* Widen run lengths to 64 bits. */
__global__ void
widen_kernel(const uint32_t *in, uint64_t *out, uint64_t nd)
{
	for (uint64_t i = (uint64_t) blockIdx.x * blockDim.x + threadIdx.x; i < nd;
		 i += (uint64_t) gridDim.x * blockDim.x)
		out[i] = in[i];
}

static int	g_grid;				/* blocks for elementwise kernels */

/* Parse 1e7-style counts. */
static uint64_t
parse_count(const char *s)
{
	return (uint64_t) llround(strtod(s, NULL));
}

/* Wall time of a synchronous call, min over reps, in ms. */
template <class F>
static double
time_min(int reps, F f)
{
	double		best = 1e30;

	for (int r = 0; r < reps; r++)
	{
		CUDA_OK(cudaDeviceSynchronize());
		double		t0 = gi_now_ms();

		f();
		CUDA_OK(cudaDeviceSynchronize());
		best = std::min(best, gi_now_ms() - t0);
	}
	return best;
}

/* Build an image from unsorted device keys: a warm-up, then one timed. */
static double
build_timed(const GiBuildParams *p, const int32_t *d_keys, uint64_t n,
			GiImage **out)
{
	GiError		err;
	double		t0;

	for (int r = 0; r < 2; r++)
	{
		if (*out)
			gi_image_free(*out);
		*out = NULL;
		CUDA_OK(cudaDeviceSynchronize());
		t0 = gi_now_ms();
		if (gi_gpu_dev_build(p, d_keys, NULL, n, false, NULL, out, &err) != GI_OK)
		{
			fprintf(stderr, "%s build: %s\n", gi_structure_name(p->structure), err.message);
			exit(2);
		}
	}
	return gi_now_ms() - t0;
}

/* The de-duplicated keys and their run starts, for the binary search. */
static void
dedup(const int32_t *d_keys, uint64_t n, int32_t **d_dk, uint64_t **d_rs,
	  uint64_t *nd_out)
{
	int32_t    *sorted;
	uint32_t   *cnt;
	int64_t    *d_num;
	int64_t		nd = 0;
	void	   *temp = NULL;
	size_t		tb = 0,
				tb2 = 0;

	CUDA_OK(cudaMalloc(&sorted, n * 4));
	CUDA_OK(cudaMalloc(d_dk, n * 4));
	CUDA_OK(cudaMalloc(&cnt, n * 4));
	CUDA_OK(cudaMalloc(&d_num, 8));
	CUDA_OK(cub::DeviceRadixSort::SortKeys(NULL, tb, d_keys, sorted, (int64_t) n));
	CUDA_OK(cub::DeviceRunLengthEncode::Encode(NULL, tb2, sorted, *d_dk, cnt, d_num, (int64_t) n));
	tb = std::max(tb, tb2);
	CUDA_OK(cudaMalloc(&temp, tb));
	CUDA_OK(cub::DeviceRadixSort::SortKeys(temp, tb, d_keys, sorted, (int64_t) n));
	CUDA_OK(cub::DeviceRunLengthEncode::Encode(temp, tb, sorted, *d_dk, cnt, d_num, (int64_t) n));
	CUDA_OK(cudaMemcpy(&nd, d_num, 8, cudaMemcpyDeviceToHost));
	CUDA_OK(cudaMalloc(d_rs, (nd + 1) * 8));
	widen_kernel<<<g_grid, 256>>>(cnt, *d_rs, nd);
	CUDA_OK(cudaGetLastError());
	CUDA_OK(cudaFree(temp));
	temp = NULL;
	tb = 0;
	CUDA_OK(cub::DeviceScan::ExclusiveSum(NULL, tb, *d_rs, (int64_t) nd));
	CUDA_OK(cudaMalloc(&temp, tb));
	CUDA_OK(cub::DeviceScan::ExclusiveSum(temp, tb, *d_rs, (int64_t) nd));
	sentinel_kernel<<<1, 1>>>(*d_rs, nd, n);
	CUDA_OK(cudaDeviceSynchronize());
	CUDA_OK(cudaFree(temp));
	CUDA_OK(cudaFree(sorted));
	CUDA_OK(cudaFree(cnt));
	CUDA_OK(cudaFree(d_num));
	*nd_out = (uint64_t) nd;
}

int
main(int argc, char **argv)
{
	std::vector<uint64_t> sizes = {1000000, 10000000, 100000000};
	uint64_t	nq = 10000000;
	uint64_t	cpu_max = 10000000;
	double		deadline_s = 1e9;
	double		start = gi_now_ms();
	cudaDeviceProp prop;
	char		why[256];

	for (int a = 1; a < argc; a++)
	{
		if (!strcmp(argv[a], "--sizes") && a + 1 < argc)
		{
			char	   *s = argv[++a];

			sizes.clear();
			for (char *t = strtok(s, ","); t; t = strtok(NULL, ","))
				sizes.push_back(parse_count(t));
		}
		else if (!strcmp(argv[a], "--queries") && a + 1 < argc)
			nq = parse_count(argv[++a]);
		else if (!strcmp(argv[a], "--cpu-max") && a + 1 < argc)
			cpu_max = parse_count(argv[++a]);
		else if (!strcmp(argv[a], "--deadline") && a + 1 < argc)
			deadline_s = strtod(argv[++a], NULL);
		else
		{
			fprintf(stderr, "usage: %s [--sizes 1e6,1e7] [--queries 1e7] [--cpu-max 1e7] [--deadline s]\n",
					argv[0]);
			return 1;
		}
	}
	if (!gi_gpu_available(why, sizeof(why)))
	{
		fprintf(stderr, "no GPU: %s\n", why);
		return 1;
	}
	CUDA_OK(cudaGetDeviceProperties(&prop, 0));
	g_grid = prop.multiProcessorCount * 8;
	printf("## vEB (GPU): %s, int32 keys, %llu random predecessor queries per batch\n\n",
		   prop.name, (unsigned long long) nq);
	printf("Build: GPU times include the CUB sort of unsorted keys (device-resident); "
		   "Alg. 2 is the one-at-a-time CPU insertion build of engine/cpu_veb.c (one core).  "
		   "Queries: PRED, Mq/s, min of 3; bsearch = binary search over the de-duplicated keys "
		   "(same run output); B+ = the GPU B+ tree.  space = (clusters + hash tables) / "
		   "(distinct keys x 4 B); total = all device bytes incl. run starts / (distinct x 4 B).  "
		   "bad = vEB answers differing from the binary search's.\n\n");
	printf("| n | dist | distinct | vEB build ms | B+ build ms | Alg.2 ms | Alg.2/vEB | vEB Mq/s | bsearch Mq/s | B+ Mq/s | vEB/bs | vEB/B+ | space | total | bad |\n");
	printf("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
	fflush(stdout);

	for (uint64_t n : sizes)
		for (int dist = 0; dist < NDIST; dist++)
		{
			int32_t    *d_keys,
					   *d_dk;
			int64_t    *d_probes;
			uint64_t   *d_rs,
					   *f1,
					   *l1,
					   *f2,
					   *l2;
			unsigned long long *d_bad,
						bad = 0;
			uint64_t	nd;
			GiImage    *veb = NULL,
					   *bt = NULL;
			GiImageInfo info;
			GiBuildParams pv = {GI_ENGINE_GPU, GI_STRUCT_VEB, 4, 0};
			GiBuildParams pb = {GI_ENGINE_GPU, GI_STRUCT_BTREE, 4, 0};
			double		veb_build,
						bt_build,
						alg2 = -1,
						veb_q,
						bs_q,
						bt_q;

			if ((gi_now_ms() - start) / 1000.0 > deadline_s)
			{
				printf("\n(stopped at the deadline of %.0f s before n=%llu %s)\n", deadline_s,
					   (unsigned long long) n, dist_names[dist]);
				return 0;
			}
			CUDA_OK(cudaMalloc(&d_keys, n * 4));
			CUDA_OK(cudaMalloc(&d_probes, nq * 8));
			CUDA_OK(cudaMalloc(&f1, nq * 8));
			CUDA_OK(cudaMalloc(&l1, nq * 8));
			CUDA_OK(cudaMalloc(&f2, nq * 8));
			CUDA_OK(cudaMalloc(&l2, nq * 8));
			CUDA_OK(cudaMalloc(&d_bad, 8));
			gen_keys_kernel<<<g_grid, 256>>>(d_keys, n, dist, 0x1234 + n);
			gen_probes_kernel<<<g_grid, 256>>>(d_probes, nq, n, dist, 0xABCD + n);
			CUDA_OK(cudaDeviceSynchronize());

			/* Builds: a warm-up each (kernels load), then one timed. */
			veb_build = build_timed(&pv, d_keys, n, &veb);
			bt_build = build_timed(&pb, d_keys, n, &bt);
			gi_image_info(veb, &info);
			dedup(d_keys, n, &d_dk, &d_rs, &nd);

			/* Queries. */
			veb_q = time_min(3, [&] {
				GiError		err;

				if (gi_gpu_dev_query(veb, GI_OP_PRED, d_probes, NULL, nq, f1, l1, NULL, &err) != GI_OK)
				{
					fprintf(stderr, "veb query: %s\n", err.message);
					exit(2);
				}
			});
			bs_q = time_min(3, [&] {
				bsearch_pred_kernel<<<g_grid, 256>>>(d_dk, d_rs, nd, d_probes, nq, f2, l2);
			});
			CUDA_OK(cudaMemset(d_bad, 0, 8));
			mismatch_kernel<<<g_grid, 256>>>(f1, l1, f2, l2, nq, d_bad);
			CUDA_OK(cudaMemcpy(&bad, d_bad, 8, cudaMemcpyDeviceToHost));
			bt_q = time_min(3, [&] {
				GiError		err;

				if (gi_gpu_dev_query(bt, GI_OP_PRED, d_probes, NULL, nq, f2, l2, NULL, &err) != GI_OK)
				{
					fprintf(stderr, "btree query: %s\n", err.message);
					exit(2);
				}
			});
			gi_image_free(bt);

			/* The CPU insertion build (Algorithm 2). */
			if (n <= cpu_max)
			{
				int64_t    *hk = (int64_t *) malloc(n * 8);
				int32_t    *h32 = (int32_t *) malloc(n * 4);
				GiVebInsertTree *tree = NULL;
				GiError		err;

				CUDA_OK(cudaMemcpy(h32, d_keys, n * 4, cudaMemcpyDeviceToHost));
				for (uint64_t i = 0; i < n; i++)
					hk[i] = h32[i];
				double		t0 = gi_now_ms();

				if (gi_veb_insert_build(hk, n, 4, &tree, &err) == GI_OK)
				{
					alg2 = gi_now_ms() - t0;
					gi_veb_insert_free(tree);
				}
				free(hk);
				free(h32);
			}

			printf("| %.0e | %s | %llu | %.1f | %.1f | ", (double) n, dist_names[dist],
				   (unsigned long long) nd, veb_build, bt_build);
			if (alg2 >= 0)
				printf("%.0f | %.1fx | ", alg2, alg2 / veb_build);
			else
				printf("- | - | ");
			printf("%.0f | %.0f | %.0f | %.2fx | %.2fx | %.2fx | %.2fx | %llu |\n",
				   nq / veb_q / 1e3, nq / bs_q / 1e3, nq / bt_q / 1e3, bs_q / veb_q,
				   bt_q / veb_q, info.space_overhead,
				   (double) info.device_bytes / ((double) nd * 4), bad);
			fflush(stdout);
			gi_image_free(veb);
			CUDA_OK(cudaFree(d_keys));
			CUDA_OK(cudaFree(d_probes));
			CUDA_OK(cudaFree(d_dk));
			CUDA_OK(cudaFree(d_rs));
			CUDA_OK(cudaFree(f1));
			CUDA_OK(cudaFree(l1));
			CUDA_OK(cudaFree(f2));
			CUDA_OK(cudaFree(l2));
			CUDA_OK(cudaFree(d_bad));
		}
	printf("\n(%.0f s)\n", (gi_now_ms() - start) / 1000.0);
	return 0;
}
