/*
 * customagg_exec.c - GpuIndexAgg, executor side (the planner side is
 * customagg_plan.c; customagg.h has the plan node's layout).
 *
 * At the first fetch (and after a rescan) the batch becomes sorted, disjoint
 * key intervals (batchqual.c) and the image answers them with position
 * ranges (one search call: the engine, or the host for a small batch).
 * Then each range of the image's arrays (base and delta parts apart) goes
 * to the engine's host loop (gi_host_aggregate, engine/cpu_agg.c: threads
 * for large ranges):
 *
 *   - an entry whose heap page is all-visible (a copy of the visibility map
 *     taken once per run, after the image is pinned) is added up from the
 *     image: the key, and the INCLUDE columns read from the entry's row,
 *     NULLs exact;
 *   - any other entry's TID goes to a list, which is then sorted and visited
 *     a page at a time under the snapshot (heapvisit.c: HOT chains
 *     followed); the visible row's own columns are added up here.
 *
 * This is what an index-only scan does, with no per-row executor work.
 * The interlock with VACUUM is the image pin's (cache.c): no entry of a
 * pinned image points to a TID VACUUM has freed.  On a GPU image, a run of
 * at least gpuidx.gpu_min_agg_entries entries is added up on the device
 * instead (gi_image_aggregate through gpuidx_aggregate_image: the same
 * picking and totals, the INCLUDE columns copied to the device as columns
 * when first needed, the fetch list copied back).  In service mode the
 * gpuidx service holds the engine images: a run on a view the service
 * holds on the GPU goes there (gpuidx_service_aggregate: the ranges, the
 * map copy and the totals through the backend's transfer segment; the
 * service puts the INCLUDE columns on the device and sends back the
 * totals and the fetch list), the same picking and totals, and the heap
 * is visited here as ever.  EXPLAIN ANALYZE's Aggregated On says which.
 *
 * Results are PostgreSQL's: count is int8; sum of int2/int4 is int8 (an
 * int128 total outside int8 raises "bigint out of range", where
 * PostgreSQL's serial plan would wrap and its parallel plan raise the same
 * error), sum of int8 is numeric; avg is numeric_div of the numeric total
 * by the count, as int8_avg and numeric_poly_avg compute it; min and max of
 * floats order NaN above every number, as float4/float8 comparisons do.
 */
#include "gpuidx.h"
#include "customagg.h"
#include "customjoin.h"
#include "batchqual.h"
#include "heapvisit.h"

#include "access/heapam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "access/visibilitymap.h"
#include "catalog/pg_type.h"
#include "commands/explain.h"
#include "executor/executor.h"
#include "miscadmin.h"
#include "nodes/extensible.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "storage/bufmgr.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/float.h"
#include "utils/fmgrprotos.h"
#include "utils/memutils.h"
#include "utils/numeric.h"
#include "utils/rel.h"
#include "utils/ruleutils.h"
#include "utils/snapmgr.h"

#include <math.h>

#ifndef HAVE_INT128
#error "GpuIndexAgg needs a 128-bit integer type"
#endif

/* Entries handed to the engine at a time (interrupts are checked between). */
#define AGG_CHUNK (1 << 22)

/*
 * Ranges shorter than this (an = ANY of many keys: one or two entries a
 * key) are gathered into a staging buffer of STAGE_ENTRIES and added up a
 * buffer at a time: one call of the host loop per range cost more than the
 * range.
 */
#define SHORT_RANGE		1024
#define STAGE_ENTRIES	(1 << 16)

/*
 * Short ranges lie at random places in the image's arrays, so staging one
 * waits for memory (a cache miss in each array read); the arrays of the
 * range this many ahead are prefetched, so that the misses overlap.
 */
#define STAGE_PREFETCH	16

/*
 * One column the aggregates read, and its totals over the rows so far (t:
 * how its values are stored in the image, and the totals, as the engine's
 * gi_host_aggregate keeps them).
 */
typedef struct AggColumn
{
	int			src;			/* GPUIDX_AGG_SRC_KEY or an INCLUDE column */
	AttrNumber	attno;			/* the table's column */
	Oid			type;			/* its base type */
	AttrNumber	input_att;		/* over a join: the join's output column */
	GiAggColumn t;
} AggColumn;

/* One output aggregate: what it computes over which column. */
typedef struct AggOut
{
	GpuidxAggFunc func;
	int			col;			/* index into cols, -1 for count(*) */
	Oid			type;			/* base type of the argument */
} AggOut;

typedef struct GpuidxAggState
{
	CustomScanState css;
	Relation	table;
	Relation	index;
	Oid			keytype;
	List	   *terms;			/* GpuidxBatchTerm, ANDed */
	int			naggs;
	AggOut	   *outs;
	int			ncols;
	AggColumn  *cols;
	bool		need_keys;		/* a column is the key */
	bool		need_rows;		/* a column is an INCLUDE column */
	bool		done;			/* the row was returned */
	MemoryContext run_cxt;		/* one run's arrays and results */
	GpuidxImageData *img;		/* pinned during a run */

	/* over a GpuIndexJoin (the plan's custom_plans) */
	PlanState  *join;
	GpuidxJoinSink sink;		/* the join's direct answers, when it takes
								 * the sink */
	void	   *sink_scratch;	/* sink.pos when it is the backend's kept
								 * block (scratch.c) */
	bool		partial;		/* emit partial states (GPUIDX_CAGG_PARTIAL) */
	int64		stat_join_rows; /* rows the join returned, added up here */

	/* during a run */
	GpuidxVisMapCopy vm;		/* the visibility map, copied for the run */
	uint64	   *fetch;			/* packed TIDs to visit in the heap */
	int64		nfetch;
	int64		fetch_cap;
	int64		rows;			/* rows counted (count(*)) */
	GiAggColumn *totals;		/* ncols: the columns' totals, contiguous */
	int64	   *stage_keys;		/* entries of short ranges, STAGE_ENTRIES */
	uint64	   *stage_tids;
	char	   *stage_rows;
	int64		nstage;

	/* EXPLAIN ANALYZE */
	GiEngineKind engine;
	int64		stat_engine_calls;
	int64		stat_host_calls;
	int64		stat_probes;
	int64		stat_entries;
	int64		stat_image;
	int64		stat_fetches;
	int64		stat_device_runs;	/* runs added up by the engine image */
	GiEngineKind agg_engine;	/* its engine (the GPU but in tests) */
	int64		stat_host_runs; /* runs added up on the host */
	double		ms_load;
	double		ms_search;
	double		ms_image;
	double		ms_heap;
} GpuidxAggState;

static void begin_agg(CustomScanState *node, EState *estate, int eflags);
static TupleTableSlot *exec_agg(CustomScanState *node);
static void end_agg(CustomScanState *node);
static void rescan_agg(CustomScanState *node);
static void explain_agg(CustomScanState *node, List *ancestors, ExplainState *es);

static const CustomExecMethods gpuidx_agg_exec_methods = {
	.CustomName = "GpuIndexAgg",
	.BeginCustomScan = begin_agg,
	.ExecCustomScan = exec_agg,
	.EndCustomScan = end_agg,
	.ReScanCustomScan = rescan_agg,
	.ExplainCustomScan = explain_agg,
};

/* Create the executor state of a GpuIndexAgg. */
static Node *
create_agg_state(CustomScan *cscan)
{
	GpuidxAggState *state = palloc0(sizeof(GpuidxAggState));

	NodeSetTag(state, T_CustomScanState);
	state->css.methods = &gpuidx_agg_exec_methods;
	return (Node *) state;
}

const CustomScanMethods gpuidx_agg_methods = {
	.CustomName = "GpuIndexAgg",
	.CreateCustomScanState = create_agg_state,
};

/* ---------- setup ---------- */

/* How values of a base type are stored in an image row. */
static GiAggKind
value_kind(Oid type)
{
	switch (type)
	{
		case BOOLOID:
			return GI_AGG_BOOL;
		case INT2OID:
			return GI_AGG_INT16;
		case INT4OID:
		case DATEOID:
			return GI_AGG_INT32;
		case OIDOID:
			return GI_AGG_UINT32;
		case FLOAT4OID:
			return GI_AGG_FLOAT4;
		case FLOAT8OID:
			return GI_AGG_FLOAT8;
		default:
			return GI_AGG_INT64;	/* int8, timestamp, timestamptz */
	}
}

/* The column of src among state->cols, added if new. */
static int
find_column(GpuidxAggState *state, int src, Oid type)
{
	const GpuidxLayout *layout = gpuidx_layout(state->index);
	int			nkeys = IndexRelationGetNumberOfKeyAttributes(state->index);
	AggColumn  *col;
	int			i;

	for (i = 0; i < state->ncols; i++)
		if (state->cols[i].src == src)
			return i;
	col = &state->cols[state->ncols];
	memset(col, 0, sizeof(AggColumn));
	col->src = src;
	col->type = type;
	col->attno = state->index->rd_index->indkey.values[src == GPUIDX_AGG_SRC_KEY ? 0 : nkeys + src];
	col->t.kind = src == GPUIDX_AGG_SRC_KEY ? GI_AGG_KEY : value_kind(type);
	col->t.column = src;		/* (the key's -1 is never read) */
	if (src >= 0)
	{
		if (src >= layout->ninclude)
			elog(ERROR, "gpuidx: index has no included column %d", src);
		col->t.offset = sizeof(uint16) + layout->value_offset[src];
		col->t.nullbit = (uint16) (1 << src);
	}
	return state->ncols++;
}

/* Read the plan's aggregate specs into outs and the columns they read. */
static void
setup_aggregates(GpuidxAggState *state, List *specs)
{
	ListCell   *lc;
	int			i = 0;

	state->naggs = list_length(specs);
	state->outs = palloc0(sizeof(AggOut) * Max(state->naggs, 1));
	state->cols = palloc0(sizeof(AggColumn) * Max(state->naggs, 1));
	state->totals = palloc0(sizeof(GiAggColumn) * Max(state->naggs, 1));
	foreach(lc, specs)
	{
		List	   *spec = lfirst(lc);
		AggOut	   *out = &state->outs[i++];

		out->func = (GpuidxAggFunc) linitial_int(spec);
		out->type = (Oid) lthird_int(spec);
		out->col = -1;
		if (lsecond_int(spec) == GPUIDX_AGG_SRC_NONE)
			continue;
		out->col = find_column(state, lsecond_int(spec), out->type);
		if (list_length(spec) > 3)
			state->cols[out->col].input_att = (AttrNumber) lfourth_int(spec);
		if (lsecond_int(spec) == GPUIDX_AGG_SRC_KEY)
			state->need_keys = true;
		else
			state->need_rows = true;
	}
}

static void init_sink(GpuidxAggState *state, EState *estate);

/* Check permissions, open the table and index, prepare the batch. */
static void
begin_agg(CustomScanState *node, EState *estate, int eflags)
{
	GpuidxAggState *state = (GpuidxAggState *) node;
	CustomScan *cscan = (CustomScan *) node->ss.ps.plan;
	List	   *priv = cscan->custom_private;

	/*
	 * The table's entry is in the range table too (InitPlan checked it);
	 * the node reads the table itself, so it checks again rather than rely
	 * on where the entry ends up.
	 */
	ExecCheckRTPerms(list_make1(list_nth(priv, GPUIDX_CAGG_RTE)), true);
	state->table = table_open((Oid) intVal(list_nth(priv, GPUIDX_CAGG_TABLE)), AccessShareLock);
	state->index = index_open((Oid) intVal(list_nth(priv, GPUIDX_CAGG_INDEX)), AccessShareLock);
	state->keytype = TupleDescAttr(RelationGetDescr(state->index), 0)->atttypid;
	setup_aggregates(state, list_nth(priv, GPUIDX_CAGG_SPECS));
	state->run_cxt = AllocSetContextCreate(estate->es_query_cxt, "gpuidx agg",
										   ALLOCSET_DEFAULT_SIZES);
	if (cscan->custom_plans != NIL)
	{
		state->partial = list_length(priv) > GPUIDX_CAGG_PARTIAL &&
			intVal(list_nth(priv, GPUIDX_CAGG_PARTIAL));
		state->join = ExecInitNode(linitial(cscan->custom_plans), estate, eflags);
		node->custom_ps = list_make1(state->join);
		if (!(eflags & EXEC_FLAG_EXPLAIN_ONLY))
			init_sink(state, estate);
		return;
	}
	if (eflags & EXEC_FLAG_EXPLAIN_ONLY)
		return;
	state->terms = gpuidx_prepare_batch(cscan->custom_exprs, &node->ss.ps,
										state->index->rd_opfamily[0]);
}

/* ---------- adding up ---------- */

/* Add one integer value (bool as 0/1, oid unsigned) to a column's totals. */
static inline void
add_int(GiAggColumn *col, int64 x)
{
	col->nonnull++;
	col->sum += x;
	if (x < col->imin)
		col->imin = x;
	if (x > col->imax)
		col->imax = x;
}

/* Add one float value to a column's totals (NaN above every number). */
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

/* Start every column's totals afresh. */
static void
reset_totals(GpuidxAggState *state)
{
	int			i;

	state->rows = 0;
	for (i = 0; i < state->ncols; i++)
	{
		GiAggColumn *col = &state->cols[i].t;

		col->nonnull = col->nnan = 0;
		col->sum = 0;
		col->imin = PG_INT64_MAX;
		col->imax = PG_INT64_MIN;
		col->fmin = get_float8_infinity();
		col->fmax = -get_float8_infinity();
	}
}

/* Room in the fetch list for n more TIDs. */
static void
reserve_fetch(GpuidxAggState *state, int64 n)
{
	int64		cap;

	if (state->nfetch + n <= state->fetch_cap)
		return;
	cap = Max(state->fetch_cap * 2, state->nfetch + n);
	cap = Max(cap, 1024);
	state->fetch = state->fetch ?
		repalloc_huge(state->fetch, sizeof(uint64) * cap) :
		MemoryContextAllocHuge(state->run_cxt, sizeof(uint64) * cap);
	state->fetch_cap = cap;
}

/*
 * n consecutive entries of one part (base or delta) of the image's arrays,
 * added up by the engine's host loop (gi_host_aggregate) a chunk at a time:
 * entries on all-visible pages into the totals, the others' TIDs onto the
 * fetch list.
 */
static void
agg_span(GpuidxAggState *state, const int64 *keys, const uint64 *tids,
		 const char *rows, int64 n)
{
	int			row_bytes = state->img->row_bytes;
	int64		done;
	int			c;

	for (c = 0; c < state->ncols; c++)
		state->totals[c] = state->cols[c].t;
	for (done = 0; done < n; done += AGG_CHUNK)
	{
		int64		m = Min(n - done, AGG_CHUNK);
		int64		counted = 0;
		size_t		nfetch = 0;
		GiError		err;

		CHECK_FOR_INTERRUPTS();
		reserve_fetch(state, m);
		if (gi_host_aggregate(keys ? (const int64_t *) keys + done : NULL,
							  (const uint64_t *) tids + done,
							  rows ? rows + (Size) done * row_bytes : NULL, row_bytes,
							  (size_t) m, state->vm.bits, state->vm.nblocks,
							  state->vm.all_set, state->totals, state->ncols, (int64_t *) &counted,
							  (uint64_t *) state->fetch + state->nfetch, &nfetch,
							  &err) != GI_OK)
			gpuidx_raise_engine_error(&err, "adding up index entries");
		state->rows += counted;
		state->stat_image += counted;
		state->nfetch += nfetch;
	}
	for (c = 0; c < state->ncols; c++)
		state->cols[c].t = state->totals[c];
}

/* What is done to a contiguous span of image entries (keys, TIDs, rows). */
typedef void (*SpanFn) (GpuidxAggState *state, const int64 *keys,
						const uint64 *tids, const char *rows, int64 n);

/*
 * Hand the entries at positions [first, last) to fn as their two
 * contiguous shares: the delta's entries among them, then the base's.
 */
static void
split_positions(GpuidxAggState *state, int64 first, int64 last, SpanFn fn)
{
	GpuidxImageData *img = state->img;
	int			rb = img->row_bytes;
	int64		d0 = 0,
				d1 = 0;

	if (img->ndelta > 0)
	{
		d0 = gpuidx_delta_before(img, first);
		d1 = gpuidx_delta_before(img, last);
		fn(state, img->dkeys + d0, img->dtids + d0,
		   rb ? img->drows + (Size) d0 * rb : NULL, d1 - d0);
	}
	fn(state, img->keys + (first - d0), img->tids + (first - d0),
	   rb ? img->rows + (Size) (first - d0) * rb : NULL,
	   (last - d1) - (first - d0));
	state->stat_entries += last - first;
}

/*
 * The entries at positions [first, last): the base part's and the delta
 * part's share of them are each contiguous in their arrays (the sum does
 * not depend on the order).
 */
static void
agg_positions(GpuidxAggState *state, int64 first, int64 last)
{
	split_positions(state, first, last, agg_span);
}

/* Add up the staged entries of short ranges. */
static void
stage_flush(GpuidxAggState *state)
{
	if (state->nstage > 0)
		agg_span(state, state->need_keys ? state->stage_keys : NULL, state->stage_tids,
				 state->need_rows ? state->stage_rows : NULL, state->nstage);
	state->nstage = 0;
}

/*
 * Copy n consecutive entries of one part (base or delta) of the image's
 * arrays into the staging buffer, flushing it whenever it fills.
 */
static void
stage_span(GpuidxAggState *state, const int64 *keys, const uint64 *tids,
		   const char *rows, int64 n)
{
	int			rb = state->img->row_bytes;

	while (n > 0)
	{
		int64		m;

		if (state->nstage == STAGE_ENTRIES)
			stage_flush(state);
		m = Min(n, STAGE_ENTRIES - state->nstage);
		/* (only the arrays some aggregate reads: each is a cache miss) */
		if (state->need_keys)
			memcpy(state->stage_keys + state->nstage, keys, sizeof(int64) * m);
		memcpy(state->stage_tids + state->nstage, tids, sizeof(uint64) * m);
		if (rb > 0 && state->need_rows)
			memcpy(state->stage_rows + (Size) state->nstage * rb, rows, (Size) m * rb);
		state->nstage += m;
		keys += m;
		tids += m;
		if (rb > 0)
			rows += (Size) m * rb;
		n -= m;
	}
}

/*
 * Prefetch what staging the entry at position pos will read.  Only a hint:
 * the base arrays at index pos (the entry is there or up to ndelta before).
 */
static inline void
stage_prefetch(GpuidxAggState *state, int64 pos)
{
	GpuidxImageData *img = state->img;
	int64		b = Min(pos, img->nbase - 1);

	if (b < 0)
		return;
	__builtin_prefetch(img->tids + b);
	if (state->need_keys)
		__builtin_prefetch(img->keys + b);
	if (state->need_rows && img->row_bytes > 0)
		__builtin_prefetch(img->rows + (Size) b * img->row_bytes);
}

/*
 * Stage the entries at positions [first, last) of a short range: its base
 * and delta shares, each contiguous in its arrays, copied whole (as
 * agg_positions splits a long range).
 */
static void
stage_positions(GpuidxAggState *state, int64 first, int64 last)
{
	int			rb = state->img->row_bytes;

	if (state->stage_keys == NULL)
	{
		/* (for the node's life: run_cxt is reset between runs) */
		MemoryContext cxt = GetMemoryChunkContext(state);

		state->stage_keys = MemoryContextAlloc(cxt, sizeof(int64) * STAGE_ENTRIES);
		state->stage_tids = MemoryContextAlloc(cxt, sizeof(uint64) * STAGE_ENTRIES);
		state->stage_rows = rb > 0 ? MemoryContextAlloc(cxt, (Size) rb * STAGE_ENTRIES) : NULL;
	}
	split_positions(state, first, last, stage_span);
}

/*
 * Add up every range on the device (gi_image_aggregate through
 * gpuidx_aggregate_image, which puts the INCLUDE columns on the device
 * first when a column is one; in service mode the gpuidx service does
 * both on its image) when the image is on the GPU and the run holds at
 * least gpuidx.gpu_min_agg_entries entries.  Returns false, having added
 * nothing, when the host is to add up.
 */
static bool
agg_on_device(GpuidxAggState *state, const uint64 *first, const uint64 *last, int64 n)
{
	int64		total = 0,
				counted = 0,
				nfetch = 0;
	uint64	   *fetch = NULL;
	int64		i;
	int			c;

	/* (a view: gpuidx_aggregate_image asks what the service holds) */
	if (state->img->engine != GI_ENGINE_GPU && !state->img->shared)
		return false;
	for (i = 0; i < n; i++)
		total += (int64) (last[i] - first[i]);
	if (total == 0 || total < gpuidx_gpu_min_agg_entries)
		return false;
	for (c = 0; c < state->ncols; c++)
		state->totals[c] = state->cols[c].t;
	if (!gpuidx_aggregate_image(state->img,
								state->need_rows ? gpuidx_layout(state->index) : NULL,
								first, last, n, state->vm.bits, state->vm.nblocks,
								state->vm.all_set, state->totals, state->ncols, &counted,
								&fetch, &nfetch))
		return false;
	for (c = 0; c < state->ncols; c++)
		state->cols[c].t = state->totals[c];
	state->agg_engine = state->img->engine;
	state->rows += counted;
	state->stat_image += counted;
	state->stat_entries += total;
	/* (the fetch list is empty before: the device took every range) */
	Assert(state->nfetch == 0);
	state->fetch = fetch;
	state->nfetch = state->fetch_cap = nfetch;
	return true;
}

/* ---------- the heap ---------- */

/* Add one heap value of a column (a Datum of its base type). */
static void
add_datum(AggColumn *col, Datum d)
{
	switch (col->type)
	{
		case BOOLOID:
			add_int(&col->t, DatumGetBool(d) ? 1 : 0);
			break;
		case INT2OID:
			add_int(&col->t, DatumGetInt16(d));
			break;
		case INT4OID:
		case DATEOID:
			add_int(&col->t, DatumGetInt32(d));
			break;
		case OIDOID:
			add_int(&col->t, DatumGetObjectId(d));
			break;
		case FLOAT4OID:
			add_float(&col->t, DatumGetFloat4(d));
			break;
		case FLOAT8OID:
			add_float(&col->t, DatumGetFloat8(d));
			break;
		default:
			add_int(&col->t, DatumGetInt64(d));
			break;
	}
}

/* Page visitor: a visible row (the HOT chain's member the snapshot sees). */
static void
visit_row(void *arg, int64 i, ItemPointer tid, HeapTuple tuple)
{
	GpuidxAggState *state = (GpuidxAggState *) arg;
	TupleDesc	desc = RelationGetDescr(state->table);
	int			c;

	state->rows++;
	for (c = 0; c < state->ncols; c++)
	{
		AggColumn  *col = &state->cols[c];
		bool		isnull;
		Datum		d = heap_getattr(tuple, col->attno, desc, &isnull);

		if (!isnull)
			add_datum(col, d);
	}
}

/* Visit the fetch list's TIDs in heap order, a page at a time. */
static void
agg_heap(GpuidxAggState *state, Snapshot snapshot)
{
	int64		next = 0;

	if (state->nfetch == 0)
		return;
	if (!IsMVCCSnapshot(snapshot))
		elog(ERROR, "gpuidx: GpuIndexAgg needs an MVCC snapshot");
	if (state->nfetch > 1)
	{
		/* (packed TIDs are below 2^48: their signed order is heap order) */
		uint64	   *sorted = MemoryContextAllocHuge(state->run_cxt,
													sizeof(uint64) * state->nfetch);
		GiError		err;

		if (gi_sort_pairs((const int64_t *) state->fetch, NULL, (size_t) state->nfetch,
						  (int64_t *) sorted, NULL, &err) != GI_OK)
			gpuidx_raise_engine_error(&err, "sorting heap fetches");
		pfree(state->fetch);
		state->fetch = sorted;
		state->fetch_cap = state->nfetch;
	}
	while (next < state->nfetch)
	{
		Buffer		buf = gpuidx_heap_visit_page(state->table, snapshot,
												 state->fetch, state->nfetch,
												 &next, visit_row, state);

		ReleaseBuffer(buf);
	}
	state->stat_fetches += state->nfetch;
}

/* ---------- a run ---------- */

/*
 * Pin the image, find the position ranges of the intervals, copy the
 * visibility map, and add up every entry (image or heap).
 */
static void
agg_run(GpuidxAggState *state, GpuidxIntervals iv, Snapshot snapshot)
{
	uint64	   *first = palloc(sizeof(uint64) * Max(iv.n, 1));
	uint64	   *last = palloc(sizeof(uint64) * Max(iv.n, 1));
	instr_time	t;
	int64		i;

	INSTR_TIME_SET_CURRENT(t);
	state->img = gpuidx_image_acquire(state->index);
	state->engine = state->img->engine;
	/* (a load or refresh of the image, when this backend's was not current) */
	state->ms_load += gpuidx_lap_ms(&t);
	if (state->img->n > 0)
	{
		if (gpuidx_query_image(state->img, GI_OP_RANGE, iv.lo, iv.hi, iv.n, first, last))
			state->stat_host_calls++;
		else
			state->stat_engine_calls++;
		state->ms_search += gpuidx_lap_ms(&t);

		/* After the pin: no all-visible bit may predate an entry we miss. */
		if (gpuidx_can_skip_heap())
			gpuidx_vismap_copy(state->table, RelationGetNumberOfBlocks(state->table),
							   state->run_cxt, &state->vm);
		if (agg_on_device(state, first, last, iv.n))
			state->stat_device_runs++;
		else
		{
			state->stat_host_runs++;
			for (i = 0; i < iv.n; i++)
			{
				if (i + STAGE_PREFETCH < iv.n)
					stage_prefetch(state, (int64) first[i + STAGE_PREFETCH]);
				if (last[i] - first[i] >= SHORT_RANGE)
					agg_positions(state, (int64) first[i], (int64) last[i]);
				else if (last[i] > first[i])
					stage_positions(state, (int64) first[i], (int64) last[i]);
			}
			stage_flush(state);
		}
		state->ms_image += gpuidx_lap_ms(&t);
		agg_heap(state, snapshot);
		state->ms_heap += gpuidx_lap_ms(&t);
	}
	gpuidx_image_release(state->img);
	state->img = NULL;
}

/* ---------- over a GpuIndexJoin ---------- */
/*
 * GpuIndexAgg over an as-of GpuIndexJoin (customagg_plan.c offers it when
 * every aggregate reads the subquery's key or INCLUDE columns): the join
 * hands the image positions of the rows it answers directly (LIMIT 1, an
 * all-visible page) to the sink, and they are added up from the image as a
 * batch on the CPU engine's threads (sink_flush_positions says why not on
 * the device).  The rows
 * it returns (answers walked through the heap, and any row when the join
 * takes no sink) are added up here from their columns.  Either way the
 * totals are those of the rows the join produces, as PostgreSQL's Agg over
 * the join would compute them.
 */

/*
 * Add up the entries at n positions, one entry each (the join's direct
 * answers), on the host: the engine's threads gather each entry's key and
 * row (gi_host_aggregate_positions, the host twin of the device's run).
 * The join tested each entry's page already, so no TID is read.
 */
static void
agg_single_entries(GpuidxAggState *state, const uint64 *pos, int64 n)
{
	GpuidxImageData *img = state->img;
	GiAggEntries host;
	int64		counted = 0;
	GiError		err;
	int			c;

	memset(&host, 0, sizeof(host));
	host.keys = img->keys;
	host.tids = img->tids;
	host.rows = img->rows;
	host.nbase = (size_t) img->nbase;
	host.dkeys = img->dkeys;
	host.dtids = img->dtids;
	host.drows = img->drows;
	host.drank = img->drank;
	host.ndelta = (size_t) img->ndelta;
	host.row_bytes = img->row_bytes;
	for (c = 0; c < state->ncols; c++)
		state->totals[c] = state->cols[c].t;
	if (gi_host_aggregate_positions(&host, pos, (size_t) n, state->totals, state->ncols,
									(int64_t *) &counted, &err) != GI_OK)
		gpuidx_raise_engine_error(&err, "adding up index entries");
	for (c = 0; c < state->ncols; c++)
		state->cols[c].t = state->totals[c];
	state->rows += counted;
	state->stat_image += counted;
	state->stat_entries += n;
}

/*
 * The sink's flush: add up the positions it holds, from the join's image,
 * on the host for either engine (agg_single_entries).  The device's run
 * over one-entry ranges was measured slower at every size tried: at 10^8
 * rows and 10^6 answers (H100, per backend) 25.7 ms on the GPU (the
 * positions copied over as ranges, a search for each entry's range, a
 * column pass) against 2.75 ms for the CPU engine's threads; 8.9 against
 * 3.0 ms through the service.  The GPU engine's share is the search.
 */
static void
sink_flush_positions(GpuidxJoinSink *sink, GpuidxImageData *img)
{
	GpuidxAggState *state = (GpuidxAggState *) sink->arg;
	MemoryContext old = MemoryContextSwitchTo(state->run_cxt);
	instr_time	t;

	INSTR_TIME_SET_CURRENT(t);
	state->img = img;
	state->engine = img->engine;
	agg_single_entries(state, sink->pos, sink->n);
	state->img = NULL;
	sink->n = 0;
	state->ms_image += gpuidx_lap_ms(&t);
	MemoryContextSwitchTo(old);
}

/*
 * Offer the join a sink for its direct answers, with room for a chunk's
 * worth of positions (at most 2^20 at a time).
 */
static void
init_sink(GpuidxAggState *state, EState *estate)
{
	double		rows = state->join->plan->plan_rows;
	int64		cap = (int64) Min(Max(rows, 1024.0), (double) Min(gpuidx_batch_chunk, 1 << 20));

	/* (the backend's kept block when free: no fresh pages to fault in) */
	state->sink_scratch = gpuidx_scratch_take(GPUIDX_SCRATCH_SINK, sizeof(uint64) * cap);
	state->sink.pos = state->sink_scratch ? state->sink_scratch :
		MemoryContextAllocHuge(estate->es_query_cxt, sizeof(uint64) * cap);
	state->sink.cap = cap;
	state->sink.flush = sink_flush_positions;
	state->sink.arg = state;
	/* (a join that takes no sink returns every row: added up from them) */
	if (!gpuidx_join_set_sink(state->join, &state->sink) && state->sink_scratch)
	{
		gpuidx_scratch_give(GPUIDX_SCRATCH_SINK, state->sink_scratch);
		state->sink_scratch = NULL;
	}
}

/*
 * Run the join to its end: the rows it returns are added up from their
 * columns, its direct answers through the sink.
 */
static void
agg_join(GpuidxAggState *state)
{
	state->sink.n = 0;
	state->sink.null_rows = 0;
	for (;;)
	{
		TupleTableSlot *slot = ExecProcNode(state->join);
		int			c;

		if (TupIsNull(slot))
			break;
		state->rows++;
		state->stat_join_rows++;
		for (c = 0; c < state->ncols; c++)
		{
			AggColumn  *col = &state->cols[c];
			bool		isnull;
			Datum		d = slot_getattr(slot, col->input_att, &isnull);

			if (!isnull)
				add_datum(col, d);
		}
	}
	state->rows += state->sink.null_rows;
}

/* ---------- results ---------- */

/* A 128-bit integer as a numeric (scale 0), as numeric_poly_sum makes it. */
static Datum
int128_to_numeric(int128 v)
{
	char		buf[64];
	char	   *p = buf + sizeof(buf) - 1;
	bool		neg = v < 0;
	uint128		u = neg ? -(uint128) v : (uint128) v;

	if (v >= PG_INT64_MIN && v <= PG_INT64_MAX)
		return NumericGetDatum(int64_to_numeric((int64) v));
	*p = '\0';
	do
	{
		*--p = '0' + (int) (u % 10);
		u /= 10;
	} while (u > 0);
	if (neg)
		*--p = '-';
	return DirectFunctionCall3(numeric_in, CStringGetDatum(p),
							   ObjectIdGetDatum(InvalidOid), Int32GetDatum(-1));
}

/* min or max of a column as a Datum of its type. */
static Datum
extreme_datum(AggColumn *col, bool is_min)
{
	int64		x = is_min ? col->t.imin : col->t.imax;

	switch (col->type)
	{
		case FLOAT4OID:
		case FLOAT8OID:
			{
				double		f = is_min ? col->t.fmin : col->t.fmax;

				if (is_min ? col->t.nnan == col->t.nonnull : col->t.nnan > 0)
					f = get_float8_nan();
				return col->type == FLOAT4OID ? Float4GetDatum((float4) f) :
					Float8GetDatum(f);
			}
		case INT2OID:
			return Int16GetDatum((int16) x);
		case INT4OID:
		case DATEOID:
			return Int32GetDatum((int32) x);
		case OIDOID:
			return ObjectIdGetDatum((Oid) x);
		default:
			return Int64GetDatum(x);
	}
}

/* One aggregate's result, computed from the totals. */
static Datum
agg_result(GpuidxAggState *state, AggOut *out, bool *isnull)
{
	AggColumn  *col = out->col >= 0 ? &state->cols[out->col] : NULL;

	*isnull = false;
	if (out->func == GPUIDX_AGG_COUNT_STAR)
		return Int64GetDatum(state->rows);
	if (out->func == GPUIDX_AGG_COUNT)
		return Int64GetDatum(col->t.nonnull);
	*isnull = col->t.nonnull == 0;
	if (*isnull)
		return (Datum) 0;
	switch (out->func)
	{
		case GPUIDX_AGG_SUM:
			if (out->type == INT8OID)
				return int128_to_numeric(col->t.sum);
			if (col->t.sum < PG_INT64_MIN || col->t.sum > PG_INT64_MAX)
				ereport(ERROR,
						(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
						 errmsg("bigint out of range")));
			return Int64GetDatum((int64) col->t.sum);
		case GPUIDX_AGG_AVG:
			return DirectFunctionCall2(numeric_div, int128_to_numeric(col->t.sum),
									   NumericGetDatum(int64_to_numeric(col->t.nonnull)));
		case GPUIDX_AGG_MIN:
			return extreme_datum(col, true);
		case GPUIDX_AGG_MAX:
			return extreme_datum(col, false);
		case GPUIDX_AGG_BOOL_AND:
			return BoolGetDatum(col->t.imin != 0);
		case GPUIDX_AGG_BOOL_OR:
			return BoolGetDatum(col->t.imax != 0);
		default:
			elog(ERROR, "gpuidx: unexpected aggregate %d", (int) out->func);
	}
	return (Datum) 0;			/* keep compiler quiet */
}

/*
 * One aggregate's partial state, as its transition function would have
 * left it over the rows added up (a parallel worker's share; PostgreSQL's
 * Finalize Aggregate combines them): count is int8; sum of int2/int4 an
 * int8, NULL over no value; avg of int2/int4 the int8[] {count, sum} of
 * int4_avg_accum; min, max, bool_and, bool_or their value, NULL over none.
 * (The planner offers no partial path for sum or avg of int8.)
 */
static Datum
partial_result(GpuidxAggState *state, AggOut *out, bool *isnull)
{
	AggColumn  *col = out->col >= 0 ? &state->cols[out->col] : NULL;

	if ((out->func == GPUIDX_AGG_SUM || out->func == GPUIDX_AGG_AVG) && out->type == INT8OID)
		elog(ERROR, "gpuidx: no plain partial state for sum or avg of int8");
	if (out->func == GPUIDX_AGG_AVG)
	{
		Datum		elems[2];

		/* (int4_avg_accum adds in int64 without a check: so do we) */
		*isnull = false;
		elems[0] = Int64GetDatum(col->t.nonnull);
		elems[1] = Int64GetDatum((int64) col->t.sum);
		return PointerGetDatum(construct_array(elems, 2, INT8OID, sizeof(int64),
											   FLOAT8PASSBYVAL, TYPALIGN_DOUBLE));
	}
	return agg_result(state, out, isnull);
}

/* Compute every aggregate into the scan tuple (the key column NULL). */
static TupleTableSlot *
compute_row(GpuidxAggState *state)
{
	TupleTableSlot *slot = state->css.ss.ss_ScanTupleSlot;
	ExprContext *econtext = state->css.ss.ps.ps_ExprContext;
	MemoryContext old;
	GpuidxIntervals iv;
	int			i;

	MemoryContextReset(state->run_cxt);
	old = MemoryContextSwitchTo(state->run_cxt);
	state->fetch = NULL;
	state->nfetch = state->fetch_cap = 0;
	memset(&state->vm, 0, sizeof(state->vm));
	reset_totals(state);
	if (state->join)
	{
		/* (the join runs in its own memory, as under any parent) */
		MemoryContextSwitchTo(old);
		agg_join(state);
		MemoryContextSwitchTo(state->run_cxt);
	}
	else
	{
		iv = gpuidx_eval_batch(state->terms, econtext);
		state->stat_probes += iv.n;
		if (iv.n > 0)
			agg_run(state, iv, state->css.ss.ps.state->es_snapshot);
	}
	ExecClearTuple(slot);
	for (i = 0; i < state->naggs; i++)
		slot->tts_values[i] = state->partial ?
			partial_result(state, &state->outs[i], &slot->tts_isnull[i]) :
			agg_result(state, &state->outs[i], &slot->tts_isnull[i]);
	for (; i < slot->tts_tupleDescriptor->natts; i++)
		slot->tts_isnull[i] = true;
	MemoryContextSwitchTo(old);
	return ExecStoreVirtualTuple(slot);
}

/* ---------- executor callbacks ---------- */

/* Return the one row (unless HAVING rejects it), projected. */
static TupleTableSlot *
exec_agg(CustomScanState *node)
{
	GpuidxAggState *state = (GpuidxAggState *) node;
	ExprContext *econtext = node->ss.ps.ps_ExprContext;
	TupleTableSlot *slot;

	if (state->done)
		return NULL;
	state->done = true;
	ResetExprContext(econtext);
	slot = compute_row(state);
	econtext->ecxt_scantuple = slot;
	if (node->ss.ps.qual && !ExecQual(node->ss.ps.qual, econtext))
		return NULL;
	if (node->ss.ps.ps_ProjInfo)
		return ExecProject(node->ss.ps.ps_ProjInfo);
	return slot;
}

/* Start over: the batch's values may have changed (parameters). */
static void
rescan_agg(CustomScanState *node)
{
	GpuidxAggState *state = (GpuidxAggState *) node;

	state->done = false;
	if (state->join)
	{
		state->sink.n = 0;
		if (node->ss.ps.chgParam != NULL)
			UpdateChangedParamSet(state->join, node->ss.ps.chgParam);
		if (state->join->chgParam == NULL)
			ExecReScan(state->join);
	}
}

/* Release the image (if a run failed half way), index and table. */
static void
end_agg(CustomScanState *node)
{
	GpuidxAggState *state = (GpuidxAggState *) node;

	/* (over a join, img is the join's, borrowed while adding up) */
	if (state->img && !state->join)
		gpuidx_image_release(state->img);
	state->img = NULL;
	if (state->join)
		ExecEndNode(state->join);
	if (state->sink_scratch)
		gpuidx_scratch_give(GPUIDX_SCRATCH_SINK, state->sink_scratch);
	state->sink_scratch = NULL;
	if (state->index)
		index_close(state->index, AccessShareLock);
	if (state->table)
		table_close(state->table, AccessShareLock);
}

/* EXPLAIN: index, aggregates, batch; with ANALYZE the counts and times. */
static void
explain_agg(CustomScanState *node, List *ancestors, ExplainState *es)
{
	GpuidxAggState *state = (GpuidxAggState *) node;
	CustomScan *cscan = (CustomScan *) node->ss.ps.plan;
	List	   *context;
	StringInfoData buf;
	ListCell   *lc;

	ExplainPropertyText("Index", RelationGetRelationName(state->index), es);
	context = set_deparse_context_plan(es->deparse_cxt, node->ss.ps.plan, ancestors);
	initStringInfo(&buf);
	foreach(lc, cscan->custom_scan_tlist)
	{
		if (foreach_current_index(lc) >= state->naggs)
			break;
		appendStringInfo(&buf, "%s%s", buf.len > 0 ? ", " : "",
						 deparse_expression((Node *) lfirst_node(TargetEntry, lc)->expr,
											context, false, false));
	}
	ExplainPropertyText("Aggregates", buf.data, es);
	if (state->join == NULL)
		ExplainPropertyText("Batch",
							deparse_expression((Node *) make_ands_explicit(cscan->custom_exprs),
											   context, false, false), es);
	if (es->analyze && state->join)
	{
		/* (over a join always the host: sink_flush_positions says why) */
		ExplainPropertyText("Aggregated On", "host", es);
		ExplainPropertyInteger("From Image", NULL, state->stat_image, es);
		ExplainPropertyInteger("Rows From The Join", NULL, state->stat_join_rows, es);
		if (es->timing)
			ExplainPropertyFloat("Image Time", "ms", state->ms_image, 3, es);
	}
	else if (es->analyze)
	{
		ExplainPropertyText("Engine", gpuidx_engine_label(state->engine,
														  state->stat_engine_calls,
														  state->stat_host_calls), es);
		ExplainPropertyText("Aggregated On",
							state->stat_device_runs == 0 ? "host" :
							state->stat_host_runs == 0 ? gi_engine_name(state->agg_engine) :
							psprintf("%s and host", gi_engine_name(state->agg_engine)), es);
		ExplainPropertyInteger("Probes", NULL, state->stat_probes, es);
		ExplainPropertyInteger("Entries", NULL, state->stat_entries, es);
		ExplainPropertyInteger("From Image", NULL, state->stat_image, es);
		ExplainPropertyInteger("Heap Fetches", NULL, state->stat_fetches, es);
		if (es->timing)
		{
			ExplainPropertyFloat("Load Time", "ms", state->ms_load, 3, es);
			ExplainPropertyFloat("Search Time", "ms", state->ms_search, 3, es);
			ExplainPropertyFloat("Image Time", "ms", state->ms_image, 3, es);
			ExplainPropertyFloat("Heap Time", "ms", state->ms_heap, 3, es);
		}
	}
}
