/*
 * test_insert.c - unit tests of gi_image_insert (CUBPT batch insertion)
 * through engine.h only, against brute force.
 *
 * Each scenario builds a B+ tree image (key width 2, 4 or 8, with or without
 * payloads), inserts a series of batches (uniform, skewed so that 80 % of a
 * batch lands in one narrow key interval, heavy duplicates with runs that
 * span leaves and equal (key, payload) pairs, type extremes, batches larger
 * than the tree, empty batches) and after every batch checks all four ops on
 * random probes (present, absent, extremes, far outside the type) against a
 * binary search over the sorted (key, payload) union, gi_image_select in
 * both orders, and gi_image_info's counts.  The CPU engine always; the GPU
 * engine when gi_gpu_available says so, where GI_ERR_UNSUPPORTED (insertion
 * or selection not there yet) counts as skipped, any other error or wrong
 * answer as failed.  Outputs are poisoned before each call.
 *
 * The entry point is gi_test_insert_main(); test_engine's main() adds
 * gi_test_insert_counts() into its total.  GI_SEED repeats a run.
 */
#include "engine.h"
#include "../common/test_util.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define TI_REPORTS		3		/* mismatches printed per failing check */
#define TI_POISON		0xABABABABABABABABULL

static TestRun tr;				/* seed, random stream, counts */

/* The union inserted so far, sorted by (key, payload), and its keys. */
typedef struct TiRef
{
	TestPair   *pairs;
	int64_t    *keys;
	size_t		n;
	size_t		cap;
} TiRef;

/* Add entries to the reference and re-sort it. */
static void
ti_ref_add(TiRef *ref, const int64_t *keys, const uint64_t *payloads, size_t n)
{
	size_t		i;

	if (ref->n + n > ref->cap)
	{
		ref->cap = (ref->n + n) * 2 + 16;
		ref->pairs = realloc(ref->pairs, ref->cap * sizeof(TestPair));
		ref->keys = realloc(ref->keys, ref->cap * sizeof(int64_t));
		if (ref->pairs == NULL || ref->keys == NULL)
		{
			fprintf(stderr, "test_insert: out of memory\n");
			exit(2);
		}
	}
	for (i = 0; i < n; i++)
	{
		ref->pairs[ref->n + i].key = keys[i];
		ref->pairs[ref->n + i].payload = payloads ? payloads[i] : 0;
	}
	ref->n += n;
	if (ref->n > 1)
		qsort(ref->pairs, ref->n, sizeof(TestPair), test_cmp_pair);
	for (i = 0; i < ref->n; i++)
		ref->keys[i] = ref->pairs[i].key;
}

/* One probe: present keys, neighbours, a hot spot, the type's edges, far out. */
static int64_t
ti_probe(const TiRef *ref, int width, int64_t hot)
{
	static const int64_t far[] = {
		INT64_MIN, INT64_MAX, INT64_MIN + 1, INT64_MAX - 1, 0, -1, 1,
		(int64_t) 1 << 40, -((int64_t) 1 << 40), INT32_MIN, INT32_MAX,
		(int64_t) INT32_MIN - 1, (int64_t) INT32_MAX + 1, INT16_MIN, INT16_MAX,
		INT16_MIN - 1, INT16_MAX + 1,
	};
	int64_t		tmin;
	int64_t		tmax;
	uint64_t	r = test_below(&tr, 100);

	test_type_range(width, &tmin, &tmax);
	if (ref->n > 0 && r < 35)
		return ref->keys[test_below(&tr, ref->n)];
	if (ref->n > 0 && r < 50)
		return test_clamp_add(ref->keys[test_below(&tr, ref->n)], test_rnd(&tr) & 1 ? 1 : -1,
							INT64_MIN, INT64_MAX);
	if (r < 65)
		return test_clamp_add(hot, test_between(&tr, -100, 100), INT64_MIN, INT64_MAX);
	if (r < 75)
		return test_between(&tr, tmin, tmax);
	if (r < 85)
		return far[test_below(&tr, sizeof(far) / sizeof(far[0]))];
	if (r < 90)
		return test_rnd(&tr) & 1 ? test_clamp_add(tmin, -1, INT64_MIN, INT64_MAX) :
			test_clamp_add(tmax, 1, INT64_MIN, INT64_MAX);
	if (r < 95)
		return test_rnd(&tr) & 1 ? tmin : tmax;
	return (int64_t) test_rnd(&tr);
}

/* Probes and range upper bounds (some below the lower bound). */
static void
ti_probes(int64_t *lo, int64_t *hi, size_t np, const TiRef *ref, int width,
		  int64_t hot)
{
	size_t		i;

	for (i = 0; i < np; i++)
	{
		uint64_t	r = test_below(&tr, 10);

		lo[i] = ti_probe(ref, width, hot);
		if (r < 3)
			hi[i] = ti_probe(ref, width, hot);
		else if (r < 5)
			hi[i] = lo[i];
		else if (r < 8)
			hi[i] = test_clamp_add(lo[i], (int64_t) test_below(&tr, r == 7 ? 100000 : 60),
								 INT64_MIN, INT64_MAX);
		else
			hi[i] = test_clamp_add(lo[i], -1 - (int64_t) test_below(&tr, 100),
								 INT64_MIN, INT64_MAX);
	}
}

/* Every op on np probes against brute force.  Returns false on a mismatch. */
static bool
ti_check_queries(GiImage *image, const char *label, const TiRef *ref,
				 int width, int64_t hot, size_t np)
{
	int64_t    *lo = test_xmalloc(np * sizeof(int64_t));
	int64_t    *hi = test_xmalloc(np * sizeof(int64_t));
	uint64_t   *first = test_xmalloc(np * sizeof(uint64_t));
	uint64_t   *last = test_xmalloc(np * sizeof(uint64_t));
	int			reports = 0;
	int			op;

	ti_probes(lo, hi, np, ref, width, hot);
	for (op = GI_OP_POINT; op <= GI_OP_RANGE; op++)
	{
		GiError		err;
		GiStatus	st;
		size_t		i;

		memset(first, 0xAB, np * sizeof(uint64_t));
		memset(last, 0xAB, np * sizeof(uint64_t));
		st = gi_image_query(image, (GiOp) op, lo, op == GI_OP_RANGE ? hi : NULL,
							np, first, last, &err);
		if (st != GI_OK)
		{
			printf("FAIL seed=%" PRIu64 " %s op=%d: query failed (%d): %s\n",
				   tr.seed, label, op, (int) st, err.message);
			reports++;
			continue;
		}
		for (i = 0; i < np; i++)
		{
			uint64_t	ea;
			uint64_t	eb;
			bool		ok;

			test_expect(ref->keys, ref->n, (GiOp) op, lo[i], hi[i], &ea, &eb);
			ok = ea == eb ? (first[i] == last[i] && first[i] != TI_POISON) :
				(first[i] == ea && last[i] == eb);
			if (!ok && reports++ < TI_REPORTS)
				printf("FAIL seed=%" PRIu64 " %s op=%d probe#%zu p=%" PRId64
					   " hi=%" PRId64 ": got [%" PRIu64 ", %" PRIu64 ") want [%"
					   PRIu64 ", %" PRIu64 ")\n", tr.seed, label, op, i, lo[i],
					   hi[i], first[i], last[i], ea, eb);
		}
	}
	free(lo);
	free(hi);
	free(first);
	free(last);
	return reports == 0;
}

/*
 * gi_image_select in both orders against brute force.  Returns 1 when right,
 * 0 when wrong, -1 when the engine answers unsupported (GPU only).
 */
static int
ti_check_select(GiImage *image, GiEngineKind engine, const char *label,
				const TiRef *ref, int width, int64_t hot)
{
	size_t		np = 1 + test_below(&tr, 64);
	int64_t    *lo = test_xmalloc(np * sizeof(int64_t));
	int64_t    *hi = test_xmalloc(np * sizeof(int64_t));
	uint8_t    *hit = test_xmalloc(ref->n);
	uint64_t   *want = test_xmalloc(ref->n * sizeof(uint64_t));
	size_t		nwant = 0;
	GiOp		op = (GiOp) (1 + test_below(&tr, 4));
	int			result = 1;
	int			order;
	size_t		i;

	ti_probes(lo, hi, np, ref, width, hot);
	memset(hit, 0, ref->n);
	for (i = 0; i < np; i++)
	{
		uint64_t	a;
		uint64_t	b;

		test_expect(ref->keys, ref->n, op, lo[i], hi[i], &a, &b);
		for (; a < b; a++)
			hit[a] = 1;
	}
	for (i = 0; i < ref->n; i++)
		if (hit[i])
			want[nwant++] = ref->pairs[i].payload;
	for (order = GI_ORDER_KEY; order <= GI_ORDER_PAYLOAD && result == 1; order++)
	{
		uint64_t   *got = NULL;
		size_t		ngot = 0;
		GiError		err;
		GiStatus	st;

		if (order == GI_ORDER_PAYLOAD && nwant > 1)
			qsort(want, nwant, sizeof(uint64_t), test_cmp_u64);
		st = gi_image_select(image, op, lo, op == GI_OP_RANGE ? hi : NULL, np,
							 (GiSelectOrder) order, &got, &ngot, &err);
		if (st == GI_ERR_UNSUPPORTED && engine == GI_ENGINE_GPU)
			result = -1;
		else if (st != GI_OK)
		{
			printf("FAIL seed=%" PRIu64 " %s select failed (%d): %s\n", tr.seed,
				   label, (int) st, err.message);
			result = 0;
		}
		else if (ngot != nwant ||
				 (nwant > 0 && memcmp(got, want, nwant * sizeof(uint64_t)) != 0))
		{
			printf("FAIL seed=%" PRIu64 " %s select op=%d order=%d: %zu payloads, want %zu%s\n",
				   tr.seed, label, (int) op, order, ngot, nwant,
				   ngot == nwant ? " (different ones)" : "");
			result = 0;
		}
		gi_free(got);
	}
	free(lo);
	free(hi);
	free(hit);
	free(want);
	return result;
}

/* gi_image_info's counts after insertions. */
static bool
ti_check_info(GiImage *image, const char *label, const TiRef *ref, int width,
			  uint64_t inserted, uint64_t batches)
{
	GiImageInfo info;
	uint64_t	distinct = ref->n > 0;
	size_t		i;
	bool		leaves_ok;
	bool		ok;

	for (i = 1; i < ref->n; i++)
		distinct += ref->keys[i] != ref->keys[i - 1];
	gi_image_info(image, &info);
	/* leaves may read 0 until the first insertion (engine.h) */
	leaves_ok = batches == 0 || ref->n == 0 ||
		(info.leaves >= 1 && info.leaves <= ref->n);
	ok = info.entries == ref->n && info.key_bytes == width &&
		info.structure == GI_STRUCT_BTREE && info.distinct_keys == distinct &&
		info.inserted == inserted && info.insert_batches == batches &&
		info.host_bytes + info.device_bytes > 0 && info.node_order >= 2 &&
		(ref->n == 0 || info.levels >= 1) && leaves_ok &&
		(batches == 0 || info.last_insert.total_ms >= 0);
	if (!ok)
		printf("FAIL seed=%" PRIu64 " %s info: entries=%" PRIu64 "/%zu distinct=%"
			   PRIu64 "/%" PRIu64 " inserted=%" PRIu64 "/%" PRIu64 " batches=%"
			   PRIu64 "/%" PRIu64 " levels=%d leaves=%" PRIu64 "\n", tr.seed,
			   label, info.entries, ref->n, info.distinct_keys, distinct,
			   info.inserted, inserted, info.insert_batches, batches,
			   info.levels, info.leaves);
	return ok;
}

/* Batch shapes. */
enum
{
	TI_UNIFORM,					/* over the whole type, extremes forced */
	TI_SKEWED,					/* 80 % in one narrow interval */
	TI_DUPS,					/* a few existing keys, equal pairs */
	TI_EDGES,					/* the type's extremes and their neighbours */
	TI_DENSE,					/* a small range around zero */
	TI_SHAPES
};

static const char *const ti_shape_names[] = {"uniform", "skewed", "dups",
"edges", "dense"};

/*
 * A batch of n entries of a shape.  hot is the skewed batch's interval
 * (near an existing key when there is one).  Payloads are often small so
 * that equal (key, payload) pairs appear.
 */
static void
ti_gen_batch(int64_t *keys, uint64_t *payloads, size_t n, int shape,
			 int width, const TiRef *ref, int64_t hot)
{
	int64_t		tmin;
	int64_t		tmax;
	int64_t		vals[8];
	size_t		nvals = 1 + test_below(&tr, 8);
	size_t		i;

	test_type_range(width, &tmin, &tmax);
	for (i = 0; i < nvals; i++)
		vals[i] = ref->n > 0 && test_below(&tr, 4) != 0 ? ref->keys[test_below(&tr, ref->n)] :
			test_between(&tr, tmin, tmax);
	for (i = 0; i < n; i++)
	{
		int64_t		k;
		uint64_t	r;

		switch (shape)
		{
			case TI_UNIFORM:
				k = test_below(&tr, 200) == 0 ? (test_rnd(&tr) & 1 ? tmin : tmax) :
					test_between(&tr, tmin, tmax);
				break;
			case TI_SKEWED:
				/* 80 %: half the hot key itself, half next to it. */
				r = test_below(&tr, 10);
				k = r < 4 ? hot : r < 8 ?
					test_clamp_add(hot, test_between(&tr, -20, 20), tmin, tmax) :
					test_between(&tr, tmin, tmax);
				break;
			case TI_DUPS:
				k = vals[test_below(&tr, nvals)];
				break;
			case TI_EDGES:
				k = test_rnd(&tr) & 1 ? test_clamp_add(tmin, (int64_t) test_below(&tr, 3), tmin, tmax) :
					test_clamp_add(tmax, -(int64_t) test_below(&tr, 3), tmin, tmax);
				break;
			default:
				k = test_between(&tr, -(int64_t) n / 4 - 2, (int64_t) n / 4 + 2);
				break;
		}
		keys[i] = k;
		if (payloads)
			payloads[i] = test_below(&tr, 3) == 0 ? test_below(&tr, 4) : test_rnd(&tr);
	}
}

/*
 * One scenario on one engine: build from `initial` entries of a shape, then
 * insert `nbatches` batches of the given sizes and shapes, checking after
 * the build and after every batch.
 */
static void
ti_scenario(GiEngineKind engine, int width, bool with_payloads, size_t initial,
			int initial_shape, const size_t *sizes, const int *shapes,
			int nbatches, size_t np)
{
	GiBuildParams params = {engine, GI_STRUCT_BTREE, width, 0};
	const char *ename = engine == GI_ENGINE_GPU ? "gpu" : "cpu";
	TiRef		ref = {NULL, NULL, 0, 0};
	GiImage    *image = NULL;
	GiError		err;
	GiStatus	st;
	int64_t    *keys;
	uint64_t   *payloads;
	int64_t		tmin;
	int64_t		tmax;
	int64_t		hot;
	uint64_t	inserted = 0;
	uint64_t	batches = 0;
	size_t		most = initial;
	char		label[200];
	int			bi;

	for (bi = 0; bi < nbatches; bi++)
		if (sizes[bi] > most)
			most = sizes[bi];
	keys = test_xmalloc(most * sizeof(int64_t));
	payloads = test_xmalloc(most * sizeof(uint64_t));
	test_type_range(width, &tmin, &tmax);
	hot = test_between(&tr, tmin, tmax);

	/* The initial image, built from sorted entries. */
	ti_gen_batch(keys, payloads, initial, initial_shape, width, &ref, hot);
	ti_ref_add(&ref, keys, with_payloads ? payloads : NULL, initial);
	for (size_t i = 0; i < ref.n; i++)
	{
		keys[i] = ref.pairs[i].key;
		payloads[i] = ref.pairs[i].payload;
	}
	snprintf(label, sizeof(label), "%s width=%d payloads=%d initial=%zu/%s",
			 ename, width, (int) with_payloads, initial,
			 ti_shape_names[initial_shape]);
	st = gi_image_build(&params, keys, with_payloads ? payloads : NULL, initial,
						&image, &err);
	if (st != GI_OK)
	{
		printf("FAIL seed=%" PRIu64 " %s: build failed (%d): %s\n", tr.seed,
			   label, (int) st, err.message);
		test_record(&tr, false, label);
		goto done;
	}
	if (ref.n > 0)
		hot = ref.keys[test_below(&tr, ref.n)];

	for (bi = 0; bi < nbatches; bi++)
	{
		size_t		n = sizes[bi];
		int			shape = shapes[bi];
		double		t0 = (double) clock();
		int			sel;

		snprintf(label, sizeof(label),
				 "%s width=%d payloads=%d initial=%zu/%s batch#%d n=%zu/%s (total %zu)",
				 ename, width, (int) with_payloads, initial,
				 ti_shape_names[initial_shape], bi, n, ti_shape_names[shape],
				 ref.n + n);
		ti_gen_batch(keys, payloads, n, shape, width, &ref, hot);
		st = gi_image_insert(image, keys, with_payloads ? payloads : NULL, n, &err);
		if (st == GI_ERR_UNSUPPORTED && engine == GI_ENGINE_GPU)
		{
			/* The GPU insertion lands later: not a pass, not a failure. */
			tr.skipped++;
			if (tr.verbose)
				printf("skip %s: %s\n", label, err.message);
			goto done;
		}
		if (st != GI_OK)
		{
			printf("FAIL seed=%" PRIu64 " %s: insert failed (%d): %s\n", tr.seed,
				   label, (int) st, err.message);
			test_record(&tr, false, label);
			goto done;
		}
		ti_ref_add(&ref, keys, with_payloads ? payloads : NULL, n);
		if (n > 0)
		{
			inserted += n;
			batches++;
		}
		test_record(&tr, ti_check_info(image, label, &ref, width, inserted, batches), label);
		test_record(&tr, ti_check_queries(image, label, &ref, width, hot, np), label);
		if (with_payloads)
		{
			sel = ti_check_select(image, engine, label, &ref, width, hot);
			if (sel < 0)
				tr.skipped++;
			else
				test_record(&tr, sel == 1, label);
		}
		if (tr.verbose)
			printf("     %s: %.0f ms\n", label,
				   ((double) clock() - t0) * 1000.0 / CLOCKS_PER_SEC);
	}

done:
	gi_image_free(image);
	free(keys);
	free(payloads);
	free(ref.pairs);
	free(ref.keys);
}

/* Error cases: vEB unsupported, payload mismatch, keys out of range. */
static void
ti_error_cases(GiEngineKind engine)
{
	int64_t		keys[4] = {1, 2, 3, 4};
	uint64_t	payloads[4] = {10, 20, 30, 40};
	int64_t		wide[2] = {5, (int64_t) 1 << 40};
	const char *ename = engine == GI_ENGINE_GPU ? "gpu" : "cpu";
	GiBuildParams params = {engine, GI_STRUCT_VEB, 4, 0};
	GiImage    *image = NULL;
	GiError		err;
	GiStatus	st;
	char		what[128];

	/* A vEB image is rebuilt by the caller, never inserted into. */
	st = gi_image_build(&params, keys, payloads, 4, &image, &err);
	if (st == GI_OK)
	{
		st = gi_image_insert(image, keys, payloads, 4, &err);
		snprintf(what, sizeof(what), "%s veb insert answers unsupported", ename);
		if (st != GI_ERR_UNSUPPORTED)
			printf("FAIL seed=%" PRIu64 " %s: got %d\n", tr.seed, what, (int) st);
		test_record(&tr, st == GI_ERR_UNSUPPORTED, what);
		gi_image_free(image);
	}
	else if (st == GI_ERR_UNSUPPORTED && engine == GI_ENGINE_GPU)
		tr.skipped++;
	else
	{
		printf("FAIL seed=%" PRIu64 " %s veb build failed (%d): %s\n", tr.seed,
			   ename, (int) st, err.message);
		test_record(&tr, false, "veb build");
	}

	/* Payloads exactly when the image keeps them; keys that fit. */
	params.structure = GI_STRUCT_BTREE;
	image = NULL;
	st = gi_image_build(&params, keys, payloads, 4, &image, &err);
	if (st != GI_OK)
	{
		printf("FAIL seed=%" PRIu64 " %s btree build failed (%d): %s\n", tr.seed,
			   ename, (int) st, err.message);
		test_record(&tr, false, "btree build");
		return;
	}
	snprintf(what, sizeof(what), "%s insert without payloads into a payload image rejected", ename);
	test_record(&tr, gi_image_insert(image, keys, NULL, 4, &err) == GI_ERR_INVALID, what);
	snprintf(what, sizeof(what), "%s empty insert is fine", ename);
	test_record(&tr, gi_image_insert(image, NULL, NULL, 0, &err) == GI_OK, what);
	if (engine == GI_ENGINE_CPU)
	{
		GiImageInfo info;

		snprintf(what, sizeof(what), "%s key wider than the image rejected", ename);
		test_record(&tr, gi_image_insert(image, wide, payloads, 2, &err) == GI_ERR_INVALID, what);
		gi_image_info(image, &info);
		snprintf(what, sizeof(what), "%s rejected inserts change nothing", ename);
		test_record(&tr, info.entries == 4 && info.inserted == 0 &&
				  info.insert_batches == 0, what);
	}
	gi_image_free(image);

	image = NULL;
	if (gi_image_build(&params, keys, NULL, 4, &image, &err) == GI_OK)
	{
		snprintf(what, sizeof(what), "%s insert with payloads into a keys-only image rejected", ename);
		test_record(&tr, gi_image_insert(image, keys, payloads, 4, &err) == GI_ERR_INVALID, what);
		gi_image_free(image);
	}
}

/* Run every scenario on every engine available; returns 1 on a failure. */
int
gi_test_insert_main(void)
{
	char		why[256] = "";
	bool		gpu = gi_gpu_available(why, sizeof(why));
	time_t		t0 = time(NULL);
	int			e;

	test_run_start(&tr, "insert", 0x5EED1A5E27ULL);
	printf("test_insert: seed=%" PRIu64 " (GI_SEED=%" PRIu64 " to repeat), gpu: %s\n",
		   tr.seed, tr.seed, gpu ? "yes" : why);

	for (e = 0; e < (gpu ? 2 : 1); e++)
	{
		GiEngineKind engine = e ? GI_ENGINE_GPU : GI_ENGINE_CPU;
		int			w;

		ti_error_cases(engine);
		for (w = 0; w < 3; w++)
		{
			int			width = w == 0 ? 2 : w == 1 ? 4 : 8;
			int			pl;
			int			shape;

			for (pl = 0; pl < 2; pl++)
			{
				bool		with_pl = pl == 1;

				/* Several batches of every shape into a mid-size tree. */
				{
					static const size_t sizes[] = {1, 0, 37, 5000, 1000, 20000, 3};
					int			shapes[7];
					int			i;

					for (i = 0; i < 7; i++)
						shapes[i] = (int) test_below(&tr, TI_SHAPES);
					ti_scenario(engine, width, with_pl, 20000,
								(int) test_below(&tr, TI_SHAPES), sizes, shapes, 7, 3000);
				}
				/* Batches larger than the tree: into empty and tiny images. */
				for (shape = 0; shape < TI_SHAPES; shape++)
				{
					static const size_t sizes[] = {3000, 50, 7000};
					int			shapes[3] = {shape, shape, (shape + 1) % TI_SHAPES};

					ti_scenario(engine, width, with_pl, shape % 2 ? 10 : 0,
								shape, sizes, shapes, 3, 2000);
				}
				/* Skewed and duplicate-heavy batches, one after another. */
				{
					static const size_t sizes[] = {4000, 4000, 4000, 4000};
					static const int shapes[] = {TI_SKEWED, TI_DUPS, TI_SKEWED, TI_DUPS};

					ti_scenario(engine, width, with_pl, 3000, TI_DUPS, sizes,
								shapes, 4, 2000);
				}
			}
			/* Many small batches in a row: the same leaves split again and again. */
			{
				size_t		sizes[40];
				int			shapes[40];
				int			i;

				for (i = 0; i < 40; i++)
				{
					sizes[i] = test_below(&tr, 4) == 0 ? 0 : 1 + test_below(&tr, 200);
					shapes[i] = i % 3 == 0 ? TI_SKEWED : (int) test_below(&tr, TI_SHAPES);
				}
				ti_scenario(engine, width, test_below(&tr, 2) == 0, 2000,
							(int) test_below(&tr, TI_SHAPES), sizes, shapes, 40, 400);
			}
			/*
			 * Tiny batches inside the key range: no leaf splits and no
			 * leaf's largest key moves, so the directory and internal
			 * levels stay and only rank bases shift (the engine's fast path).
			 */
			{
				size_t		sizes[50];
				int			shapes[50];
				int			i;

				for (i = 0; i < 50; i++)
				{
					sizes[i] = 1 + test_below(&tr, 6);
					shapes[i] = i % 2 == 0 ? TI_DENSE : TI_DUPS;
				}
				ti_scenario(engine, width, test_below(&tr, 2) == 0, 20000, TI_DENSE,
							sizes, shapes, 50, 400);
			}
			/* Random scenarios: sizes around node and fill boundaries too. */
			for (shape = 0; shape < 12; shape++)
			{
				static const size_t initial[] = {0, 1, 2, 11, 12, 24, 25, 33, 1000, 30000};
				static const size_t bsizes[] = {0, 1, 2, 5, 17, 24, 100, 2000, 40000};
				size_t		sizes[5];
				int			shapes[5];
				int			i;
				int			nb = 1 + (int) test_below(&tr, 5);

				for (i = 0; i < nb; i++)
				{
					sizes[i] = bsizes[test_below(&tr, sizeof(bsizes) / sizeof(bsizes[0]))];
					shapes[i] = (int) test_below(&tr, TI_SHAPES);
				}
				ti_scenario(engine, width, test_below(&tr, 2) == 0,
							initial[test_below(&tr, sizeof(initial) / sizeof(initial[0]))],
							(int) test_below(&tr, TI_SHAPES), sizes, shapes, nb, 1500);
			}
			/* A large tree, a large skewed batch and a uniform one (threads). */
			{
				static const size_t sizes[] = {150000, 60000};
				static const int shapes[] = {TI_SKEWED, TI_UNIFORM};

				if (w == 1)
					setenv("GI_CPU_THREADS", "3", 1);
				ti_scenario(engine, width, w != 0, 200000, TI_UNIFORM, sizes,
							shapes, 2, 20000);
				unsetenv("GI_CPU_THREADS");
			}
		}
	}
	if (tr.skipped)
		printf("test_insert: %ld skipped (the GPU engine reports insertion or selection unsupported)\n",
			   tr.skipped);
	printf("test_insert: %ld passed, %ld failed (%lds)\n", tr.passed, tr.failed,
		   (long) (time(NULL) - t0));
	return tr.failed > 0;
}

/* The counts of the last gi_test_insert_main run (for test_engine's total). */
void
gi_test_insert_counts(long *passed, long *failed)
{
	*passed = tr.passed;
	*failed = tr.failed;
}

#ifdef GI_TEST_INSERT_MAIN
/* Standalone binary: gcc -DGI_TEST_INSERT_MAIN with the engine sources. */
int
main(void)
{
	int			rc = gi_test_insert_main();

	printf("%ld passed, %ld failed\n", tr.passed, tr.failed);
	return rc;
}
#endif
