/*
 * insert_bench.cu - CUBPT batch insertion into the GPU B+ tree (no
 * PostgreSQL), against the ways a changed index could otherwise be had:
 *
 *  - GPU insertion: gi_gpu_dev_insert of an unsorted device-resident batch
 *    (int32 keys, 64-bit payloads as the real index's TIDs) into a fresh
 *    copy of a bulk-built tree already made insertable (the one-time
 *    conversion is timed on its own);
 *  - GPU rebuild: sort the batch on the device, merge it with the tree's old
 *    sorted (key, payload) arrays (already on the device) with
 *    thrust::merge, bulk-build with gi_gpu_dev_build(sorted = true);
 *  - CPU insertion: gi_image_insert on a CPU image of the same entries;
 *  - vEB: a device build of the vEB structure at the same tree size (vEB
 *    images are rebuilt on change).
 *
 * Payloads are heap TIDs packed as src/ does: the tree's rows first, the
 * batch's rows after them in heap order.  Batches are uniform over int32,
 * skewed (80 % of the keys equal to one existing key), or skewed with
 * random TIDs (equal keys then arrive out of payload order and interleave
 * with the key's old entries: the batch sort's slow path).
 * After each configuration the inserted tree must answer point, pred,
 * succ and range probes exactly as the rebuilt one, and its rank-ordered
 * payloads must equal the merged array (printed OK / FAIL).  Last, the
 * static point-query throughput on the largest tree (the check that the
 * static search did not slow down) and on the tree after an insertion.
 *
 *   insert_bench [--small] [--reps R] [--no-cpu] [--cpu-big] [--rows N:B,...]
 */
#include "gpu_engine.cuh"
#include "bench_util.cuh"
#include "gpu_util.cuh"

#include <thrust/execution_policy.h>
#include <thrust/iterator/zip_iterator.h>
#include <thrust/merge.h>

#include <algorithm>
#include <cinttypes>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

static std::vector<std::string> t_ins, t_parts, t_veb, t_query;
static const char *dist_name[] = {"uniform", "skewed", "skewed, random TIDs"};
static int	g_sms;
static int	g_fail;

/* Grid for the bench's elementwise kernels. */
static unsigned
grid(uint64_t n)
{
	return (unsigned) std::max<uint64_t>(1, std::min<uint64_t>((n + 255) / 256, (uint64_t) g_sms * 32));
}

/* A heap TID packed as src/ does (block << 16 | offset) for row r, 291
 * rows a page. */
__host__ __device__ static inline uint64_t
tid_of(uint64_t r)
{
	return ((r / 291) << 16) | (r % 291 + 1);
}

/*
 * Entries of rows row0 + i: uniform int32 keys; with skew, 80 % of the keys
 * are skew_key.  Payloads are the rows' TIDs (rows arrive in heap order, so
 * equal keys come with ascending TIDs), or with shuffle a random TID among
 * the first `rows` (equal keys then carry payloads in any order and
 * interleave with the tree's own).
 */
__global__ void
gen_entries_kernel(int32_t *k, uint64_t *p, uint64_t n, uint64_t seed, int skew,
				   int32_t skew_key, uint64_t row0, int shuffle, uint64_t rows)
{
	for (uint64_t i = (uint64_t) blockIdx.x * blockDim.x + threadIdx.x; i < n;
		 i += (uint64_t) gridDim.x * blockDim.x)
	{
		uint64_t	r = mix64(seed ^ (i * 0x2545f4914f6cdd1dull));

		k[i] = (skew && r % 5 != 0) ? skew_key : (int32_t) (r >> 32);
		p[i] = shuffle ? tid_of(mix64(r) % rows) : tid_of(row0 + i);
	}
}

/* Probes for the check: existing keys, the skewed key and its neighbours,
 * random values; hi = lo + a random span for ranges. */
__global__ void
gen_check_probes_kernel(int64_t *lo, int64_t *hi, uint64_t q, const int32_t *keys, uint64_t n,
						int32_t skew_key, uint64_t seed)
{
	for (uint64_t i = (uint64_t) blockIdx.x * blockDim.x + threadIdx.x; i < q;
		 i += (uint64_t) gridDim.x * blockDim.x)
	{
		uint64_t	r = mix64(seed ^ (i * 0x9e3779b97f4a7c15ull));
		int64_t		v;

		switch (r & 3)
		{
			case 0:
			case 1:
				v = keys[(r >> 2) % n];
				break;
			case 2:
				v = (int64_t) skew_key + (int64_t) ((r >> 8) % 3) - 1;
				break;
			default:
				v = (int32_t) (r >> 32);
		}
		lo[i] = v;
		hi[i] = v + (int64_t) ((r >> 20) % (1u << 22));
	}
}

/* Point-query probes as bench/kernel: half existing keys, half uniform. */
__global__ void
gen_point_probes_kernel(int64_t *probes, uint64_t q, const int32_t *keys, uint64_t n,
						uint64_t seed)
{
	for (uint64_t i = (uint64_t) blockIdx.x * blockDim.x + threadIdx.x; i < q;
		 i += (uint64_t) gridDim.x * blockDim.x)
	{
		uint64_t	r = mix64(seed ^ (i * 0x9e3779b97f4a7c15ull));

		probes[i] = (r & 1) ? (int64_t) keys[(r >> 1) % n] : (int64_t) (int32_t) mix64(r);
	}
}

/* Count positions where two arrays differ. */
__global__ void
diff_kernel(const uint64_t *a, const uint64_t *b, uint64_t n, unsigned long long *bad)
{
	for (uint64_t i = (uint64_t) blockIdx.x * blockDim.x + threadIdx.x; i < n;
		 i += (uint64_t) gridDim.x * blockDim.x)
		if (a[i] != b[i])
			atomicAdd(bad, 1ull);
}

/* Sort n (key, payload) pairs on the device with the engine's own sort. */
static void
sort_pairs(const int32_t *k, const uint64_t *p, int32_t *ko, uint64_t *po, uint64_t n)
{
	GI_OK_OR_DIE(gi_gpu_sort_pairs(4, n, 0, k, p, po, ko, &er_));
}

/* A bulk-built GPU image of the sorted entries, keeping a device payload
 * copy as engine.c does for payload images. */
static GiImage *
build_image(const int32_t *sk, const uint64_t *sp, uint64_t n)
{
	GiBuildParams params = {GI_ENGINE_GPU, GI_STRUCT_BTREE, 4, 0};
	GiImage    *img = NULL;
	void	   *d;

	GI_OK_OR_DIE(gi_gpu_dev_build(&params, sk, NULL, n, true, NULL, &img, &er_));
	CUDA_OK(cudaMalloc(&d, n * 8));
	CUDA_OK(cudaMemcpy(d, sp, n * 8, cudaMemcpyDeviceToDevice));
	img->device_payloads = d;
	return img;
}

/* The rebuild baseline: sort the batch, merge, bulk-build.  Returns the
 * image (payload copy = the merged payloads) and the merged arrays. */
static GiImage *
rebuild(const int32_t *ok, const uint64_t *op, uint64_t n, const int32_t *bk,
		const uint64_t *bp, uint64_t b, int32_t **mk_out, uint64_t **mp_out)
{
	int32_t    *sk,
			   *mk;
	uint64_t   *sp,
			   *mp;
	GiBuildParams params = {GI_ENGINE_GPU, GI_STRUCT_BTREE, 4, 0};
	GiImage    *img = NULL;

	CUDA_OK(cudaMalloc(&sk, b * 4));
	CUDA_OK(cudaMalloc(&sp, b * 8));
	CUDA_OK(cudaMalloc(&mk, (n + b) * 4));
	CUDA_OK(cudaMalloc(&mp, (n + b) * 8));
	sort_pairs(bk, bp, sk, sp, b);
	auto		a0 = thrust::make_zip_iterator(thrust::make_tuple(ok, op));
	auto		b0 = thrust::make_zip_iterator(thrust::make_tuple(sk, sp));
	auto		o0 = thrust::make_zip_iterator(thrust::make_tuple(mk, mp));

	thrust::merge(thrust::device, a0, a0 + n, b0, b0 + b, o0);
	GI_OK_OR_DIE(gi_gpu_dev_build(&params, mk, NULL, n + b, true, NULL, &img, &er_));
	img->device_payloads = mp;	/* rank order already: the merge's output */
	CUDA_OK(cudaFree(sk));
	CUDA_OK(cudaFree(sp));
	*mk_out = mk;
	*mp_out = mp;
	return img;
}

/* Compare an inserted and a rebuilt image on probes of every op and on the
 * rank-ordered payloads; returns the number of differences. */
static unsigned long long
check(GiImage *ins, GiImage *reb, const int32_t *mk, const uint64_t *mp, uint64_t n,
	  int32_t skew_key, uint64_t q)
{
	int64_t    *lo,
			   *hi;
	uint64_t   *f[2],
			   *l[2];
	unsigned long long *d,
				bad = 0;

	CUDA_OK(cudaMalloc(&lo, q * 8));
	CUDA_OK(cudaMalloc(&hi, q * 8));
	for (int s = 0; s < 2; s++)
	{
		CUDA_OK(cudaMalloc(&f[s], q * 8));
		CUDA_OK(cudaMalloc(&l[s], q * 8));
	}
	CUDA_OK(cudaMalloc(&d, 8));
	CUDA_OK(cudaMemset(d, 0, 8));
	gen_check_probes_kernel<<<grid(q), 256>>>(lo, hi, q, mk, n, skew_key, 7 + n);
	CUDA_OK(cudaDeviceSynchronize());	/* the images work on their own streams */
	for (int op = GI_OP_POINT; op <= GI_OP_RANGE; op++)
	{
		const int64_t *h = op == GI_OP_RANGE ? hi : NULL;

		GI_OK_OR_DIE(gi_gpu_dev_query(ins, (GiOp) op, lo, h, q, f[0], l[0], NULL, &er_));
		GI_OK_OR_DIE(gi_gpu_dev_query(reb, (GiOp) op, lo, h, q, f[1], l[1], NULL, &er_));
		mismatch_kernel<<<grid(q), 256>>>(f[0], l[0], f[1], l[1], q, d);
	}
	GI_OK_OR_DIE(gi_gpu_dev_refresh_payloads(ins, &er_));
	diff_kernel<<<grid(n), 256>>>((const uint64_t *) ins->device_payloads, mp, n, d);
	CUDA_OK(cudaMemcpy(&bad, d, 8, cudaMemcpyDeviceToHost));
	if (ins->n != n)
		bad++;
	{
		GiImageInfo a,
					b;

		gi_image_info(ins, &a);
		gi_image_info(reb, &b);
		if (a.distinct_keys != b.distinct_keys)
		{
			fprintf(stderr, "distinct keys differ: inserted %" PRIu64 " rebuilt %" PRIu64 "\n",
					a.distinct_keys, b.distinct_keys);
			bad++;
		}
	}
	CUDA_OK(cudaFree(lo));
	CUDA_OK(cudaFree(hi));
	for (int s = 0; s < 2; s++)
	{
		CUDA_OK(cudaFree(f[s]));
		CUDA_OK(cudaFree(l[s]));
	}
	CUDA_OK(cudaFree(d));
	return bad;
}

/* Copy n device int32 keys / payloads to host int64 / uint64 vectors. */
static void
to_host(const int32_t *k, const uint64_t *p, uint64_t n, std::vector<int64_t> &hk,
		std::vector<uint64_t> &hp)
{
	std::vector<int32_t> t(n);

	hk.resize(n);
	hp.resize(n);
	CUDA_OK(cudaMemcpy(t.data(), k, n * 4, cudaMemcpyDeviceToHost));
	CUDA_OK(cudaMemcpy(hp.data(), p, n * 8, cudaMemcpyDeviceToHost));
	for (uint64_t i = 0; i < n; i++)
		hk[i] = t[i];
}

/*
 * The CPU engine's insertion of the same batch into a CPU image of the same
 * entries (build not timed).  Returns ms, or -1 when the engine answers
 * unsupported; *agree is set from a probe sample against the GPU image.
 */
static double
cpu_insert(const std::vector<int64_t> &ok, const std::vector<uint64_t> &op,
		   const int32_t *bk, const uint64_t *bp, uint64_t b, GiImage *gimg,
		   const int32_t *mk, uint64_t mn, int32_t skew_key, int *agree)
{
	GiBuildParams params = {GI_ENGINE_CPU, GI_STRUCT_BTREE, 4, 0};
	GiImage    *img = NULL;
	std::vector<int64_t> hk;
	std::vector<uint64_t> hp;
	GiError		er;
	double		t0,
				ms;

	*agree = -1;
	to_host(bk, bp, b, hk, hp);
	GI_OK_OR_DIE(gi_image_build(&params, ok.data(), op.data(), ok.size(), &img, &er_));
	t0 = gi_now_ms();
	GiStatus	st = gi_image_insert(img, hk.data(), hp.data(), b, &er);

	ms = gi_now_ms() - t0;
	if (st != GI_OK)
	{
		fprintf(stderr, "CPU insertion: %s\n", er.message);
		gi_image_free(img);
		return -1;
	}
	{							/* agreement with the GPU image on 2^16 probes */
		const uint64_t q = 1 << 16;
		int64_t    *dlo,
				   *dhi;
		std::vector<int64_t> lo(q), hi(q);
		std::vector<uint64_t> cf(q), cl(q), gf(q), gl(q);

		CUDA_OK(cudaMalloc(&dlo, q * 8));
		CUDA_OK(cudaMalloc(&dhi, q * 8));
		gen_check_probes_kernel<<<grid(q), 256>>>(dlo, dhi, q, mk, mn, skew_key, 99);
		CUDA_OK(cudaMemcpy(lo.data(), dlo, q * 8, cudaMemcpyDeviceToHost));
		CUDA_OK(cudaMemcpy(hi.data(), dhi, q * 8, cudaMemcpyDeviceToHost));
		*agree = 1;
		for (int o = GI_OP_POINT; o <= GI_OP_RANGE; o++)
		{
			const int64_t *h = o == GI_OP_RANGE ? hi.data() : NULL;

			GI_OK_OR_DIE(gi_image_query(img, (GiOp) o, lo.data(), h, q, cf.data(), cl.data(), &er_));
			GI_OK_OR_DIE(gi_image_query(gimg, (GiOp) o, lo.data(), h, q, gf.data(), gl.data(), &er_));
			for (uint64_t i = 0; i < q; i++)
				if ((cf[i] == cl[i]) != (gf[i] == gl[i]) ||
					(cf[i] != cl[i] && (cf[i] != gf[i] || cl[i] != gl[i])))
				{
					*agree = 0;
					break;
				}
		}
		CUDA_OK(cudaFree(dlo));
		CUDA_OK(cudaFree(dhi));
	}
	gi_image_free(img);
	return ms;
}

/* --rows: the (tree, batch) pairs to run (empty: all); vEB and the point
 * queries are skipped when it is given. */
static std::vector<std::pair<uint64_t, uint64_t>> g_rows;

static bool
row_wanted(uint64_t n, uint64_t b)
{
	if (g_rows.empty())
		return true;
	for (auto &r : g_rows)
		if (r.first == n && r.second == b)
			return true;
	return false;
}

/* One tree size: every batch size and distribution. */
static void
bench_tree(uint64_t n, const std::vector<uint64_t> &batches, int reps, bool cpu, bool last)
{
	int32_t    *uk,
			   *ok;
	uint64_t   *up,
			   *opay;
	int32_t		skew_key;
	std::vector<int64_t> hk;
	std::vector<uint64_t> hp;

	fprintf(stderr, "== tree n=%" PRIu64 "\n", n);
	CUDA_OK(cudaMalloc(&uk, n * 4));
	CUDA_OK(cudaMalloc(&up, n * 8));
	CUDA_OK(cudaMalloc(&ok, n * 4));
	CUDA_OK(cudaMalloc(&opay, n * 8));
	gen_entries_kernel<<<grid(n), 256>>>(uk, up, n, 1234 + n, 0, 0, 0, 0, n);
	sort_pairs(uk, up, ok, opay, n);
	CUDA_OK(cudaFree(uk));
	CUDA_OK(cudaFree(up));
	CUDA_OK(cudaMemcpy(&skew_key, ok + n / 2, 4, cudaMemcpyDeviceToHost));
	if (cpu)
		to_host(ok, opay, n, hk, hp);

	/* vEB: what a change costs a vEB image (a device build at this size) */
	if (g_rows.empty())
	{
		GiBuildParams vp = {GI_ENGINE_GPU, GI_STRUCT_VEB, 4, 0};
		std::vector<double> tv;

		for (int r = 0; r <= reps; r++)
		{
			GiImage    *v = NULL;
			double		ms = timed([&] { GI_OK_OR_DIE(gi_gpu_dev_build(&vp, ok, NULL, n, true, NULL, &v, &er_)); });

			if (r > 0)
				tv.push_back(ms);
			gi_image_free(v);
		}
		t_veb.push_back(fmt("| %.0e | %.2f |", (double) n, median(tv)));
	}

	for (int dist = 0; dist < 3; dist++)
		for (uint64_t b : batches)
		{
			if (!row_wanted(n, b))
				continue;
			int32_t    *bk;
			uint64_t   *bp;
			std::vector<double> ti,
						tr,
						tc,
						ts,
						tse,
						tb,
						tin;
			unsigned long long bad = 0;
			double		cms = -2;
			int			agree = -1;

			int			skew = dist > 0;
			const char *dname = dist_name[dist];

			fprintf(stderr, "   batch %" PRIu64 " %s\n", b, dname);
			CUDA_OK(cudaMalloc(&bk, b * 4));
			CUDA_OK(cudaMalloc(&bp, b * 8));
			gen_entries_kernel<<<grid(b), 256>>>(bk, bp, b, 777 + b + dist, skew, skew_key, n,
												 dist == 2, n + b);
			CUDA_OK(cudaGetLastError());

			GiImage    *reb = NULL;
			int32_t    *mk = NULL;
			uint64_t   *mp = NULL;

			for (int r = 0; r <= reps; r++)
			{					/* rebuild baseline; the first run warms up */
				int32_t    *k2;
				uint64_t   *p2;
				GiImage    *im = NULL;
				double		ms = timed([&] { im = rebuild(ok, opay, n, bk, bp, b, &k2, &p2); });

				if (r > 0)
					tr.push_back(ms);
				if (reb)
				{
					gi_image_free(reb);	/* frees its payload copy (mp) too */
					CUDA_OK(cudaFree(mk));
				}
				reb = im, mk = k2, mp = p2;
			}
			for (int r = 0; r <= reps; r++)
			{					/* insertion into a fresh, converted copy */
				GiImage    *im = build_image(ok, opay, n);
				double		conv = timed([&] { GI_OK_OR_DIE(gi_gpu_dev_make_insertable(im, &er_)); });
				GiImageInfo before;

				gi_image_info(im, &before);
				double		ms = timed([&] { GI_OK_OR_DIE(gi_gpu_dev_insert(im, bk, bp, b, false, &er_)); });
				GiImageInfo info;
				double		inner,
							cv,
							rf;

				gi_image_info(im, &info);
				gi_gpu_dev_insert_stats(im, &inner, &cv, &rf);
				(void) cv;
				if (r > 0)
				{
					ti.push_back(ms);
					tc.push_back(conv);
					ts.push_back(info.last_insert.sort_ms);
					tse.push_back(info.last_insert.search_ms);
					tb.push_back(info.last_insert.build_ms);
					tin.push_back(inner);
				}
				if (r == reps)
				{
					bad = check(im, reb, mk, mp, n + b, skew_key, 1 << 20);
					gi_gpu_dev_insert_stats(im, &inner, &cv, &rf);	/* the refresh */
					t_parts.push_back(fmt("| %.0e | %.0e | %s | %" PRIu64 " -> %" PRIu64 " | %.1f | %.2f |",
										  (double) n, (double) b, dname,
										  before.leaves, info.leaves,
										  (double) info.device_bytes / (n + b), rf));
				}
				gi_image_free(im);
			}
			if (cpu)
			{
				if (n <= 10000000ull || dist == 0)
					{
					static double slowest = 0;

					if (slowest < 30000)	/* a CPU insertion over 30 s: skip the rest */
					{
						cms = cpu_insert(hk, hp, bk, bp, b, reb, mk, n + b, skew_key, &agree);
						slowest = std::max(slowest, cms);
					}
				}
			}
			if (bad)
				g_fail++;
			if (agree == 0)
				g_fail++;
			double		mi = median(ti),
						mr = median(tr);

			t_ins.push_back(fmt("| %.0e | %.0e | %s | %.2f (%.2f / %.2f / %.2f; inner %.2f) | %.3g | %.2f | **%.2fx** | %s | %s | %.2f | %s |",
								(double) n, (double) b, dname,
								mi, median(ts), median(tse), median(tb), median(tin),
								b / (mi / 1000.0), mr, mr / mi,
								cms >= 0 ? fmt("%.1f", cms).c_str() : (cms == -1 ? "unsupported" : "not run"),
								cms > 0 ? fmt("%.2fx", cms / mi).c_str() : "-",
								median(tc), bad ? fmt("FAIL (%llu)", bad).c_str() : "OK"));
			fprintf(stderr, "%s\n", t_ins.back().c_str());
			if (agree == 0)
				fprintf(stderr, "   CPU engine answers differ from the GPU's\n");
			gi_image_free(reb);
			CUDA_OK(cudaFree(mk));
			CUDA_OK(cudaFree(bk));
			CUDA_OK(cudaFree(bp));
		}

	if (last && g_rows.empty())
	{							/* static point queries, then after an insertion */
		uint64_t	q = n;
		int64_t    *pr;
		uint64_t   *f,
				   *l;
		GiImage    *im = build_image(ok, opay, n);
		GiGpuScratch *sc = NULL;
		std::vector<double> t1,
					t2;
		int32_t    *bk;
		uint64_t   *bp;
		uint64_t	b = n / 100;

		CUDA_OK(cudaMalloc(&pr, q * 8));
		CUDA_OK(cudaMalloc(&f, q * 8));
		CUDA_OK(cudaMalloc(&l, q * 8));
		gen_point_probes_kernel<<<grid(q), 256>>>(pr, q, ok, n, 99 + q);
		GI_OK_OR_DIE(gi_gpu_dev_scratch_create(im, q, &sc, &er_));
		for (int r = 0; r <= reps; r++)
		{
			double		ms = timed([&] { GI_OK_OR_DIE(gi_gpu_dev_query(im, GI_OP_POINT, pr, NULL, q, f, l, sc, &er_)); });

			if (r > 0)
				t1.push_back(ms);
		}
		CUDA_OK(cudaMalloc(&bk, b * 4));
		CUDA_OK(cudaMalloc(&bp, b * 8));
		gen_entries_kernel<<<grid(b), 256>>>(bk, bp, b, 4242, 0, 0, n, 0, n + b);
		CUDA_OK(cudaDeviceSynchronize());
		GI_OK_OR_DIE(gi_gpu_dev_insert(im, bk, bp, b, false, &er_));
		for (int r = 0; r <= reps; r++)
		{
			double		ms = timed([&] { GI_OK_OR_DIE(gi_gpu_dev_query(im, GI_OP_POINT, pr, NULL, q, f, l, sc, &er_)); });

			if (r > 0)
				t2.push_back(ms);
		}
		t_query.push_back(fmt("| %.0e | %.0e | static (bulk-built) | %.2f | %.2f |",
							  (double) n, (double) q, median(t1), q / median(t1) / 1e6));
		t_query.push_back(fmt("| %.0e | %.0e | insertable, after a uniform batch of %.0e | %.2f | %.2f |",
							  (double) n, (double) q, (double) b, median(t2), q / median(t2) / 1e6));
		gi_gpu_dev_scratch_free(sc);
		gi_image_free(im);
		CUDA_OK(cudaFree(pr));
		CUDA_OK(cudaFree(f));
		CUDA_OK(cudaFree(l));
		CUDA_OK(cudaFree(bk));
		CUDA_OK(cudaFree(bp));
	}
	CUDA_OK(cudaFree(ok));
	CUDA_OK(cudaFree(opay));
}

int
main(int argc, char **argv)
{
	bool		small = false,
				cpu = true;
	int			reps = 3;
	char		why[256];
	cudaDeviceProp prop;
	std::vector<uint64_t> trees = {10000000ull, 100000000ull};
	std::vector<uint64_t> batches = {100000ull, 1000000ull, 10000000ull};

	for (int i = 1; i < argc; i++)
	{
		if (!strcmp(argv[i], "--small"))
			small = true;
		else if (!strcmp(argv[i], "--no-cpu"))
			cpu = false;
		else if (!strcmp(argv[i], "--reps") && i + 1 < argc)
			reps = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--rows") && i + 1 < argc)
		{						/* e.g. 1e7:1e6,1e8:1e7 */
			char	   *q = argv[++i];

			while (*q)
			{
				char	   *e;
				double		tn = strtod(q, &e),
							tb;

				if (*e != ':')
					break;
				tb = strtod(e + 1, &e);
				g_rows.push_back({(uint64_t) tn, (uint64_t) tb});
				q = *e == ',' ? e + 1 : e;
			}
		}
		else
		{
			fprintf(stderr, "usage: insert_bench [--small] [--reps R] [--no-cpu] [--rows N:B,...]\n");
			return 2;
		}
	}
	if (!gi_gpu_available(why, sizeof(why)))
	{
		fprintf(stderr, "no GPU: %s\n", why);
		return 2;
	}
	CUDA_OK(cudaGetDeviceProperties(&prop, 0));
	g_sms = prop.multiProcessorCount;
	if (small)
	{
		trees = {100000ull, 1000000ull};
		batches = {1000ull, 10000ull, 100000ull};
		reps = 1;
	}
	if (!g_rows.empty())
	{							/* only the trees the rows name */
		std::vector<uint64_t> keep;

		for (uint64_t n : trees)
			for (auto &r : g_rows)
				if (r.first == n)
				{
					keep.push_back(n);
					break;
				}
		trees = keep;
	}
	for (size_t t = 0; t < trees.size(); t++)
		bench_tree(trees[t], batches, reps, cpu, t + 1 == trees.size());

	printf("## bench/insert on %s (%d SMs), int32 keys, 64-bit payloads (heap TIDs), median of %d\n\n",
		   prop.name, g_sms, reps);
	printf("### Batch insertion vs a device rebuild and the CPU engine (ms a batch)\n\n");
	printf("GPU insert: gi_gpu_dev_insert of an unsorted device batch into a fresh copy already made\n"
		   "insertable (sort / search / merge+split+directory+inner; inner = internal-level re-cut, part\n"
		   "of build).  Rebuild: device sort of the batch + thrust::merge with the old sorted arrays +\n"
		   "gi_gpu_dev_build(sorted).  CPU: gi_image_insert on a CPU image (host batch; build not timed).\n"
		   "Convert: the one-time conversion of the bulk-built tree (not in the insert time).\n\n");
	print_table("| tree | batch | keys | GPU insert ms (sort / search / build; inner) | insert keys/s | rebuild ms | rebuild / insert | CPU insert ms | CPU / GPU | convert ms | check |", t_ins);
	printf("\n### Leaves and memory after the insertion; payload refresh for select (ms, once after a batch)\n\n");
	print_table("| tree | batch | keys | leaves | device bytes / entry | payload refresh ms |", t_parts);
	printf("\n### vEB: a change means a rebuild (device build from sorted keys on the device, ms)\n\n");
	print_table("| tree | vEB build ms |", t_veb);
	printf("\n### Point queries on the device (probes half existing keys, half uniform; group 2, default policy)\n\n");
	print_table("| tree | probes | form | ms | Mq/s |", t_query);
	printf("\n%s\n", g_fail ? "RESULT: FAIL" : "RESULT: all checks OK");
	return g_fail ? 1 : 0;
}
