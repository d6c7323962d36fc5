/*
 * test_engine.c - unit tests of the gpuidx engines against brute force.
 *
 * Every case builds an image from random keys (extremes of the key type,
 * heavy duplicates, negatives), asks all four operations with probes both
 * inside and far outside the key type's range, and checks each answer
 * against a plain binary search over the sorted keys.  Outputs are poisoned
 * before each call.  Every case runs for both structures: the van Emde Boas
 * tree's answers are also compared with the B+ tree's, and on the CPU its
 * insertion-build baseline (veb_classic.h) must find the same keys.  The CPU
 * engine is always tested; when a GPU is usable every case also runs on the
 * GPU engine, where a structure it reports GI_ERR_UNSUPPORTED for is counted
 * as skipped (neither passed nor failed).
 *
 * Environment: GI_SEED (fixed seed; otherwise a fresh one, printed),
 * GI_UNIT_MAX (largest key count, default 10^6; sizes 10^7, 10^8 ... up to it
 * are added), GI_UNIT_VERBOSE (print every case).
 * Ends with the line "N passed, N failed"; exits 1 if any case failed.
 */
#include "engine_impl.h"	/* gi_host_sort_pairs too */
#include "veb_classic.h"		/* the vEB insertion-build baseline */

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MAX_REPORTS		3		/* mismatches printed per failing case */
#define POISON			0xABABABABABABABABULL

static uint64_t seed;
static uint64_t rng_state;
static long passed;
static long failed;
static long skipped;
static bool verbose;

/* splitmix64: a small, good, seedable generator. */
static uint64_t
rnd(void)
{
	uint64_t	z = (rng_state += 0x9E3779B97F4A7C15ULL);

	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
	return z ^ (z >> 31);
}

/* Uniform integer in [0, bound) (bound > 0; slight bias is harmless here). */
static uint64_t
rnd_below(uint64_t bound)
{
	return rnd() % bound;
}

/* Uniform int64 in [lo, hi]. */
static int64_t
rnd_between(int64_t lo, int64_t hi)
{
	uint64_t	span = (uint64_t) hi - (uint64_t) lo;

	if (span == UINT64_MAX)
		return (int64_t) rnd();
	return (int64_t) ((uint64_t) lo + rnd_below(span + 1));
}

/* Saturating int64 addition. */
static int64_t
sat_add(int64_t a, int64_t b)
{
	if (b > 0 && a > INT64_MAX - b)
		return INT64_MAX;
	if (b < 0 && a < INT64_MIN - b)
		return INT64_MIN;
	return a + b;
}

/* Wall clock in seconds. */
static double
now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Allocate or die: the tests themselves need no graceful OOM. */
static void *
xmalloc(size_t bytes)
{
	void	   *p = malloc(bytes ? bytes : 1);

	if (p == NULL)
	{
		fprintf(stderr, "test_engine: out of memory (%zu bytes)\n", bytes);
		exit(2);
	}
	return p;
}

/* Record one case's outcome. */
static void
record(bool ok, const char *what)
{
	if (ok)
		passed++;
	else
		failed++;
	if (verbose)
		printf("%s %s\n", ok ? "ok  " : "FAIL", what);
}

typedef struct Pair
{
	int64_t		key;
	uint64_t	payload;
} Pair;

/* qsort order of (key, payload). */
static int
cmp_pair(const void *a, const void *b)
{
	const Pair *x = a;
	const Pair *y = b;

	if (x->key != y->key)
		return x->key < y->key ? -1 : 1;
	if (x->payload != y->payload)
		return x->payload < y->payload ? -1 : 1;
	return 0;
}

/* Brute force lower_bound: first i with keys[i] >= p. */
static uint64_t
ref_lower(const int64_t *keys, uint64_t n, int64_t p)
{
	uint64_t	lo = 0;
	uint64_t	hi = n;

	while (lo < hi)
	{
		uint64_t	mid = lo + (hi - lo) / 2;

		if (keys[mid] < p)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Brute force upper_bound: first i with keys[i] > p. */
static uint64_t
ref_upper(const int64_t *keys, uint64_t n, int64_t p)
{
	uint64_t	lo = 0;
	uint64_t	hi = n;

	while (lo < hi)
	{
		uint64_t	mid = lo + (hi - lo) / 2;

		if (keys[mid] <= p)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* The expected [first, last) of one probe, as engine.h defines the ops. */
static void
ref_answer(const int64_t *keys, uint64_t n, GiOp op, int64_t p, int64_t hi,
		   uint64_t *first, uint64_t *last)
{
	uint64_t	a;
	uint64_t	b;

	switch (op)
	{
		case GI_OP_POINT:
			a = ref_lower(keys, n, p);
			b = ref_upper(keys, n, p);
			break;
		case GI_OP_PRED:
			b = ref_upper(keys, n, p);
			a = b == 0 ? 0 : ref_lower(keys, n, keys[b - 1]);
			break;
		case GI_OP_SUCC:
			a = ref_lower(keys, n, p);
			b = a == n ? n : ref_upper(keys, n, keys[a]);
			break;
		default:
			if (p > hi)
				a = b = 0;
			else
			{
				a = ref_lower(keys, n, p);
				b = ref_upper(keys, n, hi);
			}
			break;
	}
	*first = a;
	*last = b;
}

static const char *const op_names[] = {"?", "point", "pred", "succ", "range"};
static const char *const dist_names[] = {"uniform", "dups", "dense", "single",
"clustered", "strides"};
static const char *const struct_names[] = {"?", "btree", "veb"};

#define NDISTS 6

/* The key type's range for a key width. */
static void
type_range(int width, int64_t *tmin, int64_t *tmax)
{
	*tmax = width == 2 ? INT16_MAX : width == 4 ? INT32_MAX : INT64_MAX;
	*tmin = -*tmax - 1;
}

/* Generate n keys of the given distribution (unsorted) within the type. */
static void
gen_keys(int64_t *keys, size_t n, int width, int dist)
{
	int64_t		tmin;
	int64_t		tmax;
	size_t		i;
	int64_t		vals[64];
	size_t		nvals;

	type_range(width, &tmin, &tmax);
	switch (dist)
	{
		case 0:					/* uniform over the type, extremes forced */
			for (i = 0; i < n; i++)
				keys[i] = rnd_below(100) == 0 ? (rnd() & 1 ? tmin : tmax) :
					rnd_between(tmin, tmax);
			if (n >= 2)
			{
				keys[rnd_below(n)] = tmin;
				keys[rnd_below(n)] = tmax;
			}
			break;
		case 1:					/* heavy duplicates of a few values */
			nvals = 1 + rnd_below(n < 100 ? 4 : 64);
			for (i = 0; i < nvals; i++)
				vals[i] = rnd_below(4) == 0 ? (rnd() & 1 ? tmin : tmax) :
					rnd_between(tmin, tmax);
			for (i = 0; i < n; i++)
				keys[i] = vals[rnd_below(nvals)];
			break;
		case 2:					/* dense around zero: negatives, dups */
			{
				int64_t		half = (int64_t) (n / 2 + 2);

				for (i = 0; i < n; i++)
				{
					int64_t		k = rnd_between(-half, half);

					keys[i] = k < tmin ? tmin : k > tmax ? tmax : k;
				}
			}
			break;
		case 3:					/* one value only, often an extreme */
			{
				int64_t		v = rnd_below(3) == 0 ? tmin :
					rnd_below(2) == 0 ? tmax : rnd_between(tmin, tmax);

				for (i = 0; i < n; i++)
					keys[i] = v;
			}
			break;
		case 5:					/* runs of keys with small strides (bitmap edges) */
			{
				size_t		at = 0;

				while (at < n)
				{
					int64_t		k = rnd_between(tmin, tmax);
					int64_t		stride = 1 + (int64_t) rnd_below(rnd() & 1 ? 2 : 40);
					size_t		len = 1 + rnd_below(300);

					for (; len > 0 && at < n; len--, at++)
					{
						keys[at] = k;
						k = sat_add(k, stride);
						if (k > tmax)
							k = tmin;
					}
				}
			}
			break;
		default:				/* a few tight clusters spread over the type */
			nvals = 1 + rnd_below(8);
			for (i = 0; i < nvals; i++)
				vals[i] = rnd_between(tmin, tmax);
			for (i = 0; i < n; i++)
			{
				int64_t		k = sat_add(vals[rnd_below(nvals)],
										rnd_between(-1000, 1000));

				keys[i] = k < tmin ? tmin : k > tmax ? tmax : k;
			}
			break;
	}
}

/* One probe: existing keys, neighbours, the type's range and far outside. */
static int64_t
gen_probe(const int64_t *sorted, size_t n, int width)
{
	int64_t		tmin;
	int64_t		tmax;
	uint64_t	r = rnd_below(100);

	type_range(width, &tmin, &tmax);
	if (n > 0 && r < 30)
		return sorted[rnd_below(n)];
	if (n > 0 && r < 45)
		return sat_add(sorted[rnd_below(n)], rnd() & 1 ? 1 : -1);
	if (r < 60)
		return rnd_between(tmin, tmax);
	if (r < 70)
	{
		static const int64_t far[] = {
			INT64_MIN, INT64_MAX, INT64_MIN + 1, INT64_MAX - 1,
			(int64_t) 1 << 40, -((int64_t) 1 << 40), 0, -1, 1,
			INT32_MIN, INT32_MAX, (int64_t) INT32_MIN - 1, (int64_t) INT32_MAX + 1,
			INT16_MIN, INT16_MAX, INT16_MIN - 1, INT16_MAX + 1,
			(int64_t) UINT32_MAX, (int64_t) 1 << 32, -((int64_t) 1 << 32),
		};

		r = rnd_below(sizeof(far) / sizeof(far[0]) + 2);
		if (r == sizeof(far) / sizeof(far[0]))
			return sat_add(tmin, -1);
		if (r > sizeof(far) / sizeof(far[0]))
			return sat_add(tmax, 1);
		return far[r];
	}
	if (r < 80)
		return (int64_t) rnd();
	if (n > 0)
		return rnd_between(sat_add(sorted[0], -3), sat_add(sorted[n - 1], 3));
	return rnd_between(-3, 3);
}

/* Generate probes and, for ranges, upper bounds (some below lo). */
static void
gen_probes(int64_t *lo, int64_t *hi, size_t np, const int64_t *sorted,
		   size_t n, int width)
{
	size_t		i;

	for (i = 0; i < np; i++)
	{
		uint64_t	r = rnd_below(10);

		lo[i] = gen_probe(sorted, n, width);
		if (r < 3)
			hi[i] = gen_probe(sorted, n, width);
		else if (r < 5)
			hi[i] = lo[i];
		else if (r < 8)
			hi[i] = sat_add(lo[i], (int64_t) rnd_below(r == 7 ? 1000000 : 50));
		else
			hi[i] = sat_add(lo[i], -1 - (int64_t) rnd_below(1000));
	}
	/* Sometimes a batch of sorted or repeated probes. */
	if (np > 1 && rnd_below(4) == 0)
	{
		for (i = 1; i < np; i++)
			if (lo[i] < lo[i - 1])
				lo[i] = lo[i - 1];
	}
}

/*
 * Query image with op and check every answer against brute force; print up
 * to MAX_REPORTS mismatches.  Returns true when all match.
 */
static bool
check_op(GiImage *image, const char *engine, const char *label, GiOp op,
		 const int64_t *sorted, size_t n, const int64_t *lo, const int64_t *hi,
		 size_t np, uint64_t *first, uint64_t *last)
{
	GiError		err;
	GiStatus	st;
	size_t		i;
	int			reports = 0;

	memset(first, 0xAB, np * sizeof(uint64_t));
	memset(last, 0xAB, np * sizeof(uint64_t));
	st = gi_image_query(image, op, lo, op == GI_OP_RANGE ? hi : NULL, np,
						first, last, &err);
	if (st != GI_OK)
	{
		printf("FAIL seed=%" PRIu64 " %s %s op=%s: query failed (%d): %s\n",
			   seed, engine, label, op_names[op], (int) st, err.message);
		return false;
	}
	for (i = 0; i < np; i++)
	{
		uint64_t	ea;
		uint64_t	eb;
		bool		ok;

		ref_answer(sorted, n, op, lo[i], hi[i], &ea, &eb);
		if (ea == eb)
			ok = first[i] == last[i] && first[i] != POISON;
		else
			ok = first[i] == ea && last[i] == eb;
		if (!ok)
		{
			if (reports++ < MAX_REPORTS)
				printf("FAIL seed=%" PRIu64 " %s %s op=%s probe#%zu p=%" PRId64
					   " hi=%" PRId64 ": got [%" PRIu64 ", %" PRIu64
					   ") want [%" PRIu64 ", %" PRIu64 ")\n",
					   seed, engine, label, op_names[op], i, lo[i],
					   op == GI_OP_RANGE ? hi[i] : 0, first[i], last[i], ea, eb);
		}
	}
	return reports == 0;
}

/* Check the image's description. */
static bool
check_info(GiImage *image, const char *engine, const char *label, int width,
		   GiStructure structure, const int64_t *sorted, size_t n)
{
	GiImageInfo info;
	uint64_t	distinct = n > 0;
	size_t		i;
	bool		ok;

	for (i = 1; i < n; i++)
		distinct += sorted[i] != sorted[i - 1];
	gi_image_info(image, &info);
	ok = info.entries == n && info.key_bytes == width &&
		info.structure == structure && info.distinct_keys == distinct &&
		info.host_bytes > 0;
	if (structure == GI_STRUCT_BTREE)
		ok = ok && info.node_order >= 2 && info.node_order <= 32 &&
			(n == 0 || info.levels >= 1) && info.clusters == 0;
	else
		ok = ok && info.levels == (width == 8 ? 6 : 5) &&
			info.clusters >= info.nodes && (n == 0 || info.nodes >= 1) &&
			(distinct < 2 || info.hash_bytes > 0) &&
			(n == 0 || info.space_overhead > 0);
	if (!ok)
		printf("FAIL seed=%" PRIu64 " %s %s info: entries=%" PRIu64
			   " distinct=%" PRIu64 " (want %" PRIu64 ") levels=%d order=%d"
			   " nodes=%" PRIu64 " clusters=%" PRIu64 " hash_bytes=%" PRIu64
			   " host_bytes=%" PRIu64 "\n", seed, engine, label, info.entries,
			   info.distinct_keys, distinct, info.levels, info.node_order,
			   info.nodes, info.clusters, info.hash_bytes, info.host_bytes);
	return ok;
}

/* Set the CPU engine's batch knobs for this case (threads, sort threshold). */
static const char *
set_cpu_knobs(int variant)
{
	switch (variant % 3)
	{
		case 0:
			unsetenv("GI_CPU_THREADS");
			unsetenv("GI_CPU_SORT_MIN");
			return "auto";
		case 1:
			setenv("GI_CPU_THREADS", "3", 1);
			setenv("GI_CPU_SORT_MIN", "2", 1);
			return "3threads+sort";
		default:
			setenv("GI_CPU_THREADS", "1", 1);
			setenv("GI_CPU_SORT_MIN", "1000000000", 1);
			return "1thread+nosort";
	}
}

/*
 * The vEB image's answers against the B+ tree's for the same op and probes
 * (same ranges; for empty answers, both empty).  Returns true when equal.
 */
static bool
check_same_as_btree(const char *engine, const char *label, GiOp op,
					const uint64_t *bt_first, const uint64_t *bt_last,
					const uint64_t *first, const uint64_t *last,
					const int64_t *lo, size_t np)
{
	size_t		i;
	int			reports = 0;

	for (i = 0; i < np; i++)
	{
		bool		bt_empty = bt_first[i] == bt_last[i];
		bool		ok = bt_empty ? first[i] == last[i] :
			(first[i] == bt_first[i] && last[i] == bt_last[i]);

		if (!ok && reports++ < MAX_REPORTS)
			printf("FAIL seed=%" PRIu64 " %s %s op=%s probe#%zu p=%" PRId64
				   ": veb [%" PRIu64 ", %" PRIu64 ") btree [%" PRIu64 ", %"
				   PRIu64 ")\n", seed, engine, label, op_names[op], i, lo[i],
				   first[i], last[i], bt_first[i], bt_last[i]);
	}
	return reports == 0;
}

/*
 * The insertion-build baseline (Algorithm 2), built from the unsorted keys,
 * must find the keys brute force finds: exists, predecessor, successor.
 */
static bool
check_insert_baseline(const char *label, int width, const int64_t *keys,
					  const int64_t *sorted, size_t n, const int64_t *lo,
					  size_t np)
{
	GiVebInsertTree *tree = NULL;
	GiError		err;
	GiStatus	st;
	size_t		i;
	int			reports = 0;

	st = gi_veb_insert_build(keys, n, width, &tree, &err);
	if (st != GI_OK)
	{
		printf("FAIL seed=%" PRIu64 " cpu %s insertion build failed (%d): %s\n",
			   seed, label, (int) st, err.message);
		return false;
	}
	for (i = 0; i < np; i++)
	{
		int64_t		p = lo[i];
		uint64_t	up = ref_upper(sorted, n, p);
		uint64_t	lw = ref_lower(sorted, n, p);
		bool		want_exists = lw < n && sorted[lw] == p;
		int64_t		got_pred = 0;
		int64_t		got_succ = 0;
		bool		has_pred = gi_veb_insert_pred(tree, p, &got_pred);
		bool		has_succ = gi_veb_insert_succ(tree, p, &got_succ);
		bool		ok;

		ok = gi_veb_insert_exists(tree, p) == want_exists &&
			has_pred == (up > 0) && (!has_pred || got_pred == sorted[up - 1]) &&
			has_succ == (lw < n) && (!has_succ || got_succ == sorted[lw]);
		if (!ok && reports++ < MAX_REPORTS)
			printf("FAIL seed=%" PRIu64 " cpu %s insertion baseline p=%" PRId64
				   ": pred %d/%" PRId64 " succ %d/%" PRId64 "\n", seed, label,
				   p, (int) has_pred, got_pred, (int) has_succ, got_succ);
	}
	gi_veb_insert_free(tree);
	return reports == 0;
}

/*
 * One case: keys of a width, size and distribution; build sorted and
 * unsorted on each engine, both structures; all four ops.
 */
static void
run_case(int width, size_t n, int dist, bool gpu, int variant)
{
	int64_t    *keys = xmalloc(n * sizeof(int64_t));
	uint64_t   *payloads = xmalloc(n * sizeof(uint64_t));
	Pair	   *pairs = xmalloc(n * sizeof(Pair));
	int64_t    *sorted = xmalloc(n * sizeof(int64_t));
	uint64_t   *sorted_pl = xmalloc(n * sizeof(uint64_t));
	int64_t    *got_keys = xmalloc(n * sizeof(int64_t));
	uint64_t   *got_pl = xmalloc(n * sizeof(uint64_t));
	size_t		np = n + 64 < 300000 ? n + 64 : 300000;
	int64_t    *lo = xmalloc(np * sizeof(int64_t));
	int64_t    *hi = xmalloc(np * sizeof(int64_t));
	uint64_t   *first = xmalloc(np * sizeof(uint64_t));
	uint64_t   *last = xmalloc(np * sizeof(uint64_t));
	uint64_t   *bt_first[GI_OP_RANGE + 1];
	uint64_t   *bt_last[GI_OP_RANGE + 1];
	char		label[160];
	const char *knobs = set_cpu_knobs(variant);
	size_t		i;
	int			e;
	int			op;
	bool		do_unsorted = n <= 1100000;

	for (op = GI_OP_POINT; op <= GI_OP_RANGE; op++)
	{
		bt_first[op] = xmalloc(np * sizeof(uint64_t));
		bt_last[op] = xmalloc(np * sizeof(uint64_t));
	}
	gen_keys(keys, n, width, dist);
	for (i = 0; i < n; i++)
	{
		/* Payloads with repeats, so (key, payload) ties get exercised too. */
		payloads[i] = rnd_below(4) == 0 ? rnd_below(8) : rnd();
		pairs[i].key = keys[i];
		pairs[i].payload = payloads[i];
	}
	if (n <= 2000000)
	{
		qsort(pairs, n, sizeof(Pair), cmp_pair);
		for (i = 0; i < n; i++)
		{
			sorted[i] = pairs[i].key;
			sorted_pl[i] = pairs[i].payload;
		}
	}
	else
	{
		GiError		err;

		/* qsort is too slow here; the host sort was checked on smaller sizes. */
		if (gi_host_sort_pairs(keys, payloads, n, sorted, sorted_pl, &err) != GI_OK)
		{
			fprintf(stderr, "test_engine: host sort failed: %s\n", err.message);
			exit(2);
		}
	}
	gen_probes(lo, hi, np, sorted, n, width);

	for (e = 0; e < (gpu ? 2 : 1); e++)
	{
		int			si;
		bool		have_btree = false; /* bt_first/bt_last hold answers */

		for (si = GI_STRUCT_BTREE; si <= GI_STRUCT_VEB; si++)
		{
			GiStructure structure = (GiStructure) si;
			GiBuildParams params = {e ? GI_ENGINE_GPU : GI_ENGINE_CPU,
			structure, width, 0};
			const char *engine = e ? "gpu" : "cpu";
			GiImage    *image = NULL;
			GiError		err;
			GiStatus	st;

			snprintf(label, sizeof(label), "%s width=%d n=%zu dist=%s knobs=%s",
					 struct_names[si], width, n, dist_names[dist], knobs);
			st = gi_image_build(&params, sorted, sorted_pl, n, &image, &err);
			if (st == GI_ERR_UNSUPPORTED && e == 1 && structure == GI_STRUCT_VEB)
			{
				/* The GPU vEB comes later: not a pass, not a failure. */
				skipped++;
				if (verbose)
					printf("skip %s %s: %s\n", engine, label, err.message);
				continue;
			}
			if (st != GI_OK)
			{
				printf("FAIL seed=%" PRIu64 " %s %s build failed (%d): %s\n",
					   seed, engine, label, (int) st, err.message);
				record(false, label);
				continue;
			}
			record(check_info(image, engine, label, width, structure, sorted, n),
				   label);
			for (op = GI_OP_POINT; op <= GI_OP_RANGE; op++)
			{
				record(check_op(image, engine, label, (GiOp) op, sorted, n, lo,
								hi, np, first, last), label);
				if (structure == GI_STRUCT_BTREE)
				{
					memcpy(bt_first[op], first, np * sizeof(uint64_t));
					memcpy(bt_last[op], last, np * sizeof(uint64_t));
					have_btree = true;
				}
				else if (have_btree)
					record(check_same_as_btree(engine, label, (GiOp) op,
											   bt_first[op], bt_last[op],
											   first, last, lo, np), label);
			}
			gi_image_free(image);

			if (e == 0 && structure == GI_STRUCT_VEB && n <= 1100000)
				record(check_insert_baseline(label, width, keys, sorted, n, lo,
											 np), label);

			if (!do_unsorted)
				continue;

			/* The engine sorts: same arrays, same answers. */
			image = NULL;
			memset(got_keys, 0xAB, n * sizeof(int64_t));
			memset(got_pl, 0xAB, n * sizeof(uint64_t));
			st = gi_image_build_unsorted(&params, keys, payloads, n, got_keys,
										 got_pl, &image, &err);
			if (st != GI_OK)
			{
				printf("FAIL seed=%" PRIu64 " %s %s unsorted build failed (%d): %s\n",
					   seed, engine, label, (int) st, err.message);
				record(false, label);
				continue;
			}
			if ((n > 0 && memcmp(got_keys, sorted, n * sizeof(int64_t)) != 0) ||
				(n > 0 && memcmp(got_pl, sorted_pl, n * sizeof(uint64_t)) != 0))
			{
				printf("FAIL seed=%" PRIu64 " %s %s unsorted build: sorted arrays differ\n",
					   seed, engine, label);
				record(false, label);
			}
			else
				record(true, label);
			op = 1 + (int) rnd_below(4);
			record(check_op(image, engine, label, (GiOp) op, sorted, n, lo, hi,
							np, first, last), label);
			gi_image_free(image);

			/* Keys only (no payloads) must sort the same keys. */
			image = NULL;
			memset(got_keys, 0xAB, n * sizeof(int64_t));
			st = gi_image_build_unsorted(&params, keys, NULL, n, got_keys, NULL,
										 &image, &err);
			record(st == GI_OK &&
				   (n == 0 || memcmp(got_keys, sorted, n * sizeof(int64_t)) == 0),
				   label);
			if (st != GI_OK)
				printf("FAIL seed=%" PRIu64 " %s %s unsorted keys-only build failed: %s\n",
					   seed, engine, label, err.message);
			gi_image_free(image);
		}
	}

	for (op = GI_OP_POINT; op <= GI_OP_RANGE; op++)
	{
		free(bt_first[op]);
		free(bt_last[op]);
	}
	free(keys);
	free(payloads);
	free(pairs);
	free(sorted);
	free(sorted_pl);
	free(got_keys);
	free(got_pl);
	free(lo);
	free(hi);
	free(first);
	free(last);
}

/* gi_sort_pairs against qsort, with and without payloads. */
static void
run_sort_cases(void)
{
	static const size_t sizes[] = {0, 1, 2, 47, 48, 49, 1000, 4097, 100000, 300000};
	int			si;

	for (si = 0; si < (int) (sizeof(sizes) / sizeof(sizes[0])); si++)
	{
		size_t		n = sizes[si];
		int			dist;

		for (dist = 0; dist < NDISTS; dist++)
		{
			int			width = 2 << (int) rnd_below(3);
			int64_t    *keys = xmalloc(n * sizeof(int64_t));
			uint64_t   *payloads = xmalloc(n * sizeof(uint64_t));
			Pair	   *pairs = xmalloc(n * sizeof(Pair));
			int64_t    *got_keys = xmalloc(n * sizeof(int64_t));
			uint64_t   *got_pl = xmalloc(n * sizeof(uint64_t));
			GiError		err;
			GiStatus	st;
			size_t		i;
			bool		ok;
			char		label[96];

			gen_keys(keys, n, width, dist);
			for (i = 0; i < n; i++)
			{
				payloads[i] = rnd_below(3) == 0 ? rnd_below(4) : rnd();
				pairs[i].key = keys[i];
				pairs[i].payload = payloads[i];
			}
			qsort(pairs, n, sizeof(Pair), cmp_pair);
			snprintf(label, sizeof(label), "sort n=%zu width=%d dist=%s", n,
					 width, dist_names[dist]);

			memset(got_keys, 0xAB, n * sizeof(int64_t));
			memset(got_pl, 0xAB, n * sizeof(uint64_t));
			st = gi_sort_pairs(keys, payloads, n, got_keys, got_pl, &err);
			ok = st == GI_OK;
			for (i = 0; ok && i < n; i++)
				ok = got_keys[i] == pairs[i].key && got_pl[i] == pairs[i].payload;
			if (!ok)
				printf("FAIL seed=%" PRIu64 " %s: pairs differ from qsort (status %d)\n",
					   seed, label, (int) st);
			record(ok, label);

			memset(got_keys, 0xAB, n * sizeof(int64_t));
			st = gi_sort_pairs(keys, NULL, n, got_keys, NULL, &err);
			ok = st == GI_OK;
			for (i = 0; ok && i < n; i++)
				ok = got_keys[i] == pairs[i].key;
			if (!ok)
				printf("FAIL seed=%" PRIu64 " %s: keys-only sort differs from qsort (status %d)\n",
					   seed, label, (int) st);
			record(ok, label);

			free(keys);
			free(payloads);
			free(pairs);
			free(got_keys);
			free(got_pl);
		}
	}
}

/* Errors the CPU engine must report cleanly, for each structure. */
static void
run_error_cases(bool gpu)
{
	int			si;

	for (si = GI_STRUCT_BTREE; si <= GI_STRUCT_VEB; si++)
	{
		GiBuildParams params = {GI_ENGINE_CPU, (GiStructure) si, 4, 0};
		GiImage    *image = (GiImage *) &params;	/* must be reset to NULL */
		GiError		err;
		int64_t		keys[4] = {1, 2, 3, 4};
		int64_t		unsorted[4] = {1, 3, 2, 4};
		int64_t		wide[2] = {0, (int64_t) 1 << 33};
		uint64_t	first[2];
		uint64_t	last[2];
		int64_t		probes[2] = {1, 2};
		GiStatus	st;
		bool		ok;
		char		what[96];

		st = gi_image_build(&params, unsorted, NULL, 4, &image, &err);
		ok = st == GI_ERR_INVALID && image == NULL && err.message[0] != '\0';
		if (!ok)
			printf("FAIL seed=%" PRIu64 " cpu %s unsorted input: want GI_ERR_INVALID, got %d\n",
				   seed, struct_names[si], (int) st);
		snprintf(what, sizeof(what), "cpu %s unsorted input rejected", struct_names[si]);
		record(ok, what);

		image = (GiImage *) &params;
		st = gi_image_build(&params, wide, NULL, 2, &image, &err);
		ok = st == GI_ERR_INVALID && image == NULL;
		if (!ok)
			printf("FAIL seed=%" PRIu64 " cpu %s key too wide: want GI_ERR_INVALID, got %d\n",
				   seed, struct_names[si], (int) st);
		snprintf(what, sizeof(what), "cpu %s key wider than key_bytes rejected",
				 struct_names[si]);
		record(ok, what);

		st = gi_image_build(&params, keys, NULL, 4, &image, &err);
		ok = st == GI_OK;
		if (ok)
		{
			ok = gi_image_query(image, GI_OP_POINT, probes, probes, 2, first, last,
								&err) == GI_ERR_INVALID &&
				gi_image_query(image, GI_OP_RANGE, probes, NULL, 2, first, last,
							   &err) == GI_ERR_INVALID &&
				gi_image_query(image, (GiOp) 9, probes, NULL, 2, first, last,
							   &err) == GI_ERR_INVALID &&
				gi_image_query(image, GI_OP_POINT, probes, NULL, 0, NULL, NULL,
							   &err) == GI_OK;
			gi_image_free(image);
		}
		if (!ok)
			printf("FAIL seed=%" PRIu64 " cpu %s bad query arguments not rejected\n",
				   seed, struct_names[si]);
		snprintf(what, sizeof(what), "cpu %s bad query arguments rejected",
				 struct_names[si]);
		record(ok, what);

		/* The GPU engine: a clean error for bad input, or not implemented. */
		if (gpu)
		{
			params.engine = GI_ENGINE_GPU;
			image = (GiImage *) &params;
			st = gi_image_build(&params, unsorted, NULL, 4, &image, &err);
			if (st == GI_ERR_UNSUPPORTED && si == GI_STRUCT_VEB)
				skipped++;
			else
			{
				ok = st == GI_ERR_INVALID && image == NULL;
				if (!ok)
					printf("FAIL seed=%" PRIu64 " gpu %s unsorted input: want GI_ERR_INVALID, got %d\n",
						   seed, struct_names[si], (int) st);
				snprintf(what, sizeof(what), "gpu %s unsorted input rejected",
						 struct_names[si]);
				record(ok, what);
			}
		}
	}
}

int			gi_test_space_main(void);
void		gi_test_space_counts(long *passed, long *failed);
int			gi_test_insert_main(void);
void		gi_test_insert_counts(long *passed, long *failed);

/* Run everything; print the summary line. */
int
main(void)
{
	static const size_t base_sizes[] = {0, 1, 2, 31, 32, 33, 1023, 1024, 1025,
	4097, 100000, 1000000};
	const char *s;
	size_t		max_size = 1000000;
	size_t		sizes[32];
	int			nsizes = 0;
	bool		gpu;
	char		why[256] = "";
	double		t0 = now_s();
	int			variant = 0;
	int			w;
	int			i;

	setvbuf(stdout, NULL, _IOLBF, 0);
	s = getenv("GI_SEED");
	if (s && *s)
		seed = strtoull(s, NULL, 0);
	else
		seed = (uint64_t) time(NULL) * 1000003ULL ^ (uint64_t) getpid() ^
			(uint64_t) (now_s() * 1e9);
	rng_state = seed;
	s = getenv("GI_UNIT_MAX");
	if (s && *s)
		max_size = strtoull(s, NULL, 0);
	verbose = getenv("GI_UNIT_VERBOSE") != NULL;
	for (i = 0; i < (int) (sizeof(base_sizes) / sizeof(base_sizes[0])); i++)
		if (base_sizes[i] <= max_size)
			sizes[nsizes++] = base_sizes[i];
	{
		size_t		big;

		for (big = 10000000; big <= max_size && nsizes < 30; big *= 10)
			sizes[nsizes++] = big;
	}

	gpu = gi_gpu_available(why, sizeof(why));
	printf("test_engine: seed=%" PRIu64 " (GI_SEED=%" PRIu64
		   " to repeat), sizes up to %zu, gpu: %s\n", seed, seed, max_size,
		   gpu ? "yes" : why);

	run_error_cases(gpu);
	run_sort_cases();
	for (i = 0; i < nsizes; i++)
	{
		for (w = 0; w < 3; w++)
		{
			int			width = w == 0 ? 2 : w == 1 ? 4 : 8;
			int			dist;

			for (dist = 0; dist < NDISTS; dist++)
			{
				/* Large sizes: fewer distributions to stay within time. */
				if (sizes[i] >= 1000000 && dist != (int) ((i + w) % NDISTS) &&
					dist != 1)
					continue;
				run_case(width, sizes[i], dist, gpu, variant++);
			}
		}
	}
	unsetenv("GI_CPU_THREADS");
	unsetenv("GI_CPU_SORT_MIN");

	printf("test_engine: %.1f s\n", now_s() - t0);

	/* SPACE compaction and selection (test_space.c), counted in the total. */
	{
		long		sp,
					sf;

		gi_test_space_main();
		gi_test_space_counts(&sp, &sf);
		passed += sp;
		failed += sf;
	}

	/* Batch insertion (test_insert.c), counted in the total. */
	{
		long		ip,
					ifl;

		gi_test_insert_main();
		gi_test_insert_counts(&ip, &ifl);
		passed += ip;
		failed += ifl;
	}
	if (skipped > 0)
		printf("test_engine: %ld skipped (the GPU engine reports veb unsupported)\n",
			   skipped);
	printf("%ld passed, %ld failed\n", passed, failed);
	return failed ? 1 : 0;
}
