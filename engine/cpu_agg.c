/*
 * cpu_agg.c - adding up index entries on the host (gi_host_aggregate,
 * engine.h), for GpuIndexAgg on either engine.
 *
 * The entries are cut into one slice per thread (cpu_pool.h).  A slice is
 * walked in blocks of AGG_BLOCK entries: one pass picks the entries whose
 * heap block is set in the visibility bitmap and writes the others' TIDs
 * out, then one tight loop per column adds the picked entries' values into
 * the slice's own totals.  The slices' totals are merged and their TIDs
 * made contiguous at the end.  No PostgreSQL headers here.
 */
#include "engine.h"
#include "engine_util.h"
#include "cpu_pool.h"

#include <math.h>
#include <string.h>

/* Entries per pass of the column loops. */
#define AGG_BLOCK 4096

/* Entries below which a slice is not worth a thread. */
#define AGG_MIN_PER_THREAD (1 << 16)

/* The work of one call, shared by its slices. */
typedef struct AggJob
{
	const int64_t *keys;
	const uint64_t *tids;
	const char *rows;
	int			row_bytes;
	size_t		n;
	const uint8_t *vm;
	uint64_t	vm_blocks;
	const GiAggColumn *cols;	/* kinds and offsets */
	int			ncols;
	int			nslices;
	GiAggColumn *slice_cols;	/* nslices * ncols totals */
	int64_t		slice_counted[GI_CPU_MAX_THREADS];
	size_t		slice_fetch[GI_CPU_MAX_THREADS];
	uint64_t   *fetch;			/* slice i writes from its first entry on */
} AggJob;

/* Is heap block blk set in the visibility bitmap? */
static inline bool
block_set(const AggJob *job, uint64_t blk)
{
	return blk < job->vm_blocks && ((job->vm[blk >> 2] >> ((blk & 3) << 1)) & 1) != 0;
}

/* Add one integer value to a column's totals. */
static inline void
add_int(GiAggColumn *col, int64_t x)
{
	col->nonnull++;
	col->sum += x;
	if (x < col->imin)
		col->imin = x;
	if (x > col->imax)
		col->imax = x;
}

/* Add one float value to a column's totals (NaNs counted apart). */
static inline void
add_float(GiAggColumn *col, double x)
{
	col->nonnull++;
	if (isnan(x))
		col->nnan++;
	else
	{
		if (x < col->fmin)
			col->fmin = x;
		if (x > col->fmax)
			col->fmax = x;
	}
}

/* Read a value of type T at byte offset off of a row. */
#define ROW_VALUE(T, row, off) \
	({ T v_; memcpy(&v_, (row) + (off), sizeof(T)); v_; })

/* Add up a row column over the picked entries (sel, relative to rows). */
static void
add_row_column(GiAggColumn *col, const char *rows, int row_bytes,
			   const int32_t *sel, int nsel)
{
	int			j;

	for (j = 0; j < nsel; j++)
	{
		const char *row = rows + (size_t) sel[j] * row_bytes;
		uint16_t	nulls;

		memcpy(&nulls, row, sizeof(nulls));
		if (nulls & col->nullbit)
			continue;
		switch (col->kind)
		{
			case GI_AGG_BOOL:
				add_int(col, row[col->offset] ? 1 : 0);
				break;
			case GI_AGG_INT16:
				add_int(col, ROW_VALUE(int16_t, row, col->offset));
				break;
			case GI_AGG_INT32:
				add_int(col, ROW_VALUE(int32_t, row, col->offset));
				break;
			case GI_AGG_UINT32:
				add_int(col, ROW_VALUE(uint32_t, row, col->offset));
				break;
			case GI_AGG_INT64:
				add_int(col, ROW_VALUE(int64_t, row, col->offset));
				break;
			case GI_AGG_FLOAT4:
				add_float(col, ROW_VALUE(float, row, col->offset));
				break;
			case GI_AGG_FLOAT8:
				add_float(col, ROW_VALUE(double, row, col->offset));
				break;
			case GI_AGG_KEY:
				break;
		}
	}
}

/* Add up the key over the picked entries. */
static void
add_key_column(GiAggColumn *col, const int64_t *keys, const int32_t *sel, int nsel)
{
	int			j;

	for (j = 0; j < nsel; j++)
		add_int(col, keys[sel[j]]);
}

/* Totals that add nothing (the caller's starting values). */
static void
reset_column(GiAggColumn *col, const GiAggColumn *like)
{
	memset(col, 0, sizeof(*col));
	col->kind = like->kind;
	col->offset = like->offset;
	col->nullbit = like->nullbit;
	col->imin = INT64_MAX;
	col->imax = INT64_MIN;
	col->fmin = INFINITY;
	col->fmax = -INFINITY;
}

/* Fold totals b into a. */
static void
merge_column(GiAggColumn *a, const GiAggColumn *b)
{
	a->nonnull += b->nonnull;
	a->sum += b->sum;
	a->nnan += b->nnan;
	if (b->imin < a->imin)
		a->imin = b->imin;
	if (b->imax > a->imax)
		a->imax = b->imax;
	if (b->fmin < a->fmin)
		a->fmin = b->fmin;
	if (b->fmax > a->fmax)
		a->fmax = b->fmax;
}

/* One slice [begin, end): pick, write out, add up, block by block. */
static void
agg_slice(void *arg, int slice)
{
	AggJob	   *job = (AggJob *) arg;
	GiAggColumn *cols = job->slice_cols + (size_t) slice * job->ncols;
	int32_t		sel[AGG_BLOCK];
	size_t		begin,
				end,
				at,
				nfetch = 0;
	int64_t		counted = 0;
	int			c;

	gi_cpu_slice(job->n, job->nslices, slice, &begin, &end);
	for (c = 0; c < job->ncols; c++)
		reset_column(&cols[c], &job->cols[c]);
	for (at = begin; at < end; at += AGG_BLOCK)
	{
		size_t		m = end - at < AGG_BLOCK ? end - at : AGG_BLOCK;
		const uint64_t *tids = job->tids + at;
		int			nsel = 0;
		size_t		i;

		for (i = 0; i < m; i++)
		{
			if (block_set(job, tids[i] >> 16))
				sel[nsel++] = (int32_t) i;
			else
				job->fetch[begin + nfetch++] = tids[i];
		}
		counted += nsel;
		for (c = 0; c < job->ncols; c++)
		{
			if (cols[c].kind == GI_AGG_KEY)
				add_key_column(&cols[c], job->keys + at, sel, nsel);
			else
				add_row_column(&cols[c], job->rows + at * job->row_bytes,
							   job->row_bytes, sel, nsel);
		}
	}
	job->slice_counted[slice] = counted;
	job->slice_fetch[slice] = nfetch;
}

/* Add up entries on the host (engine.h). */
GiStatus
gi_host_aggregate(const int64_t *keys, const uint64_t *tids, const char *rows,
				  int row_bytes, size_t n, const uint8_t *vm, uint64_t vm_blocks,
				  GiAggColumn *cols, int ncols, int64_t *counted,
				  uint64_t *fetch, size_t *nfetch, GiError *err)
{
	AggJob		job;
	GiAggColumn slice_cols[GI_CPU_MAX_THREADS * 16];
	int			s,
				c;

	gi_clear_error(err);
	*nfetch = 0;
	if (n == 0)
		return GI_OK;
	if (ncols > 16 || ncols < 0)
		return gi_set_error(err, GI_ERR_INVALID, "at most 16 aggregated columns");
	if (tids == NULL || fetch == NULL || (vm == NULL && vm_blocks > 0))
		return gi_set_error(err, GI_ERR_INVALID, "missing aggregation arrays");
	for (c = 0; c < ncols; c++)
		if ((cols[c].kind == GI_AGG_KEY && keys == NULL) ||
			(cols[c].kind != GI_AGG_KEY && rows == NULL))
			return gi_set_error(err, GI_ERR_INVALID, "missing aggregation arrays");
	memset(&job, 0, sizeof(job));
	job.keys = keys;
	job.tids = tids;
	job.rows = rows;
	job.row_bytes = row_bytes;
	job.n = n;
	job.vm = vm;
	job.vm_blocks = vm_blocks;
	job.cols = cols;
	job.ncols = ncols;
	job.fetch = fetch;
	job.slice_cols = slice_cols;
	job.nslices = gi_cpu_threads_for(n, AGG_MIN_PER_THREAD);
	gi_cpu_run_tasks(job.nslices, agg_slice, &job);

	/* Merge in slice order; move each slice's TIDs down behind the last. */
	for (s = 0; s < job.nslices; s++)
	{
		size_t		begin,
					end;

		gi_cpu_slice(n, job.nslices, s, &begin, &end);
		for (c = 0; c < ncols; c++)
			merge_column(&cols[c], &slice_cols[s * ncols + c]);
		*counted += job.slice_counted[s];
		if (begin != *nfetch && job.slice_fetch[s] > 0)
			memmove(fetch + *nfetch, fetch + begin, sizeof(uint64_t) * job.slice_fetch[s]);
		*nfetch += job.slice_fetch[s];
	}
	return GI_OK;
}
