/*
 * test_agg.c - unit tests of gi_host_aggregate (GpuIndexAgg's adding up,
 * engine/cpu_agg.c) against a plain serial loop.
 *
 * Random entries (keys, TIDs over more heap blocks than the visibility
 * bitmap covers, rows with a value of every kind and random NULLs, NaNs and
 * infinities), a random bitmap; every kind of column at once; 1, 3 and 7
 * threads (GI_CPU_THREADS), so the slices' merge and the moving of their
 * TIDs are exercised at every size.  The entry point is
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
