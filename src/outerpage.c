/*
 * outerpage.c - the rest of an outer SeqScan's current heap page, read in
 * place.
 *
 * A join that gathers its outer side in chunks (GpuIndexJoin) asks for
 * millions of rows.  Through ExecProcNode each row goes down the SeqScan
 * node, the table AM and the heap's page-mode scan and is stored into the
 * scan's slot: a hundred-odd instructions a row, as much as the GPU's
 * search of it many times over.  In page mode the heap has already decided
 * which rows of the current page the snapshot sees (rs_vistuples, under the
 * page's share lock, with the scan's serializable checks and pruning) and
 * holds the page pinned until it moves on; it returns them one at a time
 * from rs_cindex.  So once ExecProcNode has returned a row, the page's
 * further visible rows are read here, straight from the page, and
 * rs_cindex is advanced past them: the scan's next row is the first one
 * after them, on this page or the next, exactly as if each had been
 * returned by the node (heapgettup_pagemode continues at rs_cindex + 1).
 * The statistics the node would have kept (its EXPLAIN ANALYZE rows, the
 * table's tuples returned) are counted here for those rows.
 *
 * This reads PostgreSQL 15's HeapScanDescData.  It applies only to a plain
 * heap SeqScan that returns its rows as stored: no qual (so no row-level
 * security or WHERE filter to evaluate), no projection, no EvalPlanQual
 * recheck, a page-mode (MVCC) scan without scan keys.  Anything else goes
 * through ExecProcNode as before.
 */
#include "gpuidx.h"
#include "outerpage.h"

#include "access/heapam.h"
#include "access/tableam.h"
#include "executor/executor.h"
#include "executor/instrument.h"
#include "pgstat.h"
#include "utils/rel.h"

/*
 * Decide whether the outer plan's rows can be read in place and prepare
 * the slot that shows them; op->scan stays NULL when they cannot.
 */
void
gpuidx_outer_page_init(GpuidxOuterPage *op, PlanState *outer, EState *estate)
{
	SeqScanState *ss;
	Relation	rel;

	memset(op, 0, sizeof(*op));
#if PG_VERSION_NUM < 150000 || PG_VERSION_NUM >= 160000
	/* the heap scan's fields and page-mode rules read here are 15's */
	return;
#endif
	if (!IsA(outer, SeqScanState) || estate->es_epq_active != NULL)
		return;
	ss = (SeqScanState *) outer;
	rel = ss->ss.ss_currentRelation;
	if (ss->ss.ps.qual != NULL || ss->ss.ps.ps_ProjInfo != NULL ||
		rel == NULL || rel->rd_tableam != GetHeapamTableAmRoutine())
		return;
	op->scan = ss;
	op->slot = ExecAllocTableSlot(&estate->es_tupleTable, RelationGetDescr(rel),
								  &TTSOpsHeapTuple);
	op->tuple.t_tableOid = RelationGetRelid(rel);
}

/*
 * The scan's heap descriptor when the current page has a visible row after
 * the one returned last, else NULL.
 */
static inline HeapScanDesc
page_has_more(GpuidxOuterPage *op)
{
	HeapScanDesc hs;

	if (op->scan == NULL)
		return NULL;
	hs = (HeapScanDesc) op->scan->ss.ss_currentScanDesc;
	if (hs == NULL || !hs->rs_inited || !BufferIsValid(hs->rs_cbuf) ||
		!(hs->rs_base.rs_flags & SO_ALLOW_PAGEMODE) || hs->rs_base.rs_nkeys != 0 ||
		hs->rs_cindex + 1 >= hs->rs_ntuples)
		return NULL;
	return hs;
}

/* Point op->tuple at the row at offset off of the scan's current page. */
static inline void
point_at(GpuidxOuterPage *op, HeapScanDesc hs, Page page, OffsetNumber off)
{
	ItemId		lp = PageGetItemId(page, off);

	op->tuple.t_data = (HeapTupleHeader) PageGetItem(page, lp);
	op->tuple.t_len = ItemIdGetLength(lp);
	ItemPointerSet(&op->tuple.t_self, hs->rs_cblock, off);
}

/* Take the page's next visible row into op->tuple (page_has_more said so). */
static inline void
take_next(GpuidxOuterPage *op, HeapScanDesc hs, Page page)
{
	point_at(op, hs, page, hs->rs_vistuples[++hs->rs_cindex]);
}

/* Count k rows read in place as the scan node would have counted them. */
static inline void
count_in_place(GpuidxOuterPage *op, HeapScanDesc hs, int k)
{
	if (pgstat_should_count_relation(hs->rs_base.rs_rd))
		hs->rs_base.rs_rd->pgstat_info->t_counts.t_tuples_returned += k;
	if (op->scan->ss.ps.instrument)
		op->scan->ss.ps.instrument->tuplecount += k;
	op->rows_in_place += k;
}

/*
 * After the outer plan (or this function) returned a row: the next visible
 * row of the same heap page (in the page, valid until the next call;
 * gpuidx_outer_page_slot shows it in a slot), or NULL when the page has no
 * more (then ExecProcNode takes the scan on).
 */
HeapTuple
gpuidx_outer_page_next(GpuidxOuterPage *op)
{
	HeapScanDesc hs = page_has_more(op);

	if (hs == NULL)
		return NULL;
	take_next(op, hs, BufferGetPage(hs->rs_cbuf));
	count_in_place(op, hs, 1);
	return &op->tuple;
}

/*
 * Where column attnum starts in a row with no NULLs, when every column
 * before it is fixed-width (heap_getattr's cached offset, computed once
 * here), else -1.
 */
static int
fixed_offset(TupleDesc desc, AttrNumber attnum)
{
	int			off = 0;
	int			i;

	for (i = 0; i < attnum; i++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, i);

		if (att->attlen <= 0)
			return -1;
		off = att_align_nominal(off, att->attalign);
		if (i + 1 < attnum)
			off += att->attlen;
	}
	return off;
}

/* Rows ahead of the one read whose tuple gpuidx_outer_page_column prefetches. */
#define COLUMN_PREFETCH 16

/*
 * gpuidx_outer_page_next for up to max rows at once, reading only column
 * attnum of each: its values and NULL flags; the number of rows read.
 *
 * The rows' bytes are the loop's only memory traffic: the heap's page-mode
 * scan read the line pointers but, on an all-visible page, never the
 * tuples, so each row's first read missed every cache (half the loop's time
 * measured so).  The tuple COLUMN_PREFETCH rows ahead is prefetched.
 */
int
gpuidx_outer_page_column(GpuidxOuterPage *op, AttrNumber attnum, Datum *values,
						 bool *nulls, int max)
{
	TupleDesc	desc = op->slot->tts_tupleDescriptor;
	Form_pg_attribute att = TupleDescAttr(desc, attnum - 1);
	HeapScanDesc hs;
	Page		page;
	const OffsetNumber *vis;
	int			off;
	int			k;

	if (op->fixed_attnum != attnum)
	{
		op->fixed_attnum = attnum;
		op->fixed_off = fixed_offset(desc, attnum);
	}
	if (max <= 0 || (hs = page_has_more(op)) == NULL)
		return 0;
	page = BufferGetPage(hs->rs_cbuf);
	max = Min(max, hs->rs_ntuples - 1 - hs->rs_cindex);
	vis = hs->rs_vistuples + hs->rs_cindex + 1;
	off = op->fixed_off;
	for (k = 0; k < Min(max, COLUMN_PREFETCH); k++)
		__builtin_prefetch(PageGetItem(page, PageGetItemId(page, vis[k])));
	for (k = 0; k < max; k++)
	{
		HeapTupleHeader td = (HeapTupleHeader) PageGetItem(page, PageGetItemId(page, vis[k]));

		if (k + COLUMN_PREFETCH < max)
			__builtin_prefetch(PageGetItem(page, PageGetItemId(page, vis[k + COLUMN_PREFETCH])));
		if (off >= 0 && !(td->t_infomask & HEAP_HASNULL) &&
			attnum <= HeapTupleHeaderGetNatts(td))
		{
			nulls[k] = false;
			values[k] = fetchatt(att, (char *) td + td->t_hoff + off);
		}
		else
		{
			point_at(op, hs, page, vis[k]);
			values[k] = heap_getattr(&op->tuple, attnum, desc, &nulls[k]);
		}
	}
	/* the last row read is op->tuple, as gpuidx_outer_page_next leaves it */
	point_at(op, hs, page, vis[k - 1]);
	hs->rs_cindex += k;
	count_in_place(op, hs, k);
	return k;
}
