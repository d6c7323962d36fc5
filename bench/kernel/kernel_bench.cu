/*
 * kernel_bench.cu - kernel-level benchmark of the GPU B+ tree (no
 * PostgreSQL).  Prints markdown tables: builds (from host-resident unsorted
 * pairs, from unsorted / sorted pairs already on the device), point and
 * predecessor throughput with probes already on the device against a GPU
 * binary search over the sorted keys (one thread per probe) measured in the
 * same run, end-to-end throughput through gi_image_query against the CPU
 * engine, and a sweep of the query policy (sorted bits, group size).
 *
 * With --paths, every query row is also timed on each search path and
 * policy variant (path_variants: the tiled search forced, the per-probe
 * kernel forced, groups of 2, the order sample's old rule, the tiled
 * kernel's register cap, the thread search without its leaf walk) beside the binary
 * search, in a table of its own, and the fixed costs of a small batch
 * (one probe, 10^5 probes, an empty kernel) are timed apart; --device-only leaves out the host-side
 * parts (host builds, end to end, CPU engine) at every size, as 10^9 keys
 * always do.  --orders and --dists pick the probe orders (random, sorted,
 * clustered) and key distributions (uniform, lognormal; runs, long runs of
 * equal keys at both widths, only when named) to run, --widths the key
 * widths in bytes (4, 8).  --insertable prints the insertable form's table
 * (of --paths) alone, for every distribution run.  --merge adds, for every
 * sorted row, a merge-path search over the dense sorted keys
 * (merge_search.cuh) beside the tree and the binary search: what a search
 * that streams the keys reaches, on the same batch.
 *
 *   kernel_bench [--small] [--max-n N] [--max-q Q] [--min-n N] [--paths] [--insertable] [--device-only]
 *                [--orders LIST] [--dists LIST] [--widths 4,8] [--merge] [--small-reps N]
 */
#include "gpu_engine.cuh"
#include "bench_util.cuh"

#include <cub/device/device_radix_sort.cuh>

#include <algorithm>
#include <cinttypes>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

static std::vector<std::string> t_build, t_query, t_e2e, t_sweep, t_tiles, t_paths, t_fixed, t_ins;
static bool g_paths;				/* --paths */
static bool g_insertable;			/* --insertable */
static bool g_device_only;		/* --device-only */
static bool g_merge;				/* --merge */
static std::vector<std::string> t_merge;
static bool g_order_on[3] = {true, true, true};	/* --orders */
static bool g_width_on[2] = {true, true};	/* --widths: int32, int64 */
static bool g_dist_on[3] = {true, true, false};	/* --dists (runs: only when named) */

/*
 * The policy variants of the --paths table, each the engine's default with
 * one field changed: what a column shows against the default.
 */
struct PathVariant
{
	const char *name;
	void		(*apply) (GiGpuPolicy *p);
};
static const PathVariant path_variants[] = {
	{"tiled", [](GiGpuPolicy *p) { p->tile = 1; }},	/* tiles, never the per-probe kernel */
	{"per-probe", [](GiGpuPolicy *p) { p->tile = -1; }},	/* one descent a probe */
	{"group 2", [](GiGpuPolicy *p) { p->group = 2; }},	/* the per-probe kernel two lanes a probe */
	{"group 4", [](GiGpuPolicy *p) { p->group = 4; }},	/* four lanes a probe */
	{"key-span sample", [](GiGpuPolicy *p) { p->sample_leaves = -1; }},	/* the sample's old rule */
	{"sample 32 leaves", [](GiGpuPolicy *p) { p->sample_leaves = 32; }},	/* the tiled kernel's
																			 * window as the narrow
																			 * rule */
	{"window 32", [](GiGpuPolicy *p) { p->window = 32; }},	/* the stream kernel's window */
	{"window 48", [](GiGpuPolicy *p) { p->window = 48; }},
	{"no row hint", [](GiGpuPolicy *p) { p->row_hint = -1; }},	/* the whole window searched */
	{"sampled from 2^16", [](GiGpuPolicy *p) { p->gate_min = 1 << 16; }},	/* smaller batches
																			 * behind the sample */
	{"tiled kernel", [](GiGpuPolicy *p) { p->stream = -1; }},	/* the tiled kernel (groups of 2)
																 * where the sample tiles, not the
																 * stream kernel */
	{"tiled kernel 2 blocks", [](GiGpuPolicy *p) { p->stream = -1; p->tile_min_blocks = 2; }},	/* its
																								 * register
																								 * cap
																								 * 128 */
	{"no leaf walk", [](GiGpuPolicy *p) { p->leaf_walk = -1; }},	/* the thread search's second
																	 * rank by a binary search */
	{"no top table", [](GiGpuPolicy *p) { p->top = -1; }},	/* per-probe descents from the root */
	{"wide leaves", [](GiGpuPolicy *p) { p->wide = 1; }},	/* whole-leaf loads */
	{"probe sort", [](GiGpuPolicy *p) { p->sort_mode = 1; }},	/* the engine's probe sort for every
																 * batch */
	{"leaf guess", [](GiGpuPolicy *p) { p->leaf_guess = 1; }},	/* leaf ranks from a guessed
																 * sector, at every tree size */
	{"no leaf guess", [](GiGpuPolicy *p) { p->leaf_guess = -1; }},	/* leaf ranks by a binary
																	 * search of loads */
};
#define NVARIANTS ((int) (sizeof(path_variants) / sizeof(path_variants[0])))

#define HUGE_N 1000000000ull	/* from here on: device-resident parts only */
#define SMALL_Q 1000000			/* query batches up to this many probes ... */
#define SMALL_REPS 201			/* ... are timed this many times by default (the median):
								 * a 10^5-probe call is ~15 us, ~10 of them launch
								 * and wait, and the host's speed drifts within a
								 * call; H100, 2026-11-28: a 10^5-probe row's ratio
								 * moved 5.5-9.0 % between runs at 21 (the median
								 * row), 3.0-6.8 % at 201 */
static int g_small_reps = SMALL_REPS;	/* --small-reps */

/* One draw of the distribution: 0 uniform over the type, 1 lognormal, 2
 * long runs (a narrow lognormal, the same for both widths: about 10^5
 * distinct keys at 10^8, runs of up to ~10^6; --dists runs). */
template <class K>
__device__ static inline K
draw(uint64_t r, int dist)
{
	if (dist == 0)
		return (K) r;
	double		u1 = ((r >> 11) + 1) * (1.0 / 9007199254740993.0);
	double		u2 = (mix64(r) >> 11) * (1.0 / 9007199254740992.0);
	double		z = sqrt(-2.0 * log(u1)) * cospi(2.0 * u2);
	double		v = dist == 2 ? exp(4.0 + 2.0 * z) :
		sizeof(K) == 4 ? exp(10.0 + 2.5 * z) : exp(20.0 + 5.0 * z);
	double		cap = sizeof(K) == 4 ? 2147483647.0 : 9.2e18;

	return (K) (v < cap ? v : cap);
}

/* Unsorted keys of a distribution with payloads 0..n-1. */
template <class K>
__global__ void
gen_keys_kernel(K *keys, uint64_t *pay, uint64_t n, int dist, uint64_t seed)
{
	for (uint64_t i = (uint64_t) blockIdx.x * blockDim.x + threadIdx.x; i < n;
		 i += (uint64_t) gridDim.x * blockDim.x)
	{
		keys[i] = draw<K>(mix64(seed ^ (i * 0x2545f4914f6cdd1dull)), dist);
		if (pay)
			pay[i] = i;
	}
}

/* Probes: half existing keys, half fresh draws of the distribution. */
template <class K>
__global__ void
gen_probes_kernel(int64_t *probes, uint64_t q, const K *sorted, uint64_t n, int dist,
				  uint64_t seed)
{
	for (uint64_t i = (uint64_t) blockIdx.x * blockDim.x + threadIdx.x; i < q;
		 i += (uint64_t) gridDim.x * blockDim.x)
	{
		uint64_t	r = mix64(seed ^ (i * 0x9e3779b97f4a7c15ull));

		probes[i] = (r & 1) ? (int64_t) sorted[(r >> 1) % n] : (int64_t) draw<K>(mix64(r), dist);
	}
}

/* lower_bound (le = false) / upper_bound (le = true) of p in sorted keys. */
template <class K>
__device__ static inline uint64_t
bsearch_bound(const K *keys, uint64_t n, int64_t p, bool le)
{
	uint64_t	lo = 0,
				len = n;

	while (len > 0)
	{
		uint64_t	half = len >> 1;
		int64_t		k = keys[lo + half];

		if (le ? k <= p : k < p)
			lo += half + 1, len -= half + 1;
		else
			len = half;
	}
	return lo;
}

/* Baseline: one thread per probe, binary search over the sorted keys. */
template <class K>
__global__ void
bsearch_kernel(const K *keys, uint64_t n, int op, const int64_t *probes, uint64_t q,
			   uint64_t *first, uint64_t *last)
{
	for (uint64_t i = (uint64_t) blockIdx.x * blockDim.x + threadIdx.x; i < q;
		 i += (uint64_t) gridDim.x * blockDim.x)
	{
		int64_t		p = probes[i];
		uint64_t	f = 0,
					l = 0;

		if (op == GI_OP_POINT)
		{
			f = bsearch_bound(keys, n, p, false);
			l = f;
			if (f < n && keys[f] == p)
				l = (f + 1 < n && keys[f + 1] == p) ? bsearch_bound(keys, n, p, true) : f + 1;
		}
		else
		{						/* GI_OP_PRED */
			l = bsearch_bound(keys, n, p, true);
			if (l > 0)
			{
				K			k = keys[l - 1];

				f = (l >= 2 && keys[l - 2] == k) ? bsearch_bound(keys, n, (int64_t) k, false) : l - 1;
			}
			else
				l = 0;
		}
		first[i] = f;
		last[i] = l;
	}
}

#include "merge_search.cuh"

static int g_sms;
static double g_copy_gbs;		/* measured device copy bandwidth, GB/s */

/*
 * Clustered probes from sorted ones: runs of CLUSTER_RUN nearby probes, the
 * runs in a scrambled order (run r takes sorted run (r * a) mod runs, a
 * prime to runs) and the probes inside a run scrambled too.
 */
#define CLUSTER_RUN 1024
__global__ void
cluster_probes_kernel(const int64_t *sorted, int64_t *out, uint64_t q, uint64_t a)
{
	uint64_t	runs = q / CLUSTER_RUN;

	for (uint64_t i = (uint64_t) blockIdx.x * blockDim.x + threadIdx.x; i < q;
		 i += (uint64_t) gridDim.x * blockDim.x)
	{
		uint64_t	r = i / CLUSTER_RUN,
					j = i % CLUSTER_RUN;

		if (r >= runs)			/* the tail stays sorted */
			out[i] = sorted[i];
		else
			out[i] = sorted[((r * a) % runs) * CLUSTER_RUN + (j * 389) % CLUSTER_RUN];
	}
}

/* Device-to-device copy bandwidth (bytes read + written per second). */
static double
copy_bandwidth_gbs(void)
{
	size_t		bytes = (size_t) 1 << 30;
	void	   *a,
			   *b;
	std::vector<double> t;

	CUDA_OK(cudaMalloc(&a, bytes));
	CUDA_OK(cudaMalloc(&b, bytes));
	CUDA_OK(cudaMemset(a, 1, bytes));
	for (int r = 0; r < 6; r++)
	{
		cudaEvent_t e0,
					e1;
		float		ms;

		CUDA_OK(cudaEventCreate(&e0));
		CUDA_OK(cudaEventCreate(&e1));
		CUDA_OK(cudaEventRecord(e0));
		CUDA_OK(cudaMemcpy(b, a, bytes, cudaMemcpyDeviceToDevice));
		CUDA_OK(cudaEventRecord(e1));
		CUDA_OK(cudaEventSynchronize(e1));
		CUDA_OK(cudaEventElapsedTime(&ms, e0, e1));
		if (r > 0)
			t.push_back(ms);
		cudaEventDestroy(e0);
		cudaEventDestroy(e1);
	}
	cudaFree(a);
	cudaFree(b);
	return 2.0 * bytes / (median(t) / 1e3) / 1e9;
}

/* Grid for the bench's elementwise kernels. */
static unsigned
grid(uint64_t n)
{
	return (unsigned) std::min<uint64_t>((n + 255) / 256, (uint64_t) g_sms * 32);
}

/* One binary-search batch (bsearch_kernel), timed by timed(): its ms. */
template <class K>
static double
bsearch_ms(const K *keys, uint64_t n, int op, const int64_t *probes, uint64_t q, uint64_t *first,
		   uint64_t *last)
{
	double		ms = timed([&] { bsearch_kernel<K><<<grid(q), 256>>>(keys, n, op, probes, q, first, last); });

	CUDA_OK(cudaGetLastError());
	return ms;
}

/* Sort n keys from in into out on the device (cub radix sort, own scratch). */
template <class T>
static void
sort_keys_on_device(const T *in, T *out, uint64_t n)
{
	size_t		tb = 0;
	void	   *tmp;

	CUDA_OK(cub::DeviceRadixSort::SortKeys(nullptr, tb, in, out, (int64_t) n));
	CUDA_OK(cudaMalloc(&tmp, tb));
	CUDA_OK(cub::DeviceRadixSort::SortKeys(tmp, tb, in, out, (int64_t) n));
	CUDA_OK(cudaFree(tmp));
}

static const char *dist_name[] = {"uniform", "lognormal", "runs"};
static const char *order_name[] = {"random", "sorted", "clustered"};

/* Count mismatches between two answer sets on the device. */
static unsigned long long
mismatches(const uint64_t *f1, const uint64_t *l1, const uint64_t *f2, const uint64_t *l2, uint64_t q)
{
	unsigned long long *d,
				h = 0;

	CUDA_OK(cudaMalloc(&d, 8));
	CUDA_OK(cudaMemset(d, 0, 8));
	mismatch_kernel<<<grid(q), 256>>>(f1, l1, f2, l2, q, d);
	CUDA_OK(cudaMemcpy(&h, d, 8, cudaMemcpyDeviceToHost));
	CUDA_OK(cudaFree(d));
	return h;
}

/* An empty kernel: the floor of timed() around one launch. */
__global__ void
empty_kernel(void)
{
}

/*
 * The fixed costs of a small batch (--paths, uniform keys): timed() around
 * an empty kernel (launch + synchronisation, the floor of the method),
 * around the binary search and the engine's query of 1 probe (launch,
 * host work and one probe's latency) and of q probes (random point
 * probes pr), the engine's query with the thread search (group 1), and the
 * share of a call spent inside gi_gpu_btree_dev_query (its total_ms: the
 * rest is gi_gpu_dev_query's wrapper and timed()'s second
 * synchronisation).  Medians of 21 after a warm-up.
 */
template <class K>
static void
fixed_costs(GiImage *img, const K *dkeys, uint64_t n, const int64_t *pr, uint64_t q,
			GiGpuScratch *scratch, uint64_t *f1, uint64_t *l1)
{
	const int	reps = 21;
	GiGpuPolicy old,
				thread;
	std::vector<double> te, tb1, tt1, tth1, tbq, ttq, tthq, tin, ttqs;

	gi_gpu_dev_get_policy(&old);
	thread = old;
	thread.group = 1;
	for (int r = 0; r <= reps; r++)
	{
		double		e = timed([&] { empty_kernel<<<1, 32>>>(); }),
					b1 = timed([&] { bsearch_kernel<K><<<grid(1), 256>>>(dkeys, n, GI_OP_POINT, pr, 1, f1, l1); }),
					t1 = timed_call([&] { GI_OK_OR_DIE(gi_gpu_dev_query(img, GI_OP_POINT, pr, NULL, 1, f1, l1, scratch, &er_)); }),
					bq = timed([&] { bsearch_kernel<K><<<grid(q), 256>>>(dkeys, n, GI_OP_POINT, pr, q, f1, l1); }),
					tq = timed_call([&] { GI_OK_OR_DIE(gi_gpu_dev_query(img, GI_OP_POINT, pr, NULL, q, f1, l1, scratch, &er_)); });
		double		in = img->last_query.total_ms;
		double		tq_sync = timed([&] { GI_OK_OR_DIE(gi_gpu_dev_query(img, GI_OP_POINT, pr, NULL, q, f1, l1, scratch, &er_)); });

		gi_gpu_dev_set_policy(&thread);
		double		th1 = timed_call([&] { GI_OK_OR_DIE(gi_gpu_dev_query(img, GI_OP_POINT, pr, NULL, 1, f1, l1, scratch, &er_)); }),
					thq = timed_call([&] { GI_OK_OR_DIE(gi_gpu_dev_query(img, GI_OP_POINT, pr, NULL, q, f1, l1, scratch, &er_)); });

		gi_gpu_dev_set_policy(&old);
		CUDA_OK(cudaGetLastError());
		if (r == 0)
			continue;
		te.push_back(e), tb1.push_back(b1), tt1.push_back(t1), tth1.push_back(th1);
		tbq.push_back(bq), ttq.push_back(tq), tthq.push_back(thq), tin.push_back(in);
		ttqs.push_back(tq_sync);
	}
	t_fixed.push_back(fmt("| %s | %.0e | %.0e | %.1f | %.1f | %.1f | %.1f | %.1f | %.1f | %.1f | %.1f | %.1f |",
						  sizeof(K) == 4 ? "int32" : "int64", (double) n, (double) q,
						  median(te) * 1e3, median(tb1) * 1e3, median(tt1) * 1e3, median(tth1) * 1e3,
						  median(tbq) * 1e3, median(ttq) * 1e3, median(tin) * 1e3, median(tthq) * 1e3,
						  median(ttqs) * 1e3));
	fprintf(stderr, "%s\n", t_fixed.back().c_str());
}

/*
 * The insertable form against the static tree (the largest batch; --paths:
 * uniform keys, --insertable: every key distribution): an image built from
 * the same sorted keys and made insertable (gi_gpu_dev_make_insertable: leaves as 3/4-full nodes behind
 * a directory), queried with random and sorted point probes through its
 * directory (policy snapshot -1) and through its static copy (the default:
 * the first query after the conversion builds it, and is shown on its
 * own).  Every answer is checked against the static image's.
 */
template <class K>
static void
insertable_rows(GiImage *img, const void *dkeys, uint64_t n, int dist, const int64_t *pr,
				const int64_t *ps, uint64_t q, GiGpuScratch *scratch, uint64_t *f1,
				uint64_t *l1, uint64_t *f2, uint64_t *l2, int reps)
{
	GiBuildParams params = {GI_ENGINE_GPU, GI_STRUCT_BTREE, (int) sizeof(K), 0};
	GiImage    *iimg = NULL;
	GiImageInfo before,
				after;
	GiGpuPolicy old,
				dir;
	double		first = -1;

	GI_OK_OR_DIE(gi_gpu_dev_build(&params, dkeys, NULL, n, true, NULL, &iimg, &er_));
	GI_OK_OR_DIE(gi_gpu_dev_make_insertable(iimg, &er_));
	gi_image_info(iimg, &before);
	gi_gpu_dev_get_policy(&old);
	dir = old;
	dir.snapshot = -1;
	for (int order = 0; order < 2; order++)
	{
		const int64_t *probes = order ? ps : pr;
		std::vector<double> ts,
					td,
					tc;
		unsigned long long bad = 0;

		for (int r = 0; r <= reps; r++)
		{
			double		s = timed_call([&] { GI_OK_OR_DIE(gi_gpu_dev_query(img, GI_OP_POINT, probes, NULL, q, f1, l1, scratch, &er_)); });

			gi_gpu_dev_set_policy(&dir);
			double		d = timed_call([&] { GI_OK_OR_DIE(gi_gpu_dev_query(iimg, GI_OP_POINT, probes, NULL, q, f2, l2, scratch, &er_)); });

			gi_gpu_dev_set_policy(&old);
			bad += mismatches(f1, l1, f2, l2, q);
			double		c = timed_call([&] { GI_OK_OR_DIE(gi_gpu_dev_query(iimg, GI_OP_POINT, probes, NULL, q, f2, l2, scratch, &er_)); });

			bad += mismatches(f1, l1, f2, l2, q);
			if (first < 0)
				first = c;		/* the static copy is built in this one */
			else if (r > 0)
			{
				ts.push_back(s);
				td.push_back(d);
				tc.push_back(c);
			}
		}
		if (tc.empty())
			continue;
		gi_image_info(iimg, &after);
		std::string first_col = order == 0 ? fmt("%.3f", first) : std::string("-");

		t_ins.push_back(fmt("| %s | %.0e | %s | %.0e | %s | %.2f | %.2f (%.2fx) | %.2f (%.2fx) | %s | %.3f | %.2f / %.2f | %llu |",
							sizeof(K) == 4 ? "int32" : "int64", (double) n, dist_name[dist], (double) q,
							order_name[order], q / median(ts) / 1e6,
							q / median(td) / 1e6, median(ts) / median(td),
							q / median(tc) / 1e6, median(ts) / median(tc),
							first_col.c_str(), median(tc),
							(double) before.device_bytes / n, (double) after.device_bytes / n, bad));
		fprintf(stderr, "%s\n", t_ins.back().c_str());
	}
	gi_image_free(iimg);
}

/* The merge shapes --merge times, in its table's column order. */
typedef MergeShape<1024, 2048, 256> MergeA;
typedef MergeShape<2048, 4096, 256> MergeB;
typedef MergeShape<2048, 4096, 512> MergeC;
typedef MergeShape<512, 1024, 128> MergeD;
typedef MergeShape<1024, 2048, 128> MergeE;
#define MERGE_SHAPE_NAMES "1024/2048/256 | 2048/4096/256 | 2048/4096/512 | 512/1024/128 | 1024/2048/128"
#define MERGE_SHAPES 5

/*
 * Time one merge shape on a sorted batch as the binary search is timed
 * (host clock around the launches and a synchronisation), alternating with
 * the binary search; its answers go to f1/l1, the count of wide tiles to
 * *wide_out.  Returns the median ms.
 */
template <class K, class S>
static double
merge_time(const K *dkeys, uint64_t n, int op, const int64_t *probes, uint64_t q, int qreps,
		   uint64_t *f1, uint64_t *l1, uint64_t *f2, uint64_t *l2, std::vector<double> &tb,
		   unsigned long long *wide_out)
{
	uint64_t	tiles = (q + S::TILE - 1) / S::TILE;
	uint64_t   *tlo,
			   *thi;
	unsigned long long *wide;
	size_t		smem = merge_smem_bytes<K, S>();
	int			per_sm = 0;
	std::vector<double> tm;

	CUDA_OK(cudaFuncSetAttribute(merge_search_kernel<K, S>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int) smem));
	CUDA_OK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, merge_search_kernel<K, S>, S::THREADS, smem));
	CUDA_OK(cudaMalloc(&tlo, tiles * 8));
	CUDA_OK(cudaMalloc(&thi, tiles * 8));
	CUDA_OK(cudaMalloc(&wide, 8));
	auto		merge_run = [&] {
		double		ms = timed([&] {
			merge_partition_kernel<K, S><<<grid(tiles), 256>>>(dkeys, n, probes, q, tlo, thi);
			merge_search_kernel<K, S><<<(unsigned) std::min<uint64_t>(tiles, (uint64_t) g_sms * std::max(per_sm, 1) * 8), S::THREADS, smem>>>(dkeys, n, op, probes, q, tlo, thi, f1, l1, wide);
		});

		CUDA_OK(cudaGetLastError());
		return ms;
	};
	for (int r = 0; r < qreps; r++)
	{
		(void) merge_run();
		tm.push_back(merge_run());
		(void) bsearch_ms(dkeys, n, op, probes, q, f2, l2);
		tb.push_back(bsearch_ms(dkeys, n, op, probes, q, f2, l2));
	}
	CUDA_OK(cudaMemset(wide, 0, 8));
	(void) merge_run();
	CUDA_OK(cudaMemcpy(wide_out, wide, 8, cudaMemcpyDeviceToHost));
	cudaFree(tlo);
	cudaFree(thi);
	cudaFree(wide);
	return median(tm);
}

/*
 * One sorted row through the merge-path search (--merge), in each shape
 * (tile probes / window keys / threads), beside the tree's figure from the
 * query table; every shape's answers against the binary search's.
 */
template <class K>
static void
merge_row(const K *dkeys, uint64_t n, int dist, int op, const int64_t *probes, uint64_t q,
		  int qreps, double tq, double bq_tree_run, uint64_t *f1, uint64_t *l1, uint64_t *f2,
		  uint64_t *l2)
{
	double		ms[MERGE_SHAPES];
	unsigned long long wide[MERGE_SHAPES],
				tiles[MERGE_SHAPES],
				bad = 0;
	std::vector<double> tb;
	std::string cols,
				wides;
	int			best = 0;

	/* shape v (S, by its value's type) timed, its answers checked */
	auto		shape = [&](auto s, int v) {
		ms[v] = merge_time<K, decltype(s)>(dkeys, n, op, probes, q, qreps, f1, l1, f2, l2, tb, &wide[v]);
		tiles[v] = (q + decltype(s)::TILE - 1) / decltype(s)::TILE;
		bad += mismatches(f1, l1, f2, l2, q);
	};

	shape(MergeA(), 0);
	shape(MergeB(), 1);
	shape(MergeC(), 2);
	shape(MergeD(), 3);
	shape(MergeE(), 4);

	/* the floor: the same bytes, no search, alternating with the binary search */
	std::vector<double> tf;
	auto		floor_run = [&] {
		double		ms = timed([&] { stream_floor_kernel<K><<<grid(std::max(q, n)), 256>>>(dkeys, n, probes, q, f1, l1); });

		CUDA_OK(cudaGetLastError());
		return ms;
	};

	for (int r = 0; r < qreps; r++)
	{
		(void) floor_run();
		tf.push_back(floor_run());
		(void) bsearch_ms(dkeys, n, op, probes, q, f2, l2);
		tb.push_back(bsearch_ms(dkeys, n, op, probes, q, f2, l2));
	}

	double		fq = q / (median(tf) / 1e3);
	double		bq = q / (median(tb) / 1e3),
				dense_ms = (q * 24.0 + n * (double) sizeof(K)) / (g_copy_gbs * 1e9) * 1e3;

	for (int v = 0; v < MERGE_SHAPES; v++)
	{
		cols += fmt(" %.2f |", q / (ms[v] / 1e3) / 1e9);
		wides += fmt("%s%llu of %llu", v ? " / " : "", wide[v], tiles[v]);
		if (ms[v] < ms[best])
			best = v;
	}
	t_merge.push_back(fmt("| %s | %.0e | %s | %.0e | %s | %.2f | %.2f |%s **%.3fx** | %.3fx | %.0f%% | %.2f | %.3fx | %.0f%% | %s | %llu |",
						  sizeof(K) == 4 ? "int32" : "int64", (double) n, dist_name[dist], (double) q,
						  op == GI_OP_POINT ? "point" : "pred", tq / 1e9, bq / 1e9, cols.c_str(),
						  q / (ms[best] / 1e3) / bq, tq / bq_tree_run, 100.0 * dense_ms / ms[best],
						  fq / 1e9, fq / bq, 100.0 * dense_ms / median(tf), wides.c_str(), bad));
	fprintf(stderr, "%s\n", t_merge.back().c_str());
}

/* Everything for one key type, size and distribution. */
template <class K>
static void
bench_one(uint64_t n, int dist, const std::vector<uint64_t> &qs, bool sweep, int reps)
{
	const char *kname = sizeof(K) == 4 ? "int32" : "int64";
	int			kb = sizeof(K);
	GiBuildParams params = {GI_ENGINE_GPU, GI_STRUCT_BTREE, kb, 0};
	K		   *uk,
			   *sk;
	uint64_t   *up,
			   *sp;
	GiImage    *img = NULL;
	GiImageInfo info;
	std::vector<double> t_tot,
				t_sort,
				t_bld,
				t_sorted;

	/* 10^9 keys (or --device-only): device-resident parts only (no
	 * payloads, no host copies) */
	bool		huge = n >= HUGE_N || g_device_only;

	fprintf(stderr, "== %s n=%" PRIu64 " %s\n", kname, n, dist_name[dist]);
	CUDA_OK(cudaMalloc(&uk, n * sizeof(K)));
	CUDA_OK(cudaMalloc(&up, huge ? 8 : n * 8));
	CUDA_OK(cudaMalloc(&sp, huge ? 8 : n * 8));
	CUDA_OK(cudaMalloc(&sk, n * sizeof(K)));
	gen_keys_kernel<K><<<grid(n), 256>>>(uk, huge ? NULL : up, n, dist, 1234 + n + dist);
	CUDA_OK(cudaGetLastError());
	sort_keys_on_device(uk, sk, n);	/* sorted keys: baseline and sorted-build input */
	const void *dkeys = sk;

	/* build from unsorted pairs already on the device (sort + levels) */
	for (int r = 0; r <= reps && !huge; r++)
	{
		GiImage    *im = NULL;
		double		ms = timed([&] { GI_OK_OR_DIE(gi_gpu_dev_build(&params, uk, up, n, false, sp, &im, &er_)); });

		if (r > 0)				/* the first is a warm-up */
		{
			t_tot.push_back(ms);
			t_sort.push_back(im->build.sort_ms);
			t_bld.push_back(im->build.build_ms);
		}
		if (img)
			gi_image_free(img);
		img = im;
	}

	/* build from sorted keys already on the device (levels only) */
	for (int r = 0; r <= reps; r++)
	{
		GiImage    *im = NULL;
		double		ms = timed([&] { GI_OK_OR_DIE(gi_gpu_dev_build(&params, dkeys, NULL, n, true, NULL, &im, &er_)); });

		if (r > 0)
			t_sorted.push_back(ms);
		if (huge && r == reps)
			img = im;			/* the image the queries use */
		else
			gi_image_free(im);
	}
	gi_image_info(img, &info);
	if (huge)
		t_build.push_back(fmt("| %s | %.0e | %s | - | - | - | %.2f | %.2f | %d |", kname, (double) n,
							  dist_name[dist], median(t_sorted), (double) info.device_bytes / n,
							  info.levels));
	GiImage    *himg = NULL,
			   *cimg = NULL;

	if (!huge)
	{

	/* host-resident unsorted pairs -> image (+ sorted pairs back) */
	std::vector<int64_t> hk(n), hsk(n);
	std::vector<uint64_t> hp(n), hsp(n);
	{
		std::vector<K> tmp(n);

		CUDA_OK(cudaMemcpy(tmp.data(), uk, n * sizeof(K), cudaMemcpyDeviceToHost));
		CUDA_OK(cudaMemcpy(hp.data(), up, n * 8, cudaMemcpyDeviceToHost));
		for (uint64_t i = 0; i < n; i++)
			hk[i] = tmp[i];
	}
	double		h_ms = timed([&] { GI_OK_OR_DIE(gi_image_build_unsorted(&params, hk.data(), hp.data(), n, hsk.data(), hsp.data(), &himg, &er_)); });
	GiTimings	hb = himg->build;
	GiImage    *himg2 = NULL;
	double		h2_ms = timed([&] { GI_OK_OR_DIE(gi_image_build_unsorted(&params, hk.data(), hp.data(), n, NULL, NULL, &himg2, &er_)); });

	gi_image_free(himg2);
	t_build.push_back(fmt("| %s | %.0e | %s | %.1f (%.1f / %.1f / %.1f) | %.1f | %.2f (%.2f / %.2f) | %.2f | %.2f | %d |",
						  kname, (double) n, dist_name[dist],
						  h_ms, hb.transfer_ms, hb.sort_ms, hb.build_ms, h2_ms,
						  median(t_tot), median(t_sort), median(t_bld), median(t_sorted),
						  (double) info.device_bytes / n, info.levels));

	/* CPU engine image for the end-to-end comparison */
	GiBuildParams cparams = {GI_ENGINE_CPU, GI_STRUCT_BTREE, kb, 0};

	GI_OK_OR_DIE(gi_image_build(&cparams, hsk.data(), hsp.data(), n, &cimg, &er_));
	}

	GiGpuScratch *scratch = NULL;
	uint64_t	qmax = *std::max_element(qs.begin(), qs.end());

	GI_OK_OR_DIE(gi_gpu_dev_scratch_create(img, qmax, &scratch, &er_));
	for (uint64_t q : qs)
	{
		int64_t    *pr,
				   *ps,
				   *pc;
		uint64_t   *f1,
				   *l1,
				   *f2,
				   *l2;

		CUDA_OK(cudaMalloc(&pr, q * 8));
		CUDA_OK(cudaMalloc(&ps, q * 8));
		CUDA_OK(cudaMalloc(&pc, q * 8));
		CUDA_OK(cudaMalloc(&f1, q * 8));
		CUDA_OK(cudaMalloc(&l1, q * 8));
		CUDA_OK(cudaMalloc(&f2, q * 8));
		CUDA_OK(cudaMalloc(&l2, q * 8));
		gen_probes_kernel<K><<<grid(q), 256>>>(pr, q, (const K *) dkeys, n, dist, 99 + q);
		CUDA_OK(cudaGetLastError());
		sort_keys_on_device(pr, ps, q);
		{
			uint64_t	runs = std::max<uint64_t>(q / CLUSTER_RUN, 1),
						a = 1000003;

			while (std::__gcd(a, runs) != 1)
				a += 2;
			cluster_probes_kernel<<<grid(q), 256>>>(ps, pc, q, a % runs ? a % runs : 1);
			CUDA_OK(cudaGetLastError());
		}
		if (g_paths && q == qs.front() && dist == 0)
			fixed_costs<K>(img, (const K *) dkeys, n, pr, q, scratch, f1, l1);
		if (((g_paths && dist == 0) || g_insertable) && q == qmax)
			insertable_rows<K>(img, dkeys, n, dist, pr, ps, q, scratch, f1, l1, f2, l2, reps);
		for (int op = GI_OP_POINT; op <= GI_OP_PRED; op++)
			for (int order = 0; order < 3; order++)
			{
				if (!g_order_on[order])
					continue;
				const int64_t *probes = order == 0 ? pr : order == 1 ? ps : pc;
				std::vector<double> tt,
							ts,
							tb;
				/* batches of tens of microseconds: a median of 3 moved by
				 * 10-25 % from run to run, so they take g_small_reps */
				const int	qreps = q <= SMALL_Q && reps > 1 ? std::max(reps, g_small_reps) : reps;

				/*
				 * Alternating, each timed run right after an untimed one of
				 * its own kind (so each finds its own data in cache, as
				 * when the runs of one kind followed each other): a stretch
				 * of slower clocks or a busy host then slows both sides of
				 * a ratio alike.  Until 2026-11-27 the tree's runs came
				 * first, then the binary search's, and one such stretch
				 * read a row at 0.52x of its tree speed in the call before
				 * (results-h100-2026-11-27e-final.txt, int32 10^6 keys).
				 */
				auto		tree_run = [&] {
					return timed_call([&] { GI_OK_OR_DIE(gi_gpu_dev_query(img, (GiOp) op, probes, NULL, q, f1, l1, scratch, &er_)); });
				};
				auto		bsearch_run = [&] {
					return bsearch_ms((const K *) dkeys, n, op, probes, q, f2, l2);
				};

				for (int r = 0; r < qreps; r++)
				{
					(void) tree_run();
					tt.push_back(tree_run());
					ts.push_back(img->last_query.sort_ms);
					(void) bsearch_run();
					tb.push_back(bsearch_run());
				}
				unsigned long long bad = mismatches(f1, l1, f2, l2, q);
				double		tq = q / (median(tt) / 1e3),
							bq = q / (median(tb) / 1e3);

				/*
				 * The bytes a batch must move: each probe read (8), each
				 * answer written (16), and the leaves it touches (at most
				 * all of them, at most a 128-byte line a probe).
				 */
				double		must = q * 24.0 + std::min((double) info.device_bytes, q * 128.0);
				double		bound_ms = must / (g_copy_gbs * 1e9) * 1e3;

				t_query.push_back(fmt("| %s | %.0e | %s | %.0e | %s | %s | %.3f | %.2f | %.2f | %.3f | %.2f | **%.3fx** | %.0f%% | %llu |",
									  kname, (double) n, dist_name[dist], (double) q,
									  op == GI_OP_POINT ? "point" : "pred", order_name[order],
									  median(tt), median(ts), tq / 1e9, median(tb), bq / 1e9, tq / bq,
									  100.0 * bound_ms / median(tt), bad));
				fprintf(stderr, "%s\n", t_query.back().c_str());
				if (g_merge && order == 1)
					merge_row<K>((const K *) dkeys, n, dist, op, probes, q, qreps, tq, bq, f1, l1, f2, l2);
				if (g_paths)
				{				/* the same batch on each policy variant */
					double		pq[NVARIANTS],
								best = tq;
					unsigned long long pbad = 0;
					GiGpuPolicy old;
					std::string cols,
								ratios;

					gi_gpu_dev_get_policy(&old);
					for (int v = 0; v < NVARIANTS; v++)
					{
						GiGpuPolicy pol = old;
						std::vector<double> tp;

						path_variants[v].apply(&pol);
						gi_gpu_dev_set_policy(&pol);
						for (int r = 0; r <= qreps; r++)
						{
							double		ms = timed_call([&] { GI_OK_OR_DIE(gi_gpu_dev_query(img, (GiOp) op, probes, NULL, q, f1, l1, scratch, &er_)); });

							if (r > 0)
								tp.push_back(ms);
						}
						pq[v] = q / (median(tp) / 1e3);
						best = std::max(best, pq[v]);
						pbad += mismatches(f1, l1, f2, l2, q);
						cols += fmt(" %.2f |", pq[v] / 1e9);
						ratios += fmt(" %.2fx |", pq[v] / tq);
					}
					gi_gpu_dev_set_policy(&old);
					t_paths.push_back(fmt("| %s | %.0e | %s | %.0e | %s | %s | %.2f | %.2f |%s **%.2fx** | %.2fx |%s %.0f%% | %llu |",
										  kname, (double) n, dist_name[dist], (double) q,
										  op == GI_OP_POINT ? "point" : "pred", order_name[order],
										  bq / 1e9, tq / 1e9, cols.c_str(), tq / bq, best / bq,
										  ratios.c_str(), 100.0 * bound_ms / median(tt), pbad));
					fprintf(stderr, "%s\n", t_paths.back().c_str());
				}
			}

		/* policy sweep on the largest configuration */
		if (sweep && q == qmax)
		{
			GiGpuPolicy old;

			gi_gpu_dev_get_policy(&old);
			for (int order = 0; order < 3; order++)
				for (int v = 0; v < 5 && g_order_on[order]; v++)
				{				/* per-probe kernel, tiles (window cap 32, 8, none), group 4 */
					/* (the tiled rows without the run search, as recorded before it) */
					static const GiGpuPolicy tv[] = {{0, 0, 2, -1, 0, -1}, {0, 0, 2, 1, 0, -1}, {0, 0, 2, 1, 8, -1},
					{0, 0, 2, 1, -1, -1}, {0, 0, 4, 1, 0, -1}};
					const int64_t *probes = order == 0 ? pr : order == 1 ? ps : pc;
					std::vector<double> tt;

					gi_gpu_dev_set_policy(&tv[v]);
					for (int r = 0; r <= reps; r++)
					{
						double		ms = timed_call([&] { GI_OK_OR_DIE(gi_gpu_dev_query(img, GI_OP_POINT, probes, NULL, q, f1, l1, scratch, &er_)); });

						if (r > 0)
							tt.push_back(ms);
					}
					t_tiles.push_back(fmt("| %s | %.0e | %s | %s | %d | %s | %.3f | %.2f |", kname, (double) n,
										  order_name[order], tv[v].tile < 0 ? "per-probe" : "tiled",
										  tv[v].group, tv[v].tile < 0 ? "-" : tv[v].window < 0 ? "none" :
										  fmt("%d", tv[v].window ? tv[v].window : 32).c_str(),
										  median(tt), q / (median(tt) / 1e3) / 1e9));
				}
			for (int bits = -1; bits <= 16; bits += (bits < 0 ? 1 : 8))
				for (int g = 2; g <= 8; g *= 2)
				{
					GiGpuPolicy p = {bits < 0 ? 0 : 1, bits, g, -1, 0, 0};
					std::vector<double> tt;

					if (bits == 0)
						continue;
					gi_gpu_dev_set_policy(&p);
					for (int r = 0; r <= reps; r++)
					{
						double		ms = timed_call([&] { GI_OK_OR_DIE(gi_gpu_dev_query(img, GI_OP_POINT, pr, NULL, q, f1, l1, scratch, &er_)); });

						if (r > 0)
							tt.push_back(ms);
					}
					t_sweep.push_back(fmt("| %s | %.0e | %s | %d | %.3f | %.2f |", kname, (double) n, bits < 0 ? "no sort" : fmt("%d", bits).c_str(),
										  g, median(tt), q / (median(tt) / 1e3) / 1e9));
				}
			gi_gpu_dev_set_policy(&old);
		}

		/* end to end through gi_image_query, and the CPU engine */
		uint64_t	qe = std::min<uint64_t>(q, n >= 100000000ull && sizeof(K) == 4 && dist == 0 ? q : 10000000ull);
		uint64_t	qc = std::min<uint64_t>(q, 1000000ull);

		if (!huge && (q == qs.front() || qe == q))
		{
			std::vector<int64_t> hpr(qe);
			std::vector<uint64_t> gf(qe), gl(qe), cf(qc), cl(qc);

			CUDA_OK(cudaMemcpy(hpr.data(), pr, qe * 8, cudaMemcpyDeviceToHost));
			for (int op = GI_OP_POINT; op <= GI_OP_PRED; op++)
			{
				GiError		er;
				double		ge = 0,
							ce;

				GI_OK_OR_DIE(gi_image_query(himg, (GiOp) op, hpr.data(), NULL, qe, gf.data(), gl.data(), &er_));	/* warm */
				ge = timed([&] { GI_OK_OR_DIE(gi_image_query(himg, (GiOp) op, hpr.data(), NULL, qe, gf.data(), gl.data(), &er_)); });
				GiTimings	lq = himg->last_query;

				ce = timed([&] { GI_OK_OR_DIE(gi_image_query(cimg, (GiOp) op, hpr.data(), NULL, qc, cf.data(), cl.data(), &er_)); });
				uint64_t	bad = 0;

				for (uint64_t i = 0; i < qc; i++)
				{
					bool		e1 = gf[i] == gl[i],
								e2 = cf[i] == cl[i];

					bad += e1 != e2 || (!e1 && (gf[i] != cf[i] || gl[i] != cl[i]));
				}
				(void) er;
				double		gq = qe / (ge / 1e3),
							cq = qc / (ce / 1e3);

				t_e2e.push_back(fmt("| %s | %.0e | %s | %s | %.0e | %.1f (%.1f / %.1f / %.1f) | %.3f | %.0e | %.1f | %.4f | **%.0fx** | %" PRIu64 " |",
									kname, (double) n, dist_name[dist], op == GI_OP_POINT ? "point" : "pred",
									(double) qe, ge, lq.transfer_ms, lq.sort_ms, lq.search_ms, gq / 1e9,
									(double) qc, ce, cq / 1e9, gq / cq, bad));
				fprintf(stderr, "%s\n", t_e2e.back().c_str());
			}
		}
		cudaFree(pr);
		cudaFree(ps);
		cudaFree(pc);
		cudaFree(f1);
		cudaFree(l1);
		cudaFree(f2);
		cudaFree(l2);
	}
	gi_gpu_dev_scratch_free(scratch);
	gi_image_free(img);
	gi_image_free(himg);
	gi_image_free(cimg);
	cudaFree(uk);
	cudaFree(sk);
	cudaFree(up);
	cudaFree(sp);
}

/* Parse options, run every configuration, print the tables. */
int
main(int argc, char **argv)
{
	uint64_t	max_n = 100000000ull,
				max_q = 100000000ull,
				min_n = 1000000ull;
	bool		small = false;
	int			reps = 3;
	char		why[256];
	cudaDeviceProp prop;

	for (int i = 1; i < argc; i++)
	{
		if (!strcmp(argv[i], "--small"))
			small = true;
		else if (!strcmp(argv[i], "--max-n") && i + 1 < argc)
			max_n = strtoull(argv[++i], NULL, 0);
		else if (!strcmp(argv[i], "--max-q") && i + 1 < argc)
			max_q = strtoull(argv[++i], NULL, 0);
		else if (!strcmp(argv[i], "--min-n") && i + 1 < argc)
			min_n = strtoull(argv[++i], NULL, 0);
		else if (!strcmp(argv[i], "--small-reps") && i + 1 < argc)
			g_small_reps = std::max(1, atoi(argv[++i]));
		else if (!strcmp(argv[i], "--paths"))
			g_paths = true;
		else if (!strcmp(argv[i], "--insertable"))
			g_insertable = true;
		else if (!strcmp(argv[i], "--merge"))
			g_merge = true;
		else if (!strcmp(argv[i], "--device-only"))
			g_device_only = true;
		else if (!strcmp(argv[i], "--orders") && i + 1 < argc)
		{
			const char *list = argv[++i];

			for (int o = 0; o < 3; o++)
				g_order_on[o] = strstr(list, order_name[o]) != NULL;
		}
		else if (!strcmp(argv[i], "--widths") && i + 1 < argc)
		{
			const char *list = argv[++i];

			g_width_on[0] = strstr(list, "4") != NULL;
			g_width_on[1] = strstr(list, "8") != NULL;
		}
		else if (!strcmp(argv[i], "--dists") && i + 1 < argc)
		{
			const char *list = argv[++i];

			for (int d = 0; d < 3; d++)
				g_dist_on[d] = strstr(list, dist_name[d]) != NULL;
		}
	}
	if (!gi_gpu_available(why, sizeof(why)))
	{
		printf("kernel_bench: no GPU: %s\n", why);
		return 0;
	}
	CUDA_OK(cudaGetDeviceProperties(&prop, 0));
	g_sms = prop.multiProcessorCount;
	std::vector<uint64_t> ns,
				qs;

	if (small)
	{
		ns = {100000};
		qs = {100000};
		reps = 1;
	}
	else
	{
		for (uint64_t n = 1000000; n <= max_n; n *= 10)
			if (n >= min_n)
				ns.push_back(n);
		qs.push_back(100000);	/* under the sample's old threshold, and the new one */
		qs.push_back(1000000);
		if (max_q > 1000000)
			qs.push_back(max_q);
	}
	g_copy_gbs = copy_bandwidth_gbs();
	printf("kernel_bench: %s, %d SMs, %.1f GiB, L2 %d MiB, device copy %.0f GB/s (read + write)\n",
		   prop.name, prop.multiProcessorCount, prop.totalGlobalMem / 1073741824.0,
		   prop.l2CacheSize >> 20, g_copy_gbs);
	for (int kw = 4; kw <= 8; kw += 4)
		for (uint64_t n : ns)
			for (int dist = 0; dist < 3; dist++)
			{
				if (!g_dist_on[dist] || !g_width_on[kw / 8])
					continue;
				bool		sweep = (n == ns.back() || n == ns.back() / 10) && dist == 0;

				if (kw == 4)
					bench_one<int32_t>(n, dist, qs, sweep, reps);
				else
					bench_one<int64_t>(n, dist, qs, sweep, reps);
			}

	printf("\n### Builds (ms; median of %d after a warm-up)\n\n", reps);
	print_table("| key | n | dist | host unsorted pairs -> image, sorted pairs back: total (transfer / sort / build) | same, nothing back | device unsorted pairs: total (sort / build) | device sorted keys | device B/key | levels |", t_build);
	printf("\n### Queries, probes on the device (ms incl. the probe sort; q/s in 1e9; host clock: the binary search's launch and a device synchronisation, the engine's synchronous call; the median of %d runs, of %d for batches of up to %d probes; the tree and the binary search alternate, each timed run right after an untimed one of its own)\n\n", reps, reps > 1 ? std::max(reps, g_small_reps) : reps, SMALL_Q);
	print_table("| key | n | dist | probes | op | probe order | tree ms | of which sort ms | tree Gq/s | bsearch ms | bsearch Gq/s | tree/bsearch | of bandwidth bound | mismatches |", t_query);
	printf("\nBandwidth bound: probes (8 B) + answers (16 B) + the leaves touched (at most all, at most 128 B a probe) over the measured copy bandwidth; the column is bound time / tree time.\n");
	if (g_merge)
	{
		printf("\n### Sorted batches: the merge-path search over the dense sorted keys (--merge; Gq/s; merge_search.cuh in five shapes, tile probes / window keys / threads a block, its partition kernel included, each timed as the binary search is and alternating with it; best/bsearch against the binary search's median over all five; dense bound = probes (8 B) + answers (16 B) + every key of the array read once, over the measured copy bandwidth, for the best shape; floor = stream_floor_kernel, the same bytes (every probe and key read once, 16 B a probe written) with no search, the most any search of the batch could reach, timed alternating with the binary search too; wide tiles = tiles whose window exceeds the shape's, answered by binary search, per shape)\n\n");
		print_table("| key | n | dist | probes | op | tree Gq/s | bsearch Gq/s | " MERGE_SHAPE_NAMES " | best/bsearch | tree/bsearch | best of dense bound | floor Gq/s | floor/bsearch | floor of dense bound | wide tiles | mismatches (all shapes vs bsearch) |", t_merge);
	}
	if (g_paths)
	{
		std::string head = "| key | n | dist | probes | op | probe order | bsearch | default |";

		for (int v = 0; v < NVARIANTS; v++)
			head += fmt(" %s |", path_variants[v].name);
		head += " default/bsearch | best/bsearch |";
		for (int v = 0; v < NVARIANTS; v++)
			head += fmt(" %s/default |", path_variants[v].name);
		head += " default of bandwidth bound | mismatches (variants vs bsearch) |";
		printf("\n### Search paths and policy variants per query row (Gq/s; default = the engine's default policy; each other column changes one field of it: tiled = the tiled search for every batch (the stream kernel, as the default takes it); per-probe = the per-probe kernel (the default's group: the thread search, a lane a probe) for every batch; group 2 / group 4 = the per-probe kernel with two / four lanes a probe wherever the default takes it; key-span sample = the order sample's rule until 2026-11-26 (tiles when one sampled tile in eight spans at most half of the key span) instead of the leaf rule (tiles when half of them lie in at most the window's leaves); sample 32 leaves = the leaf rule at 32 leaves (the tiled kernel's window) instead of the stream kernel's 48; window 32 / window 48 = the stream kernel's window at 32 / 48 leaves a warp (the default: 48); no row hint = the stream kernel searches each row's probes over the whole window instead of where the row before hints; sampled from 2^16 = batches of 2^16 probes and more behind the order sample (the default: 2^22); tiled kernel = the tiled kernel (groups of 2 where a tile descends) instead of the stream kernel (the thread search where a tile descends), where the default tiles (the sample: sorted and clustered batches of 2^22 probes and more); tiled kernel 2 blocks = the same built for 2 blocks of 8 warps an SM instead of 4 (a register cap of 128 instead of 64 a thread); no leaf walk = the thread search's second rank in a leaf by a binary search of its own instead of the walk from the first; no top table = the per-probe kernel's descents from the root instead of the node the top table names; wide leaves = the thread search ranks in a leaf by loading the whole leaf at once instead of by a binary search of loads; probe sort = the engine sorts every batch (the default: batches of 2^20 probes and more over trees over 64x L2 that are out of order and that the order sample finds scattered); leaf guess / no leaf guess = the thread search ranks in a leaf from the sector its parent's separators point to (one 32-byte load when the guess holds) at every tree size and batch / never (the default: in trees over 4x L2, for batches the order sample finds scattered); best = the best of all columns)\n\n");
		print_table(head.c_str(), t_paths);
		printf("\n### Fixed costs of a small batch (us, as the tables above time them: host clock around an asynchronous launch and a device synchronisation for the binary search, around the engine's synchronous call for the tree; uniform keys, random point probes; median of 21): empty = an empty kernel's launch and synchronisation; 1 probe = the binary search kernel, the engine's query (default policy), the engine's query with the thread search; q probes likewise; in the call = the engine's query's own total_ms (the rest is gi_gpu_dev_query's wrapper); with a sync after = the engine's query timed with a device synchronisation after it (how the tables timed it before the tenth session)\n\n");
		print_table("| key | n | q | empty | bsearch 1 probe | tree 1 probe | thread 1 probe | bsearch q | tree q | of which in the call | thread q | tree q with a sync after |", t_fixed);
	}
	if (g_paths || g_insertable)
	{
		printf("\n### The insertable form (point probes, the largest batch; --paths: uniform keys, --insertable: every distribution; Gq/s, in parentheses against the static tree in the same run): static = the bulk-built image; directory = the same keys made insertable (gi_gpu_dev_make_insertable), read through its leaf directory (snapshot -1); static copy = the same insertable image read through the static copy its first large query builds (the default); first = that first query's ms (random row: the copy built in it); device B/key before / after the copy\n\n");
		print_table("| key | n | dist | q | probe order | static Gq/s | directory Gq/s | static copy Gq/s | first ms | then ms | device B/key | mismatches |", t_ins);
	}
	printf("\n### End to end through gi_image_query (host arrays) vs the CPU engine\n\n");
	print_table("| key | n | dist | op | GPU probes | GPU ms (transfer / sort / search) | GPU Gq/s | CPU probes | CPU ms | CPU Gq/s | GPU/CPU | mismatches |", t_e2e);
	if (!t_sweep.empty())
	{
		printf("\n### Policy sweep: uniform keys, %.0e random point probes (default: sort auto -> none at these sizes, bits from the formula capped at 16, group 2)\n\n", (double) qs.back());
		print_table("| key | n | sorted bits | group | ms | Gq/s |", t_sweep);
		printf("\n### Search paths: uniform keys, %.0e point probes (per-probe kernel vs tiled search; window = leaves a tile may stage)\n\n", (double) qs.back());
		print_table("| key | n | probe order | kernel | group | window | ms | Gq/s |", t_tiles);
	}
	return 0;
}
