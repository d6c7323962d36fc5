/*
 * customscan_exec.c - GpuIndexScan, executor side (the planner side is
 * customscan_plan.c).
 *
 * The batch's values are evaluated at the first fetch (and after every
 * rescan) into a sorted list of disjoint key intervals (keyinterval.c), the
 * engine answers them in one call, the hit TIDs are sorted by heap block
 * and the tuples fetched with the snapshot, a page at a time on heap tables
 * (heapvisit.c).
 */
#include "gpuidx.h"
#include "customscan.h"
#include "batchqual.h"
#include "heapvisit.h"
#include "keyinterval.h"

#include "access/heapam.h"
#include "access/tableam.h"
#include "access/visibilitymap.h"
#include "catalog/pg_am.h"
#include "catalog/pg_type.h"
#include "commands/explain.h"
#include "executor/executor.h"
#include "executor/instrument.h"
#include "miscadmin.h"
#include "nodes/extensible.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/optimizer.h"
#include "portability/instr_time.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/ruleutils.h"
#include "utils/snapmgr.h"

/* Entries of the image per interval above which the hit mask is not used. */
#define SELECT_MIN_ENTRIES_PER_INTERVAL 4096

typedef struct GpuidxScanState
{
	CustomScanState css;
	Relation	index;
	List	   *terms;			/* GpuidxBatchTerm, ANDed */
	bool		computed;
	GpuidxImageData *img;
	IndexFetchTableData *fetch;
	TupleTableSlot *fetch_slot;	/* the table AM's own slot */
	uint64	   *hits;			/* packed TIDs, in heap order */
	int64	   *hit_pos;		/* their image positions (key-only mode) */
	int64		nhits;
	int64		next;
	AttrNumber	keyonly_attno;	/* > 0: key-only mode, the key's column */
	int			ninclude;		/* the index's INCLUDE columns ... */
	AttrNumber *include_attno;	/* ... and the table column of each */
	int			max_attno;		/* columns the plan reads: 1..max_attno */
	bool		heap_pages;		/* heap table: visit hits a page at a time */
	Buffer		page_buf;		/* the pinned heap page being returned */
	int			page_n;			/* its visible tuples' offsets ... */
	int			page_i;			/* ... and the next one to return */
	OffsetNumber page_offs[MaxHeapTuplesPerPage];
	Buffer		vmbuffer;		/* visibility map page (key-only mode) */
	Oid			keytype;
	/* for EXPLAIN ANALYZE */
	int64		stat_probes;
	int64		stat_hits;
	int64		stat_fetches;
	double		ms_transfer;
	double		ms_search;
	double		ms_compact;
	double		ms_heap;
	GiEngineKind engine;
	int64		stat_engine_calls;	/* batches the engine answered ... */
	int64		stat_host_calls;	/* ... and those answered on the host */
	ExprState  *batch_qual;		/* the batch clauses, for EvalPlanQual */
} GpuidxScanState;

static void begin_gpuidx_scan(CustomScanState *node, EState *estate, int eflags);
static TupleTableSlot *exec_gpuidx_scan(CustomScanState *node);
static void end_gpuidx_scan(CustomScanState *node);
static void rescan_gpuidx_scan(CustomScanState *node);
static void explain_gpuidx_scan(CustomScanState *node, List *ancestors,
								ExplainState *es);

static const CustomExecMethods gpuidx_exec_methods = {
	.CustomName = "GpuIndexScan",
	.BeginCustomScan = begin_gpuidx_scan,
	.ExecCustomScan = exec_gpuidx_scan,
	.EndCustomScan = end_gpuidx_scan,
	.ReScanCustomScan = rescan_gpuidx_scan,
	.ExplainCustomScan = explain_gpuidx_scan,
};

/* Create the executor state of a GpuIndexScan. */
static Node *
create_gpuidx_scan_state(CustomScan *cscan)
{
	GpuidxScanState *state = palloc0(sizeof(GpuidxScanState));

	NodeSetTag(state, T_CustomScanState);
	state->css.methods = &gpuidx_exec_methods;
	return (Node *) state;
}

const CustomScanMethods gpuidx_scan_methods = {
	.CustomName = "GpuIndexScan",
	.CreateCustomScanState = create_gpuidx_scan_state,
};

/* Open the index and prepare the batch clauses. */
static void
begin_gpuidx_scan(CustomScanState *node, EState *estate, int eflags)
{
	GpuidxScanState *state = (GpuidxScanState *) node;
	CustomScan *cscan = (CustomScan *) node->ss.ps.plan;
	Oid			indexoid = (Oid) intVal(list_nth(cscan->custom_private, GPUIDX_CSCAN_INDEXOID));

	state->index = index_open(indexoid, AccessShareLock);
	state->keyonly_attno = (AttrNumber) intVal(list_nth(cscan->custom_private, GPUIDX_CSCAN_KEYONLY_ATTNO));
	if (!gpuidx_can_skip_heap())
		state->keyonly_attno = 0;	/* a standby visits the heap (cache.c) */
	state->max_attno = intVal(list_nth(cscan->custom_private, GPUIDX_CSCAN_MAX_ATTNO));
	if (state->max_attno < 0 ||
		state->max_attno > RelationGetDescr(node->ss.ss_currentRelation)->natts)
		state->max_attno = RelationGetDescr(node->ss.ss_currentRelation)->natts;
	state->keytype = TupleDescAttr(RelationGetDescr(state->index), 0)->atttypid;
	{
		int			nkeys = IndexRelationGetNumberOfKeyAttributes(state->index);
		int			c;

		state->ninclude = IndexRelationGetNumberOfAttributes(state->index) - nkeys;
		state->include_attno = palloc(sizeof(AttrNumber) * Max(state->ninclude, 1));
		for (c = 0; c < state->ninclude; c++)
			state->include_attno[c] = state->index->rd_index->indkey.values[nkeys + c];
	}
	state->vmbuffer = InvalidBuffer;
	state->page_buf = InvalidBuffer;
	state->heap_pages = node->ss.ss_currentRelation->rd_rel->relam == HEAP_TABLE_AM_OID;
	if (eflags & EXEC_FLAG_EXPLAIN_ONLY)
		return;
	state->terms = gpuidx_prepare_batch(cscan->custom_exprs, &node->ss.ps,
										state->index->rd_opfamily[0]);
	state->fetch = table_index_fetch_begin(node->ss.ss_currentRelation);
	/* EvalPlanQual rechecks a new row version against the whole batch. */
	state->batch_qual = ExecInitQual(cscan->custom_exprs, &node->ss.ps);
	/* PostgreSQL 15 gives custom scans a virtual scan slot: fetch apart. */
	state->fetch_slot = table_slot_create(node->ss.ss_currentRelation,
										  &estate->es_tupleTable);
}

/*
 * Search the image for the intervals and copy every hit's packed TID (and
 * image position, when with_positions) into state->hits (state->hit_pos),
 * in position order; the search time goes to ms_search.  Returns the
 * number of hits.
 */
static int64
copy_range_hits(GpuidxScanState *state, GpuidxIntervals iv, bool with_positions,
				instr_time *t)
{
	uint64	   *first = palloc(sizeof(uint64) * iv.n);
	uint64	   *last = palloc(sizeof(uint64) * iv.n);
	int64		total = 0,
				i;

	if (gpuidx_query_image(state->img, GI_OP_RANGE, iv.lo, iv.hi, iv.n, first, last))
		state->stat_host_calls++;
	else
		state->stat_engine_calls++;
	state->ms_search += gpuidx_lap_ms(t);
	for (i = 0; i < iv.n; i++)
		total += (int64) (last[i] - first[i]);
	state->hits = gpuidx_alloc_huge(sizeof(uint64) * Max(total, 1));
	if (with_positions)
		state->hit_pos = gpuidx_alloc_huge(sizeof(int64) * Max(total, 1));
	for (i = 0; i < iv.n; i++)
	{
		int64		pos;

		gpuidx_copy_entries(state->img, (int64) first[i], (int64) last[i],
							NULL, state->hits + state->nhits);
		if (with_positions)
			for (pos = (int64) first[i]; pos < (int64) last[i]; pos++)
				state->hit_pos[state->nhits + pos - (int64) first[i]] = pos;
		state->nhits += (int64) (last[i] - first[i]);
	}
	pfree(first);
	pfree(last);
	return total;
}

/* Evaluate the batch, ask the engine, and collect hit TIDs in heap order. */
static void
compute_hits(GpuidxScanState *state)
{
	ExprContext *econtext = state->css.ss.ps.ps_ExprContext;
	GpuidxIntervals iv;
	int64		total;
	instr_time	t;

	state->computed = true;
	state->nhits = 0;
	state->next = 0;
	iv = gpuidx_eval_batch(state->terms, econtext);
	state->stat_probes += iv.n;
	if (iv.n == 0)
		return;

	INSTR_TIME_SET_CURRENT(t);
	if (state->img == NULL)
		state->img = gpuidx_image_acquire(state->index);
	state->engine = state->img->engine;
	if (state->img->n == 0)
		return;
	if (state->hits)
		pfree(state->hits);
	state->hits = NULL;

	if (state->hit_pos)
		pfree(state->hit_pos);
	state->hit_pos = NULL;

	if (state->keyonly_attno > 0)
	{
		/*
		 * Key-only: TIDs with their image positions (which give the key and
		 * the INCLUDE columns), sorted into heap order.
		 */
		total = copy_range_hits(state, iv, true, &t);
		gpuidx_sort_pairs((int64 *) state->hits, (uint64 *) state->hit_pos, total);
		state->ms_compact += gpuidx_lap_ms(&t);
	}

	/*
	 * A batch large enough to pay for a hit mask over the whole image (one
	 * bit per entry): the engine marks it and compacts it (SPACE), in heap
	 * order.  A few intervals (a rescan in a nested loop, say) walk their
	 * ranges instead of clearing and scanning that mask every time.
	 */
	else if (iv.n >= state->img->n / SELECT_MIN_ENTRIES_PER_INTERVAL &&
			 gpuidx_select_image(state->img, GI_OP_RANGE, iv.lo, iv.hi, iv.n,
								 &state->hits, &state->nhits))
	{
		GiImageInfo info;

		state->stat_engine_calls++;
		gi_image_info(state->img->image, &info);
		state->ms_transfer += info.last_query.transfer_ms;
		state->ms_search += info.last_query.search_ms;
		state->ms_compact += Max(info.last_query.total_ms - info.last_query.search_ms -
								 info.last_query.transfer_ms, 0.0);
		gpuidx_lap_ms(&t);
	}
	else
	{
		/* No selection in this engine: walk the ranges on the host. */
		total = copy_range_hits(state, iv, false, &t);
		/* Heap order: consecutive fetches share a pinned page. */
		{
			int64	   *keys = (int64 *) state->hits;
			uint64	   *dummy = gpuidx_alloc_huge(sizeof(uint64) * Max(total, 1));

			memset(dummy, 0, sizeof(uint64) * total);
			gpuidx_sort_pairs(keys, dummy, total);
			pfree(dummy);
		}
		state->ms_compact += gpuidx_lap_ms(&t);
	}
	state->stat_hits += state->nhits;
}

/* Drop the pinned heap page, if any. */
static void
release_heap_page(GpuidxScanState *state)
{
	if (BufferIsValid(state->page_buf))
		ReleaseBuffer(state->page_buf);
	state->page_buf = InvalidBuffer;
	state->page_n = state->page_i = 0;
}

/* A hit's visible tuple: remember its offset, to return it from the page. */
static void
visit_hit(void *arg, int64 i, ItemPointer tid, HeapTuple tuple)
{
	GpuidxScanState *state = (GpuidxScanState *) arg;

	if (state->page_n < MaxHeapTuplesPerPage)
		state->page_offs[state->page_n++] = ItemPointerGetOffsetNumber(tid);
}

/*
 * Heap tables: the hits (in TID order) are visited a page at a time
 * (heapvisit.c): one share lock finds every visible tuple of the page
 * (following HOT chains), then they are returned from the pinned page.
 */
static TupleTableSlot *
next_from_heap_pages(GpuidxScanState *state, TupleTableSlot *slot, Snapshot snapshot)
{
	Relation	rel = state->css.ss.ss_currentRelation;

	for (;;)
	{
		if (state->page_i < state->page_n)
		{
			Page		page = BufferGetPage(state->page_buf);
			OffsetNumber off = state->page_offs[state->page_i++];
			ItemId		lp = PageGetItemId(page, off);
			HeapTupleData tuple;

			tuple.t_data = (HeapTupleHeader) PageGetItem(page, lp);
			tuple.t_len = ItemIdGetLength(lp);
			tuple.t_tableOid = RelationGetRelid(rel);
			ItemPointerSet(&tuple.t_self, BufferGetBlockNumber(state->page_buf), off);
			ExecStoreBufferHeapTuple(&tuple, state->fetch_slot, state->page_buf);

			/*
			 * Hand over only the columns the plan reads, without copying
			 * them: the values point into the page, which stays pinned (by
			 * fetch_slot and page_buf) until the next tuple is asked for, as
			 * with a sequential scan's buffer slot.
			 */
			slot_getsomeattrs(state->fetch_slot, state->max_attno);
			ExecClearTuple(slot);
			memcpy(slot->tts_values, state->fetch_slot->tts_values,
				   sizeof(Datum) * state->max_attno);
			memcpy(slot->tts_isnull, state->fetch_slot->tts_isnull,
				   sizeof(bool) * state->max_attno);
			if (state->max_attno < slot->tts_tupleDescriptor->natts)
				memset(slot->tts_isnull + state->max_attno, true,
					   sizeof(bool) * (slot->tts_tupleDescriptor->natts - state->max_attno));
			ExecStoreVirtualTuple(slot);
			slot->tts_tid = tuple.t_self;
			slot->tts_tableOid = tuple.t_tableOid;
			return slot;
		}
		release_heap_page(state);
		if (state->next >= state->nhits)
			return ExecClearTuple(slot);

		{
			int64		first = state->next;

			/* Keep the pin while returning the page's tuples. */
			state->page_buf = gpuidx_heap_visit_page(rel, snapshot, state->hits,
													 state->nhits, &state->next,
													 visit_hit, state);
			state->stat_fetches += state->next - first;
		}
	}
}

/*
 * Key-only mode: fill slot with the key and the INCLUDE columns of image
 * position pos, other columns NULL (the plan reads no other).
 */
static void
store_image_row(GpuidxScanState *state, TupleTableSlot *slot, int64 pos)
{
	Datum		inc_values[GPUIDX_MAX_INCLUDE];
	bool		inc_nulls[GPUIDX_MAX_INCLUDE];
	const char *row = state->ninclude > 0 ? gpuidx_row_at(state->img, pos) : NULL;
	int			c;

	ExecClearTuple(slot);
	memset(slot->tts_isnull, true, sizeof(bool) * slot->tts_tupleDescriptor->natts);
	if (row)
	{
		gpuidx_deform_row(gpuidx_layout(state->index), row, inc_values, inc_nulls);
		for (c = 0; c < state->ninclude; c++)
		{
			AttrNumber	attno = state->include_attno[c];

			slot->tts_values[attno - 1] = inc_values[c];
			slot->tts_isnull[attno - 1] = inc_nulls[c];
		}
	}
	slot->tts_values[state->keyonly_attno - 1] =
		gpuidx_key_to_datum(gpuidx_key_at(state->img, pos), state->keytype);
	slot->tts_isnull[state->keyonly_attno - 1] = false;
	ExecStoreVirtualTuple(slot);
}

/* The next hit visible with the snapshot, into slot (cleared at the end). */
static TupleTableSlot *
fetch_next_hit(GpuidxScanState *state, TupleTableSlot *slot, Snapshot snapshot)
{
	ScanState  *ss = &state->css.ss;

	if (state->heap_pages && state->keyonly_attno == 0)
		return next_from_heap_pages(state, slot, snapshot);
	while (state->next < state->nhits)
	{
		ItemPointerData tid;
		bool		call_again = false;
		bool		all_dead = false;

		CHECK_FOR_INTERRUPTS();
		gpuidx_tid_unpack(state->hits[state->next], &tid);
		if (state->keyonly_attno > 0 &&
			VM_ALL_VISIBLE(ss->ss_currentRelation, ItemPointerGetBlockNumber(&tid),
						   &state->vmbuffer))
		{
			/* All-visible page: the image's entry is the row's answer. */
			store_image_row(state, slot, state->hit_pos[state->next++]);
			slot->tts_tid = tid;
			slot->tts_tableOid = RelationGetRelid(ss->ss_currentRelation);
			return slot;
		}
		state->next++;
		state->stat_fetches++;
		if (table_index_fetch_tuple(state->fetch, &tid, snapshot,
									state->fetch_slot, &call_again, &all_dead))
		{
			ExecCopySlot(slot, state->fetch_slot);
			/* ctid and tableoid are read off the slot (UPDATE, DELETE). */
			slot->tts_tid = state->fetch_slot->tts_tid;
			slot->tts_tableOid = state->fetch_slot->tts_tableOid;
			return slot;
		}
	}
	return ExecClearTuple(slot);
}

/*
 * Fetch the next hit; the heap time is kept only under EXPLAIN ANALYZE with
 * timing (reading the clock per tuple costs a fifth of a scan).
 */
static TupleTableSlot *
next_gpuidx_tuple(ScanState *ss)
{
	GpuidxScanState *state = (GpuidxScanState *) ss;
	bool		timed = ss->ps.instrument != NULL && ss->ps.instrument->need_timer;
	instr_time	t;
	TupleTableSlot *ret;

	if (!state->computed)
		compute_hits(state);
	if (timed)
		INSTR_TIME_SET_CURRENT(t);
	ret = fetch_next_hit(state, ss->ss_ScanTupleSlot, ss->ps.state->es_snapshot);
	if (timed)
		state->ms_heap += gpuidx_lap_ms(&t);
	return ret;
}

/*
 * EvalPlanQual: a concurrently updated row version must still satisfy the
 * batch clauses, which the plan's own qual list no longer repeats.
 */
static bool
recheck_gpuidx_tuple(ScanState *ss, TupleTableSlot *slot)
{
	GpuidxScanState *state = (GpuidxScanState *) ss;
	ExprContext *econtext = ss->ps.ps_ExprContext;

	econtext->ecxt_scantuple = slot;
	return ExecQualAndReset(state->batch_qual, econtext);
}

/* Return the next qualifying, projected tuple. */
static TupleTableSlot *
exec_gpuidx_scan(CustomScanState *node)
{
	return ExecScan(&node->ss, (ExecScanAccessMtd) next_gpuidx_tuple,
					(ExecScanRecheckMtd) recheck_gpuidx_tuple);
}

/* Start over: the batch's values may have changed (parameters). */
static void
rescan_gpuidx_scan(CustomScanState *node)
{
	GpuidxScanState *state = (GpuidxScanState *) node;

	state->computed = false;
	state->nhits = 0;
	state->next = 0;
	release_heap_page(state);
	if (state->fetch_slot)
		ExecClearTuple(state->fetch_slot);
	/* Under an MVCC snapshot the image stays pinned (see scan.c's rescan). */
	if (state->img && !IsMVCCSnapshot(node->ss.ps.state->es_snapshot))
	{
		gpuidx_image_release(state->img);
		state->img = NULL;
	}
	ExecScanReScan(&node->ss);
}

/* Release the index, the image and the heap fetch state. */
static void
end_gpuidx_scan(CustomScanState *node)
{
	GpuidxScanState *state = (GpuidxScanState *) node;

	if (state->img)
		gpuidx_image_release(state->img);
	state->img = NULL;
	if (BufferIsValid(state->vmbuffer))
		ReleaseBuffer(state->vmbuffer);
	if (state->fetch_slot)
		ExecClearTuple(state->fetch_slot);
	release_heap_page(state);
	if (state->fetch)
		table_index_fetch_end(state->fetch);
	if (state->index)
		index_close(state->index, AccessShareLock);
}

/* EXPLAIN: the index, the batch, the engine; with ANALYZE the counts and times. */
static void
explain_gpuidx_scan(CustomScanState *node, List *ancestors, ExplainState *es)
{
	GpuidxScanState *state = (GpuidxScanState *) node;
	CustomScan *cscan = (CustomScan *) node->ss.ps.plan;
	List	   *context;
	Node	   *batch;
	char	   *s;

	ExplainPropertyText("Index", RelationGetRelationName(state->index), es);
	context = set_deparse_context_plan(es->deparse_cxt, node->ss.ps.plan, ancestors);
	batch = (Node *) make_ands_explicit(cscan->custom_exprs);
	s = deparse_expression(batch, context, es->verbose, false);
	ExplainPropertyText("Batch", s, es);
	if (state->keyonly_attno > 0)
		ExplainPropertyBool("Key Only", true, es);
	if (es->analyze)
	{
		ExplainPropertyText("Engine", gpuidx_engine_label(state->engine,
														  state->stat_engine_calls,
														  state->stat_host_calls), es);
		ExplainPropertyInteger("Probes", NULL, state->stat_probes, es);
		ExplainPropertyInteger("Hits", NULL, state->stat_hits, es);
		ExplainPropertyInteger("Heap Fetches", NULL, state->stat_fetches, es);
		if (es->timing)
		{
			ExplainPropertyFloat("Transfer Time", "ms", state->ms_transfer, 3, es);
			ExplainPropertyFloat("Search Time", "ms", state->ms_search, 3, es);
			ExplainPropertyFloat("Compaction Time", "ms", state->ms_compact, 3, es);
			ExplainPropertyFloat("Heap Time", "ms", state->ms_heap, 3, es);
		}
	}
}
