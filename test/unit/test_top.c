/*
 * test_top.c - the GPU B+ tree's top search (cuda/gpu_btree_top.cu: blocks
 * keep the tree's upper levels in shared memory and read only the rest and
 * the leaf from global memory) against brute force, through engine.h.
 * Every op, key widths 2, 4 and 8, on the bulk-built and the insertable
 * form; trees of a single leaf (nothing to stage), of one to four internal
 * levels, small enough that every internal level is staged and (10^6 int64
 * keys) too large for that; keys with heavy duplicates (runs across
 * leaves and staged nodes), at the type's extremes, wide and narrow; probes
 * that exist, fall between keys, lie below and above every key and at
 * INT64_MIN / INT64_MAX, in random and in sorted order.  Each batch is
 * asked with GI_GPU_SMEM_TOP off (the paths of the default policy: the
 * reference), on with GI_GPU_SMEM_LEVELS 0 (every level that fits), 1, 2
 * and 3, and auto: every answer must match brute force (an empty answer:
 * only empty, as test_engine.c checks) and each mode the reference to the
 * letter.  Batches of 70000 probes reach auto's sampled path (the sample
 * sends random ones to the top search, sorted ones to the tiled search).
 * GPU only: without a device nothing runs.  gi_test_top_main(), run by
 * test_engine's main; GI_UNIT_MAX caps the key counts (compute-sanitizer
 * runs use a small one: under 10^5 also fewer shapes, widths and batches,
 * under 40000 fewer probes).
 */
#include "engine.h"
#include "test_util.h"

#include <string.h>

#define NSHAPES		4
#define NMODES		6
#define MAX_REPORTS	5

static TestRun tr;				/* seed, random stream, counts */

/* GI_GPU_SMEM_TOP and GI_GPU_SMEM_LEVELS of each mode; mode 0 is the reference. */
static const char *mode_top[NMODES] = {"off", "on", "on", "on", "on", "auto"};
static const char *mode_levels[NMODES] = {"0", "0", "1", "2", "3", "0"};
static const char *batch_names[] = {"random", "sorted"};

/*
 * n keys of width w, sorted: 0 heavy duplicates (nine values: runs across
 * leaves and internal nodes), 1 the type's extremes among small values, 2
 * wide and mostly distinct, 3 narrow and evenly spaced.
 */
static void
make_keys(int64_t *k, size_t n, int w, int shape)
{
	int64_t		tmin,
				tmax;
	size_t		i;

	test_type_range(w, &tmin, &tmax);
	for (i = 0; i < n; i++)
	{
		uint64_t	r = test_below(&tr, 4);

		switch (shape)
		{
			case 0:
				k[i] = (int64_t) test_below(&tr, 9) - 4;
				break;
			case 1:
				k[i] = r == 0 ? tmin : r == 1 ? tmax : (int64_t) test_below(&tr, 1000) - 500;
				break;
			case 2:
				k[i] = test_between(&tr, tmin, tmax);
				break;
			default:
				k[i] = test_clamp_add(-1000, (int64_t) i * 5, tmin, tmax);
				break;
		}
	}
	qsort(k, n, sizeof(int64_t), test_cmp_i64);
}

/*
 * np probes (lo) and range ends (hi) over the sorted keys k (n > 0): about
 * 4 in 10 existing keys, 4 in 10 drawn around the key span, the rest
 * special values (outside every key, the type's and int64's extremes, the
 * smallest and largest key and their neighbours); sorted when asked.
 */
static void
make_batch(const int64_t *k, size_t n, int w, bool sorted, int64_t *lo, int64_t *hi, size_t np)
{
	int64_t		tmin,
				tmax,
				a = k[0],
				b = k[n - 1];
	size_t		i;

	test_type_range(w, &tmin, &tmax);
	{
		const int64_t special[] = {INT64_MIN, INT64_MAX, tmin, tmax, test_sat_add(tmin, -1),
			test_sat_add(tmax, 1), test_sat_add(a, -1), test_sat_add(b, 1), a, b, 0, -1,
			test_sat_add(INT64_MIN, 1), test_sat_add(INT64_MAX, -1)};
		const size_t nspecial = sizeof(special) / sizeof(special[0]);

		for (i = 0; i < np; i++)
		{
			uint64_t	r = test_below(&tr, 10);

			if (r < 4)
				lo[i] = k[test_below(&tr, n)];
			else if (r < 8)
				lo[i] = test_between(&tr, test_sat_add(a, -3), test_sat_add(b, 3));
			else
				lo[i] = special[test_below(&tr, nspecial)];
		}
	}
	if (sorted)
		qsort(lo, np, sizeof(int64_t), test_cmp_i64);
	for (i = 0; i < np; i++)
	{
		uint64_t	r = test_below(&tr, 16);

		/* ranges: mostly narrow, some empty (hi < lo), some to the end or
		 * from below everything */
		hi[i] = r == 0 ? INT64_MAX : r == 1 ? test_sat_add(lo[i], -1) :
			r == 2 ? (int64_t) test_between(&tr, tmin, tmax) :
			test_sat_add(lo[i], (int64_t) test_below(&tr, 40));
	}
}

/*
 * Query img in every mode and check the answers: brute force over the
 * sorted keys k, and each mode against mode 0 (off) to the letter.
 */
static void
check_batch(GiImage *img, const int64_t *k, size_t n, int w, int shape, const char *form,
			int batch, const int64_t *lo, const int64_t *hi, size_t np, uint64_t *buf)
{
	uint64_t   *want_f = buf,
			   *want_l = buf + np,
			   *ref_f = buf + 2 * np,
			   *ref_l = buf + 3 * np,
			   *f = buf + 4 * np,
			   *l = buf + 5 * np;
	int			op,
				mode;
	size_t		i;
	char		what[240];

	for (op = GI_OP_POINT; op <= GI_OP_RANGE; op++)
	{
		for (i = 0; i < np; i++)
			test_expect(k, n, (GiOp) op, lo[i], hi[i], &want_f[i], &want_l[i]);
		for (mode = 0; mode < NMODES; mode++)
		{
			GiError		err;
			GiStatus	st;
			uint64_t   *rf = mode == 0 ? ref_f : f,
					   *rl = mode == 0 ? ref_l : l;
			int			reports = 0;
			bool		ok;

			setenv("GI_GPU_SMEM_TOP", mode_top[mode], 1);
			setenv("GI_GPU_SMEM_LEVELS", mode_levels[mode], 1);
			memset(rf, 0xAB, np * sizeof(uint64_t));
			memset(rl, 0xCD, np * sizeof(uint64_t));
			st = gi_image_query(img, (GiOp) op, lo, op == GI_OP_RANGE ? hi : NULL, np, rf, rl, &err);
			ok = st == GI_OK;
			if (!ok)
				printf("FAIL seed=%" PRIu64 " top: query failed (%d): %s\n",
					   tr.seed, (int) st, err.message);
			for (i = 0; ok && i < np; i++)
			{
				bool		good = want_f[i] == want_l[i] ? rf[i] == rl[i] && rf[i] <= n :
					rf[i] == want_f[i] && rl[i] == want_l[i];

				if (good && mode > 0)
					good = rf[i] == ref_f[i] && rl[i] == ref_l[i];
				if (!good)
				{
					if (reports++ < MAX_REPORTS)
						printf("FAIL seed=%" PRIu64 " top smem_top=%s levels=%s %s w=%d n=%zu"
							   " shape=%d batch=%s op=%d probe#%zu p=%" PRId64 " hi=%" PRId64
							   ": got [%" PRIu64 ", %" PRIu64 ") want [%" PRIu64 ", %" PRIu64
							   ") off [%" PRIu64 ", %" PRIu64 ")\n",
							   tr.seed, mode_top[mode], mode_levels[mode], form, w, n, shape,
							   batch_names[batch], op, i, lo[i], op == GI_OP_RANGE ? hi[i] : 0,
							   rf[i], rl[i], want_f[i], want_l[i], ref_f[i], ref_l[i]);
					ok = false;
				}
			}
			snprintf(what, sizeof(what), "gpu top search smem_top=%s levels=%s %s w=%d n=%zu shape=%d batch=%s op=%d",
					 mode_top[mode], mode_levels[mode], form, w, n, shape, batch_names[batch], op);
			test_record(&tr, ok, what);
		}
	}
	unsetenv("GI_GPU_SMEM_TOP");
	unsetenv("GI_GPU_SMEM_LEVELS");
}

/*
 * One key width, count and shape: build a GPU image, ask every batch; then
 * insert a quarter more keys of the same shape (the insertable form, its
 * own leaves and internal levels) and ask again.
 */
static void
run_case(int w, size_t n, int shape, size_t np, int nbatches)
{
	GiBuildParams params = {GI_ENGINE_GPU, GI_STRUCT_BTREE, w, 0};
	size_t		extra = n / 4 + 3;
	int64_t    *k = test_xmalloc((n + extra) * sizeof(int64_t));
	int64_t    *more = test_xmalloc(extra * sizeof(int64_t));
	int64_t    *lo = test_xmalloc(np * sizeof(int64_t));
	int64_t    *hi = test_xmalloc(np * sizeof(int64_t));
	uint64_t   *buf = test_xmalloc(6 * np * sizeof(uint64_t));
	GiImage    *img = NULL;
	GiError		err;
	char		what[120];
	int			form,
				batch;

	make_keys(k, n, w, shape);
	snprintf(what, sizeof(what), "gpu build w=%d n=%zu shape=%d", w, n, shape);
	test_record(&tr, gi_image_build(&params, k, NULL, n, &img, &err) == GI_OK, what);
	for (form = 0; img && form < 2; form++)
	{
		size_t		nk = form == 0 ? n : n + extra;

		if (form == 1)
		{						/* the insertable form: the union of both */
			size_t		i;

			make_keys(more, extra, w, shape);
			for (i = 0; i < extra; i++)	/* (in any order) */
				k[n + i] = more[extra - 1 - i];
			snprintf(what, sizeof(what), "gpu insert w=%d n=%zu shape=%d extra=%zu", w, n, shape, extra);
			if (gi_image_insert(img, k + n, NULL, extra, &err) != GI_OK)
			{
				printf("  insert: %s\n", err.message);
				test_record(&tr, false, what);
				break;
			}
			test_record(&tr, true, what);
			qsort(k, nk, sizeof(int64_t), test_cmp_i64);
		}
		for (batch = 0; batch < nbatches; batch++)
		{
			make_batch(k, nk, w, batch == 1, lo, hi, np);
			check_batch(img, k, nk, w, shape, form == 0 ? "static" : "insertable", batch, lo, hi,
						np, buf);
		}
	}
	gi_image_free(img);
	free(k);
	free(more);
	free(lo);
	free(hi);
	free(buf);
}

/* Run every case (GPU only); print this file's counts. */
int
gi_test_top_main(void)
{
	/*
	 * Internal levels (int32 / int64 keys): 1 key none / none, 20 none /
	 * one, 33 one / one, 700 one / two, 5000 two / three, 40000 three /
	 * three, 300000 three / four (all of them fit in 227 KiB, an H100's
	 * block), 10^6 three / four (int64: three of the four fit).
	 */
	static const size_t sizes[] = {1, 20, 33, 700, 5000, 40000, 300000, 1000000};
	size_t		max_n = 1000000;
	const char *s = getenv("GI_UNIT_MAX");
	char		why[256];
	size_t		si;
	int			w,
				shape;
	bool		small;

	test_run_start(&tr, "top", 19);
	if (s && *s)
		max_n = strtoull(s, NULL, 0);
	small = max_n < 100000;		/* compute-sanitizer: the essentials */
	if (!gi_gpu_available(why, sizeof(why)))
	{
		printf("test_top: skipped (no GPU: %s)\n", why);
		return 0;
	}
	for (si = 0; si < sizeof(sizes) / sizeof(sizes[0]) && sizes[si] <= max_n; si++)
		for (w = small ? 4 : 2; w <= 8; w *= 2)
			for (shape = 0; shape < (small ? 3 : NSHAPES); shape++)
			{
				/* probes: 70000 (auto samples the batch) from 5000 keys on,
				 * 20000 below; a quarter of GI_UNIT_MAX under 40000 (short
				 * compute-sanitizer runs) */
				size_t		np = sizes[si] < 5000 ? 20000 : 70000;

				if (sizes[si] >= 300000 && shape % 2 == 1)
					continue;	/* large trees: two shapes */
				if (max_n < 40000 && np > max_n / 4 + 100)
					np = max_n / 4 + 100;
				run_case(w, sizes[si], shape, np, small ? 1 : 2);
			}
	printf("test_top: seed=%" PRIu64 " (GI_SEED to repeat): %ld passed, %ld failed\n",
		   tr.seed, tr.passed, tr.failed);
	return (int) (tr.failed > 0);
}

/* The counts of the last gi_test_top_main run (for test_engine's total). */
void
gi_test_top_counts(long *passed, long *failed)
{
	*passed = tr.passed;
	*failed = tr.failed;
}
