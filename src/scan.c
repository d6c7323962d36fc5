/*
 * scan.c - index scans and their cost estimate: the scan keys become one
 * batch (points of an = ANY array, or one interval) answered by the engine;
 * the hits are position ranges in (key, TID) order, walked forward or
 * backward.
 */
#include "gpuidx.h"
#include "keyinterval.h"

#include <math.h>

#include "access/relscan.h"
#include "access/skey.h"
#include "access/stratnum.h"
#include "catalog/pg_type.h"
#include "miscadmin.h"
#include "nodes/tidbitmap.h"
#include "optimizer/optimizer.h"
#include "utils/array.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/selfuncs.h"
#include "utils/snapmgr.h"
#include "utils/snapmgr.h"

typedef struct GpuidxScanOpaqueData
{
	GpuidxImageData *img;		/* pinned image */
	bool		computed;		/* ranges computed for the current keys */
	int64		nranges;
	uint64	   *rfirst;			/* hit ranges, ascending, disjoint */
	uint64	   *rlast;
	int64		cur_range;		/* -1: before the start; nranges: past the end */
	int64		cur_pos;
	IndexTuple	itup;			/* key returned to an index-only scan */
} GpuidxScanOpaqueData;

typedef GpuidxScanOpaqueData *GpuidxScanOpaque;

/*
 * Cost: an index probe batch costs one pass over the cached image, not one
 * descent per array element.  A fixed start-up charge (reading the metapage,
 * checking the cache) keeps single-key lookups on btree where both exist.
 * (Here, not in handler.c: GpuIndexScan's planner compares an index's cost
 * function with this one to recognize gpuidx indexes.)
 */
void
gpuidx_costestimate(PlannerInfo *root, IndexPath *path, double loop_count,
					Cost *indexStartupCost, Cost *indexTotalCost,
					Selectivity *indexSelectivity, double *indexCorrelation,
					double *indexPages)
{
	IndexOptInfo *index = path->indexinfo;
	GenericCosts costs;
	double		nprobes = 1.0;
	double		entries = Max(index->tuples, 1.0);
	double		per_probe;
	ListCell   *lc;

	MemSet(&costs, 0, sizeof(costs));
	genericcostestimate(root, path, loop_count, &costs);

	/* Count the probes of = ANY(array) clauses: they are one batch. */
	foreach(lc, path->indexclauses)
	{
		IndexClause *iclause = lfirst_node(IndexClause, lc);
		ListCell   *lc2;

		foreach(lc2, iclause->indexquals)
		{
			RestrictInfo *rinfo = lfirst_node(RestrictInfo, lc2);

			if (IsA(rinfo->clause, ScalarArrayOpExpr))
			{
				ScalarArrayOpExpr *saop = (ScalarArrayOpExpr *) rinfo->clause;
				Node	   *other = (Node *) lsecond(saop->args);

				nprobes *= Max(estimate_array_length(other), 1);
			}
		}
	}

	/*
	 * Fixed cost of a batch: reading the metapage and checking the image
	 * (about a random page), plus dispatching to the engine, which on a GPU
	 * is a launch and two copies.  A lone key is cheaper through btree.
	 */
	per_probe = cpu_operator_cost * (log2(entries) + 1.0) * 0.25;
	*indexStartupCost = random_page_cost + 400.0 * cpu_operator_cost +
		(gpuidx_engine_setting != GPUIDX_ENGINE_CPU ? 2000.0 * cpu_operator_cost : 0.0) +
		nprobes * per_probe;
	*indexTotalCost = *indexStartupCost +
		costs.numIndexTuples * cpu_index_tuple_cost;
	*indexSelectivity = costs.indexSelectivity;
	*indexCorrelation = 0.0;
	*indexPages = costs.numIndexPages;
}

/* Start a scan. */
IndexScanDesc
gpuidx_beginscan(Relation index, int nkeys, int norderbys)
{
	IndexScanDesc scan = RelationGetIndexScan(index, nkeys, norderbys);
	GpuidxScanOpaque so = palloc0(sizeof(GpuidxScanOpaqueData));

	so->cur_range = -1;
	scan->opaque = so;
	return scan;
}

/*
 * Forget computed hits, and the pinned image unless keep_image.  A rescan
 * under an MVCC snapshot keeps it: every entry the snapshot can see was in
 * the index when the image was loaded (later entries belong to rows the
 * snapshot cannot see), and the pin's interlock (cache.c) already keeps
 * VACUUM from removing entries under it.  A nested loop's rescans then
 * cost a search, not a refresh of the image.
 */
static void
reset_scan(GpuidxScanOpaque so, bool keep_image)
{
	if (so->rfirst)
		pfree(so->rfirst);
	if (so->rlast)
		pfree(so->rlast);
	so->rfirst = so->rlast = NULL;
	so->nranges = 0;
	so->computed = false;
	so->cur_range = -1;
	if (!keep_image)
	{
		gpuidx_image_release(so->img);
		so->img = NULL;
	}
}

/* Restart a scan, possibly with new keys. */
void
gpuidx_rescan(IndexScanDesc scan, ScanKey keys, int nkeys, ScanKey orderbys,
			  int norderbys)
{
	GpuidxScanOpaque so = (GpuidxScanOpaque) scan->opaque;

	reset_scan(so, scan->xs_snapshot != InvalidSnapshot &&
			   IsMVCCSnapshot(scan->xs_snapshot));
	if (keys && scan->numberOfKeys > 0)
		memmove(scan->keyData, keys, scan->numberOfKeys * sizeof(ScanKeyData));
}

static void compute_key_ranges(GpuidxScanOpaque so, int64 *points,
							   int64 npoints, int64 lo, int64 hi);

/* The packed heap TID at a position (past n: the NULL-key TIDs). */
static inline uint64
tid_at(const GpuidxImageData *img, int64 pos)
{
	return pos < img->n ? gpuidx_tid_at(img, pos) : img->null_tids[pos - img->n];
}

/* Turn the scan keys into hit ranges through one engine batch. */
static void
compute_ranges(IndexScanDesc scan)
{
	GpuidxScanOpaque so = (GpuidxScanOpaque) scan->opaque;
	Oid			keytype = TupleDescAttr(RelationGetDescr(scan->indexRelation), 0)->atttypid;
	int64		lo = PG_INT64_MIN,
				hi = PG_INT64_MAX;
	int64	   *points = NULL;
	int64		npoints = 0;
	bool		empty = false;
	bool		want_null = true;	/* return NULL-key rows too */
	bool		want_nonnull = true;
	int			i;

	so->computed = true;
	so->cur_range = -1;
	so->nranges = 0;

	for (i = 0; i < scan->numberOfKeys && !empty; i++)
	{
		ScanKey		sk = &scan->keyData[i];
		int64		v,
					klo,
					khi;

		if (sk->sk_flags & SK_SEARCHNULL)
		{
			want_nonnull = false;
			continue;
		}
		if (sk->sk_flags & SK_SEARCHNOTNULL)
		{
			want_null = false;
			continue;
		}
		want_null = false;
		if (sk->sk_flags & SK_ISNULL)
		{
			empty = true;		/* strict operators never match NULL */
			break;
		}
		if (sk->sk_flags & SK_SEARCHARRAY)
		{
			int64		n;
			int64	   *vals = gpuidx_array_keys(sk->sk_argument, &n);

			if (n == 0)
			{
				empty = true;
				break;
			}
			if (sk->sk_strategy == BTEqualStrategyNumber)
			{
				if (points == NULL)
				{
					points = vals;
					npoints = n;
				}
				else
				{
					npoints = gpuidx_intersect_points(points, npoints, vals, n);
					pfree(vals);
				}
				continue;
			}
			/* k < ANY(a) is k < max(a); k > ANY(a) is k > min(a). */
			v = (sk->sk_strategy <= BTLessEqualStrategyNumber) ? vals[n - 1] : vals[0];
			pfree(vals);
		}
		else
			v = gpuidx_datum_to_key(sk->sk_argument,
									OidIsValid(sk->sk_subtype) ? sk->sk_subtype : keytype);

		if (gpuidx_strategy_interval(sk->sk_strategy, v, &klo, &khi))
		{
			lo = Max(lo, klo);
			hi = Min(hi, khi);
		}
		else
			empty = true;
	}
	if (empty || (lo > hi && !want_null))
		return;

	if (so->img == NULL)
		so->img = gpuidx_image_acquire(scan->indexRelation);
	/* Room for the non-NULL ranges and one range of NULL-key TIDs. */
	so->rfirst = palloc(sizeof(uint64) * (Max(npoints, 1) + 1));
	so->rlast = palloc(sizeof(uint64) * (Max(npoints, 1) + 1));
	if (want_nonnull && lo <= hi && so->img->n > 0)
		compute_key_ranges(so, points, npoints, lo, hi);
	if (want_null && want_nonnull && so->img->nnull > 0)
	{
		/* NULLs sort last: positions n .. n+nnull-1 stand for them. */
		so->rfirst[so->nranges] = so->img->n;
		so->rlast[so->nranges] = so->img->n + so->img->nnull;
		so->nranges++;
	}
	else if (want_null && !want_nonnull && so->img->nnull > 0)
	{
		so->rfirst[0] = so->img->n;
		so->rlast[0] = so->img->n + so->img->nnull;
		so->nranges = 1;
	}
	if (points)
		pfree(points);
}

/* Ranges of the non-NULL keys matching the points (if any) within [lo, hi]. */
static void
compute_key_ranges(GpuidxScanOpaque so, int64 *points, int64 npoints,
				   int64 lo, int64 hi)
{
	if (points)
	{
		int64		n = 0;
		uint64	   *first,
				   *last;
		int64		k;

		for (k = 0; k < npoints; k++)
			if (points[k] >= lo && points[k] <= hi)
				points[n++] = points[k];
		if (n == 0)
			return;
		first = palloc(sizeof(uint64) * n);
		last = palloc(sizeof(uint64) * n);
		gpuidx_query_image(so->img, GI_OP_POINT, points, NULL, n, first, last);
		/* Distinct ascending points give ascending disjoint ranges. */
		for (k = 0; k < n; k++)
		{
			if (last[k] > first[k])
			{
				so->rfirst[so->nranges] = first[k];
				so->rlast[so->nranges] = last[k];
				so->nranges++;
			}
		}
		pfree(first);
		pfree(last);
	}
	else
	{
		if (lo == PG_INT64_MIN && hi == PG_INT64_MAX)
		{
			so->rfirst[0] = 0;
			so->rlast[0] = so->img->n;
		}
		else
			gpuidx_query_image(so->img, GI_OP_RANGE, &lo, &hi, 1,
							   so->rfirst, so->rlast);
		if (so->rlast[0] > so->rfirst[0])
			so->nranges = 1;
	}
}

/* Step to the next hit in the given direction; false when there is none. */
static bool
step(GpuidxScanOpaque so, ScanDirection dir)
{
	if (so->nranges == 0)
		return false;
	if (ScanDirectionIsBackward(dir))
	{
		if (so->cur_range >= so->nranges)
		{
			so->cur_range = so->nranges - 1;
			so->cur_pos = (int64) so->rlast[so->cur_range] - 1;
			return true;
		}
		if (so->cur_range < 0)
			return false;
		if (--so->cur_pos < (int64) so->rfirst[so->cur_range])
		{
			if (--so->cur_range < 0)
				return false;
			so->cur_pos = (int64) so->rlast[so->cur_range] - 1;
		}
		return true;
	}
	if (so->cur_range < 0)
	{
		so->cur_range = 0;
		so->cur_pos = (int64) so->rfirst[0];
		return true;
	}
	if (so->cur_range >= so->nranges)
		return false;
	if (++so->cur_pos >= (int64) so->rlast[so->cur_range])
	{
		if (++so->cur_range >= so->nranges)
			return false;
		so->cur_pos = (int64) so->rfirst[so->cur_range];
	}
	return true;
}

/* Return the next matching TID. */
bool
gpuidx_gettuple(IndexScanDesc scan, ScanDirection dir)
{
	GpuidxScanOpaque so = (GpuidxScanOpaque) scan->opaque;

	if (!so->computed)
	{
		compute_ranges(scan);
		/* A scan that starts backward starts from the end. */
		if (ScanDirectionIsBackward(dir))
			so->cur_range = so->nranges;
	}
	if (!step(so, dir))
		return false;
	gpuidx_tid_unpack(tid_at(so->img, so->cur_pos), &scan->xs_heaptid);

	/*
	 * The image is exact: its keys are the indexed values (HOT chains keep
	 * them), and the scan keys were turned into key intervals without loss.
	 * No recheck, as btree; rechecking a long = ANY list per row is
	 * quadratic.  A non-MVCC snapshot could see a reused TID: recheck then.
	 */
	scan->xs_recheck = !IsMVCCSnapshot(scan->xs_snapshot);
	if (scan->xs_want_itup)
	{
		/*
		 * Index-only scan: hand back the key (NULL past the keys) and the
		 * included columns, all from the image.
		 */
		TupleDesc	desc = RelationGetDescr(scan->indexRelation);
		Oid			keytype = TupleDescAttr(desc, 0)->atttypid;
		int64		key = so->cur_pos < so->img->n ? gpuidx_key_at(so->img, so->cur_pos) : 0;
		Datum		values[1 + GPUIDX_MAX_INCLUDE];
		bool		isnull[1 + GPUIDX_MAX_INCLUDE];
		const char *row = gpuidx_row_at(so->img, so->cur_pos);

		values[0] = gpuidx_key_to_datum(key, keytype);
		isnull[0] = so->cur_pos >= so->img->n;
		if (row)
			gpuidx_deform_row(gpuidx_layout(scan->indexRelation), row,
							  values + 1, isnull + 1);
		if (so->itup)
			pfree(so->itup);
		so->itup = index_form_tuple(desc, values, isnull);
		scan->xs_itup = so->itup;
		scan->xs_itupdesc = desc;
	}
	return true;
}

/* Add every matching TID to the bitmap. */
int64
gpuidx_getbitmap(IndexScanDesc scan, TIDBitmap *tbm)
{
	GpuidxScanOpaque so = (GpuidxScanOpaque) scan->opaque;
	ItemPointerData tids[256];
	int64		total = 0;
	int64		r;
	int			nbuf = 0;

	if (!so->computed)
		compute_ranges(scan);
	for (r = 0; r < so->nranges; r++)
	{
		uint64		pos;

		for (pos = so->rfirst[r]; pos < so->rlast[r]; pos++)
		{
			gpuidx_tid_unpack(tid_at(so->img, (int64) pos), &tids[nbuf++]);
			if (nbuf == lengthof(tids))
			{
				CHECK_FOR_INTERRUPTS();
				tbm_add_tuples(tbm, tids, nbuf, false);
				total += nbuf;
				nbuf = 0;
			}
		}
	}
	if (nbuf > 0)
	{
		tbm_add_tuples(tbm, tids, nbuf, false);
		total += nbuf;
	}
	return total;
}

/* End a scan. */
void
gpuidx_endscan(IndexScanDesc scan)
{
	GpuidxScanOpaque so = (GpuidxScanOpaque) scan->opaque;

	reset_scan(so, false);
	if (so->itup)
		pfree(so->itup);
	pfree(so);
}
