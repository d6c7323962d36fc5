/*
 * test_agg.c - unit tests of gi_host_aggregate (GpuIndexAgg's adding up,
 * engine/cpu_agg.c) and of gi_image_aggregate (position ranges, both
 * engines: cpu_agg.c, cuda/gpu_agg.cu) against a plain serial loop.
 *
 * Random entries (keys, TIDs over more heap blocks than the visibility
 * bitmap covers, rows with a value of every kind and random NULLs, NaNs and
 * infinities), a random bitmap; every kind of column at once; 1, 3 and 7
 * threads (GI_CPU_THREADS), so the slices' merge and the moving of their
 * TIDs are exercised at every size.  gi_image_aggregate: random disjoint
 * ranges (long, short, empty, everything) and one-entry ranges in random
 * order with repeats (with gi_host_aggregate_positions, its host twin on
 * a full map) over images of every key width,
 * host arrays split into base and delta, maps random, full, full with
 * entries past it and empty; on the GPU every row kind from attached
 * columns (with and without a NULL bitmap), and after batch insertion
 * (keys read from the rank-ordered copy) count(*) or the key alone and the
 * refusal of the dropped row columns.  The entry point is
 * gi_test_agg_main(), run by test_engine's main.
 */
#include "engine.h"
#include "../common/test_util.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static TestRun tr;				/* seed, random stream, counts */

/* The row layout of the test: NULL mask, then one value of each kind. */
#define ROW_BYTES 33
static const GiAggKind row_kinds[] = {GI_AGG_INT16, GI_AGG_INT32, GI_AGG_UINT32,
GI_AGG_INT64, GI_AGG_FLOAT4, GI_AGG_FLOAT8, GI_AGG_BOOL};
static const int row_offsets[] = {2, 4, 8, 12, 20, 24, 32};
#define NROW_COLS 7

/* A random float value: mostly ordinary, sometimes NaN or an infinity. */
static double
random_float(void)
{
	uint64_t	r = test_below(&tr, 100);

	if (r == 0)
		return NAN;
	if (r == 1)
		return INFINITY;
	if (r == 2)
		return -INFINITY;
	return (double) test_between(&tr, -1000000, 1000000) / 8.0;
}

/* Fill row i with random values and NULLs. */
static void
fill_row(char *row)
{
	uint16_t	nulls = (uint16_t) (test_rnd(&tr) & test_rnd(&tr) & 0x7f);
	int16_t		a = (int16_t) test_rnd(&tr);
	int32_t		b = (int32_t) test_rnd(&tr);
	uint32_t	c = (uint32_t) test_rnd(&tr);
	int64_t		d = (int64_t) test_rnd(&tr);
	float		e = (float) random_float();
	double		f = random_float();

	memset(row, 0, ROW_BYTES);
	memcpy(row, &nulls, 2);
	memcpy(row + 2, &a, 2);
	memcpy(row + 4, &b, 4);
	memcpy(row + 8, &c, 4);
	memcpy(row + 12, &d, 8);
	memcpy(row + 20, &e, 4);
	memcpy(row + 24, &f, 8);
	row[32] = (char) (test_rnd(&tr) & 1);
}

/* The columns: the key, then every row kind, totals at their start. */
static int
make_columns(GiAggColumn *cols)
{
	int			c;

	memset(cols, 0, sizeof(GiAggColumn) * (NROW_COLS + 1));
	cols[0].kind = GI_AGG_KEY;
	for (c = 0; c < NROW_COLS; c++)
	{
		cols[c + 1].kind = row_kinds[c];
		cols[c + 1].offset = row_offsets[c];
		cols[c + 1].nullbit = (uint16_t) (1 << c);
		cols[c + 1].column = c;
	}
	for (c = 0; c <= NROW_COLS; c++)
	{
		cols[c].imin = INT64_MAX;
		cols[c].imax = INT64_MIN;
		cols[c].fmin = INFINITY;
		cols[c].fmax = -INFINITY;
	}
	return NROW_COLS + 1;
}

/* Value of column col of entry i as an integer, or as a float. */
static void
value_of(const GiAggColumn *col, const int64_t *keys, const char *rows, size_t i,
		 int64_t *iv, double *fv)
{
	const char *at = rows + i * ROW_BYTES + col->offset;

	switch (col->kind)
	{
		case GI_AGG_KEY:
			*iv = keys[i];
			break;
		case GI_AGG_BOOL:
			*iv = *at ? 1 : 0;
			break;
		case GI_AGG_INT16:
			{
				int16_t		x;

				memcpy(&x, at, 2);
				*iv = x;
				break;
			}
		case GI_AGG_INT32:
			{
				int32_t		x;

				memcpy(&x, at, 4);
				*iv = x;
				break;
			}
		case GI_AGG_UINT32:
			{
				uint32_t	x;

				memcpy(&x, at, 4);
				*iv = x;
				break;
			}
		case GI_AGG_INT64:
			memcpy(iv, at, 8);
			break;
		case GI_AGG_FLOAT4:
			{
				float		x;

				memcpy(&x, at, 4);
				*fv = x;
				break;
			}
		case GI_AGG_FLOAT8:
			memcpy(fv, at, 8);
			break;
	}
}

/* The serial reference: totals and the TIDs to fetch (sorted). */
static void
reference(const int64_t *keys, const uint64_t *tids, const char *rows, size_t n,
		  const uint8_t *vm, uint64_t vm_blocks, GiAggColumn *cols, int ncols,
		  int64_t *counted, uint64_t *fetch, size_t *nfetch)
{
	size_t		i;
	int			c;

	for (i = 0; i < n; i++)
	{
		uint64_t	blk = tids[i] >> 16;
		uint16_t	nulls;

		if (!(blk < vm_blocks && ((vm[blk / 4] >> ((blk % 4) * 2)) & 1)))
		{
			fetch[(*nfetch)++] = tids[i];
			continue;
		}
		(*counted)++;
		memcpy(&nulls, rows + i * ROW_BYTES, 2);
		for (c = 0; c < ncols; c++)
		{
			GiAggColumn *col = &cols[c];
			int64_t		iv = 0;
			double		fv = 0;

			if (col->kind != GI_AGG_KEY && (nulls & col->nullbit))
				continue;
			value_of(col, keys, rows, i, &iv, &fv);
			col->nonnull++;
			if (col->kind == GI_AGG_FLOAT4 || col->kind == GI_AGG_FLOAT8)
			{
				if (isnan(fv))
					col->nnan++;
				else
				{
					col->fmin = fv < col->fmin ? fv : col->fmin;
					col->fmax = fv > col->fmax ? fv : col->fmax;
				}
				continue;
			}
			col->sum += iv;
			col->imin = iv < col->imin ? iv : col->imin;
			col->imax = iv > col->imax ? iv : col->imax;
		}
	}
	qsort(fetch, *nfetch, sizeof(uint64_t), test_cmp_u64);
}

/* Are two columns' totals the same? */
static bool
same_totals(const GiAggColumn *a, const GiAggColumn *b)
{
	return a->nonnull == b->nonnull && a->sum == b->sum && a->nnan == b->nnan &&
		a->imin == b->imin && a->imax == b->imax &&
		memcmp(&a->fmin, &b->fmin, sizeof(double)) == 0 &&
		memcmp(&a->fmax, &b->fmax, sizeof(double)) == 0;
}

/*
 * One case: n entries, vm over vm_blocks, TIDs up to max_block.  full: every
 * block of the bitmap set, and gi_host_aggregate told so (vm_full, the
 * bitmap then not passed); nulls: how often a row value is NULL (0: never,
 * 1: a quarter of the time, 2: always).
 */
static void
agg_case(size_t n, uint64_t vm_blocks, uint64_t max_block, int threads,
		 bool full, int nulls)
{
	int64_t    *keys = test_xmalloc(sizeof(int64_t) * (n + 1));
	uint64_t   *tids = test_xmalloc(sizeof(uint64_t) * (n + 1));
	char	   *rows = test_xmalloc(ROW_BYTES * (n + 1));
	uint64_t   *fetch = test_xmalloc(sizeof(uint64_t) * (n + 1));
	uint64_t   *ref_fetch = test_xmalloc(sizeof(uint64_t) * (n + 1));
	uint8_t    *vm = test_xmalloc(vm_blocks / 4 + 1);
	GiAggColumn cols[NROW_COLS + 1],
				ref[NROW_COLS + 1];
	int			ncols = make_columns(cols);
	int64_t		counted = 0,
				ref_counted = 0;
	size_t		nfetch = 0,
				ref_nfetch = 0,
				i;
	char		what[160];
	char		nthreads[16];
	GiError		err;
	GiStatus	st;
	bool		ok;
	int			c;

	make_columns(ref);
	for (i = 0; i < vm_blocks / 4 + 1; i++)
		vm[i] = full ? 0xff : (uint8_t) test_rnd(&tr);
	for (i = 0; i < n; i++)
	{
		uint16_t	mask;

		keys[i] = (int64_t) test_rnd(&tr) >> (test_rnd(&tr) & 63);
		tids[i] = (test_below(&tr, max_block + 1) << 16) | test_below(&tr, 300);
		fill_row(rows + i * ROW_BYTES);
		mask = nulls == 0 ? 0 : nulls == 2 ? 0x7f : (uint16_t) (test_rnd(&tr) & test_rnd(&tr) & 0x7f);
		memcpy(rows + i * ROW_BYTES, &mask, 2);
	}
	snprintf(nthreads, sizeof(nthreads), "%d", threads);
	setenv("GI_CPU_THREADS", nthreads, 1);
	st = gi_host_aggregate(keys, tids, rows, ROW_BYTES, n, full ? NULL : vm, vm_blocks,
						   full, cols, ncols, &counted, fetch, &nfetch, &err);
	unsetenv("GI_CPU_THREADS");
	reference(keys, tids, rows, n, vm, vm_blocks, ref, ncols, &ref_counted,
			  ref_fetch, &ref_nfetch);
	qsort(fetch, nfetch, sizeof(uint64_t), test_cmp_u64);
	ok = st == GI_OK && counted == ref_counted && nfetch == ref_nfetch &&
		memcmp(fetch, ref_fetch, sizeof(uint64_t) * nfetch) == 0;
	for (c = 0; c < ncols && ok; c++)
		ok = same_totals(&cols[c], &ref[c]);
	snprintf(what, sizeof(what), "aggregate n=%zu vm_blocks=%" PRIu64 " max_block=%" PRIu64
			 " threads=%d full=%d nulls=%d", n, vm_blocks, max_block, threads,
			 (int) full, nulls);
	test_record(&tr, ok, what);
	free(keys);
	free(tids);
	free(rows);
	free(fetch);
	free(ref_fetch);
	free(vm);
}

/* ---------- gi_image_aggregate: position ranges, both engines ---------- */

/*
 * Random disjoint ranges over n positions, ascending: long ones, runs of
 * one or two entries (an = ANY of many keys) and empty ones, as kind
 * says (0: a few long, 1: many short, 2: one over everything, 3: mixed);
 * or (4) n one-entry ranges in random order, some repeated (GpuIndexAgg
 * over an as-of join: every answer's entry, as often as it answers).
 */
static size_t
random_ranges(size_t n, int kind, uint64_t *first, uint64_t *last, size_t cap)
{
	size_t		nr = 0;
	uint64_t	at = 0;

	if (kind == 4)
	{
		/* one entry each, in no order, some twice (an as-of join's answers) */
		for (nr = 0; nr < n && nr < cap; nr++)
		{
			first[nr] = nr > 0 && test_below(&tr, 5) == 0 ? first[test_below(&tr, nr)] :
				test_below(&tr, n);
			last[nr] = first[nr] + 1;
		}
		return nr;
	}
	if (kind == 2)
	{
		first[0] = 0;
		last[0] = n;
		return 1;
	}
	while (at < n && nr < cap)
	{
		uint64_t	gap = test_below(&tr, kind == 1 ? 4 : n / 8 + 2);
		uint64_t	len = kind == 1 ? test_below(&tr, 3) :
			kind == 0 ? test_below(&tr, n / 3 + 2) :
			(test_rnd(&tr) & 1) ? test_below(&tr, 3) : test_below(&tr, n / 5 + 2);

		at += gap;
		if (at > n)
			at = n;
		if (at + len > n)
			len = n - at;
		first[nr] = at;
		last[nr] = at + len;
		nr++;
		at += len;
	}
	return nr;
}

/* Bytes of a row column kind's value. */
static int
kind_bytes(GiAggKind kind)
{
	return kind == GI_AGG_BOOL ? 1 : kind == GI_AGG_INT16 ? 2 :
		(kind == GI_AGG_INT64 || kind == GI_AGG_FLOAT8) ? 8 : 4;
}

/*
 * Attach the test rows of n entries (rank order) to an image as INCLUDE
 * columns: every row kind, its values and NULL bitmap (none for a column
 * with no NULL, to cover that form too).
 */
static GiStatus
attach_rows(GiImage *image, const char *rows, size_t n, GiError *err)
{
	GiIncludeColumns ic;
	void	   *values[NROW_COLS];
	uint8_t    *nulls[NROW_COLS];
	GiStatus	st;
	size_t		i;
	int			c;

	memset(&ic, 0, sizeof(ic));
	ic.ncols = NROW_COLS;
	for (c = 0; c < NROW_COLS; c++)
	{
		int			w = kind_bytes(row_kinds[c]);
		bool		any = false;

		values[c] = test_xmalloc((size_t) w * (n + 1));
		nulls[c] = test_xmalloc(n / 8 + 1);
		memset(nulls[c], 0, n / 8 + 1);
		for (i = 0; i < n; i++)
		{
			uint16_t	mask;

			memcpy((char *) values[c] + i * w, rows + i * ROW_BYTES + row_offsets[c], w);
			memcpy(&mask, rows + i * ROW_BYTES, 2);
			if (mask & (1 << c))
			{
				nulls[c][i / 8] |= (uint8_t) (1 << (i % 8));
				any = true;
			}
		}
		ic.width[c] = w;
		ic.values[c] = values[c];
		ic.nulls[c] = any ? nulls[c] : NULL;
	}
	st = gi_image_attach_columns(image, &ic, err);
	for (c = 0; c < NROW_COLS; c++)
	{
		free(values[c]);
		free(nulls[c]);
	}
	return st;
}

/*
 * One case of gi_image_aggregate on an image of engine / structure /
 * key_bytes over n entries: random keys of the width, TIDs over more blocks
 * than the map covers, random rows; the host arrays split into a base and
 * a delta part (about 1 entry in ndelta_every, 0: none) for the CPU twin;
 * for the GPU, the rows attached as INCLUDE columns, or (insert_share > 0)
 * attached and then dropped by gi_image_insert of insert_share entries of
 * every 8 after the build (the insertable form).  Compared with the serial
 * reference over the ranges' entries.  Columns: the key (unless key_col is
 * false) and every row kind; on the GPU after an insertion the key alone
 * (or none: count(*)), and a row column must be refused.
 */
static void
range_case(GiEngineKind engine, GiStructure structure, int key_bytes, size_t n,
		   int range_kind, int map_kind, int ndelta_every, int insert_share,
		   bool key_col)
{
	TestPair   *pairs = test_xmalloc(sizeof(TestPair) * (n + 1));
	int64_t    *keys = test_xmalloc(sizeof(int64_t) * (n + 1));
	uint64_t   *tids = test_xmalloc(sizeof(uint64_t) * (n + 1));
	char	   *rows = test_xmalloc(ROW_BYTES * (n + 1));
	int64_t    *bk = test_xmalloc(sizeof(int64_t) * (n + 1)),
			   *dk = test_xmalloc(sizeof(int64_t) * (n + 1)),
			   *drank = test_xmalloc(sizeof(int64_t) * (n + 1));
	uint64_t   *bt = test_xmalloc(sizeof(uint64_t) * (n + 1)),
			   *dt = test_xmalloc(sizeof(uint64_t) * (n + 1));
	char	   *br = test_xmalloc(ROW_BYTES * (n + 1)),
			   *dr = test_xmalloc(ROW_BYTES * (n + 1));
	size_t		cap = n + 8;
	uint64_t   *first = test_xmalloc(sizeof(uint64_t) * cap),
			   *last = test_xmalloc(sizeof(uint64_t) * cap);
	/* the ranges' entries gathered, for the reference */
	int64_t    *gk = test_xmalloc(sizeof(int64_t) * (n + 1));
	uint64_t   *gt = test_xmalloc(sizeof(uint64_t) * (n + 1));
	char	   *gr = test_xmalloc(ROW_BYTES * (n + 1));
	uint64_t   *ref_fetch = test_xmalloc(sizeof(uint64_t) * (n + 1));
	uint64_t	vm_blocks = map_kind == 3 ? 0 : 1000,
				max_block = map_kind == 1 ? 999 : 1010;
	bool		full = map_kind == 1 || map_kind == 2;
	uint8_t    *vm = test_xmalloc(vm_blocks / 4 + 1);
	GiAggColumn cols[NROW_COLS + 1],
				ref[NROW_COLS + 1];
	int			ncols,
				use;
	int64_t		tmin,
				tmax,
				counted = 0,
				ref_counted = 0;
	size_t		nr,
				nb = 0,
				nd = 0,
				ng = 0,
				ref_nfetch = 0,
				nfetch = 0,
				i,
				r;
	uint64_t   *fetch = NULL;
	GiAggEntries host;
	GiBuildParams params;
	GiImage    *image = NULL;
	GiError		err;
	GiStatus	st;
	char		what[512];
	bool		ok;
	int			c;

	test_type_range(key_bytes, &tmin, &tmax);
	for (i = 0; i < vm_blocks / 4 + 1; i++)
		vm[i] = full ? 0xff : (uint8_t) test_rnd(&tr);
	for (i = 0; i < n; i++)
	{
		int64_t		k = (test_rnd(&tr) & 3) == 0 ?
			test_between(&tr, -50, 50) : test_between(&tr, tmin, tmax);

		if (test_below(&tr, 50) == 0)
			k = (test_rnd(&tr) & 1) ? tmin : tmax;
		pairs[i].key = k;
		pairs[i].payload = (test_below(&tr, max_block + 1) << 16) | test_below(&tr, 300);
	}
	qsort(pairs, n, sizeof(TestPair), test_cmp_pair);
	for (i = 0; i < n; i++)
	{
		keys[i] = pairs[i].key;
		tids[i] = pairs[i].payload;
		fill_row(rows + i * ROW_BYTES);
		/* the host arrays: rank order split into base and delta */
		if (ndelta_every > 0 && test_below(&tr, ndelta_every) == 0)
		{
			dk[nd] = keys[i];
			dt[nd] = tids[i];
			memcpy(dr + nd * ROW_BYTES, rows + i * ROW_BYTES, ROW_BYTES);
			drank[nd++] = (int64_t) i;
		}
		else
		{
			bk[nb] = keys[i];
			bt[nb] = tids[i];
			memcpy(br + nb * ROW_BYTES, rows + i * ROW_BYTES, ROW_BYTES);
			nb++;
		}
	}
	memset(&host, 0, sizeof(host));
	host.keys = bk;
	host.tids = bt;
	host.rows = br;
	host.nbase = nb;
	host.dkeys = dk;
	host.dtids = dt;
	host.drows = dr;
	host.drank = drank;
	host.ndelta = nd;
	host.row_bytes = ROW_BYTES;

	nr = random_ranges(n, range_kind, first, last, cap);
	for (r = 0; r < nr; r++)
		for (i = first[r]; i < last[r]; i++)
		{
			gk[ng] = keys[i];
			gt[ng] = tids[i];
			memcpy(gr + ng * ROW_BYTES, rows + i * ROW_BYTES, ROW_BYTES);
			ng++;
		}

	/*
	 * The columns: every one on the CPU; on the GPU the row columns when
	 * they stay attached (no insertion after the build), the key when asked
	 * (use skips it otherwise: count(*) and the rows only).
	 */
	ncols = make_columns(cols);
	make_columns(ref);
	use = key_col ? 0 : 1;
	if (engine == GI_ENGINE_GPU && insert_share > 0)
		ncols = 1;
	ncols -= use;
	reference(gk, gt, gr, ng, vm, vm_blocks, ref + use, ncols, &ref_counted, ref_fetch,
			  &ref_nfetch);

	memset(&params, 0, sizeof(params));
	params.engine = engine;
	params.structure = structure;
	params.key_bytes = key_bytes;
	if (engine == GI_ENGINE_GPU && insert_share > 0 && structure == GI_STRUCT_BTREE)
	{
		/* build from the entries not picked, then insert the picked ones */
		int64_t    *k0 = test_xmalloc(sizeof(int64_t) * (n + 1)),
				   *k1 = test_xmalloc(sizeof(int64_t) * (n + 1));
		uint64_t   *p0 = test_xmalloc(sizeof(uint64_t) * (n + 1)),
				   *p1 = test_xmalloc(sizeof(uint64_t) * (n + 1));
		size_t		n0 = 0,
					n1 = 0;

		for (i = 0; i < n; i++)
		{
			if ((int) test_below(&tr, 8) < insert_share)
			{
				k1[n1] = keys[i];
				p1[n1++] = tids[i];
			}
			else
			{
				k0[n0] = keys[i];
				p0[n0++] = tids[i];
			}
		}
		st = gi_image_build(&params, k0, p0, n0, &image, &err);
		/* (attached, then dropped by the insertion: the rows are refused) */
		if (st == GI_OK && n1 > 0)
			st = attach_rows(image, rows, n0, &err);
		if (st == GI_OK)
			st = gi_image_insert(image, k1, p1, n1, &err);
		free(k0);
		free(k1);
		free(p0);
		free(p1);
	}
	else
	{
		st = gi_image_build(&params, keys, tids, n, &image, &err);
		if (st == GI_OK)
			st = attach_rows(image, rows, n, &err);
	}

	if (st == GI_OK)
		st = gi_image_aggregate(image, &host, first, last, nr, full ? NULL : vm, vm_blocks,
								full, cols + use, ncols, &counted, &fetch, &nfetch, &err);
	if (st == GI_OK)
		qsort(fetch, nfetch, sizeof(uint64_t), test_cmp_u64);
	ok = st == GI_OK && fetch != NULL && counted == ref_counted && nfetch == ref_nfetch &&
		memcmp(fetch, ref_fetch, sizeof(uint64_t) * nfetch) == 0;
	for (c = use; c < use + ncols && ok; c++)
		ok = same_totals(&cols[c], &ref[c]);
	snprintf(what, sizeof(what), "image_aggregate %s %s w=%d n=%zu ranges=%zu(kind %d) map=%d "
			 "delta=%zu inserted=%d/8 key=%d columns=%d%s%s", gi_engine_name(engine),
			 gi_structure_name(structure), key_bytes, n, nr, range_kind, map_kind, nd,
			 insert_share, (int) key_col, ncols, st == GI_OK ? "" : ": ",
			 st == GI_OK ? "" : err.message);
	test_record(&tr, ok, what);
	gi_free(fetch);

	/*
	 * One-entry ranges over a full map with every entry in it: the host
	 * twin that gathers the positions on the CPU engine's threads must
	 * give the same totals.
	 */
	if (range_kind == 4 && map_kind == 1 && engine == GI_ENGINE_CPU)
	{
		GiAggColumn pc[NROW_COLS + 1];
		int64_t		pcounted = 0;

		make_columns(pc);
		st = gi_host_aggregate_positions(&host, first, nr, pc + use, ncols, &pcounted, &err);
		ok = st == GI_OK && pcounted == ref_counted;
		for (c = use; c < use + ncols && ok; c++)
			ok = same_totals(&pc[c], &ref[c]);
		snprintf(what, sizeof(what), "host_aggregate_positions w=%d n=%zu positions=%zu delta=%zu key=%d%s%s",
				 key_bytes, n, nr, nd, (int) key_col, st == GI_OK ? "" : ": ",
				 st == GI_OK ? "" : err.message);
		test_record(&tr, ok, what);
	}

	/* after an insertion the GPU engine refuses a row column, and changes
	 * nothing then */
	if (engine == GI_ENGINE_GPU && image != NULL && insert_share > 0)
	{
		GiAggColumn rc[2];
		int64_t		before = counted;

		make_columns(rc);
		rc[0] = rc[1];
		fetch = NULL;
		st = gi_image_aggregate(image, &host, first, last, nr, full ? NULL : vm, vm_blocks,
								full, rc, 1, &counted, &fetch, &nfetch, &err);
		snprintf(what, sizeof(what), "image_aggregate gpu %s refuses a row column after insertion n=%zu",
				 gi_structure_name(structure), n);
		test_record(&tr, st == GI_ERR_UNSUPPORTED && counted == before && fetch == NULL &&
					rc[0].nonnull == 0, what);
	}
	gi_image_free(image);
	free(pairs);
	free(keys);
	free(tids);
	free(rows);
	free(bk);
	free(dk);
	free(drank);
	free(bt);
	free(dt);
	free(br);
	free(dr);
	free(first);
	free(last);
	free(gk);
	free(gt);
	free(gr);
	free(ref_fetch);
	free(vm);
}

/*
 * gi_image_aggregate's own argument checks: a range past the image, host
 * arrays of another length (CPU).
 */
static void
range_errors(void)
{
	GiBuildParams params = {GI_ENGINE_CPU, GI_STRUCT_BTREE, 8, 0};
	int64_t		keys[4] = {1, 2, 3, 4};
	uint64_t	tids[4] = {1 << 16, 2 << 16, 3 << 16, 4 << 16};
	uint64_t	first[1] = {1},
				last[1] = {5};
	GiAggEntries host;
	GiImage    *image = NULL;
	GiError		err;
	uint64_t   *fetch = NULL;
	size_t		nfetch = 0;
	int64_t		counted = 0;
	GiStatus	st;

	memset(&host, 0, sizeof(host));
	host.keys = keys;
	host.tids = tids;
	host.nbase = 4;
	if (gi_image_build(&params, keys, tids, 4, &image, &err) != GI_OK)
	{
		test_record(&tr, false, "image_aggregate errors: build");
		return;
	}
	st = gi_image_aggregate(image, &host, first, last, 1, NULL, 10, true, NULL, 0,
							&counted, &fetch, &nfetch, &err);
	test_record(&tr, st == GI_ERR_INVALID && fetch == NULL,
				"image_aggregate refuses a range past the image");
	last[0] = 4;
	host.nbase = 3;
	st = gi_image_aggregate(image, &host, first, last, 1, NULL, 10, true, NULL, 0,
							&counted, &fetch, &nfetch, &err);
	test_record(&tr, st == GI_ERR_INVALID && fetch == NULL,
				"image_aggregate refuses host arrays of another length");
	host.nbase = 4;
	st = gi_image_aggregate(image, &host, first, last, 1, NULL, 10, true, NULL, 0,
							&counted, &fetch, &nfetch, &err);
	test_record(&tr, st == GI_OK && counted == 3 && nfetch == 0 && fetch != NULL,
				"image_aggregate count(*) of three all-visible entries");
	gi_free(fetch);
	{
		GiIncludeColumns ic;

		memset(&ic, 0, sizeof(ic));
		ic.ncols = 1;
		ic.width[0] = 3;
		ic.values[0] = keys;
		test_record(&tr, gi_image_attach_columns(image, &ic, &err) == GI_ERR_INVALID,
					"image_attach_columns refuses a width of 3");
		ic.width[0] = 8;
		ic.values[0] = NULL;
		test_record(&tr, gi_image_attach_columns(image, &ic, &err) == GI_ERR_INVALID,
					"image_attach_columns refuses missing values");
	}
	gi_image_free(image);
}

/*
 * Every gi_image_aggregate case on one engine, up to GI_UNIT_MAX entries
 * when it is set (as test_engine's sizes: the sanitizer run keeps it low).
 */
static void
range_cases(GiEngineKind engine)
{
	static const size_t sizes[] = {0, 1, 5, 33, 1000, 4097, 70001, 300000};
	static const int widths[] = {2, 4, 8};
	const char *max_env = getenv("GI_UNIT_MAX");
	size_t		max_size = max_env && *max_env ? strtoull(max_env, NULL, 0) : SIZE_MAX;
	size_t		i;
	int			w,
				kind,
				map;

	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]) && sizes[i] <= max_size; i++)
		for (w = 0; w < 3; w++)
			for (kind = 0; kind < 5; kind++)
				for (map = 0; map < 4; map++)
				{
					/* maps: 0 random, 1 full and every entry in it, 2 full
					 * with entries past it, 3 an empty table */
					if (sizes[i] >= 70001 && (kind + map + w) % 3 != 0)
						continue;

					/*
					 * Overlapping ranges: the device makes its fetch list
					 * from a mask of positions, so an entry that several
					 * ranges hold is fetched once (the API takes disjoint
					 * ranges); its totals count each range.  Compare on a
					 * full map only there.
					 */
					if (kind == 4 && map != 1 && engine == GI_ENGINE_GPU)
						continue;
					range_case(engine, GI_STRUCT_BTREE, widths[w], sizes[i], kind, map,
							   engine == GI_ENGINE_CPU ? 1 + (int) test_below(&tr, 40) : 0,
							   engine == GI_ENGINE_GPU ? (kind + map) % 3 : 0,
							   (kind + map + w) % 4 != 0);
				}
	/* the vEB: the rows and count(*) on the GPU (its keys are not held by
	 * position) */
	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]) && sizes[i] <= max_size; i++)
		range_case(engine, GI_STRUCT_VEB, 4, sizes[i], (int) (i % 4), (int) (i % 3), 5, 0,
				   engine == GI_ENGINE_CPU);
}

/* Run every gi_host_aggregate test; returns the number of failures. */
int
gi_test_agg_main(void)
{
	static const size_t sizes[] = {0, 1, 2, 7, 4095, 4096, 4097, 10000, 70001, 300000};
	static const int threads[] = {1, 3, 7};
	size_t		i;
	int			t;

	test_run_start(&tr, "agg", 7);
	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
		for (t = 0; t < 3; t++)
		{
			agg_case(sizes[i], 1000, 1010, threads[t], false, 1);
			agg_case(sizes[i], 0, 5, threads[t], false, 1); /* nothing all-visible */
			/* all-visible, some entries past the table's end */
			agg_case(sizes[i], 1000, 1010, threads[t], true, 1);
			/* all-visible and every entry in it: the dense path throughout */
			agg_case(sizes[i], 1000, 999, threads[t], true, 0);
			agg_case(sizes[i], 1000, 999, threads[t], true, 2);
			agg_case(sizes[i], 0, 0, threads[t], true, 1);	/* an empty table */
		}
	range_errors();
	range_cases(GI_ENGINE_CPU);
	if (gi_gpu_available(NULL, 0))
	{
		range_cases(GI_ENGINE_GPU);
		printf("test_agg: GPU twin of gi_image_aggregate run\n");
	}
	else
		printf("test_agg: GPU twin of gi_image_aggregate skipped (no device)\n");
	printf("test_agg: %ld passed, %ld failed\n", tr.passed, tr.failed);
	return (int) (tr.failed > 0);
}

/* The counts of the last gi_test_agg_main run (for test_engine's total). */
void
gi_test_agg_counts(long *passed, long *failed)
{
	*passed = tr.passed;
	*failed = tr.failed;
}
