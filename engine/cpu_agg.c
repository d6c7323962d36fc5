/*
 * cpu_agg.c - adding up index entries on the host (gi_host_aggregate,
 * engine.h), for GpuIndexAgg on either engine.
 *
 * The entries are cut into one slice per thread (cpu_pool.h).  A slice is
 * walked in blocks of AGG_BLOCK entries: one pass picks the entries whose
 * heap block is set in the visibility bitmap and writes the others' TIDs
 * out (no branch per entry; with vm_full a compare against the table's
 * length instead of a bitmap read), then one loop per column, specialized
 * by the column's kind, adds the picked entries' values into totals kept in
 * registers (NULLs without a branch either).  A block whose entries are all
 * picked is walked as one contiguous run.  The slices' totals are merged
 * and their TIDs made contiguous at the end.  No PostgreSQL headers here.
 *
 * gi_cpu_aggregate (gi_image_aggregate for CPU images) is the same loop over
 * position ranges: each range's delta and base shares, each contiguous in
 * its host arrays, in chunks of AGG_CHUNK entries.  The per-entry
 * arithmetic (visibility, halves) is engine/agg_twin.h, shared with the GPU
 * twin (cuda/gpu_agg.cu).
 */
#include "engine_impl.h"
#include "agg_twin.h"
#include "cpu_pool.h"

#include <math.h>
#include <stdlib.h>
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
	bool		vm_full;		/* every block below vm_blocks is set */
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
	return gi_agg_block_visible(job->vm, job->vm_blocks, job->vm_full, blk);
}

/* Read a value of type T at byte offset off of a row. */
#define ROW_VALUE(T, row, off) \
	({ T v_; memcpy(&v_, (row) + (off), sizeof(T)); v_; })

/* The row of the j-th picked entry: sel[j], or j itself when dense. */
#define PICKED(dense, sel, j) ((dense) ? (size_t) (j) : (size_t) (sel)[j])

/*
 * Add up an integer row column of kind kind over n picked entries (dense:
 * all of the first n, sel unused).  Always inlined with constant kind and
 * dense, so that each combination is its own loop with the totals in
 * registers: a NULL value counts 0 towards the sum and the non-NULL count
 * and the neutral value towards min/max.  Values of up to 32 bits are
 * summed in 64 bits; 64-bit values as their high (signed) and low
 * (unsigned) 32-bit halves in two 64-bit sums, joined into 128 bits at the
 * end: neither can overflow over AGG_BLOCK entries, and no 128-bit add is
 * carried through the loop.
 */
static inline __attribute__((always_inline)) void
int_rows_run(GiAggColumn *col, GiAggKind kind, bool dense, const char *rows,
			 int row_bytes, const int32_t *sel, int n)
{
	const int	off = col->offset;
	const uint16_t bit = col->nullbit;
	int64_t		nonnull = 0,
				sum = 0,		/* small kinds; high halves of int64 */
				mn = col->imin,
				mx = col->imax;
	uint64_t	sum_lo = 0;		/* low halves of int64 */
	int			j;

	for (j = 0; j < n; j++)
	{
		const char *row = rows + PICKED(dense, sel, j) * (size_t) row_bytes;
		bool		isnull = (ROW_VALUE(uint16_t, row, 0) & bit) != 0;
		int64_t		x;

		switch (kind)
		{
			case GI_AGG_BOOL:
				x = row[off] ? 1 : 0;
				break;
			case GI_AGG_INT16:
				x = ROW_VALUE(int16_t, row, off);
				break;
			case GI_AGG_INT32:
				x = ROW_VALUE(int32_t, row, off);
				break;
			case GI_AGG_UINT32:
				x = ROW_VALUE(uint32_t, row, off);
				break;
			default:
				x = ROW_VALUE(int64_t, row, off);
				break;
		}
		nonnull += !isnull;
		mn = (isnull || x >= mn) ? mn : x;
		mx = (isnull || x <= mx) ? mx : x;
		x = isnull ? 0 : x;
		if (kind == GI_AGG_INT64)
		{
			sum += gi_agg_hi(x);
			sum_lo += gi_agg_lo(x);
		}
		else
			sum += x;
	}
	col->nonnull += nonnull;
	if (kind == GI_AGG_INT64)
		col->sum += gi_agg_join(sum, sum_lo);
	else
		col->sum += sum;
	col->imin = mn;
	col->imax = mx;
}

/* int_rows_run for the picked entries sel, or the first n when sel is NULL. */
static inline __attribute__((always_inline)) void
add_int_rows(GiAggColumn *col, GiAggKind kind, const char *rows, int row_bytes,
			 const int32_t *sel, int n)
{
	if (sel == NULL)
		int_rows_run(col, kind, true, rows, row_bytes, NULL, n);
	else
		int_rows_run(col, kind, false, rows, row_bytes, sel, n);
}

/*
 * Add up a float row column (float4 when is4, else float8) over n picked
 * entries (dense as int_rows_run): non-NULL values counted, NaNs counted
 * apart, min/max of the others.
 */
static inline __attribute__((always_inline)) void
float_rows_run(GiAggColumn *col, bool is4, bool dense, const char *rows,
			   int row_bytes, const int32_t *sel, int n)
{
	const int	off = col->offset;
	const uint16_t bit = col->nullbit;
	int64_t		nonnull = 0,
				nnan = 0;
	double		mn = col->fmin,
				mx = col->fmax;
	int			j;

	for (j = 0; j < n; j++)
	{
		const char *row = rows + PICKED(dense, sel, j) * (size_t) row_bytes;
		bool		isnull = (ROW_VALUE(uint16_t, row, 0) & bit) != 0;
		double		x = is4 ? (double) ROW_VALUE(float, row, off) : ROW_VALUE(double, row, off);

		nonnull += !isnull;
		nnan += !isnull && isnan(x);
		/* (a NaN compares false: it never replaces mn or mx) */
		mn = (!isnull && x < mn) ? x : mn;
		mx = (!isnull && x > mx) ? x : mx;
	}
	col->nonnull += nonnull;
	col->nnan += nnan;
	col->fmin = mn;
	col->fmax = mx;
}

/* float_rows_run for the picked entries sel, or the first n when sel is NULL. */
static inline __attribute__((always_inline)) void
add_float_rows(GiAggColumn *col, bool is4, const char *rows, int row_bytes,
			   const int32_t *sel, int n)
{
	if (sel == NULL)
		float_rows_run(col, is4, true, rows, row_bytes, NULL, n);
	else
		float_rows_run(col, is4, false, rows, row_bytes, sel, n);
}

/* Add up a row column over the picked entries (sel, or all n when NULL). */
static void
add_row_column(GiAggColumn *col, const char *rows, int row_bytes,
			   const int32_t *sel, int n)
{
	switch (col->kind)
	{
		case GI_AGG_BOOL:
			add_int_rows(col, GI_AGG_BOOL, rows, row_bytes, sel, n);
			break;
		case GI_AGG_INT16:
			add_int_rows(col, GI_AGG_INT16, rows, row_bytes, sel, n);
			break;
		case GI_AGG_INT32:
			add_int_rows(col, GI_AGG_INT32, rows, row_bytes, sel, n);
			break;
		case GI_AGG_UINT32:
			add_int_rows(col, GI_AGG_UINT32, rows, row_bytes, sel, n);
			break;
		case GI_AGG_INT64:
			add_int_rows(col, GI_AGG_INT64, rows, row_bytes, sel, n);
			break;
		case GI_AGG_FLOAT4:
			add_float_rows(col, true, rows, row_bytes, sel, n);
			break;
		case GI_AGG_FLOAT8:
			add_float_rows(col, false, rows, row_bytes, sel, n);
			break;
		case GI_AGG_KEY:
			break;
	}
}

/*
 * Add up the key over n picked entries (dense as int_rows_run), the sum in
 * halves as there.
 */
static inline __attribute__((always_inline)) void
key_run(GiAggColumn *col, bool dense, const int64_t *keys, const int32_t *sel, int n)
{
	int64_t		mn = col->imin,
				mx = col->imax,
				sum_hi = 0;
	uint64_t	sum_lo = 0;
	int			j;

	for (j = 0; j < n; j++)
	{
		int64_t		x = keys[PICKED(dense, sel, j)];

		sum_hi += gi_agg_hi(x);
		sum_lo += gi_agg_lo(x);
		mn = x < mn ? x : mn;
		mx = x > mx ? x : mx;
	}
	col->nonnull += n;
	col->sum += gi_agg_join(sum_hi, sum_lo);
	col->imin = mn;
	col->imax = mx;
}

/* Add up the key over the picked entries (sel, or the first n when NULL). */
static void
add_key_column(GiAggColumn *col, const int64_t *keys, const int32_t *sel, int n)
{
	if (sel == NULL)
		key_run(col, true, keys, NULL, n);
	else
		key_run(col, false, keys, sel, n);
}

/* Totals that add nothing (the caller's starting values). */
static void
reset_column(GiAggColumn *col, const GiAggColumn *like)
{
	memset(col, 0, sizeof(*col));
	col->kind = like->kind;
	col->offset = like->offset;
	col->nullbit = like->nullbit;
	col->column = like->column;
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

/*
 * Pick the entries of one block whose page is set in the bitmap: their
 * indexes into sel, the others' TIDs onto out (both without a branch per
 * entry).  Returns how many were picked; *nout counts the others.
 */
static int
pick_block(const AggJob *job, const uint64_t *tids, size_t m, int32_t *sel,
		   uint64_t *out, size_t *nout)
{
	size_t		nf = 0;
	int			nsel = 0;
	size_t		i;

	if (job->vm_full)
	{
		/* every page below vm_blocks is all-visible: one compare an entry */
		const uint64_t lim = job->vm_blocks;

		for (i = 0; i < m; i++)
		{
			bool		vis = gi_agg_block_visible(NULL, lim, true, gi_agg_tid_block(tids[i]));

			sel[nsel] = (int32_t) i;
			out[nf] = tids[i];
			nsel += vis;
			nf += !vis;
		}
	}
	else
	{
		for (i = 0; i < m; i++)
		{
			bool		vis = block_set(job, gi_agg_tid_block(tids[i]));

			sel[nsel] = (int32_t) i;
			out[nf] = tids[i];
			nsel += vis;
			nf += !vis;
		}
	}
	*nout = nf;
	return nsel;
}

/*
 * One slice [begin, end): pick, write out, add up, block by block.  A block
 * whose entries are all picked (the common case on a VACUUMed table) is
 * added up as one contiguous run, without the index list.
 */
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
		size_t		nout = 0;
		int			nsel;
		const int32_t *picked;

		/* (fetch has room for the slice: at most at - begin written so far) */
		nsel = pick_block(job, job->tids + at, m, sel, job->fetch + begin + nfetch, &nout);
		nfetch += nout;
		counted += nsel;
		picked = (size_t) nsel == m ? NULL : sel;
		for (c = 0; c < job->ncols; c++)
		{
			if (cols[c].kind == GI_AGG_KEY)
				add_key_column(&cols[c], job->keys + at, picked, nsel);
			else
				add_row_column(&cols[c], job->rows + at * job->row_bytes,
							   job->row_bytes, picked, nsel);
		}
	}
	job->slice_counted[slice] = counted;
	job->slice_fetch[slice] = nfetch;
}

/* Add up entries on the host (engine.h). */
GiStatus
gi_host_aggregate(const int64_t *keys, const uint64_t *tids, const char *rows,
				  int row_bytes, size_t n, const uint8_t *vm, uint64_t vm_blocks,
				  bool vm_full, GiAggColumn *cols, int ncols, int64_t *counted,
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
	if (tids == NULL || fetch == NULL || (vm == NULL && vm_blocks > 0 && !vm_full))
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
	job.vm_full = vm_full;
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

/* ---------- single entries at positions (gi_host_aggregate_positions) ---------- */

/* Positions a thread takes at the least (each a cache miss or two). */
#define GATHER_MIN_PER_THREAD (1 << 14)

/* Positions ahead whose entry is prefetched. */
#define GATHER_PREFETCH 32

/* What every slice of gi_host_aggregate_positions shares. */
typedef struct GatherJob
{
	const GiAggEntries *h;
	const uint64_t *pos;
	size_t		n;
	const GiAggColumn *cols;
	int			ncols;
	bool		need_keys;
	bool		need_rows;
	GiAggColumn *slice_cols;	/* nslices * ncols */
	int			nslices;
	bool		oom[GI_CPU_MAX_THREADS];
} GatherJob;

/* Delta entries whose position is below pos. */
static size_t
delta_before(const GiAggEntries *h, uint64_t pos)
{
	size_t		lo = 0,
				hi = h->ndelta;

	while (lo < hi)
	{
		size_t		mid = lo + (hi - lo) / 2;

		if ((uint64_t) h->drank[mid] < pos)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Where position p lives: index into the delta arrays (*in_delta) or the base. */
static size_t
locate_entry(const GiAggEntries *h, uint64_t p, bool *in_delta)
{
	size_t		d = h->ndelta > 0 ? delta_before(h, p) : 0;

	*in_delta = d < h->ndelta && (uint64_t) h->drank[d] == p;
	return *in_delta ? d : p - d;
}

/*
 * One slice: gather the slice's entries a block at a time (the key and
 * the row each reads, prefetched GATHER_PREFETCH positions ahead), then
 * add the block up as gi_host_aggregate's slices do.
 */
static void
gather_slice(void *arg, int slice)
{
	GatherJob  *job = (GatherJob *) arg;
	const GiAggEntries *h = job->h;
	GiAggColumn *cols = job->slice_cols + (size_t) slice * job->ncols;
	int			rb = h->row_bytes;
	int64_t		keys[AGG_BLOCK];
	char	   *rows = NULL;
	size_t		begin,
				end,
				at;
	int			c;

	gi_cpu_slice(job->n, job->nslices, slice, &begin, &end);
	for (c = 0; c < job->ncols; c++)
		reset_column(&cols[c], &job->cols[c]);
	if (job->need_rows && (rows = malloc((size_t) AGG_BLOCK * rb)) == NULL)
	{
		job->oom[slice] = true;
		return;
	}
	for (at = begin; at < end; at += AGG_BLOCK)
	{
		size_t		m = end - at < AGG_BLOCK ? end - at : AGG_BLOCK;
		size_t		i;

		for (i = 0; i < m; i++)
		{
			bool		in_delta;
			size_t		j;

			if (at + i + GATHER_PREFETCH < end && h->ndelta == 0)
			{
				uint64_t	q = job->pos[at + i + GATHER_PREFETCH];

				if (job->need_keys)
					__builtin_prefetch(h->keys + q);
				if (job->need_rows)
					__builtin_prefetch(h->rows + q * (size_t) rb);
			}
			j = locate_entry(h, job->pos[at + i], &in_delta);
			if (job->need_keys)
				keys[i] = in_delta ? h->dkeys[j] : h->keys[j];
			if (job->need_rows)
				memcpy(rows + i * (size_t) rb,
					   (in_delta ? h->drows : h->rows) + j * (size_t) rb, rb);
		}
		for (c = 0; c < job->ncols; c++)
		{
			if (cols[c].kind == GI_AGG_KEY)
				add_key_column(&cols[c], keys, NULL, (int) m);
			else
				add_row_column(&cols[c], rows, rb, NULL, (int) m);
		}
	}
	free(rows);
}

/* Add up the entries at positions, one entry each (engine.h). */
GiStatus
gi_host_aggregate_positions(const GiAggEntries *h, const uint64_t *pos, size_t n,
							GiAggColumn *cols, int ncols, int64_t *counted,
							GiError *err)
{
	GatherJob	job;
	GiAggColumn slice_cols[GI_CPU_MAX_THREADS * 16];
	int			s,
				c;

	gi_clear_error(err);
	if (n == 0)
		return GI_OK;
	if (ncols > 16 || ncols < 0)
		return gi_set_error(err, GI_ERR_INVALID, "at most 16 aggregated columns");
	memset(&job, 0, sizeof(job));
	for (c = 0; c < ncols; c++)
	{
		if (cols[c].kind == GI_AGG_KEY)
			job.need_keys = true;
		else
			job.need_rows = true;
	}
	if ((job.need_keys && (h->keys == NULL || (h->ndelta > 0 && h->dkeys == NULL))) ||
		(job.need_rows && (h->rows == NULL || h->row_bytes <= 0 ||
						   (h->ndelta > 0 && h->drows == NULL))))
		return gi_set_error(err, GI_ERR_INVALID, "missing aggregation arrays");
	job.h = h;
	job.pos = pos;
	job.n = n;
	job.cols = cols;
	job.ncols = ncols;
	job.slice_cols = slice_cols;
	job.nslices = gi_cpu_threads_for(n, GATHER_MIN_PER_THREAD);
	gi_cpu_run_tasks(job.nslices, gather_slice, &job);
	for (s = 0; s < job.nslices; s++)
		if (job.oom[s])
			return gi_set_error(err, GI_ERR_HOST_OOM, "out of host memory for a gather block");
	for (s = 0; s < job.nslices; s++)
		for (c = 0; c < ncols; c++)
			merge_column(&cols[c], &slice_cols[s * ncols + c]);
	*counted += (int64_t) n;
	return GI_OK;
}

/* ---------- position ranges (gi_image_aggregate, CPU engine) ---------- */

/* Entries handed to gi_host_aggregate at a time (bounds the fetch room). */
#define AGG_CHUNK (1 << 22)

/* A growing fetch list. */
typedef struct FetchList
{
	uint64_t   *p;
	size_t		n;
	size_t		cap;
} FetchList;

/* Room in the list for m more TIDs. */
static GiStatus
fetch_reserve(FetchList *f, size_t m, GiError *err)
{
	size_t		cap;
	uint64_t   *p;

	if (f->n + m <= f->cap)
		return GI_OK;
	cap = f->cap * 2 > f->n + m ? f->cap * 2 : f->n + m;
	cap = cap < 1024 ? 1024 : cap;
	p = realloc(f->p, cap * sizeof(uint64_t));
	if (p == NULL)
		return gi_set_error(err, GI_ERR_HOST_OOM, "out of host memory for %zu heap fetches", cap);
	f->p = p;
	f->cap = cap;
	return GI_OK;
}

/* Add up m consecutive entries of one part of the host arrays. */
static GiStatus
agg_share(const GiAggEntries *h, const int64_t *keys, const uint64_t *tids,
		  const char *rows, size_t m, const uint8_t *vm, uint64_t vm_blocks,
		  bool vm_full, GiAggColumn *cols, int ncols, int64_t *counted,
		  FetchList *f, GiError *err)
{
	size_t		done;

	for (done = 0; done < m; done += AGG_CHUNK)
	{
		size_t		k = m - done < AGG_CHUNK ? m - done : AGG_CHUNK;
		size_t		nf = 0;
		GiStatus	st;

		if ((st = fetch_reserve(f, k, err)) != GI_OK)
			return st;
		st = gi_host_aggregate(keys ? keys + done : NULL, tids + done,
							   rows ? rows + done * (size_t) h->row_bytes : NULL,
							   h->row_bytes, k, vm, vm_blocks, vm_full, cols, ncols,
							   counted, f->p + f->n, &nf, err);
		if (st != GI_OK)
			return st;
		f->n += nf;
	}
	return GI_OK;
}

/*
 * Add up position ranges over the host arrays (engine_impl.h): each
 * range's delta share and base share, each contiguous in its arrays (the
 * totals do not depend on the order), into copies of the totals that are
 * stored only when every range is done.
 */
GiStatus
gi_cpu_aggregate(const GiAggEntries *h, const uint64_t *first, const uint64_t *last,
				 size_t nranges, const uint8_t *vm, uint64_t vm_blocks, bool vm_full,
				 GiAggColumn *cols, int ncols, int64_t *counted, uint64_t **fetch,
				 size_t *nfetch, GiError *err)
{
	GiAggColumn work[16];
	int64_t		got = 0;
	FetchList	f = {NULL, 0, 0};
	GiStatus	st = GI_OK;
	size_t		r;
	int			c;

	if (h->tids == NULL || (h->ndelta > 0 && h->dtids == NULL))
		return gi_set_error(err, GI_ERR_INVALID, "missing aggregation arrays");
	for (c = 0; c < ncols; c++)
		if ((cols[c].kind == GI_AGG_KEY && (h->keys == NULL || (h->ndelta > 0 && h->dkeys == NULL))) ||
			(cols[c].kind != GI_AGG_KEY && (h->rows == NULL || (h->ndelta > 0 && h->drows == NULL))))
			return gi_set_error(err, GI_ERR_INVALID, "missing aggregation arrays");
	if (ncols > 0)
		memcpy(work, cols, sizeof(GiAggColumn) * ncols);
	for (r = 0; r < nranges && st == GI_OK; r++)
	{
		size_t		d0 = 0,
					d1 = 0;

		if (last[r] <= first[r])
			continue;
		if (h->ndelta > 0)
		{
			d0 = delta_before(h, first[r]);
			d1 = delta_before(h, last[r]);
			if (d1 > d0)
				st = agg_share(h, h->dkeys ? h->dkeys + d0 : NULL, h->dtids + d0,
							   h->drows ? h->drows + d0 * (size_t) h->row_bytes : NULL,
							   d1 - d0, vm, vm_blocks, vm_full, work, ncols, &got, &f, err);
		}
		if (st == GI_OK && (last[r] - d1) > (first[r] - d0))
		{
			size_t		b0 = first[r] - d0;

			st = agg_share(h, h->keys ? h->keys + b0 : NULL, h->tids + b0,
						   h->rows ? h->rows + b0 * (size_t) h->row_bytes : NULL,
						   (last[r] - d1) - b0, vm, vm_blocks, vm_full, work, ncols, &got,
						   &f, err);
		}
	}
	if (st == GI_OK && f.p == NULL)
		st = fetch_reserve(&f, 1, err);
	if (st != GI_OK)
	{
		free(f.p);
		return st;
	}
	if (ncols > 0)
		memcpy(cols, work, sizeof(GiAggColumn) * ncols);
	*counted += got;
	*fetch = f.p;
	*nfetch = f.n;
	return GI_OK;
}
