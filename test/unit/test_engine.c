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
#include "../common/test_util.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MAX_REPORTS		3		/* mismatches printed per failing case */
#define POISON			0xABABABABABABABABULL

static TestRun tr;				/* seed, random stream, counts */

static const char *const op_names[] = {"?", "point", "pred", "succ", "range"};
static const char *const dist_names[] = {"uniform", "dups", "dense", "single",
"clustered", "strides"};
static const char *const struct_names[] = {"?", "btree", "veb"};

#define NDISTS 6

/* Generate n keys of the given distribution (unsorted) within the type. */
static void
gen_keys(int64_t *keys, size_t n, int width, int dist)
{
	int64_t		tmin;
	int64_t		tmax;
	size_t		i;
	int64_t		vals[64];
	size_t		nvals;

	test_type_range(width, &tmin, &tmax);
	switch (dist)
	{
		case 0:					/* uniform over the type, extremes forced */
			for (i = 0; i < n; i++)
				keys[i] = test_below(&tr, 100) == 0 ? (test_rnd(&tr) & 1 ? tmin : tmax) :
					test_between(&tr, tmin, tmax);
			if (n >= 2)
			{
				keys[test_below(&tr, n)] = tmin;
				keys[test_below(&tr, n)] = tmax;
			}
			break;
		case 1:					/* heavy duplicates of a few values */
			nvals = 1 + test_below(&tr, n < 100 ? 4 : 64);
			for (i = 0; i < nvals; i++)
				vals[i] = test_below(&tr, 4) == 0 ? (test_rnd(&tr) & 1 ? tmin : tmax) :
					test_between(&tr, tmin, tmax);
			for (i = 0; i < n; i++)
				keys[i] = vals[test_below(&tr, nvals)];
			break;
		case 2:					/* dense around zero: negatives, dups */
			{
				int64_t		half = (int64_t) (n / 2 + 2);

				for (i = 0; i < n; i++)
				{
					int64_t		k = test_between(&tr, -half, half);

					keys[i] = k < tmin ? tmin : k > tmax ? tmax : k;
				}
			}
			break;
		case 3:					/* one value only, often an extreme */
			{
				int64_t		v = test_below(&tr, 3) == 0 ? tmin :
					test_below(&tr, 2) == 0 ? tmax : test_between(&tr, tmin, tmax);

				for (i = 0; i < n; i++)
					keys[i] = v;
			}
			break;
		case 5:					/* runs of keys with small strides (bitmap edges) */
			{
				size_t		at = 0;

				while (at < n)
				{
					int64_t		k = test_between(&tr, tmin, tmax);
					int64_t		stride = 1 + (int64_t) test_below(&tr, test_rnd(&tr) & 1 ? 2 : 40);
					size_t		len = 1 + test_below(&tr, 300);

					for (; len > 0 && at < n; len--, at++)
					{
						keys[at] = k;
						k = test_sat_add(k, stride);
						if (k > tmax)
							k = tmin;
					}
				}
			}
			break;
		default:				/* a few tight clusters spread over the type */
			nvals = 1 + test_below(&tr, 8);
			for (i = 0; i < nvals; i++)
				vals[i] = test_between(&tr, tmin, tmax);
			for (i = 0; i < n; i++)
			{
				int64_t		k = test_sat_add(vals[test_below(&tr, nvals)],
										test_between(&tr, -1000, 1000));

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
	uint64_t	r = test_below(&tr, 100);

	test_type_range(width, &tmin, &tmax);
	if (n > 0 && r < 30)
		return sorted[test_below(&tr, n)];
	if (n > 0 && r < 45)
		return test_sat_add(sorted[test_below(&tr, n)], test_rnd(&tr) & 1 ? 1 : -1);
	if (r < 60)
		return test_between(&tr, tmin, tmax);
	if (r < 70)
	{
		static const int64_t far[] = {
			INT64_MIN, INT64_MAX, INT64_MIN + 1, INT64_MAX - 1,
			(int64_t) 1 << 40, -((int64_t) 1 << 40), 0, -1, 1,
			INT32_MIN, INT32_MAX, (int64_t) INT32_MIN - 1, (int64_t) INT32_MAX + 1,
			INT16_MIN, INT16_MAX, INT16_MIN - 1, INT16_MAX + 1,
			(int64_t) UINT32_MAX, (int64_t) 1 << 32, -((int64_t) 1 << 32),
		};

		r = test_below(&tr, sizeof(far) / sizeof(far[0]) + 2);
		if (r == sizeof(far) / sizeof(far[0]))
			return test_sat_add(tmin, -1);
		if (r > sizeof(far) / sizeof(far[0]))
			return test_sat_add(tmax, 1);
		return far[r];
	}
	if (r < 80)
		return (int64_t) test_rnd(&tr);
	if (n > 0)
		return test_between(&tr, test_sat_add(sorted[0], -3), test_sat_add(sorted[n - 1], 3));
	return test_between(&tr, -3, 3);
}

/* Generate probes and, for ranges, upper bounds (some below lo). */
static void
gen_probes(int64_t *lo, int64_t *hi, size_t np, const int64_t *sorted,
		   size_t n, int width)
{
	size_t		i;

	for (i = 0; i < np; i++)
	{
		uint64_t	r = test_below(&tr, 10);

		lo[i] = gen_probe(sorted, n, width);
		if (r < 3)
			hi[i] = gen_probe(sorted, n, width);
		else if (r < 5)
			hi[i] = lo[i];
		else if (r < 8)
			hi[i] = test_sat_add(lo[i], (int64_t) test_below(&tr, r == 7 ? 1000000 : 50));
		else
			hi[i] = test_sat_add(lo[i], -1 - (int64_t) test_below(&tr, 1000));
	}
	/* Sometimes a batch of sorted or repeated probes. */
	if (np > 1 && test_below(&tr, 4) == 0)
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
			   tr.seed, engine, label, op_names[op], (int) st, err.message);
		return false;
	}
	for (i = 0; i < np; i++)
	{
		uint64_t	ea;
		uint64_t	eb;
		bool		ok;

		test_expect(sorted, n, op, lo[i], hi[i], &ea, &eb);
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
					   tr.seed, engine, label, op_names[op], i, lo[i],
					   op == GI_OP_RANGE ? hi[i] : 0, first[i], last[i], ea, eb);
		}
	}
	return reports == 0;
}

/*
 * Page-lock fresh copies of lo and hi and answer buffers (gi_host_pin, as a
 * join's scratch block is) and check op on them: the GPU engine copies such
 * arrays directly instead of through its staging buffers.  With half_last,
 * only the first half of last is page-locked, so the engine must see that
 * the array is not and stage it.
 */
static bool
check_op_pinned(GiImage *image, const char *engine, const char *label, GiOp op,
				const int64_t *sorted, size_t n, const int64_t *lo, const int64_t *hi,
				size_t np, bool half_last)
{
	size_t		bytes = ((np * 8 + 4095) / 4096) * 4096;
	int64_t    *plo = aligned_alloc(4096, bytes);
	int64_t    *phi = aligned_alloc(4096, bytes);
	uint64_t   *pf = aligned_alloc(4096, bytes);
	uint64_t   *pl = aligned_alloc(4096, bytes);
	char		what[200];
	bool		pinned,
				ok;

	if (!plo || !phi || !pf || !pl)
	{
		fprintf(stderr, "test_engine: out of memory\n");
		exit(2);
	}
	memcpy(plo, lo, np * 8);
	memcpy(phi, hi, np * 8);
	pinned = gi_host_pin(plo, bytes) && gi_host_pin(phi, bytes) && gi_host_pin(pf, bytes) &&
		gi_host_pin(pl, half_last ? (np / 2 / 512 + 1) * 4096 : bytes);
	if (!pinned)
		printf("FAIL seed=%" PRIu64 " %s %s: gi_host_pin failed\n", tr.seed, engine, label);
	snprintf(what, sizeof(what), "%s %s", label, half_last ? "half pinned" : "pinned");
	ok = pinned && check_op(image, engine, what, op, sorted, n, plo, phi, np, pf, pl);
	gi_host_unpin(plo);
	gi_host_unpin(phi);
	gi_host_unpin(pf);
	gi_host_unpin(pl);
	free(plo);
	free(phi);
	free(pf);
	free(pl);
	return ok;
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
			   " host_bytes=%" PRIu64 "\n", tr.seed, engine, label, info.entries,
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
				   PRIu64 ")\n", tr.seed, engine, label, op_names[op], i, lo[i],
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
			   tr.seed, label, (int) st, err.message);
		return false;
	}
	for (i = 0; i < np; i++)
	{
		int64_t		p = lo[i];
		uint64_t	up = test_bound(sorted, n, p, true);
		uint64_t	lw = test_bound(sorted, n, p, false);
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
				   ": pred %d/%" PRId64 " succ %d/%" PRId64 "\n", tr.seed, label,
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
	int64_t    *keys = test_xmalloc(n * sizeof(int64_t));
	uint64_t   *payloads = test_xmalloc(n * sizeof(uint64_t));
	TestPair   *pairs = test_xmalloc(n * sizeof(TestPair));
	int64_t    *sorted = test_xmalloc(n * sizeof(int64_t));
	uint64_t   *sorted_pl = test_xmalloc(n * sizeof(uint64_t));
	int64_t    *got_keys = test_xmalloc(n * sizeof(int64_t));
	uint64_t   *got_pl = test_xmalloc(n * sizeof(uint64_t));
	size_t		np = n + 64 < 300000 ? n + 64 : 300000;
	int64_t    *lo = test_xmalloc(np * sizeof(int64_t));
	int64_t    *hi = test_xmalloc(np * sizeof(int64_t));
	uint64_t   *first = test_xmalloc(np * sizeof(uint64_t));
	uint64_t   *last = test_xmalloc(np * sizeof(uint64_t));
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
		bt_first[op] = test_xmalloc(np * sizeof(uint64_t));
		bt_last[op] = test_xmalloc(np * sizeof(uint64_t));
	}
	gen_keys(keys, n, width, dist);
	for (i = 0; i < n; i++)
	{
		/* Payloads with repeats, so (key, payload) ties get exercised too. */
		payloads[i] = test_below(&tr, 4) == 0 ? test_below(&tr, 8) : test_rnd(&tr);
		pairs[i].key = keys[i];
		pairs[i].payload = payloads[i];
	}
	if (n <= 2000000)
	{
		qsort(pairs, n, sizeof(TestPair), test_cmp_pair);
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
				tr.skipped++;
				if (tr.verbose)
					printf("skip %s %s: %s\n", engine, label, err.message);
				continue;
			}
			if (st != GI_OK)
			{
				printf("FAIL seed=%" PRIu64 " %s %s build failed (%d): %s\n",
					   tr.seed, engine, label, (int) st, err.message);
				test_record(&tr, false, label);
				continue;
			}
			test_record(&tr, check_info(image, engine, label, width, structure, sorted, n),
				   label);
			for (op = GI_OP_POINT; op <= GI_OP_RANGE; op++)
			{
				test_record(&tr, check_op(image, engine, label, (GiOp) op, sorted, n, lo,
								hi, np, first, last), label);
				if (structure == GI_STRUCT_BTREE)
				{
					memcpy(bt_first[op], first, np * sizeof(uint64_t));
					memcpy(bt_last[op], last, np * sizeof(uint64_t));
					have_btree = true;
				}
				else if (have_btree)
					test_record(&tr, check_same_as_btree(engine, label, (GiOp) op,
											   bt_first[op], bt_last[op],
											   first, last, lo, np), label);
			}
			if (e == 1 && np > 0)
			{
				/* probes and answers in page-locked memory, whole and half */
				op = 1 + (int) test_below(&tr, 4);
				test_record(&tr, check_op_pinned(image, engine, label, (GiOp) op, sorted, n,
												 lo, hi, np, false), label);
				test_record(&tr, check_op_pinned(image, engine, label, (GiOp) op, sorted, n,
												 lo, hi, np, true), label);
			}
			gi_image_free(image);

			if (e == 0 && structure == GI_STRUCT_VEB && n <= 1100000)
				test_record(&tr, check_insert_baseline(label, width, keys, sorted, n, lo,
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
					   tr.seed, engine, label, (int) st, err.message);
				test_record(&tr, false, label);
				continue;
			}
			if ((n > 0 && memcmp(got_keys, sorted, n * sizeof(int64_t)) != 0) ||
				(n > 0 && memcmp(got_pl, sorted_pl, n * sizeof(uint64_t)) != 0))
			{
				printf("FAIL seed=%" PRIu64 " %s %s unsorted build: sorted arrays differ\n",
					   tr.seed, engine, label);
				test_record(&tr, false, label);
			}
			else
				test_record(&tr, true, label);
			op = 1 + (int) test_below(&tr, 4);
			test_record(&tr, check_op(image, engine, label, (GiOp) op, sorted, n, lo, hi,
							np, first, last), label);
			gi_image_free(image);

			/* Keys only (no payloads) must sort the same keys. */
			image = NULL;
			memset(got_keys, 0xAB, n * sizeof(int64_t));
			st = gi_image_build_unsorted(&params, keys, NULL, n, got_keys, NULL,
										 &image, &err);
			test_record(&tr, st == GI_OK &&
				   (n == 0 || memcmp(got_keys, sorted, n * sizeof(int64_t)) == 0),
				   label);
			if (st != GI_OK)
				printf("FAIL seed=%" PRIu64 " %s %s unsorted keys-only build failed: %s\n",
					   tr.seed, engine, label, err.message);
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
			int			width = 2 << (int) test_below(&tr, 3);
			int64_t    *keys = test_xmalloc(n * sizeof(int64_t));
			uint64_t   *payloads = test_xmalloc(n * sizeof(uint64_t));
			TestPair   *pairs = test_xmalloc(n * sizeof(TestPair));
			int64_t    *got_keys = test_xmalloc(n * sizeof(int64_t));
			uint64_t   *got_pl = test_xmalloc(n * sizeof(uint64_t));
			GiError		err;
			GiStatus	st;
			size_t		i;
			bool		ok;
			char		label[96];

			gen_keys(keys, n, width, dist);
			for (i = 0; i < n; i++)
			{
				payloads[i] = test_below(&tr, 3) == 0 ? test_below(&tr, 4) : test_rnd(&tr);
				pairs[i].key = keys[i];
				pairs[i].payload = payloads[i];
			}
			qsort(pairs, n, sizeof(TestPair), test_cmp_pair);
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
					   tr.seed, label, (int) st);
			test_record(&tr, ok, label);

			memset(got_keys, 0xAB, n * sizeof(int64_t));
			st = gi_sort_pairs(keys, NULL, n, got_keys, NULL, &err);
			ok = st == GI_OK;
			for (i = 0; ok && i < n; i++)
				ok = got_keys[i] == pairs[i].key;
			if (!ok)
				printf("FAIL seed=%" PRIu64 " %s: keys-only sort differs from qsort (status %d)\n",
					   tr.seed, label, (int) st);
			test_record(&tr, ok, label);

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
				   tr.seed, struct_names[si], (int) st);
		snprintf(what, sizeof(what), "cpu %s unsorted input rejected", struct_names[si]);
		test_record(&tr, ok, what);

		image = (GiImage *) &params;
		st = gi_image_build(&params, wide, NULL, 2, &image, &err);
		ok = st == GI_ERR_INVALID && image == NULL;
		if (!ok)
			printf("FAIL seed=%" PRIu64 " cpu %s key too wide: want GI_ERR_INVALID, got %d\n",
				   tr.seed, struct_names[si], (int) st);
		snprintf(what, sizeof(what), "cpu %s key wider than key_bytes rejected",
				 struct_names[si]);
		test_record(&tr, ok, what);

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
				   tr.seed, struct_names[si]);
		snprintf(what, sizeof(what), "cpu %s bad query arguments rejected",
				 struct_names[si]);
		test_record(&tr, ok, what);

		/* The GPU engine: a clean error for bad input, or not implemented. */
		if (gpu)
		{
			params.engine = GI_ENGINE_GPU;
			image = (GiImage *) &params;
			st = gi_image_build(&params, unsorted, NULL, 4, &image, &err);
			if (st == GI_ERR_UNSUPPORTED && si == GI_STRUCT_VEB)
				tr.skipped++;
			else
			{
				ok = st == GI_ERR_INVALID && image == NULL;
				if (!ok)
					printf("FAIL seed=%" PRIu64 " gpu %s unsorted input: want GI_ERR_INVALID, got %d\n",
						   tr.seed, struct_names[si], (int) st);
				snprintf(what, sizeof(what), "gpu %s unsorted input rejected",
						 struct_names[si]);
				test_record(&tr, ok, what);
			}
		}
	}
}

/*
 * The GPU query settings read from the environment (engine/engine_util.c)
 * that select a search policy field: GI_GPU_TILE_MIN_BLOCKS takes 2, 3 or 4
 * and nothing else, GI_GPU_LEAF_WALK, GI_GPU_LEAF_GUESS, GI_GPU_STREAM and
 * GI_GPU_ROW_HINT off / auto / on (or -1 / 0 / 1); an
 * unset or unknown value gives the caller's default, and a value is read
 * once until gi_settings_reload().  Host only: runs with or without a GPU.
 */
static void
run_settings_cases(void)
{
	static const struct
	{
		const char *value;		/* NULL: unset */
		int			blocks;		/* gi_setting_gpu_tile_min_blocks(7) */
		int			walk;		/* gi_setting_gpu_leaf_walk(7), and the same
								 * of gi_setting_gpu_leaf_guess(7),
								 * gi_setting_gpu_stream(7) and
								 * gi_setting_gpu_row_hint(7) */
	}			cases[] = {
		{NULL, 7, 7}, {"", 7, 7}, {"2", 2, 7}, {"3", 3, 7}, {"4", 4, 7}, {"1", 7, 1},
		{"5", 7, 7}, {"0", 7, 0}, {"-1", 7, -1}, {"off", 7, -1}, {"auto", 7, 0},
		{"on", 7, 1}, {"2x", 7, 7}, {"yes", 7, 7},
	};
	size_t		i;
	char		what[120];

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
	{
		int			blocks,
					walk,
					guess,
					stream,
					hint;

		if (cases[i].value)
		{
			setenv("GI_GPU_TILE_MIN_BLOCKS", cases[i].value, 1);
			setenv("GI_GPU_LEAF_WALK", cases[i].value, 1);
			setenv("GI_GPU_LEAF_GUESS", cases[i].value, 1);
			setenv("GI_GPU_STREAM", cases[i].value, 1);
			setenv("GI_GPU_ROW_HINT", cases[i].value, 1);
		}
		else
		{
			unsetenv("GI_GPU_TILE_MIN_BLOCKS");
			unsetenv("GI_GPU_LEAF_WALK");
			unsetenv("GI_GPU_LEAF_GUESS");
			unsetenv("GI_GPU_STREAM");
			unsetenv("GI_GPU_ROW_HINT");
		}
		gi_settings_reload();
		blocks = gi_setting_gpu_tile_min_blocks(7);
		walk = gi_setting_gpu_leaf_walk(7);
		guess = gi_setting_gpu_leaf_guess(7);
		stream = gi_setting_gpu_stream(7);
		hint = gi_setting_gpu_row_hint(7);
		snprintf(what, sizeof(what), "GI_GPU_TILE_MIN_BLOCKS / LEAF_WALK / LEAF_GUESS / STREAM / ROW_HINT = %s",
				 cases[i].value ? cases[i].value : "(unset)");
		if (blocks != cases[i].blocks || walk != cases[i].walk || guess != cases[i].walk ||
			stream != cases[i].walk || hint != cases[i].walk)
			printf("FAIL %s: min blocks %d (want %d), leaf walk %d, leaf guess %d, stream %d, row hint %d (want %d)\n",
				   what, blocks, cases[i].blocks, walk, guess, stream, hint, cases[i].walk);
		test_record(&tr, blocks == cases[i].blocks && walk == cases[i].walk &&
					guess == cases[i].walk && stream == cases[i].walk && hint == cases[i].walk, what);
	}
	/* read once: a change without gi_settings_reload() is not seen */
	setenv("GI_GPU_TILE_MIN_BLOCKS", "2", 1);
	setenv("GI_GPU_LEAF_WALK", "off", 1);
	gi_settings_reload();
	{
		int			b0 = gi_setting_gpu_tile_min_blocks(0),
					w0 = gi_setting_gpu_leaf_walk(0);

		setenv("GI_GPU_TILE_MIN_BLOCKS", "3", 1);
		setenv("GI_GPU_LEAF_WALK", "on", 1);
		test_record(&tr, b0 == 2 && w0 == -1 && gi_setting_gpu_tile_min_blocks(0) == 2 &&
					gi_setting_gpu_leaf_walk(0) == -1, "GPU settings are read once until reloaded");
	}
	unsetenv("GI_GPU_TILE_MIN_BLOCKS");
	unsetenv("GI_GPU_LEAF_WALK");
	unsetenv("GI_GPU_LEAF_GUESS");
	unsetenv("GI_GPU_STREAM");
	unsetenv("GI_GPU_ROW_HINT");
	gi_settings_reload();

	/*
	 * GI_GPU_ONE_PASS is a mode as the ones above; GI_GPU_STREAM_GRIDS a
	 * count of 1 to 64 and nothing else
	 */
	{
		static const struct
		{
			const char *value;	/* NULL: unset */
			int			one_pass;	/* gi_setting_gpu_one_pass(7) */
			int			grids;	/* gi_setting_gpu_stream_grids(7) */
		}			more[] = {
			{NULL, 7, 7}, {"", 7, 7}, {"off", -1, 7}, {"-1", -1, 7}, {"auto", 0, 7}, {"0", 0, 7},
			{"on", 1, 7}, {"1", 1, 1}, {"4", 7, 4}, {"64", 7, 64}, {"65", 7, 7}, {"2x", 7, 7},
		};

		for (i = 0; i < sizeof(more) / sizeof(more[0]); i++)
		{
			int			one_pass,
						grids;

			if (more[i].value)
			{
				setenv("GI_GPU_ONE_PASS", more[i].value, 1);
				setenv("GI_GPU_STREAM_GRIDS", more[i].value, 1);
			}
			else
			{
				unsetenv("GI_GPU_ONE_PASS");
				unsetenv("GI_GPU_STREAM_GRIDS");
			}
			gi_settings_reload();
			one_pass = gi_setting_gpu_one_pass(7);
			grids = gi_setting_gpu_stream_grids(7);
			snprintf(what, sizeof(what), "GI_GPU_ONE_PASS / STREAM_GRIDS = %s",
					 more[i].value ? more[i].value : "(unset)");
			if (one_pass != more[i].one_pass || grids != more[i].grids)
				printf("FAIL %s: one pass %d (want %d), stream grids %d (want %d)\n",
					   what, one_pass, more[i].one_pass, grids, more[i].grids);
			test_record(&tr, one_pass == more[i].one_pass && grids == more[i].grids, what);
		}
		unsetenv("GI_GPU_ONE_PASS");
		unsetenv("GI_GPU_STREAM_GRIDS");
		gi_settings_reload();
	}
}

int			gi_test_space_main(void);
void		gi_test_space_counts(long *passed, long *failed);
int			gi_test_insert_main(void);
void		gi_test_insert_counts(long *passed, long *failed);
int			gi_test_agg_main(void);
void		gi_test_agg_counts(long *passed, long *failed);
int			gi_test_threads_main(void);
void		gi_test_threads_counts(long *passed, long *failed);
int			gi_test_sorted_main(void);
void		gi_test_sorted_counts(long *passed, long *failed);

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
	double		t0 = test_now_s();
	int			variant = 0;
	int			w;
	int			i;

	setvbuf(stdout, NULL, _IOLBF, 0);
	test_run_start(&tr, "engine", 0);
	s = getenv("GI_UNIT_MAX");
	if (s && *s)
		max_size = strtoull(s, NULL, 0);
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
		   " to repeat), sizes up to %zu, gpu: %s\n", tr.seed, tr.seed, max_size,
		   gpu ? "yes" : why);

	run_error_cases(gpu);
	run_sort_cases();
	run_settings_cases();
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

	printf("test_engine: %.1f s\n", test_now_s() - t0);

	/* SPACE compaction and selection (test_space.c), counted in the total. */
	{
		long		sp,
					sf;

		gi_test_space_main();
		gi_test_space_counts(&sp, &sf);
		tr.passed += sp;
		tr.failed += sf;
	}

	/* Batch insertion (test_insert.c), counted in the total. */
	{
		long		ip,
					ifl;

		gi_test_insert_main();
		gi_test_insert_counts(&ip, &ifl);
		tr.passed += ip;
		tr.failed += ifl;
	}

	/* GpuIndexAgg's adding up (test_agg.c), counted in the total. */
	{
		long		ap,
					af;

		gi_test_agg_main();
		gi_test_agg_counts(&ap, &af);
		tr.passed += ap;
		tr.failed += af;
	}

	/* Several threads querying at once (test_threads.c), counted in the total. */
	{
		long		tp,
					tf;

		gi_test_threads_main();
		gi_test_threads_counts(&tp, &tf);
		tr.passed += tp;
		tr.failed += tf;
	}
	/* The GPU B+ tree's run search for probes in order (test_sorted.c). */
	{
		long		rp,
					rf;

		gi_test_sorted_main();
		gi_test_sorted_counts(&rp, &rf);
		tr.passed += rp;
		tr.failed += rf;
	}
	if (tr.skipped > 0)
		printf("test_engine: %ld skipped (the GPU engine reports veb unsupported)\n",
			   tr.skipped);
	printf("%ld passed, %ld failed\n", tr.passed, tr.failed);
	return tr.failed ? 1 : 0;
}
