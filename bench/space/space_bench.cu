/*
 * space_bench.cu - SPACE stream compaction against cub::DeviceSelect::Flagged
 * on the same data in the same run (bench/space/README.md).
 *
 * 1 GiB of device-resident values (uint32 and uint64), masks uniform / one
 * cluster / 32 equidistant clusters at selectivities 1e-5 % .. 97 %.  CUB is
 * given the same selection as one flag byte per element (what Flagged takes).
 * Every plan (chunk size x prefix sum x write-out) is timed; the table shows
 * the engine's default plan and the best plan per point.  Times: CUDA events,
 * L2 flushed before each run, warm-up, median of --reps runs.  Each plan's
 * output is checked against CUB's (count, values, nothing past the count).
 *
 * Useful bytes (what the run must read and write):
 *   SPACE: the whole mask (count phase) + the mask words of non-skipped
 *          chunks (write-out) + k values read + k values written + chunk
 *          count/offset arrays (12 B per chunk, +16 for CUB's u64 offsets,
 *          +8 for the two-phase local offsets);
 *   CUB:   n values + n flag bytes read + k values written.
 */
#include "gpu_space.cuh"

#include <cub/cub.cuh>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#define CK(call) \
	do { cudaError_t rc_ = (call); \
		 if (rc_ != cudaSuccess) { fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #call, \
											cudaGetErrorString(rc_)); exit(1); } } while (0)

enum { DIST_UNIFORM, DIST_ONE_CLUSTER, DIST_32_CLUSTERS, NDISTS };
static const char *const dist_names[] = {"uniform", "1 cluster", "32 clusters"};

/* Hash of (seed, i): a stateless random stream. */
static __device__ __forceinline__ uint64_t
mix64(uint64_t seed, uint64_t i)
{
	uint64_t	z = seed + (i + 1) * 0x9E3779B97F4A7C15ULL;

	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
	return z ^ (z >> 31);
}

/* Random values (never zero). */
template <typename T>
__global__ void
fill_values(T *v, size_t n, uint64_t seed)
{
	for (size_t i = (size_t) blockIdx.x * blockDim.x + threadIdx.x; i < n;
		 i += (size_t) gridDim.x * blockDim.x)
		v[i] = (T) (mix64(seed, i) | 1);
}

/* One mask word per thread: uniform below cut, or clusters. */
__global__ void
fill_mask(uint64_t *mask, size_t words, size_t n, int dist, uint64_t cut, uint64_t seed,
		  size_t start, size_t len, size_t period)
{
	for (size_t w = (size_t) blockIdx.x * blockDim.x + threadIdx.x; w < words;
		 w += (size_t) gridDim.x * blockDim.x)
	{
		uint64_t	m = 0;

		for (int b = 0; b < 64; b++)
		{
			size_t		i = w * 64 + b;
			bool		on;

			if (i >= n)
				break;
			if (dist == DIST_UNIFORM)
				on = mix64(seed, i) < cut;
			else if (dist == DIST_ONE_CLUSTER)
				on = i >= start && i < start + len;
			else
				on = (i % period) < len;
			m |= (uint64_t) on << b;
		}
		mask[w] = m;
	}
}

/* The mask as one flag byte per element, for CUB. */
__global__ void
mask_to_flags(const uint64_t *mask, size_t n, unsigned char *flags)
{
	for (size_t i = (size_t) blockIdx.x * blockDim.x + threadIdx.x; i < n;
		 i += (size_t) gridDim.x * blockDim.x)
		flags[i] = (unsigned char) ((mask[i / 64] >> (i & 63)) & 1);
}

/* Chunks of chunk_words mask words with a set bit. */
__global__ void
count_live_chunks(const uint64_t *mask, size_t words, int chunk_words,
				  unsigned long long *live)
{
	size_t		nchunks = (words + chunk_words - 1) / chunk_words;

	for (size_t c = (size_t) blockIdx.x * blockDim.x + threadIdx.x; c < nchunks;
		 c += (size_t) gridDim.x * blockDim.x)
	{
		uint64_t	any = 0;

		for (size_t w = c * chunk_words; w < (c + 1) * chunk_words && w < words; w++)
			any |= mask[w];
		if (any)
			atomicAdd(live, 1ULL);
	}
}

/* Mismatches of got against want over k elements, and a stray write at k. */
template <typename T>
__global__ void
compare_outputs(const T *got, const T *want, size_t k, size_t n, T poison,
				unsigned long long *bad)
{
	for (size_t i = (size_t) blockIdx.x * blockDim.x + threadIdx.x; i <= k && i < n;
		 i += (size_t) gridDim.x * blockDim.x)
		if (i < k ? got[i] != want[i] : got[i] != poison)
			atomicAdd(bad, 1ULL);
}

/* Median of a few timings. */
static float
median(std::vector<float> v)
{
	std::sort(v.begin(), v.end());
	return v[v.size() / 2];
}

struct Bench
{
	cudaStream_t stream;
	cudaEvent_t start, stop;
	void	   *flush;			/* written before each timed run: evicts L2 */
	size_t		flush_bytes;
	int			grid;			/* for the helper kernels */
	int			reps;
};

/* Time fn() reps times after warm-up; L2 flushed before each run. */
template <typename F>
static float
time_median(Bench &b, F fn)
{
	std::vector<float> t;

	for (int r = 0; r < 2; r++)
		fn();
	CK(cudaStreamSynchronize(b.stream));
	for (int r = 0; r < b.reps; r++)
	{
		float		ms;

		CK(cudaMemsetAsync(b.flush, r & 0xff, b.flush_bytes, b.stream));
		CK(cudaEventRecord(b.start, b.stream));
		fn();
		CK(cudaEventRecord(b.stop, b.stream));
		CK(cudaEventSynchronize(b.stop));
		CK(cudaEventElapsedTime(&ms, b.start, b.stop));
		t.push_back(ms);
	}
	return median(t);
}

struct Row
{
	const char *type;
	const char *dist;
	double		sel;
	size_t		k;
	float		cub_ms;
	double		cub_bytes;
	std::vector<float> plan_ms;
	std::vector<double> plan_bytes;
};

/* All points of one element type. */
template <typename T>
static void
bench_type(Bench &b, const std::vector<GiSpacePlan> &plans, const std::vector<double> &sels,
		   std::vector<Row> &rows, FILE *csv, bool quick)
{
	size_t		n = ((size_t) 1 << 30) / sizeof(T);
	size_t		words = (n + 63) / 64;
	T		   *d_values,
			   *d_out,
			   *d_ref;
	uint64_t   *d_mask;
	unsigned char *d_flags;
	unsigned long long *d_num,
			   *d_aux;
	void	   *d_cub_temp = NULL;
	size_t		cub_temp = 0,
				scratch_bytes = 0;
	void	   *d_scratch;
	const char *tname = sizeof(T) == 4 ? "u32" : "u64";
	char		pname[64];
	GiError		err;

	CK(cudaMalloc(&d_values, n * sizeof(T)));
	CK(cudaMalloc(&d_out, n * sizeof(T)));
	CK(cudaMalloc(&d_ref, n * sizeof(T)));
	CK(cudaMalloc(&d_mask, words * sizeof(uint64_t)));
	CK(cudaMalloc(&d_flags, n));
	CK(cudaMalloc(&d_num, sizeof(unsigned long long)));
	CK(cudaMalloc(&d_aux, sizeof(unsigned long long)));
	CK(cub::DeviceSelect::Flagged(NULL, cub_temp, d_values, d_flags, d_ref, d_num, (int64_t) n,
								  b.stream));
	CK(cudaMalloc(&d_cub_temp, cub_temp));
	for (const GiSpacePlan &p : plans)
		scratch_bytes = std::max(scratch_bytes, gi_space_scratch_bytes(&p, n));
	CK(cudaMalloc(&d_scratch, scratch_bytes));
	fill_values<T><<<b.grid, 256, 0, b.stream>>>(d_values, n, 12345 + sizeof(T));
	CK(cudaGetLastError());

	for (int dist = 0; dist < NDISTS; dist++)
		for (double sel : sels)
		{
			Row			row;
			size_t		want = (size_t) llround(sel * (double) n);
			size_t		period = n / 32;
			size_t		len = dist == DIST_32_CLUSTERS ? std::max<size_t>(1, want / 32) : want;
			size_t		start = dist == DIST_ONE_CLUSTER ? (size_t) ((n - len) * 0.37) : 0;
			uint64_t	cut = sel >= 1.0 ? ~0ULL : (uint64_t) (sel * 18446744073709551615.0);
			unsigned long long k = 0,
						live[4];

			if (quick && dist != DIST_UNIFORM && sel != 0.01)
				continue;
			fill_mask<<<b.grid, 256, 0, b.stream>>>(d_mask, words, n, dist, cut, 777 + dist,
													start, len, period);
			mask_to_flags<<<b.grid, 256, 0, b.stream>>>(d_mask, n, d_flags);
			CK(cudaGetLastError());
			for (int c = 0; c < 4; c++)
			{
				CK(cudaMemsetAsync(d_aux, 0, sizeof(*d_aux), b.stream));
				count_live_chunks<<<b.grid, 256, 0, b.stream>>>(d_mask, words, 8 << c, d_aux);
				CK(cudaMemcpyAsync(&live[c], d_aux, sizeof(*d_aux), cudaMemcpyDeviceToHost,
								   b.stream));
			}

			row.type = tname;
			row.dist = dist_names[dist];
			row.sel = sel;
			row.cub_ms = time_median(b, [&] {
				CK(cub::DeviceSelect::Flagged(d_cub_temp, cub_temp, d_values, d_flags, d_ref,
											  d_num, (int64_t) n, b.stream));
			});
			CK(cudaMemcpy(&k, d_num, sizeof(k), cudaMemcpyDeviceToHost));
			row.k = k;
			row.cub_bytes = (double) n * sizeof(T) + (double) n + (double) k * sizeof(T);

			for (const GiSpacePlan &p : plans)
			{
				int			ci = p.chunk_bits == 512 ? 0 : p.chunk_bits == 1024 ? 1 :
					p.chunk_bits == 2048 ? 2 : 3;
				size_t		nchunks = (words + p.chunk_bits / 64 - 1) / (p.chunk_bits / 64);
				double		per_chunk = 12 + (p.scan == GI_SPACE_SCAN_CUB ? 16 :
											   p.scan == GI_SPACE_SCAN_TWO_PHASE ? 8 : 0);
				unsigned long long got = 0,
							bad = 0;
				float		ms;

				ms = time_median(b, [&] {
					if (gi_space_compact_async(&p, d_mask, d_values, sizeof(T), n, d_out, d_num,
											   d_scratch, scratch_bytes, b.stream, &err) != GI_OK)
					{
						fprintf(stderr, "space: %s\n", err.message);
						exit(1);
					}
				});
				/* check: poisoned output, same count and values as CUB */
				CK(cudaMemsetAsync(d_out, 0xA5, n * sizeof(T), b.stream));
				CK(cudaMemsetAsync(d_aux, 0, sizeof(*d_aux), b.stream));
				if (gi_space_compact_async(&p, d_mask, d_values, sizeof(T), n, d_out, d_num,
										   d_scratch, scratch_bytes, b.stream, &err) != GI_OK)
				{
					fprintf(stderr, "space: %s\n", err.message);
					exit(1);
				}
				T			poison;

				memset(&poison, 0xA5, sizeof(poison));
				compare_outputs<T><<<b.grid, 256, 0, b.stream>>>(d_out, d_ref, k, n, poison, d_aux);
				CK(cudaGetLastError());
				CK(cudaMemcpy(&got, d_num, sizeof(got), cudaMemcpyDeviceToHost));
				CK(cudaMemcpy(&bad, d_aux, sizeof(bad), cudaMemcpyDeviceToHost));
				gi_space_plan_name(&p, pname, sizeof(pname));
				if (got != k || bad != 0)
				{
					fprintf(stderr, "MISMATCH %s %s sel=%g plan %s: count %llu vs CUB %llu, %llu bad\n",
							tname, dist_names[dist], sel, pname, got, k, bad);
					printf("MISMATCH %s %s sel=%g plan %s\n", tname, dist_names[dist], sel, pname);
				}
				row.plan_ms.push_back(ms);
				row.plan_bytes.push_back((double) words * 8 +
										 (double) live[ci] * (p.chunk_bits / 8) +
										 2.0 * k * sizeof(T) + per_chunk * nchunks);
				fprintf(csv, "%s,%s,%g,%llu,%s,%.5f,%.5f,%.3f\n", tname, dist_names[dist], sel, k,
						pname, ms, row.cub_ms, row.cub_ms / ms);
			}
			rows.push_back(row);
			fprintf(stderr, "%s %-11s %-8g k=%-10llu cub %.4f ms, default %.4f ms\n", tname,
					dist_names[dist], sel, k, row.cub_ms, row.plan_ms[0]);
		}
	cudaFree(d_values);
	cudaFree(d_out);
	cudaFree(d_ref);
	cudaFree(d_mask);
	cudaFree(d_flags);
	cudaFree(d_num);
	cudaFree(d_aux);
	cudaFree(d_cub_temp);
	cudaFree(d_scratch);
}

/* Selectivity as the table writes it, in percent. */
static std::string
pct(double sel)
{
	char		buf[32];

	snprintf(buf, sizeof(buf), "%g %%", sel * 100);
	return buf;
}

int
main(int argc, char **argv)
{
	Bench		b;
	cudaDeviceProp prop;
	int			dev = 0;
	bool		quick = false;
	const char *csv_path = "space_all.csv";
	std::vector<double> sels = {1e-7, 1e-5, 1e-3, 1e-2, 5e-2, 0.25, 0.5, 0.97};
	std::vector<GiSpacePlan> plans;
	std::vector<Row> rows;
	FILE	   *csv;

	b.reps = 7;
	for (int i = 1; i < argc; i++)
	{
		if (!strcmp(argv[i], "--quick"))
			quick = true;
		else if (!strcmp(argv[i], "--reps") && i + 1 < argc)
			b.reps = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--csv") && i + 1 < argc)
			csv_path = argv[++i];
		else
		{
			fprintf(stderr, "usage: %s [--quick] [--reps N] [--csv FILE]\n", argv[0]);
			return 2;
		}
	}
	CK(cudaGetDevice(&dev));
	CK(cudaGetDeviceProperties(&prop, dev));
	CK(cudaStreamCreate(&b.stream));
	CK(cudaEventCreate(&b.start));
	CK(cudaEventCreate(&b.stop));
	b.flush_bytes = (size_t) std::max(prop.l2CacheSize, 1 << 20) * 2;
	CK(cudaMalloc(&b.flush, b.flush_bytes));
	b.grid = prop.multiProcessorCount * 8;

	/* the default plan first, then every other plan */
	plans.push_back(gi_space_default_plan);
	for (int sc = 0; sc < 3; sc++)
		for (int wr = 0; wr < 3; wr++)
			for (size_t ch = 512; ch <= 4096; ch *= 2)
			{
				GiSpacePlan p = {ch, (GiSpaceScan) sc, (GiSpaceWrite) wr};

				if (p.chunk_bits == gi_space_default_plan.chunk_bits && p.scan == gi_space_default_plan.scan &&
					p.write == gi_space_default_plan.write)
					continue;
				plans.push_back(p);
			}

	/* the copy ceiling: a 1 GiB device-to-device copy, read + write */
	{
		void	   *a,
				   *c;
		size_t		bytes = (size_t) 1 << 30;
		float		ms;

		CK(cudaMalloc(&a, bytes));
		CK(cudaMalloc(&c, bytes));
		CK(cudaMemset(a, 1, bytes));
		ms = time_median(b, [&] { CK(cudaMemcpyAsync(c, a, bytes, cudaMemcpyDeviceToDevice, b.stream)); });
		printf("device: %s, %d SMs, L2 %d MiB; D2D copy of 1 GiB: %.3f ms = %.0f GB/s (read + write)\n",
			   prop.name, prop.multiProcessorCount, prop.l2CacheSize >> 20, ms, 2.0 * bytes / ms / 1e6);
		cudaFree(a);
		cudaFree(c);
	}

	csv = fopen(csv_path, "w");
	if (csv == NULL)
	{
		perror(csv_path);
		return 1;
	}
	fprintf(csv, "type,mask,selectivity,k,plan,space_ms,cub_ms,speedup\n");
	bench_type<uint32_t>(b, plans, sels, rows, csv, quick);
	bench_type<uint64_t>(b, plans, sels, rows, csv, quick);
	fclose(csv);

	/* per plan: worst and geometric-mean speedup over all points */
	{
		char		name[64];
		size_t		best = 0,
					best_mean = 0;
		double		best_min = 0,
					best_geo = 0;

		printf("\nPlans (write-out/scan/chunk bits): speedup over CUB across all %zu points "
			   "(targets: min >= 1, 1 %% uniform >= 3, 1 %% 1 cluster >= 8)\n\n", rows.size());
		printf("| plan | min | geomean | 1 %% uniform u32 | 1 %% 1 cluster u32 |\n|---|---|---|---|---|\n");
		for (size_t p = 0; p < plans.size(); p++)
		{
			double		mn = 1e30,
						lg = 0,
						u1 = 0,
						c1 = 0;

			for (const Row &r : rows)
			{
				double		s = r.cub_ms / r.plan_ms[p];

				mn = std::min(mn, s);
				lg += log(s);
				if (r.sel == 0.01 && !strcmp(r.type, "u32") && !strcmp(r.dist, "uniform"))
					u1 = s;
				if (r.sel == 0.01 && !strcmp(r.type, "u32") && !strcmp(r.dist, "1 cluster"))
					c1 = s;
			}
			if (mn > best_min)
				best_min = mn, best = p;
			if (mn >= 1.0 && exp(lg / rows.size()) > best_geo)
				best_geo = exp(lg / rows.size()), best_mean = p;
			printf("| %s%s | %.2f | %.2f | %.2f | %.2f |\n", gi_space_plan_name(&plans[p], name, sizeof(name)),
				   p == 0 ? " (default)" : "", mn, exp(lg / rows.size()), u1, c1);
		}
		printf("\nBest worst case: %s (min %.2fx)\n", gi_space_plan_name(&plans[best], name, sizeof(name)), best_min);
		if (best_geo > 0)
			printf("Best geomean among plans never slower than CUB: %s (%.2fx)\n",
				   gi_space_plan_name(&plans[best_mean], name, sizeof(name)), best_geo);
	}

	/* the main table: the default plan, and the best plan per point */
	{
		char		name[64];

		printf("\nSPACE (default plan %s) vs cub::DeviceSelect::Flagged (flags as 1 byte per element), "
			   "1 GiB of values, device-resident, median of %d runs, L2 flushed\n\n",
			   gi_space_plan_name(&plans[0], name, sizeof(name)), b.reps);
		printf("| type | mask | selected | k | SPACE ms | SPACE GB/s | CUB ms | CUB GB/s | speedup | best plan | best speedup |\n");
		printf("|---|---|---|---|---|---|---|---|---|---|---|\n");
		for (const Row &r : rows)
		{
			size_t		bp = 0;

			for (size_t p = 1; p < r.plan_ms.size(); p++)
				if (r.plan_ms[p] < r.plan_ms[bp])
					bp = p;
			printf("| %s | %s | %s | %zu | %.4f | %.0f | %.4f | %.0f | %.2f | %s | %.2f |\n",
				   r.type, r.dist, pct(r.sel).c_str(), r.k, r.plan_ms[0],
				   r.plan_bytes[0] / r.plan_ms[0] / 1e6, r.cub_ms, r.cub_bytes / r.cub_ms / 1e6,
				   r.cub_ms / r.plan_ms[0], gi_space_plan_name(&plans[bp], name, sizeof(name)),
				   r.cub_ms / r.plan_ms[bp]);
		}
	}
	return 0;
}
