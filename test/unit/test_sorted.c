/*
 * test_sorted.c - the GPU B+ tree's run search (cuda/gpu_btree_tile.cuh: a
 * warp answers a run of probes in order from a window of leaves it carries
 * forward) against brute force, through engine.h.  Probe batches in order,
 * nearly in order, with long repeats, with heads and tails outside the key
 * range and at the type's extremes, dense (many probes a key) and sparse
 * (many keys a probe); every op, key widths 2, 4 and 8, keys with heavy
 * duplicates (runs across leaves), at the type's extremes, wide and
 * narrow.  Each batch is asked with GI_GPU_RUN_SEARCH off (the tiled and
 * per-probe paths), auto (tiles in order take the run search) and on (every
 * narrow tile does), and in the further modes of `modes` (the order sample
 * at every batch size, children loaded from the prefix sums rather than
 * computed from the level cut, equal probes descending each rather than
 * once a row, the thread search (GI_GPU_GROUP 1: a lane a probe), the
 * tiled kernel built for 2 and 3 blocks an SM (GI_GPU_TILE_MIN_BLOCKS),
 * the thread search without its leaf walk (GI_GPU_LEAF_WALK off), the
 * tiled kernel instead of the stream kernel where the sample tiles
 * (GI_GPU_STREAM off), the stream kernel without its row hints
 * (GI_GPU_ROW_HINT off)): each
 * answer must match brute force (an empty
 * answer: only empty, as test_engine.c checks) and every mode must agree
 * with mode off to the letter.  GPU only: without a device nothing runs.
 * gi_test_sorted_main(), run by test_engine's main; GI_UNIT_MAX caps the
 * key counts (compute-sanitizer runs use a small one).
 */
#include "engine.h"
#include "engine_util.h"			/* gi_settings_reload */
#include "test_util.h"

#include <string.h>

#define NSHAPES		4
#define NBATCHES	6
#define MAX_REPORTS	5

static TestRun tr;				/* seed, random stream, counts */
/*
 * The modes a batch is asked in: the run search (GI_GPU_RUN_SEARCH) off,
 * auto and on, then further search paths by their settings, each with the
 * run search off unless it says otherwise.  Mode 0 is the reference the
 * others must match to the letter.  Batches under GI_GPU_GATE_MIN (2^22 by
 * default: all of these) take the per-probe kernel, so a mode meant for
 * the tiled search sets it to 0: the order sample then picks the tiled
 * search for the batches in order.
 */
typedef struct SortedMode
{
	const char *name;
	const char *run;			/* GI_GPU_RUN_SEARCH */
	const char *gate_min;		/* GI_GPU_GATE_MIN (NULL: unset) */
	const char *child_arith;	/* GI_GPU_CHILD_ARITH (NULL: unset) */
	const char *dedup;			/* GI_GPU_DEDUP (NULL: unset) */
	const char *group;			/* GI_GPU_GROUP (NULL: unset) */
	const char *min_blocks;		/* GI_GPU_TILE_MIN_BLOCKS (NULL: unset) */
	const char *leaf_walk;		/* GI_GPU_LEAF_WALK (NULL: unset) */
	bool		every_shape;	/* past NRUN_MODES: run for every key shape */
	const char *top;			/* GI_GPU_TOP (NULL: unset) */
	const char *wide;			/* GI_GPU_WIDE (NULL: unset) */
	const char *leaf_guess;		/* GI_GPU_LEAF_GUESS (NULL: unset) */
	const char *stream;			/* GI_GPU_STREAM (NULL: unset) */
	const char *row_hint;		/* GI_GPU_ROW_HINT (NULL: unset) */
} SortedMode;

static const SortedMode modes[] = {
	{"off", "off", NULL, NULL, NULL, NULL, NULL, NULL, false, NULL, NULL, NULL, NULL, NULL},
	{"auto", "auto", "0", NULL, NULL, NULL, NULL, NULL, false, NULL, NULL, NULL, NULL, NULL},
	{"on", "on", "0", NULL, NULL, NULL, NULL, NULL, false, NULL, NULL, NULL, NULL, NULL},
	{"sampled", "off", "0", NULL, NULL, NULL, NULL, NULL, true, NULL, NULL, NULL, NULL, NULL},	/* the order sample at every
																	 * batch size: the stream
																	 * kernel where it tiles */
	{"sampled tiled kernel", "off", "0", NULL, NULL, NULL, NULL, NULL, true, NULL, NULL, NULL, "off", NULL},
	{"sampled stream on", "off", "0", NULL, NULL, NULL, NULL, NULL, false, NULL, NULL, NULL, "on", NULL},
	{"sampled no row hint", "off", "0", NULL, NULL, NULL, NULL, NULL, true, NULL, NULL, NULL, NULL, "off"},
	{"prefix", "off", NULL, "off", NULL, NULL, NULL, NULL, false, NULL, NULL, NULL, NULL, NULL},	/* children from the prefix
																	 * sums */
	{"sampled prefix", "off", "0", "off", NULL, NULL, NULL, NULL, false, NULL, NULL, NULL, NULL, NULL},
	{"no dedup", "off", NULL, NULL, "off", NULL, NULL, NULL, false, NULL, NULL, NULL, NULL, NULL},	/* equal probes descend each */
	{"on no dedup", "on", "0", NULL, "off", NULL, NULL, NULL, false, NULL, NULL, NULL, NULL, NULL},
	{"thread", "off", NULL, NULL, NULL, "1", NULL, NULL, false, NULL, NULL, NULL, NULL, NULL},	/* the per-probe kernel a lane a
																	 * probe */
	{"thread prefix", "off", NULL, "off", NULL, "1", NULL, NULL, false, NULL, NULL, NULL, NULL, NULL},
	{"sampled thread", "off", "0", NULL, NULL, "1", NULL, NULL, false, NULL, NULL, NULL, NULL, NULL},
	{"sampled 2 blocks", "off", "0", NULL, NULL, NULL, "2", NULL, false, NULL, NULL, NULL, "off", NULL},	/* the
																									 * tiled
																									 * kernel's
																									 * register
																									 * cap */
	{"on 3 blocks", "on", "0", NULL, NULL, NULL, "3", NULL, false, NULL, NULL, NULL, NULL, NULL},
	{"auto no dedup 2 blocks", "auto", "0", NULL, "off", NULL, "2", NULL, false, NULL, NULL, NULL, NULL, NULL},
	{"thread no walk", "off", NULL, NULL, NULL, "1", NULL, "off", true, NULL, NULL, NULL, NULL, NULL},	/* second ranks by
																			 * binary search */
	{"sampled no walk", "off", "0", NULL, NULL, "1", NULL, "off", false, NULL, NULL, NULL, NULL, NULL},
	{"thread no top", "off", NULL, NULL, NULL, "1", NULL, NULL, true, "off", NULL, NULL, NULL, NULL},	/* descents from
																					 * the root */
	{"no top", "off", NULL, NULL, NULL, NULL, NULL, NULL, false, "off", NULL, NULL, NULL, NULL},
	{"thread wide", "off", NULL, NULL, NULL, "1", NULL, NULL, true, NULL, "on", NULL, NULL, NULL},	/* whole-leaf loads */
	{"thread wide no walk", "off", NULL, NULL, NULL, "1", NULL, "off", false, NULL, "on", NULL, NULL, NULL},
	{"thread wide no top", "off", NULL, NULL, NULL, "1", NULL, NULL, false, "off", "on", NULL, NULL, NULL},
	{"thread guess", "off", NULL, NULL, NULL, "1", NULL, NULL, true, NULL, NULL, "on", NULL, NULL},	/* leaf ranks
																						 * from a
																						 * guessed
																						 * sector */
	{"sampled thread guess", "off", "0", NULL, NULL, "1", NULL, NULL, false, NULL, NULL, "on", NULL, NULL},
	{"thread guess walk off", "off", NULL, NULL, NULL, "1", NULL, "off", false, NULL, NULL, "on", NULL, NULL},	/* the
																									 * walk
																									 * setting
																									 * ignored */
	{"thread guess no top", "off", NULL, NULL, NULL, "1", NULL, NULL, false, "off", NULL, "on", NULL, NULL},
	{"thread guess prefix", "off", NULL, "off", NULL, "1", NULL, NULL, false, NULL, NULL, "on", NULL, NULL},
};
#define NMODES ((int) (sizeof(modes) / sizeof(modes[0])))
#define NRUN_MODES 3			/* the run search's; the rest run for shapes
								 * 0 (long runs of duplicates) and 2 (wide),
								 * only 0 in small (sanitizer) runs */

static bool small_run;			/* GI_UNIT_MAX under 100000 */

/* Set (value) or unset (NULL) an environment variable, and have the
 * engine read its GPU settings again. */
static void
set_or_unset(const char *name, const char *value)
{
	if (value)
		setenv(name, value, 1);
	else
		unsetenv(name);
	gi_settings_reload();
}
static const char *batch_names[] = {"sorted", "nearly sorted", "repeats", "outside",
"dense", "sparse"};

/*
 * n sorted keys of width w: 0 heavy duplicates (long runs that cross
 * leaves), 1 the type's extremes among small values, 2 wide and mostly
 * distinct, 3 narrow and evenly spaced.
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
		switch (shape)
		{
			case 0:
				k[i] = (int64_t) test_below(&tr, 9) - 4;
				break;
			case 1:
				{
					uint64_t	r = test_below(&tr, 4);

					k[i] = r == 0 ? tmin : r == 1 ? tmax : (int64_t) test_below(&tr, 1000);
					break;
				}
			case 2:
				k[i] = test_between(&tr, tmin, tmax);
				break;
			default:
				k[i] = (int64_t) i * 7 - 1000;
				if (k[i] > tmax)
					k[i] = tmax;
				break;
		}
	}
	qsort(k, n, sizeof(int64_t), test_cmp_i64);
}

/*
 * A batch of np probes (lo) and range ends (hi) of the given kind over the
 * sorted keys k (n > 0).
 */
static void
make_batch(const int64_t *k, size_t n, int w, int kind, int64_t *lo, int64_t *hi, size_t np)
{
	int64_t		tmin,
				tmax,
				a = k[0],
				b = k[n - 1];
	size_t		i;

	test_type_range(w, &tmin, &tmax);
	for (i = 0; i < np; i++)
	{
		if (kind == 4)			/* dense: existing keys */
			lo[i] = k[test_below(&tr, n)];
		else if (kind == 5)		/* sparse: every (n / np)-th key or so */
			lo[i] = k[(size_t) ((double) i * n / np)] + (int64_t) test_below(&tr, 2);
		else
			lo[i] = test_between(&tr, test_sat_add(a, -3), test_sat_add(b, 3));
	}
	qsort(lo, np, sizeof(int64_t), test_cmp_i64);
	if (kind == 1)				/* nearly sorted: a few neighbours swapped */
		for (i = 0; i + 1 < np; i++)
			if (test_below(&tr, 50) == 0)
			{
				size_t		j = i + 1 + test_below(&tr, 40);
				int64_t		t;

				if (j >= np)
					j = np - 1;
				t = lo[i];
				lo[i] = lo[j];
				lo[j] = t;
			}
	if (kind == 2)				/* long repeats of one probe */
		for (i = 1; i < np; i++)
			if (test_below(&tr, 8) != 0)
				lo[i] = lo[i - 1];
	if (kind == 3)
	{							/* heads below the keys, tails above, in order */
		size_t		head = np / 10,
					tail = np / 10;

		for (i = 0; i < head; i++)
			lo[i] = i < head / 3 ? INT64_MIN + (int64_t) i : i < 2 * head / 3 ? tmin : test_sat_add(a, -1);
		for (i = np - tail; i < np; i++)
			lo[i] = i >= np - tail / 3 ? INT64_MAX - (int64_t) (np - 1 - i) :
				i >= np - 2 * tail / 3 ? tmax : test_sat_add(b, 1);
		qsort(lo, np, sizeof(int64_t), test_cmp_i64);
	}
	for (i = 0; i < np; i++)
	{
		uint64_t	r = test_below(&tr, 16);

		/* ranges: mostly narrow, some empty (hi < lo), a few to the end */
		hi[i] = r == 0 ? INT64_MAX : r == 1 ? test_sat_add(lo[i], -1) :
			test_sat_add(lo[i], (int64_t) test_below(&tr, 40));
	}
}

/*
 * Query img in each mode and check the answers: brute force, and the modes
 * against mode off to the letter.
 */
static void
check_batch(GiImage *img, const int64_t *k, size_t n, int w, int shape, int kind,
			const int64_t *lo, const int64_t *hi, size_t np, uint64_t *want_f, uint64_t *want_l,
			uint64_t *ref_f, uint64_t *ref_l, uint64_t *f, uint64_t *l)
{
	int			op,
				mode;
	size_t		i;
	char		what[200];

	for (op = GI_OP_POINT; op <= GI_OP_RANGE; op++)
	{
		for (i = 0; i < np; i++)
			test_expect(k, n, (GiOp) op, lo[i], hi[i], &want_f[i], &want_l[i]);
		for (mode = 0; mode < NMODES; mode++)
		{
			if (mode >= NRUN_MODES && !modes[mode].every_shape && shape != 0 &&
				(small_run || shape != 2))
				continue;
			GiError		err;
			GiStatus	st;
			uint64_t   *rf = mode == 0 ? ref_f : f,
					   *rl = mode == 0 ? ref_l : l;
			int			reports = 0;
			bool		ok;

			set_or_unset("GI_GPU_RUN_SEARCH", modes[mode].run);
			set_or_unset("GI_GPU_GATE_MIN", modes[mode].gate_min);
			set_or_unset("GI_GPU_CHILD_ARITH", modes[mode].child_arith);
			set_or_unset("GI_GPU_DEDUP", modes[mode].dedup);
			set_or_unset("GI_GPU_GROUP", modes[mode].group);
			set_or_unset("GI_GPU_TILE_MIN_BLOCKS", modes[mode].min_blocks);
			set_or_unset("GI_GPU_LEAF_WALK", modes[mode].leaf_walk);
			set_or_unset("GI_GPU_TOP", modes[mode].top);
			set_or_unset("GI_GPU_WIDE", modes[mode].wide);
			set_or_unset("GI_GPU_LEAF_GUESS", modes[mode].leaf_guess);
			set_or_unset("GI_GPU_STREAM", modes[mode].stream);
			set_or_unset("GI_GPU_ROW_HINT", modes[mode].row_hint);
			memset(rf, 0xAB, np * sizeof(uint64_t));
			memset(rl, 0xCD, np * sizeof(uint64_t));
			st = gi_image_query(img, (GiOp) op, lo, op == GI_OP_RANGE ? hi : NULL, np, rf, rl, &err);
			ok = st == GI_OK;
			if (!ok)
				printf("FAIL seed=%" PRIu64 " sorted: query failed (%d): %s\n",
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
						printf("FAIL seed=%" PRIu64 " sorted mode=%s w=%d n=%zu shape=%d batch=%s op=%d"
							   " probe#%zu p=%" PRId64 " hi=%" PRId64 ": got [%" PRIu64 ", %" PRIu64
							   ") want [%" PRIu64 ", %" PRIu64 ") off [%" PRIu64 ", %" PRIu64 ")\n",
							   tr.seed, modes[mode].name, w, n, shape, batch_names[kind], op, i, lo[i],
							   op == GI_OP_RANGE ? hi[i] : 0, rf[i], rl[i], want_f[i], want_l[i],
							   ref_f[i], ref_l[i]);
					ok = false;
				}
			}
			snprintf(what, sizeof(what), "gpu sorted search mode=%s w=%d n=%zu shape=%d batch=%s op=%d",
					 modes[mode].name, w, n, shape, batch_names[kind], op);
			test_record(&tr, ok, what);
		}
	}
	unsetenv("GI_GPU_RUN_SEARCH");
	unsetenv("GI_GPU_GATE_MIN");
	unsetenv("GI_GPU_CHILD_ARITH");
	unsetenv("GI_GPU_DEDUP");
	unsetenv("GI_GPU_GROUP");
	unsetenv("GI_GPU_TILE_MIN_BLOCKS");
	unsetenv("GI_GPU_LEAF_WALK");
	unsetenv("GI_GPU_TOP");
	unsetenv("GI_GPU_WIDE");
	unsetenv("GI_GPU_LEAF_GUESS");
	unsetenv("GI_GPU_STREAM");
	unsetenv("GI_GPU_ROW_HINT");
	gi_settings_reload();
}

/* One key width, count and shape: build a GPU image, ask every batch kind. */
static void
run_case(int w, size_t n, int shape, size_t np)
{
	GiBuildParams params = {GI_ENGINE_GPU, GI_STRUCT_BTREE, w, 0};
	int64_t    *k = test_xmalloc((n ? n : 1) * sizeof(int64_t));
	int64_t    *lo = test_xmalloc(np * sizeof(int64_t));
	int64_t    *hi = test_xmalloc(np * sizeof(int64_t));
	uint64_t   *buf = test_xmalloc(6 * np * sizeof(uint64_t));
	GiImage    *img = NULL;
	GiError		err;
	char		what[120];
	int			kind;

	make_keys(k, n, w, shape);
	snprintf(what, sizeof(what), "gpu build w=%d n=%zu shape=%d", w, n, shape);
	test_record(&tr, gi_image_build(&params, k, NULL, n, &img, &err) == GI_OK, what);
	for (kind = 0; img && kind < NBATCHES; kind++)
	{
		/* sparse batches: about one probe for every 64 keys */
		size_t		cnt = kind == 5 && n / 64 + 1 < np ? n / 64 + 1 : np;

		make_batch(k, n, w, kind, lo, hi, cnt);
		check_batch(img, k, n, w, shape, kind, lo, hi, cnt, buf, buf + np, buf + 2 * np,
					buf + 3 * np, buf + 4 * np, buf + 5 * np);
	}
	gi_image_free(img);
	free(k);
	free(lo);
	free(hi);
	free(buf);
}

/* Run every case (GPU only); print this file's counts. */
int
gi_test_sorted_main(void)
{
	static const size_t sizes[] = {1, 2, 40, 1000, 5000, 30000, 300000};
	size_t		max_n = 1000000;
	const char *s = getenv("GI_UNIT_MAX");
	char		why[256];
	size_t		si;
	int			w,
				shape;

	test_run_start(&tr, "sorted", 17);
	if (s && *s)
		max_n = strtoull(s, NULL, 0);
	small_run = max_n < 100000;
	if (!gi_gpu_available(why, sizeof(why)))
	{
		printf("test_sorted: skipped (no GPU: %s)\n", why);
		return 0;
	}
	for (si = 0; si < sizeof(sizes) / sizeof(sizes[0]) && sizes[si] <= max_n; si++)
		for (w = 2; w <= 8; w *= 2)
			for (shape = 0; shape < NSHAPES; shape++)
			{
				/* probes: more than keys for small trees, fewer for large */
				size_t		np = sizes[si] < 5000 ? 20000 : sizes[si] / 3 + 1000;

				if (np > max_n / 4 + 100)	/* small under compute-sanitizer */
					np = max_n / 4 + 100;
				run_case(w, sizes[si], shape, np);
			}
	printf("test_sorted: seed=%" PRIu64 " (GI_SEED to repeat): %ld passed, %ld failed\n",
		   tr.seed, tr.passed, tr.failed);
	return (int) (tr.failed > 0);
}

/* The counts of the last gi_test_sorted_main run (for test_engine's total). */
void
gi_test_sorted_counts(long *passed, long *failed)
{
	*passed = tr.passed;
	*failed = tr.failed;
}
